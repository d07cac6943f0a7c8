"""A fake nvidia-ml-py (`import pynvml`) that answers from a spec dict, with fault injection.

`make_fake_pynvml(spec)` returns a module object to install as `sys.modules["pynvml"]`. It defines
the NVMLError hierarchy the way the real binding does (NVMLError(code) returns the
NVMLError_<CapWords> subclass; each subclass carries `.value`), the constants the probe uses, the
`c_nvmlGpuFabricInfoV_t` struct, and every function topoctl's NVML door (probe/nvml.py) calls.

Spec (plain dict):

    {"driver": "575.57.08", "cuda_driver": 12090, "nvml_version": "12.575.57.08",
     "gpus": [{"name", "uuid", "bus_id": "00000000:03:00.0", "cc": [12, 0], "arch": 10,
               "memory": bytes, "mig": [0, 0], "virt": 0,
               "pcie": {"cur_gen", "max_gen", "gpu_max_gen", "cur_width", "max_width"},
               "nvlinks": [[state, version, remote_type, remote_bus], ...],   # [] -> NotSupported on link 0
               "fabric": None | {"state", "status", "clique_id", "cluster_uuid": bytes(16)}}],
     "p2p": {"read": [[status]*n]*n, "write": ..., "nvlink": ..., "atomics": ..., "pci": ...},
     "ancestor": [[level]*n]*n,
     "driver_generation": None | "r470",    # preset of functions the driver lacks
     "faults": [{"function": "nvmlDeviceGetArchitecture" | "*", "device": 2 | None, "error": "NotSupported"},
                {"function": "nvmlDeviceGetP2PStatus", "device": 3, "hang": True}],   # blocks until released
     "lost_gpus": [2]}                      # every call touching these GPUs raises GpuIsLost

A fault matches when its function matches (or is "*") and, if `device` is given, one of the call's
device handles is that GPU. `"absent": [names]` removes functions (or the fabric struct) from the
module, as an older binding would. `"init_error"`: nvmlInit raises that error (LibraryNotFound,
DriverNotLoaded, ...).
"""

from __future__ import annotations

import ctypes
import threading
import types
from typing import Any

# NVML return codes, as nvml.h and nvidia-ml-py define them (tests compare them with the real
# binding).
ERROR_CODES = {
    "Uninitialized": 1,
    "InvalidArgument": 2,
    "NotSupported": 3,
    "NoPermission": 4,
    "AlreadyInitialized": 5,
    "NotFound": 6,
    "InsufficientSize": 7,
    "InsufficientPower": 8,
    "DriverNotLoaded": 9,
    "Timeout": 10,
    "IrqIssue": 11,
    "LibraryNotFound": 12,
    "FunctionNotFound": 13,
    "CorruptedInforom": 14,
    "GpuIsLost": 15,
    "ResetRequired": 16,
    "OperatingSystem": 17,
    "LibRmVersionMismatch": 18,
    "InUse": 19,
    "Memory": 20,
    "NoData": 21,
    "Unknown": 999,
}

# Functions an R470-era driver lacks (NVML answers NVML_ERROR_FUNCTION_NOT_FOUND for a missing
# symbol).
DRIVER_GENERATIONS = {
    "r470": {
        "nvmlDeviceGetGpuFabricInfoV",
        "nvmlDeviceGetGpuFabricInfo",
        "nvmlDeviceGetArchitecture",
        "nvmlDeviceGetGpuMaxPcieLinkGeneration",
    },
    # has the older, unversioned fabric call only (synthetic preset: the point is the fallback, not
    # the release)
    "r535": {"nvmlDeviceGetGpuFabricInfoV"},
}

# PCIe counter field ids, the numbers nvidia-ml-py 13.x defines (probe/pcie_checks.py reads them by
# name).
FIELD_CONSTANTS = {
    "replay_rollover": "NVML_FI_DEV_PCIE_REPLAY_ROLLOVER_COUNTER",
    "l0_to_recovery": "NVML_FI_DEV_PCIE_L0_TO_RECOVERY_COUNTER",
    "correctable_errors": "NVML_FI_DEV_PCIE_COUNT_CORRECTABLE_ERRORS",
    "nonfatal_errors": "NVML_FI_DEV_PCIE_COUNT_NON_FATAL_ERROR",
    "fatal_errors": "NVML_FI_DEV_PCIE_COUNT_FATAL_ERROR",
}
CONSTANTS = {
    "NVML_FI_DEV_PCIE_REPLAY_ROLLOVER_COUNTER": 95,
    "NVML_FI_DEV_PCIE_L0_TO_RECOVERY_COUNTER": 169,
    "NVML_FI_DEV_PCIE_COUNT_CORRECTABLE_ERRORS": 173,
    "NVML_FI_DEV_PCIE_COUNT_NON_FATAL_ERROR": 179,
    "NVML_FI_DEV_PCIE_COUNT_FATAL_ERROR": 180,
    "NVML_P2P_CAPS_INDEX_READ": 0,
    "NVML_P2P_CAPS_INDEX_WRITE": 1,
    "NVML_P2P_CAPS_INDEX_NVLINK": 2,
    "NVML_P2P_CAPS_INDEX_ATOMICS": 3,
    "NVML_P2P_CAPS_INDEX_PCI": 4,
    "NVML_P2P_CAPS_INDEX_PROP": 4,
    "NVML_P2P_STATUS_OK": 0,
    "NVML_P2P_STATUS_CHIPSET_NOT_SUPPORED": 1,
    "NVML_P2P_STATUS_GPU_NOT_SUPPORTED": 2,
    "NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED": 3,
    "NVML_P2P_STATUS_DISABLED_BY_REGKEY": 4,
    "NVML_P2P_STATUS_NOT_SUPPORTED": 5,
    "NVML_P2P_STATUS_UNKNOWN": 6,
    "NVML_TOPOLOGY_INTERNAL": 0,
    "NVML_TOPOLOGY_SINGLE": 10,
    "NVML_TOPOLOGY_MULTIPLE": 20,
    "NVML_TOPOLOGY_HOSTBRIDGE": 30,
    "NVML_TOPOLOGY_NODE": 40,
    "NVML_TOPOLOGY_SYSTEM": 50,
    "NVML_FEATURE_DISABLED": 0,
    "NVML_FEATURE_ENABLED": 1,
}

P2P_CAP_NAMES = {0: "read", 1: "write", 2: "nvlink", 3: "atomics", 4: "pci"}


class Handle:
    """A device handle; the real binding's is an opaque pointer."""

    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return f"<fake nvmlDevice {self.index}>"


class _Struct:
    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


class c_nvmlGpuFabricInfoV_t(ctypes.Structure):
    _fields_ = [
        ("version", ctypes.c_uint),
        ("clusterUuid", ctypes.c_ubyte * 16),
        ("status", ctypes.c_uint),
        ("cliqueId", ctypes.c_uint),
        ("state", ctypes.c_uint),
        ("healthMask", ctypes.c_uint),
    ]


class c_nvmlGpuFabricInfo_t(
    ctypes.Structure
):  # the older, unversioned struct (no version, no healthMask)
    _fields_ = [
        ("clusterUuid", ctypes.c_ubyte * 16),
        ("status", ctypes.c_uint),
        ("cliqueId", ctypes.c_uint),
        ("state", ctypes.c_uint),
    ]


def _error_classes(module: types.ModuleType) -> None:
    class NVMLError(Exception):
        _valClassMapping: dict[int, type] = {}

        def __new__(cls, value: int):
            if cls is NVMLError:
                cls = NVMLError._valClassMapping.get(value, cls)
            obj = Exception.__new__(cls)
            obj.value = value
            return obj

        def __init__(self, value: int) -> None:
            super().__init__(value)
            self.value = value

        def __str__(self) -> str:
            names = {code: name for name, code in ERROR_CODES.items()}
            return names.get(self.value, f"NVML error {self.value}")

    module.NVMLError = NVMLError
    for name, code in ERROR_CODES.items():
        subclass = type(
            f"NVMLError_{name}",
            (NVMLError,),
            {
                "__new__": (lambda c: lambda cls, value=None: NVMLError.__new__(cls, c))(code),
                "__init__": (lambda c: lambda self, value=None: NVMLError.__init__(self, c))(code),
            },
        )
        subclass.__module__ = "pynvml"
        NVMLError._valClassMapping[code] = subclass
        setattr(module, subclass.__name__, subclass)
        upper = "".join("_" + ch if ch.isupper() else ch.upper() for ch in name).lstrip("_").upper()
        setattr(module, f"NVML_ERROR_{upper}", code)


class FakeNvml:
    """The state behind one fake module: the spec, the call log, and the fault rules."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.initialized = False
        self.missing = set(DRIVER_GENERATIONS.get(spec.get("driver_generation") or "", set()))
        self.missing |= set(spec.get("missing", ()))
        self.lost = set(spec.get("lost_gpus", ()))
        self.release = (
            threading.Event()
        )  # a "hang" fault blocks until this is set (tests set it when done)
        self.hung: list[tuple[str, tuple[Any, ...]]] = []

    def error(self, name: str) -> Exception:
        return self.module.NVMLError(ERROR_CODES[name])

    def check(self, function: str, args: tuple[Any, ...]) -> None:
        self.calls.append((function, args))
        if function in self.missing:
            raise self.error("FunctionNotFound")
        devices = {arg.index for arg in args if isinstance(arg, Handle)}
        if function == "nvmlDeviceGetHandleByIndex" and args:
            devices.add(args[0])
        for fault in self.spec.get("faults", ()):
            if fault.get("function", "*") not in ("*", function):
                continue
            if fault.get("device") is not None and fault["device"] not in devices:
                continue
            if fault.get(
                "hang"
            ):  # a call that does not return (a hung GPU or driver), until released
                self.hung.append((function, args))
                self.release.wait(fault.get("hang_s", 60))
                continue
            raise self.error(fault["error"])
        if devices & self.lost:
            raise self.error("GpuIsLost")
        if function not in ("nvmlInit", "nvmlShutdown") and not self.initialized:
            raise self.error("Uninitialized")

    def gpu(self, handle: Any) -> dict[str, Any]:
        if not isinstance(handle, Handle):
            raise self.error("InvalidArgument")
        return self.spec["gpus"][handle.index]


def make_fake_pynvml(spec: dict[str, Any]) -> types.ModuleType:
    """A module that behaves like nvidia-ml-py on the machine the spec describes."""
    module = types.ModuleType("pynvml")
    module.__file__ = "<fake pynvml>"
    state = FakeNvml(spec)
    state.module = module
    module._fake = state
    _error_classes(module)
    for name, value in CONSTANTS.items():
        setattr(module, name, value)
    module.c_nvmlGpuFabricInfoV_t = c_nvmlGpuFabricInfoV_t
    module.c_nvmlGpuFabricInfo_t = c_nvmlGpuFabricInfo_t

    def api(function: str):
        def decorate(body):
            def call(*args: Any) -> Any:
                state.check(function, args)
                return body(*args)

            call.__name__ = function
            setattr(module, function, call)
            return call

        return decorate

    @api("nvmlInit")
    def _init() -> None:
        if spec.get("init_error"):
            raise state.error(spec["init_error"])
        state.initialized = True

    @api("nvmlShutdown")
    def _shutdown() -> None:
        state.initialized = False

    def text(value: str) -> Any:
        # nvidia-ml-py before 11.515 answered bytes; the door must take both
        return value.encode() if spec.get("bytes_strings") else value

    @api("nvmlSystemGetDriverVersion")
    def _driver() -> str:
        return text(spec.get("driver", "575.57.08"))

    @api("nvmlSystemGetCudaDriverVersion")
    def _cuda() -> int:
        return int(spec.get("cuda_driver", 12090))

    @api("nvmlSystemGetNVMLVersion")
    def _nvml_version() -> str:
        return spec.get("nvml_version", "12." + spec.get("driver", "575.57.08"))

    @api("nvmlDeviceGetCount")
    def _count() -> int:
        return len(spec.get("gpus", ()))

    @api("nvmlDeviceGetHandleByIndex")
    def _handle(index: int) -> Handle:
        if not 0 <= index < len(spec.get("gpus", ())):
            raise state.error("InvalidArgument")
        return Handle(index)

    @api("nvmlDeviceGetName")
    def _name(handle: Handle) -> str:
        return text(state.gpu(handle)["name"])

    @api("nvmlDeviceGetUUID")
    def _uuid(handle: Handle) -> str:
        return text(state.gpu(handle)["uuid"])

    @api("nvmlDeviceGetPciInfo")
    def _pci(handle: Handle) -> _Struct:
        bus = state.gpu(handle)["bus_id"]
        return _Struct(busId=text(bus))

    @api("nvmlDeviceGetCudaComputeCapability")
    def _cc(handle: Handle) -> tuple[int, int]:
        major, minor = state.gpu(handle)["cc"]
        return (major, minor)

    @api("nvmlDeviceGetArchitecture")
    def _arch(handle: Handle) -> int:
        return state.gpu(handle)["arch"]

    @api("nvmlDeviceGetMemoryInfo")
    def _memory(handle: Handle) -> _Struct:
        total = state.gpu(handle)["memory"]
        return _Struct(total=total, free=total, used=0)

    @api("nvmlDeviceGetMigMode")
    def _mig(handle: Handle) -> list[int]:
        mig = state.gpu(handle).get("mig")
        if mig is None:
            raise state.error(
                "NotSupported"
            )  # GPUs without MIG (GeForce, L40S) answer NotSupported
        return list(mig)

    @api("nvmlDeviceGetVirtualizationMode")
    def _virt(handle: Handle) -> int:
        return state.gpu(handle).get("virt", 0)

    def pcie(function: str, key: str) -> None:
        @api(function)
        def _answer(handle: Handle) -> int:
            value = state.gpu(handle)["pcie"].get(key)
            if value is None:
                raise state.error("NotSupported")
            return value

    pcie("nvmlDeviceGetCurrPcieLinkGeneration", "cur_gen")
    pcie("nvmlDeviceGetMaxPcieLinkGeneration", "max_gen")
    pcie("nvmlDeviceGetGpuMaxPcieLinkGeneration", "gpu_max_gen")
    pcie("nvmlDeviceGetCurrPcieLinkWidth", "cur_width")
    pcie("nvmlDeviceGetMaxPcieLinkWidth", "max_width")

    def link(handle: Handle, number: int) -> list[Any]:
        links = state.gpu(handle).get("nvlinks") or []
        if not links:
            raise state.error("NotSupported")
        if not 0 <= number < len(links):
            raise state.error("InvalidArgument")
        return links[number]

    @api("nvmlDeviceGetNvLinkState")
    def _link_state(handle: Handle, number: int) -> int:
        return link(handle, number)[0]

    @api("nvmlDeviceGetNvLinkVersion")
    def _link_version(handle: Handle, number: int) -> int:
        return link(handle, number)[1]

    @api("nvmlDeviceGetNvLinkRemoteDeviceType")
    def _link_type(handle: Handle, number: int) -> int:
        return link(handle, number)[2]

    @api("nvmlDeviceGetNvLinkRemotePciInfo")
    def _link_remote(handle: Handle, number: int) -> _Struct:
        return _Struct(busId=link(handle, number)[3])

    @api("nvmlDeviceGetGpuFabricInfo")
    def _fabric_old(handle: Handle, pointer: Any) -> None:
        _fabric_answer(handle, pointer)

    @api("nvmlDeviceGetGpuFabricInfoV")
    def _fabric(handle: Handle, pointer: Any) -> None:
        _fabric_answer(handle, pointer)

    def _fabric_answer(handle: Handle, pointer: Any) -> None:
        fabric = state.gpu(handle).get("fabric")
        if fabric is None:
            raise state.error("NotSupported")
        info = getattr(pointer, "_obj", pointer)  # ctypes.byref(struct) keeps the struct in _obj
        info.state = fabric["state"]
        info.status = fabric.get("status", 0)
        info.cliqueId = fabric.get("clique_id", 0)
        uuid = fabric.get("cluster_uuid") or bytes(16)
        ctypes.memmove(info.clusterUuid, uuid, 16)

    @api("nvmlDeviceGetP2PStatus")
    def _p2p(first: Handle, second: Handle, capability: int) -> int:
        state.gpu(first), state.gpu(second)
        if capability not in P2P_CAP_NAMES:
            raise state.error("InvalidArgument")
        return spec["p2p"][P2P_CAP_NAMES[capability]][first.index][second.index]

    @api("nvmlDeviceGetTopologyCommonAncestor")
    def _ancestor(first: Handle, second: Handle) -> int:
        state.gpu(first), state.gpu(second)
        return spec["ancestor"][first.index][second.index]

    @api("nvmlDeviceGetComputeRunningProcesses")
    def _processes(handle: Handle) -> list[_Struct]:
        return [_Struct(pid=pid, usedGpuMemory=0) for pid in state.gpu(handle).get("processes", [])]

    @api("nvmlDeviceGetUtilizationRates")
    def _utilization(handle: Handle) -> _Struct:
        return _Struct(gpu=state.gpu(handle).get("utilization", 0), memory=0)

    @api("nvmlDeviceGetBAR1MemoryInfo")
    def _bar1(handle: Handle) -> _Struct:
        bar1 = state.gpu(handle).get(
            "bar1"
        )  # {"total": bytes, "used": bytes}; absent: NotSupported
        if bar1 is None:
            raise state.error("NotSupported")
        return _Struct(
            bar1Total=bar1["total"],
            bar1Used=bar1.get("used", 0),
            bar1Free=bar1["total"] - bar1.get("used", 0),
        )

    @api("nvmlDeviceGetPcieReplayCounter")
    def _replay(handle: Handle) -> int:
        counters = state.gpu(handle).get(
            "pcie_counters"
        )  # {"replay": n, "correctable_errors": n, ...}
        if counters is None or "replay" not in counters:
            raise state.error("NotSupported")
        return int(counters["replay"])

    @api("nvmlDeviceGetFieldValues")
    def _fields(handle: Handle, ids: list[int]) -> list[_Struct]:
        counters = state.gpu(handle).get("pcie_counters")
        if counters is None:
            raise state.error("NotSupported")
        names = {getattr(module, constant): name for name, constant in FIELD_CONSTANTS.items()}
        out = []
        for field_id in ids:
            name = names.get(field_id)
            if name in counters:
                out.append(_Struct(nvmlReturn=0, valueType=3, value=_Struct(ullVal=counters[name])))
            else:
                out.append(
                    _Struct(
                        nvmlReturn=ERROR_CODES["NotSupported"], valueType=3, value=_Struct(ullVal=0)
                    )
                )
        return out

    for name in spec.get("absent", ()):
        if hasattr(module, name):
            delattr(module, name)
    return module
