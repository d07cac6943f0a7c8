"""The only door to NVML.

Every NVML question topoctl asks is a method here, keyed `function|arg|...` with device handles
replaced by device indices, so the answers can be recorded and replayed (probe/capture.py). The
binding is nvidia-ml-py (`import pynvml`), imported lazily: commands that only read a snapshot never
load it. Errors are normalised to NVML's own names (NotSupported, FunctionNotFound, GpuIsLost,
NoPermission, ...), because that is what users see in nvidia-smi and what they can search for.

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import threading
import time
from types import ModuleType
from typing import Any, Callable

from topoctl.core.p2p import P2P_CAPABILITY_INDEX, P2P_STATUS_BY_CODE
from topoctl.probe.capture import Answer, ProbeFailure, Session

# NVML constants, as nvidia-ml-py 13.x defines them (checked against the binding in
# tests/probe/test_probe_nvml_constants.py). The P2P ones live in topoctl/core/p2p.py, which every
# layer shares.
P2P_CAPS = P2P_CAPABILITY_INDEX
P2P_STATUS = P2P_STATUS_BY_CODE
TOPOLOGY_LEVEL = {0: "PIX", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
NVLINK_VERSION_NAME = {
    1: "1.0",
    2: "2.0",
    3: "2.2",
    4: "3.0",
    5: "3.1",
    6: "4.0",
    7: "5.0",
    8: "6.0",
}
NVLINK_REMOTE_TYPE = {0: "gpu", 1: "ibmnpu", 2: "switch", 255: "unknown"}
VIRTUALIZATION_MODE = {0: "none", 1: "passthrough", 2: "vgpu", 3: "host_vgpu", 4: "host_vsga"}
FABRIC_STATE = {0: "not_supported", 1: "not_started", 2: "in_progress", 3: "completed"}
MAX_NVLINKS = (
    36  # NVML_NVLINK_MAX_LINKS (nvidia-ml-py 13.x); iteration stops at the first link NVML rejects
)


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _error_name(exc: BaseException) -> str:
    name = type(exc).__name__
    if name.startswith("NVMLError_"):
        return name[len("NVMLError_") :]
    if name == "NVMLError":
        return f"NVMLError({getattr(exc, 'value', '?')})"
    return name


class Nvml:
    """NVML questions through a recording/replaying Session."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._pynvml: ModuleType | None = None
        self._handles: dict[int, object] = {}  # pynvml's opaque device handles
        self._lock = threading.Lock()
        # The watchdog (collect.run_probe with a timeout): past `deadline` (time.monotonic()) no new
        # call is made, each answers Timeout; `in_flight` names the call each thread is inside, so a
        # hung one can be named.
        self.deadline: float | None = None
        self.in_flight: dict[int, tuple[str, float]] = {}
        self._indices: dict[int, int] = {}  # id(handle) -> device index, to name calls by index

    # -- plumbing
    # -----------------------------------------------------------------------------------
    def _lib(self) -> ModuleType:
        if self._pynvml is None:
            try:
                import pynvml  # nvidia-ml-py
            except ImportError:
                raise ProbeFailure("BindingMissing") from None
            self._pynvml = pynvml
        return self._pynvml

    def _call(self, function: str, *args: object) -> Any:
        lib = self._lib()
        fn = getattr(lib, function, None)
        if fn is None:
            raise ProbeFailure("FunctionNotFound")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise ProbeFailure("Timeout")  # the probe ran past --timeout: ask nothing more
        timed = self.session.call_times is not None
        started = time.perf_counter() if timed else 0.0
        thread = threading.get_ident()
        self.in_flight[thread] = (self._describe(function, args), time.monotonic())
        try:
            return fn(*args)
        except lib.NVMLError as exc:
            raise ProbeFailure(_error_name(exc)) from None
        finally:
            self.in_flight.pop(thread, None)
            if timed:
                self.session.note_time(f"nvml {function}", time.perf_counter() - started)

    def _describe(self, function: str, args: tuple[object, ...]) -> str:
        """`nvmlDeviceGetP2PStatus(GPU 0, GPU 3, 0)`: a call named the way a user can find it again."""
        parts = []
        for arg in args:
            if id(arg) in self._indices:
                parts.append(f"GPU {self._indices[id(arg)]}")
            elif isinstance(arg, int):
                parts.append(str(arg))
        if function == "nvmlDeviceGetHandleByIndex" and parts:
            parts = [f"GPU {parts[0]}"]
        return f"{function}({', '.join(parts)})"

    def hung_calls(self, now: float | None = None) -> list[tuple[str, float]]:
        """The calls still running, oldest first, with how long they have run (seconds)."""
        now = time.monotonic() if now is None else now
        return sorted(
            ((name, now - started) for name, started in list(self.in_flight.values())),
            key=lambda item: -item[1],
        )

    def _handle(self, index: int) -> object:
        handle = self._handles.get(index)
        if handle is None:
            with self._lock:  # one lookup per device even when GPUs are probed from several threads
                handle = self._handles.get(index)
                if handle is None:
                    handle = self._handles[index] = self._call("nvmlDeviceGetHandleByIndex", index)
                    self._indices[id(handle)] = index
        return handle

    def _ask(self, function: str, *indices: object, live: Callable[..., object]) -> Answer:
        key = "|".join([function, *(str(i) for i in indices)])
        return self.session.ask("nvml", key, live)

    # -- system
    # ---------------------------------------------------------------------------------------
    def init(self) -> Answer:
        def live() -> None:
            self._call("nvmlInit")

        return self._ask("nvmlInit", live=live)

    def shutdown(self) -> None:
        if not self.session.replaying and self._pynvml is not None:
            try:
                self._pynvml.nvmlShutdown()
            except Exception:
                pass

    def driver_version(self) -> Answer:
        return self._ask(
            "nvmlSystemGetDriverVersion",
            live=lambda: _text(self._call("nvmlSystemGetDriverVersion")),
        )

    def cuda_driver_version(self) -> Answer:
        """CUDA version the driver supports, as NVML's integer (13000 -> "13.0" in collect.py)."""
        return self._ask(
            "nvmlSystemGetCudaDriverVersion",
            live=lambda: int(self._call("nvmlSystemGetCudaDriverVersion")),
        )

    def nvml_version(self) -> Answer:
        return self._ask(
            "nvmlSystemGetNVMLVersion", live=lambda: _text(self._call("nvmlSystemGetNVMLVersion"))
        )

    def device_count(self) -> Answer:
        return self._ask("nvmlDeviceGetCount", live=lambda: int(self._call("nvmlDeviceGetCount")))

    # -- one device
    # -----------------------------------------------------------------------------------
    def name(self, i: int) -> Answer:
        return self._ask(
            "nvmlDeviceGetName",
            i,
            live=lambda: _text(self._call("nvmlDeviceGetName", self._handle(i))),
        )

    def uuid(self, i: int) -> Answer:
        return self._ask(
            "nvmlDeviceGetUUID",
            i,
            live=lambda: _text(self._call("nvmlDeviceGetUUID", self._handle(i))),
        )

    def pci_bus_id(self, i: int) -> Answer:
        return self._ask(
            "nvmlDeviceGetPciInfo",
            i,
            live=lambda: _text(self._call("nvmlDeviceGetPciInfo", self._handle(i)).busId),
        )

    def compute_capability(self, i: int) -> Answer:
        return self._ask(
            "nvmlDeviceGetCudaComputeCapability",
            i,
            live=lambda: list(self._call("nvmlDeviceGetCudaComputeCapability", self._handle(i))),
        )

    def architecture(self, i: int) -> Answer:
        return self._ask(
            "nvmlDeviceGetArchitecture",
            i,
            live=lambda: int(self._call("nvmlDeviceGetArchitecture", self._handle(i))),
        )

    def memory_total(self, i: int) -> Answer:
        return self._ask(
            "nvmlDeviceGetMemoryInfo",
            i,
            live=lambda: int(self._call("nvmlDeviceGetMemoryInfo", self._handle(i)).total),
        )

    def mig_mode(self, i: int) -> Answer:
        """[current, pending]; 1 = enabled."""
        return self._ask(
            "nvmlDeviceGetMigMode",
            i,
            live=lambda: list(self._call("nvmlDeviceGetMigMode", self._handle(i))),
        )

    def virtualization_mode(self, i: int) -> Answer:
        return self._ask(
            "nvmlDeviceGetVirtualizationMode",
            i,
            live=lambda: int(self._call("nvmlDeviceGetVirtualizationMode", self._handle(i))),
        )

    def pcie(self, i: int, what: str) -> Answer:
        """what: CurrPcieLinkGeneration, MaxPcieLinkGeneration, GpuMaxPcieLinkGeneration,
        CurrPcieLinkWidth, MaxPcieLinkWidth."""
        function = f"nvmlDeviceGet{what}"
        return self._ask(function, i, live=lambda: int(self._call(function, self._handle(i))))

    def nvlink_state(self, i: int, link: int) -> Answer:
        return self._ask(
            "nvmlDeviceGetNvLinkState",
            i,
            link,
            live=lambda: int(self._call("nvmlDeviceGetNvLinkState", self._handle(i), link)),
        )

    def nvlink_version(self, i: int, link: int) -> Answer:
        return self._ask(
            "nvmlDeviceGetNvLinkVersion",
            i,
            link,
            live=lambda: int(self._call("nvmlDeviceGetNvLinkVersion", self._handle(i), link)),
        )

    def nvlink_remote_bus_id(self, i: int, link: int) -> Answer:
        return self._ask(
            "nvmlDeviceGetNvLinkRemotePciInfo",
            i,
            link,
            live=lambda: _text(
                self._call("nvmlDeviceGetNvLinkRemotePciInfo", self._handle(i), link).busId
            ),
        )

    def nvlink_remote_type(self, i: int, link: int) -> Answer:
        return self._ask(
            "nvmlDeviceGetNvLinkRemoteDeviceType",
            i,
            link,
            live=lambda: int(
                self._call("nvmlDeviceGetNvLinkRemoteDeviceType", self._handle(i), link)
            ),
        )

    def fabric_info(self, i: int) -> Answer:
        """NVLink fabric (NVL72 and other multi-node NVLink): cluster UUID, clique id, state."""

        def live() -> dict[str, Any]:
            import ctypes

            lib = self._lib()
            # The versioned call first; a driver or binding without it (FunctionNotFound) gets the
            # older nvmlDeviceGetGpuFabricInfo with its own struct (nvidia-ml-py 13.615.71
            # pynvml.py:7198, 7321), which answers the same four fields. The answer is recorded
            # under the versioned key either way.
            for function, struct_name in (
                ("nvmlDeviceGetGpuFabricInfoV", "c_nvmlGpuFabricInfoV_t"),
                ("nvmlDeviceGetGpuFabricInfo", "c_nvmlGpuFabricInfo_t"),
            ):
                struct_type = getattr(lib, struct_name, None)
                if struct_type is None or getattr(lib, function, None) is None:
                    continue
                info = struct_type()  # the binding expects a pointer to the struct
                try:
                    self._call(function, self._handle(i), ctypes.byref(info))
                except ProbeFailure as failure:
                    if failure.reason == "FunctionNotFound":
                        continue
                    raise
                cluster = bytes(info.clusterUuid)
                return {
                    "state": int(info.state),
                    "status": int(info.status),
                    "clique_id": int(info.cliqueId),
                    "cluster_uuid": cluster.hex() if any(cluster) else None,
                }
            raise ProbeFailure("FunctionNotFound")

        return self._ask("nvmlDeviceGetGpuFabricInfoV", i, live=live)

    # -- pairs
    # ----------------------------------------------------------------------------------------
    def p2p_status(self, i: int, j: int, capability: str) -> Answer:
        cap = P2P_CAPS[capability]
        return self._ask(
            "nvmlDeviceGetP2PStatus",
            i,
            j,
            cap,
            live=lambda: int(
                self._call("nvmlDeviceGetP2PStatus", self._handle(i), self._handle(j), cap)
            ),
        )

    def common_ancestor(self, i: int, j: int) -> Answer:
        return self._ask(
            "nvmlDeviceGetTopologyCommonAncestor",
            i,
            j,
            live=lambda: int(
                self._call("nvmlDeviceGetTopologyCommonAncestor", self._handle(i), self._handle(j))
            ),
        )
