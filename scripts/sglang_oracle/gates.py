"""A release's own runtime gates, run on the oracle's stubbed machine after ServerArgs is built.

Custom allreduce and torch symmetric memory decide at start-up, in their communicator's constructor,
whether they run: world size, NVLink, P2P (SGLANG_SKIP_P2P_CHECK), SM major, multicast. The oracle
builds the release's own class (`dispatch_custom_allreduce()`'s pick where the release has it, else
`CustomAllreduce`; `TorchSymmMemCommunicator`) for rank 0 of a TP group of tp_size, with
torch.distributed, NVML (is_full_nvlink), the P2P test (gpu_p2p_access_check,
can_device_access_peer) and the node check answered from the snapshot. The first step after the gate
(allocating the shared buffers) raises GateOpen: the gate said yes. A constructor that returns with
`disabled` set said no; the warning it logged is the reason.

Gates not run, and why, are in NOT_RUN (and docs/sglang-oracle.md).
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import sys
from typing import Any

from sglang_flags.real_parser import is_stub

from .hardware import Hardware

NOT_RUN = {
    "flashinfer-allreduce-fusion-workspace": "the workspace is created by FlashInfer's own comm "
    "module (trtllm_create_ipc_workspace_for_all_reduce_fusion / the MNNVL workspace), "
    "which needs CUDA IPC and a running process group; the oracle records ServerArgs' "
    "final fusion settings instead",
    "pcie-ipc-allreduce": "the FlashInfer PCIe IPC allreduce of SGLang >= 0.5.21 is chosen "
    "inside the model runner's communicator set-up together with FlashInfer >= 0.7.0 "
    "kernels; its gate reads the IPC handles of live buffers, which need a GPU",
    "nccl-symmetric-memory": "NCCL's own window registration (ncclCommWindowRegister) runs in "
    "libnccl",
}

CA_MODULE = "sglang.srt.distributed.device_communicators.custom_all_reduce"
SYMM_MODULE = "sglang.srt.distributed.device_communicators.torch_symm_mem"


class GateOpen(Exception):
    """Raised where the communicator starts allocating: its gate let it through."""


class _Group:
    group_name = "tp"


class _Handle:
    def __init__(self, multicast: bool) -> None:
        self.multicast_ptr = 1 if multicast else 0


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            self.messages.append(record.getMessage()[:200])


def _open(*args: Any, **kwargs: Any) -> Any:
    raise GateOpen()


class _Scalar:
    """One gathered device id, read back with int() or .item()."""

    def __init__(self, value: int) -> None:
        self.value = value

    def item(self) -> int:
        return self.value

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value


def _dist_answers(world: int) -> dict[str, Any]:
    def all_gather(out: list[Any], tensor: Any, group: Any = None) -> None:
        for index in range(len(out)):
            out[index] = _Scalar(index)  # physical device ids 0..world-1

    return {
        "get_rank": lambda *a, **k: 0,
        "get_world_size": lambda *a, **k: world,
        "get_backend": lambda *a, **k: "gloo",
        "all_gather": all_gather,
        "is_initialized": lambda: True,
        "barrier": lambda *a, **k: None,
    }


def _answer(hw: Hardware, world: int, env: dict[str, str]) -> dict[str, Any]:
    """Module-level names the gates call, answered from the snapshot."""
    return {
        "is_full_nvlink": lambda *a, **k: hw.nvlink_all,
        "gpu_p2p_access_check": lambda *a, **k: hw.p2p,
        "in_the_same_node_as": lambda *a, **k: [True] * world,
        "is_weak_contiguous": lambda *a, **k: True,
    }


def _patch_modules(answers: dict[str, Any], world: int) -> None:
    dist = sys.modules.get("torch.distributed")
    if dist is not None and world:
        for name, value in _dist_answers(world).items():
            setattr(dist, name, value)
        backend = getattr(dist, "Backend", None)
        if backend is not None and is_stub(backend):
            dist.Backend = type("Backend", (), {"NCCL": "nccl", "GLOO": "gloo"})  # type: ignore[attr-defined]
    for name, module in list(sys.modules.items()):
        if not name.startswith("sglang.srt.distributed"):
            continue
        namespace = vars(module)
        for attr, value in answers.items():
            if attr in namespace:
                namespace[attr] = value
        if "dist" in namespace and dist is not None:
            namespace["dist"] = dist


def _construct(pick: Any, hw: Hardware) -> dict[str, Any]:
    """Build the class `pick(group, device)` names for rank 0, watching what it logs."""
    watcher = _Warnings()
    root = logging.getLogger()
    previous = logging.root.manager.disable
    logging.disable(logging.NOTSET)
    root.addHandler(watcher)
    root.setLevel(logging.DEBUG)
    cls: Any = None
    try:
        group, device = _Group(), sys.modules["torch"].device("cuda:0")
        cls = pick(group, device)
        instance = cls(group, device)
    except GateOpen:
        return {"runs": True, "class": cls.__name__}
    except Exception as exc:  # noqa: BLE001 - the gate's own failure is an outcome
        return {
            "runs": False,
            "class": getattr(cls, "__name__", ""),
            "error": f"{type(exc).__name__}: {exc}"[:200],
        }
    finally:
        root.removeHandler(watcher)
        logging.disable(previous)
    runs = getattr(instance, "disabled", True) is False
    return {
        "runs": runs,
        "class": cls.__name__,
        "reason": "" if runs else (watcher.messages or [""])[-1],
    }


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - absent in this release
        return None


def _trust_p2p_unless_checked(p2p_check: bool) -> None:
    """Without --enable-p2p-check SGLang's launch replaces its real P2P test by "P2P works" with its
    own monkey_patch_p2p_access_check (model_runner.py to 0.5.15, distributed/bootstrap.py from
    0.5.16): called here as the launch calls it, on top of the snapshot's answer."""
    if p2p_check:
        return
    for name in ("sglang.srt.utils.common", "sglang.srt.utils"):
        module = sys.modules.get(name)
        patch = (
            getattr(module, "monkey_patch_p2p_access_check", None) if module is not None else None
        )
        if callable(patch) and not is_stub(patch):
            patch()
            break
    # In a launch the patch runs before custom_all_reduce.py is first imported (parallel_state
    # imports it lazily), so a module that imports gpu_p2p_access_check by name (0.5.5-0.5.9) binds
    # the patched one too; here the modules are already imported: hand them the patched function.
    utils = sys.modules.get(CA_MODULE + "_utils")
    patched = getattr(utils, "gpu_p2p_access_check", None) if utils is not None else None
    if patched is not None:
        _patch_modules({"gpu_p2p_access_check": patched}, 0)


def custom_allreduce(
    hw: Hardware, world: int, env: dict[str, str], p2p_check: bool = False
) -> dict[str, Any]:
    module = _module(CA_MODULE)
    if module is None or is_stub(getattr(module, "CustomAllreduce", None)):
        return {"runs": None, "not_run": "custom_all_reduce module did not import"}
    _patch_modules(_answer(hw, world, env), world)
    ops = module.__dict__.get("ops")
    if ops is not None:
        try:
            ops.IS_CUSTOM_AR_AVAILABLE = True
        except Exception:  # noqa: BLE001
            pass
    if "custom_ar" in module.__dict__:
        module.custom_ar = True
    module.CustomAllreduce.create_shared_buffer = staticmethod(_open)
    v2 = _module(CA_MODULE + "_v2")
    if v2 is not None and "get_custom_all_reduce_cls" in vars(v2):
        v2.get_custom_all_reduce_cls = lambda: _open
        _patch_modules(_answer(hw, world, env), world)
    _trust_p2p_unless_checked(p2p_check)
    return _construct(_picker(module), hw)


def _picker(module: Any) -> Any:
    """The release's own choice of class: dispatch_custom_allreduce() (0.5.12 on; with group and
    device from 0.5.16), else CustomAllreduce."""
    dispatch = module.__dict__.get("dispatch_custom_allreduce")
    if not callable(dispatch) or is_stub(dispatch):
        return lambda group, device: module.CustomAllreduce
    if inspect.signature(dispatch).parameters:
        return dispatch
    return lambda group, device: dispatch()


def torch_symm_mem(hw: Hardware, world: int, env: dict[str, str]) -> dict[str, Any]:
    module = _module(SYMM_MODULE)
    cls = getattr(module, "TorchSymmMemCommunicator", None) if module is not None else None
    if cls is None or is_stub(cls):
        return {"runs": None, "not_run": "torch_symm_mem module did not import"}
    _patch_modules(_answer(hw, world, env), world)
    module.torch_symm_mem_available = True
    symm = module.__dict__.get("torch_symm_mem")
    multicast = (
        hw.nvswitch and hw.sm >= 90 and os.environ.get("TORCH_SYMM_MEM_DISABLE_MULTICAST") != "1"
    )
    if symm is not None:
        symm.empty = lambda *a, **k: object()
        symm.rendezvous = lambda *a, **k: _Handle(multicast)
    return _construct(lambda group, device: cls, hw)


def publish_server_args(args: Any) -> None:
    """Hand the final ServerArgs to the release's process-wide config, as its scheduler process does
    before it builds the model runner and the communicators: `runtime_context.publish(server_args,
    role="scheduler")` from 0.5.17, `set_global_server_args_for_scheduler` before. Without it the
    communicators of 0.5.16+ stop at "Global server args is not set yet!" / "config namespace 'exec'
    not published", an error of the oracle's set-up and not of the launch."""
    context = sys.modules.get("sglang.srt.runtime_context") or _module("sglang.srt.runtime_context")
    publish = getattr(context, "publish", None) if context is not None else None
    if callable(publish) and not is_stub(publish):
        publish(args, role="scheduler")
        return
    server_args = sys.modules.get("sglang.srt.server_args")
    legacy = (
        getattr(server_args, "set_global_server_args_for_scheduler", None)
        if server_args is not None
        else None
    )
    if callable(legacy) and not is_stub(legacy):
        legacy(args)


def run_all(release: Any, args: Any, hw: Hardware, env: dict[str, str]) -> dict[str, Any]:
    """The gates this launch reaches: custom allreduce unless turned off, torch symmetric memory
    when asked."""
    world = int(release.value(args, "tp_size") or 1)
    out: dict[str, Any] = {}
    if world > 1:
        try:
            publish_server_args(args)
        except Exception as exc:  # noqa: BLE001 - recorded: the gates below then run without it
            out["publish"] = {"runs": None, "not_run": f"{type(exc).__name__}: {exc}"[:200]}
    if world > 1 and not release.value(args, "disable_custom_all_reduce"):
        out["custom_allreduce"] = custom_allreduce(
            hw, world, env, bool(release.value(args, "enable_p2p_check"))
        )
    if (
        world > 1
        and getattr(args, "enable_torch_symm_mem", False)
        and release.value(args, "enable_torch_symm_mem")
    ):
        out["torch_symm_mem"] = torch_symm_mem(hw, world, env)
    return out
