"""Builds the Snapshot from the probe's answers (live, or replayed from a capture).

Order of work: NVML init and device count (no GPU -> NoGpuError, exit 3), then every GPU, every
ordered pair, NVLink, the PCIe tree from sysfs, host and software. Any single question that fails
leaves its field null with the reason under `unknown`; the probe goes on. Derivations (link labels,
interconnect class, summary) are pure functions in topology.py so they are tested on their own.

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from topoctl import __version__
from topoctl.core.errors import NoGpuError
from topoctl.core.p2p import P2P_NOT_READ, P2P_NVML_UNKNOWN
from topoctl.probe import pcie_checks, topology
from topoctl.probe.capture import Answer, Session
from topoctl.probe.files import Files
from topoctl.probe.host import collect_host
from topoctl.probe.network import collect_network
from topoctl.probe.nvml import (
    FABRIC_STATE,
    MAX_NVLINKS,
    NVLINK_REMOTE_TYPE,
    NVLINK_VERSION_NAME,
    P2P_CAPS,
    P2P_STATUS,
    TOPOLOGY_LEVEL,
    VIRTUALIZATION_MODE,
    Nvml,
)
from topoctl.probe.software import collect_packages, cuda_from_torch_local, nccl_from_wheel
from topoctl.probe.topology import sysfs_bdf
from topoctl.snapshot.document import MAX_GPUS, SCHEMA_VERSION

if TYPE_CHECKING:
    from topoctl.snapshot.shape import SnapshotCudaVisibleDevices

WITHOUT_A_GPU = "without a GPU, show, recommend and check take --system NAME or --topology FILE"
NO_GPU_HINTS = {
    "BindingMissing": (
        "the NVML Python binding (nvidia-ml-py) is not installed",
        f"pip install nvidia-ml-py; {WITHOUT_A_GPU}",
    ),
    "LibraryNotFound": (
        "NVML (libnvidia-ml.so) was not found: no NVIDIA driver on this machine",
        f"install the NVIDIA driver; {WITHOUT_A_GPU}",
    ),
    "DriverNotLoaded": (
        "the NVIDIA driver is not loaded",
        "check `nvidia-smi`; in a container, run it with the GPUs exposed (--gpus all)",
    ),
    "NoPermission": (
        "NVML refused access (no permission)",
        "run as a user allowed to open /dev/nvidia*, or check the container's device access",
    ),
    "LibRmVersionMismatch": (
        "the NVML library and the kernel driver versions differ",
        "reboot after a driver upgrade, or reload the nvidia kernel modules",
    ),
}


def _no_gpu(reason: str) -> NoGpuError:
    message, hint = NO_GPU_HINTS.get(
        reason,
        (f"NVML could not start ({reason})", "check that `nvidia-smi` works on this machine"),
    )
    return NoGpuError(f"no GPU visible: {message}", hint=hint)


class _Collector:
    def __init__(self, session: Session, with_torch: bool) -> None:
        self.session = session
        self.nvml = Nvml(session)
        self.files = Files(session)
        self.with_torch = with_torch
        self.unknown: dict[str, str] = {}
        self.host_numa_nodes: int | None = None
        self._bridges: dict[
            str, dict[str, Any]
        ] = {}  # bus address -> what sysfs says of that bridge
        self._bridges_lock = threading.Lock()
        self.timings: list[tuple[str, float]] = []
        self._clock = time.perf_counter()

    def lap(self, phase: str) -> None:
        """Note how long the phase that just ended took (`topoctl probe --timings`)."""
        now = time.perf_counter()
        self.timings.append((phase, now - self._clock))
        self._clock = now

    def value(
        self, answer: Answer, path: str, convert: Callable[[Any], object] | None = None
    ) -> Any:
        if not answer.ok:
            self.unknown[path] = answer.reason or "unknown"
            return None
        return convert(answer.value) if convert else answer.value

    # -- GPUs
    # -----------------------------------------------------------------------------------------
    def gpu(self, i: int) -> dict[str, Any]:
        nv, at = self.nvml, f"gpus.{i}"
        gpu: dict[str, Any] = {"index": i}
        gpu["name"] = self.value(nv.name(i), f"{at}.name")
        gpu["uuid"] = self.value(nv.uuid(i), f"{at}.uuid")
        gpu["pci_bus_id"] = self.value(nv.pci_bus_id(i), f"{at}.pci_bus_id")
        cc = self.value(nv.compute_capability(i), f"{at}.compute_capability")
        gpu["compute_capability"] = f"{cc[0]}.{cc[1]}" if cc else None
        gpu["sm"] = cc[0] * 10 + cc[1] if cc else None
        if cc is None:
            self.unknown[f"{at}.sm"] = self.unknown[f"{at}.compute_capability"]
        arch = nv.architecture(i)
        gpu["architecture"] = topology.architecture_name(arch.value if arch.ok else None, cc)
        if gpu["architecture"] is None:
            self.unknown[f"{at}.architecture"] = arch.reason or "unrecognised"
        gpu["memory_total_bytes"] = self.value(nv.memory_total(i), f"{at}.memory_total_bytes")
        mig_answer = nv.mig_mode(i)
        if not mig_answer.ok and mig_answer.reason == "NotSupported":
            gpu["mig_mode"] = (
                "disabled"  # a GPU without MIG (GeForce, L40S) answers NotSupported: no MIG here
            )
        else:
            mig = self.value(mig_answer, f"{at}.mig_mode")
            gpu["mig_mode"] = ("enabled" if mig[0] == 1 else "disabled") if mig else None
        gpu["virtualization_mode"] = self.value(
            nv.virtualization_mode(i),
            f"{at}.virtualization_mode",
            lambda v: VIRTUALIZATION_MODE.get(v, f"mode-{v}"),
        )
        gpu["pcie"] = self.pcie(i)
        gpu["nvlink"], gpu["_links"] = self.nvlinks(i)
        fabric = nv.fabric_info(i)
        if fabric.ok and isinstance(fabric.value, dict) and fabric.value.get("state", 0) != 0:
            gpu["fabric"] = {
                "state": FABRIC_STATE.get(fabric.value["state"], str(fabric.value["state"])),
                "clique_id": fabric.value.get("clique_id"),
                "cluster_uuid": fabric.value.get("cluster_uuid"),
            }
        else:
            gpu["fabric"] = None
            if not fabric.ok and fabric.reason not in ("NotSupported", "NotRecorded"):
                self.unknown[f"{at}.fabric"] = fabric.reason or "unknown"
        self.sysfs_placement(gpu)
        return gpu

    def pcie(self, i: int) -> dict[str, Any]:
        nv, at = self.nvml, f"gpus.{i}.pcie"
        pcie = {
            "current_gen": self.value(nv.pcie(i, "CurrPcieLinkGeneration"), f"{at}.current_gen"),
            "max_gen": self.value(nv.pcie(i, "MaxPcieLinkGeneration"), f"{at}.max_gen"),
            "gpu_max_gen": self.value(nv.pcie(i, "GpuMaxPcieLinkGeneration"), f"{at}.gpu_max_gen"),
            "current_width": self.value(nv.pcie(i, "CurrPcieLinkWidth"), f"{at}.current_width"),
            "max_width": self.value(nv.pcie(i, "MaxPcieLinkWidth"), f"{at}.max_width"),
        }
        pcie.update(topology.pcie_findings(pcie))
        return pcie

    def nvlinks(self, i: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Active links and what is at their far end; iteration stops at the first link NVML
        rejects."""
        nv = self.nvml
        links: list[dict[str, Any]] = []
        supported = 0
        first_failure = None
        for link in range(MAX_NVLINKS):
            state = nv.nvlink_state(i, link)
            if not state.ok:
                first_failure = state.reason
                break
            supported += 1
            if state.value != 1:
                continue
            remote_type = nv.nvlink_remote_type(i, link)
            kind = NVLINK_REMOTE_TYPE.get(remote_type.value, "unknown") if remote_type.ok else None
            # The remote bus id matters only for GPU-to-GPU links (and for spotting a VM that hides
            # it); all links of a GPU run the same NVLink version, so one answer is enough. Fewer
            # calls keep the probe close to nvidia-smi's own speed.
            remote_bus = nv.nvlink_remote_bus_id(i, link) if kind != "switch" else None
            version = nv.nvlink_version(i, link) if not links else None
            links.append(
                {
                    "link": link,
                    "version": version.value if version is not None and version.ok else None,
                    "remote_bus_id": remote_bus.value
                    if remote_bus is not None and remote_bus.ok
                    else None,
                    "remote_type": kind,
                }
            )
        info: dict[str, Any] = {"links_supported": supported, "active_links": len(links)}
        if supported == 0 and first_failure not in ("NotSupported", "InvalidArgument", None):
            # NotSupported on link 0 is the plain "this GPU has no NVLink" answer; anything else is
            # unknown.
            info["links_supported"] = info["active_links"] = None
            self.unknown[f"gpus.{i}.nvlink.active_links"] = first_failure
        versions = [link["version"] for link in links if link["version"]]
        info["version"] = max(versions) if versions else None
        info["version_name"] = NVLINK_VERSION_NAME.get(info["version"]) if info["version"] else None
        remote = {"gpu": 0, "switch": 0, "unknown": 0}
        for entry in links:
            far = entry["remote_type"]
            remote["gpu" if far == "gpu" else "switch" if far == "switch" else "unknown"] += 1
        info["remote"] = remote
        return info, links

    def sysfs_placement(self, gpu: dict[str, Any]) -> None:
        """NUMA node, root complex and the bridges above the GPU, from sysfs (as NCCL reads them)."""
        at = f"gpus.{gpu['index']}"
        gpu["numa_node"] = gpu["root_complex"] = None
        gpu["pcie_path"] = []
        gpu["pcie_bridges"] = []
        if not gpu["pci_bus_id"]:
            self.unknown[f"{at}.numa_node"] = self.unknown[f"{at}.root_complex"] = "no PCI bus id"
            return
        device = f"/sys/bus/pci/devices/{sysfs_bdf(gpu['pci_bus_id'])}"
        real = self.files.realpath(device)
        if real.ok:
            root, path = topology.split_sysfs_path(real.value)
            gpu["root_complex"], gpu["pcie_path"] = root, path[:-1]
            gpu["pcie_bridges"] = [self.bridge(bdf) for bdf in path[:-1]]
        else:
            self.unknown[f"{at}.root_complex"] = f"sysfs: {real.reason}"
        numa = self.files.read_stripped(f"{device}/numa_node")
        if numa is None:
            self.unknown[f"{at}.numa_node"] = "sysfs numa_node unreadable"
        elif numa.lstrip("-").isdigit() and int(numa) >= 0:
            gpu["numa_node"] = int(numa)
        elif self.host_numa_nodes == 1:
            # -1 means "no affinity reported"; with one NUMA node there is only one answer
            # (nvidia-smi agrees).
            gpu["numa_node"] = 0
        else:
            self.unknown[f"{at}.numa_node"] = (
                f"sysfs numa_node is {numa} (no NUMA affinity reported)"
            )

    def bridge(self, bdf: str) -> dict[str, Any]:
        """One PCIe bridge between the root complex and a GPU (a root port, a PCIe switch port): its
        vendor, device and class ids from sysfs. GPUs behind one switch share its bridges, so each
        bridge is read once per probe (GPUs are probed from several threads: the lock keeps it
        once); every GPU gets its own copy."""
        with self._bridges_lock:
            known = self._bridges.get(bdf)
            if known is None:
                base = f"/sys/bus/pci/devices/{bdf}"
                known = self._bridges[bdf] = {
                    "bdf": bdf,
                    "vendor": self.files.read_stripped(f"{base}/vendor"),
                    "device": self.files.read_stripped(f"{base}/device"),
                    "class": self.files.read_stripped(f"{base}/class"),
                }
        return dict(known)

    # -- pairs
    # ----------------------------------------------------------------------------------------
    def pair(self, i: int, j: int) -> dict[str, Any]:
        at = f"pairs.{i}-{j}"
        p2p = {}
        for capability in P2P_CAPS:
            answer = self.nvml.p2p_status(i, j, capability)
            if answer.ok:
                p2p[capability] = P2P_STATUS.get(
                    answer.value, P2P_NVML_UNKNOWN
                )  # a code NVML added later: U
            else:
                p2p[capability] = P2P_NOT_READ
                self.unknown[f"{at}.p2p.{capability}"] = answer.reason or "unknown"
        pair: dict[str, Any] = {"src": i, "dst": j, "p2p": p2p, "pcie_ancestor": None}
        if i < j:
            # The common PCIe ancestor is symmetric and costs 10-20 ms a call on a VM: asked once
            # per unordered pair, here, and copied to the reverse pair by mirror_ancestors().
            ancestor = self.nvml.common_ancestor(i, j)
            pair["pcie_ancestor"] = TOPOLOGY_LEVEL.get(ancestor.value) if ancestor.ok else None
            if pair["pcie_ancestor"] is None:
                self.unknown[f"{at}.pcie_ancestor"] = (
                    ancestor.reason or f"unrecognised level {ancestor.value}"
                )
        return pair

    def mirror_ancestors(self, pairs: list[dict[str, Any]]) -> None:
        """Give each pair j->i (j > i) the PCIe ancestor asked for i->j."""
        by_key = {(pair["src"], pair["dst"]): pair for pair in pairs}
        for (i, j), pair in by_key.items():
            if i > j:
                pair["pcie_ancestor"] = by_key[(j, i)]["pcie_ancestor"]
                reason = self.unknown.get(f"pairs.{j}-{i}.pcie_ancestor")
                if reason is not None:
                    self.unknown[f"pairs.{i}-{j}.pcie_ancestor"] = reason

    def parallel(self, tasks: list[tuple[Any, tuple[Any, ...]]]) -> list[Any]:
        """Run per-GPU and per-pair questions concurrently on a live probe.

        NVML is thread-safe and its calls block in the driver (3-18 ms each inside a VM). On a real
        2x H200 VM the driver largely serialised them: one pool for the GPU and pair questions cut
        that phase from about 68 ms (GPUs, then pairs) to 50-60 ms, and finer tasks gained nothing
        (docs/real-hardware). Results keep their input order, so output is unchanged. A replay
        answers from memory and runs sequentially.
        """
        if self.session.replaying or len(tasks) < 2:
            return [work(*args) for work, args in tasks]
        return _daemon_map(tasks, workers=min(32, len(tasks)))

    # -- whole machine
    # ----------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        init = self.nvml.init()
        if not init.ok:
            raise _no_gpu(init.reason or "unknown")
        count_answer = self.nvml.device_count()
        if not count_answer.ok:
            raise _no_gpu(count_answer.reason or "unknown")
        count = int(count_answer.value)
        self.lap("nvml init + device count")
        host, host_unknown = collect_host(self.session, self.files)
        self.unknown.update(host_unknown)
        self.host_numa_nodes = host.get("numa_nodes")
        self.lap("host (/proc, sysfs)")
        if count == 0:
            raise NoGpuError(
                "no GPU visible: the NVIDIA driver is loaded but reports 0 devices",
                hint="check CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES and the container's "
                "--gpus option",
            )
        ordered = [(i, j) for i in range(count) for j in range(count) if i != j]
        answers = self.parallel(
            [(self.gpu, (i,)) for i in range(count)] + [(self.pair, pair) for pair in ordered]
        )
        gpus, pairs = answers[:count], answers[count:]
        self.mirror_ancestors(pairs)
        self.lap(
            f"{count} GPUs (NVML, NVLink, sysfs) and {len(ordered)} ordered pairs (P2P x5, PCIe "
            "ancestor)"
        )
        visible = self.cuda_visible(gpus)
        links = {gpu["index"]: gpu.pop("_links") for gpu in gpus}
        nvlink = topology.nvlink_pairs(gpus, links, pairs)
        software = self.software()
        self.lap("software versions")
        snapshot: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "topoctl_version": __version__,
            "source": {},
            "host": host,
            "gpus": gpus,
            "pairs": pairs,
            "nvlink": nvlink,
            "pcie": topology.pcie_tree(gpus, host),
            "software": software,
        }
        if visible is not None:
            snapshot["cuda_visible_devices"] = visible
        if self.with_torch:
            self.torch_cross_check(snapshot)
            self.lap("torch cross-check")
        pcie_checks.collect(self.session, self.nvml, self.files, snapshot, self.unknown)
        self.lap("PCIe checks (ACS, IOMMU, BAR1, counters)")
        network = collect_network(self.files, host, gpus, self.unknown)
        if network is not None:  # None: a capture from before NICs were probed (no false "no NIC")
            snapshot["network"] = network
        self.lap("NICs (RDMA, interfaces, GPUDirect)")
        self.nvml.shutdown()
        self.lap("nvml shutdown")
        snapshot["summary"] = topology.summarize(snapshot)
        snapshot["summary"].update(pcie_checks.summary(snapshot))
        snapshot["unknown"] = dict(sorted(self.unknown.items()))
        return snapshot

    def cuda_visible(self, gpus: list[dict[str, Any]]) -> SnapshotCudaVisibleDevices | None:
        """What CUDA will see under CUDA_VISIBLE_DEVICES (probe/visible.py); None when it is not set
        (or a capture did not record it)."""
        import os

        from topoctl.probe.visible import ENV_NAMES, cuda_visible

        if not self.session.replaying and "CUDA_VISIBLE_DEVICES" not in os.environ:
            return None  # asked (and recorded) only when set: captures without it stay as they were
        answer = self.session.ask(
            "host", "cuda_env", lambda: {name: os.environ.get(name) for name in ENV_NAMES}
        )
        value = (
            answer.value.get("CUDA_VISIBLE_DEVICES")
            if answer.ok and isinstance(answer.value, dict)
            else None
        )
        if not isinstance(value, str):
            return None
        order = answer.value.get("CUDA_DEVICE_ORDER")
        return cuda_visible(value, gpus, order if isinstance(order, str) else None)

    def software(self) -> dict[str, Any]:
        packages, unknown = collect_packages(self.session)
        self.unknown.update(unknown)
        cuda = self.nvml.cuda_driver_version()
        return {
            "driver": self.value(self.nvml.driver_version(), "software.driver"),
            "cuda_driver": self.value(cuda, "software.cuda_driver", topology.cuda_version_text),
            "nvml": self.nvml.nvml_version().get(),
            "cuda_runtime": cuda_from_torch_local(packages.get("torch")),
            "nccl": nccl_from_wheel(packages.get("nccl_wheel")),
            "torch": packages.get("torch"),
            "sglang": packages.get("sglang"),
            "sgl_kernel": packages.get("sgl_kernel"),
            "flashinfer": packages.get("flashinfer"),
            "vllm": packages.get("vllm"),
            "nvidia_ml_py": packages.get("nvidia_ml_py"),
        }

    def torch_cross_check(self, snapshot: dict[str, Any]) -> None:
        from topoctl.probe.torch_check import collect_torch

        answer = collect_torch(self.session)
        if not answer.ok:
            self.unknown["torch"] = answer.reason or "unknown"
            for pair in snapshot["pairs"]:
                pair["torch_can_access_peer"] = None
            return
        facts = answer.value
        software = snapshot["software"]
        software["cuda_runtime"] = facts.get("cuda_runtime") or software["cuda_runtime"]
        software["nccl"] = facts.get("nccl") or software["nccl"]
        by_bus = {
            topology.bus_key(g["pci_bus_id"]): g["index"]
            for g in snapshot["gpus"]
            if g["pci_bus_id"]
        }
        to_nvml = {}
        for device in facts.get("devices", []):
            key = topology.bus_key(device.get("pci_bus_id"))
            to_nvml[device["torch_index"]] = by_bus.get(key, device["torch_index"])
        peers = {}
        for key, value in facts.get("peer", {}).items():
            src, dst = (int(part) for part in key.split("|"))
            peers[(to_nvml.get(src, src), to_nvml.get(dst, dst))] = value
        for pair in snapshot["pairs"]:
            pair["torch_can_access_peer"] = peers.get((pair["src"], pair["dst"]))


PROBE_TIMEOUT_S = (
    120.0  # a live probe of 8 GPUs takes about a second (docs/real-hardware); a VM up to a few
)
WATCHDOG_GRACE_S = (
    1.0  # after the deadline, how long the calls still running get before the probe gives up
)


class ProbeTimeout(NoGpuError):
    """A live probe that did not finish within --timeout: an NVML call that never returned (exit 3)."""


def _daemon_map(tasks: list[tuple[Any, tuple[Any, ...]]], workers: int) -> list[Any]:
    """[work(*args) for work, args in tasks] on `workers` daemon threads, in input order; the first
    error (in input order) is raised. Daemon threads, unlike a ThreadPoolExecutor's, never keep the
    process from exiting when an NVML call hangs in one of them (the watchdog then ends the probe).
    """
    import queue

    results: list[Any] = [None] * len(tasks)
    errors: list[BaseException | None] = [None] * len(tasks)
    pending: queue.SimpleQueue[int] = queue.SimpleQueue()
    for position in range(len(tasks)):
        pending.put(position)

    def worker() -> None:
        while True:
            try:
                position = pending.get_nowait()
            except queue.Empty:
                return
            work, args = tasks[position]
            try:
                results[position] = work(*args)
            except (
                BaseException
            ) as exc:  # handed to the caller below, as ThreadPoolExecutor.map would
                errors[position] = exc

    threads = [
        threading.Thread(target=worker, name=f"topoctl-probe-{n}", daemon=True)
        for n in range(workers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for error in errors:
        if error is not None:
            raise error
    return results


def run_probe(
    session: Session,
    with_torch: bool = False,
    timings: list[tuple[str, float]] | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """Probe through `session` (live or replay). Raises NoGpuError when no GPU is visible.

    Pass a list as `timings` to receive (phase, seconds) pairs, also when the probe fails part way.
    With `timeout` (seconds, live probes only), a watchdog bounds the probe: past the deadline no
    new NVML call is made (each answers Timeout, so its field is unknown with that reason); a call
    that still has not returned WATCHDOG_GRACE_S later ends the probe with ProbeTimeout naming that
    call.
    """
    collector = _Collector(session, with_torch)
    try:
        if timeout is None or session.replaying:
            return collector.run()
        return _watched(collector, timeout)
    finally:
        if timings is not None:
            timings.extend(collector.timings)


def _watched(collector: _Collector, timeout: float) -> dict[str, Any]:
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["snapshot"] = collector.run()
        except BaseException as exc:  # re-raised in the calling thread
            outcome["error"] = exc

    collector.nvml.deadline = time.monotonic() + timeout
    thread = threading.Thread(target=work, name="topoctl-probe", daemon=True)
    thread.start()
    thread.join(timeout + WATCHDOG_GRACE_S)
    if thread.is_alive():
        hung = collector.nvml.hung_calls()
        what = (
            f"NVML call {hung[0][0]} has not returned after {hung[0][1]:.1f} s"
            if hung
            else "it is still running (no NVML call in flight)"
        )
        more = f" ({len(hung) - 1} more calls waiting)" if len(hung) > 1 else ""
        raise ProbeTimeout(
            f"the probe did not finish within {timeout:g} s: {what}{more}",
            hint="a GPU or the driver is not answering: check `nvidia-smi` and the kernel log "
            "(Xid errors); on a slow VM, raise --timeout",
        )
    if "error" in outcome:
        raise outcome["error"]
    return outcome["snapshot"]


def probe_live(
    with_torch: bool = False,
    session: Session | None = None,
    timings: list[tuple[str, float]] | None = None,
    timeout: float = PROBE_TIMEOUT_S,
) -> dict[str, Any]:
    """A live probe of this machine, with its source filled in: the one place a live snapshot is
    made (`topoctl probe` passes its recording session and timings list; show/recommend/check pass
    nothing). Bounded by `timeout` seconds (the watchdog of run_probe)."""
    snapshot = run_probe(
        session if session is not None else Session(),
        with_torch=with_torch,
        timings=timings,
        timeout=timeout,
    )
    snapshot["source"] = {
        "kind": "live",
        "name": snapshot["host"].get("hostname"),
        "captured_at": None,
    }
    return snapshot


def probe_capture(capture: dict[str, Any], name: str, kind: str = "capture") -> dict[str, Any]:
    """Replay a capture document through the same code path as a live probe.

    A capture is a file users edit, truncate and attach to bug reports: an answer of the wrong type
    (a device count that is not a small integer, a bus id that is a number) is a bad input (exit 2),
    not a traceback.
    """
    from topoctl.core.errors import TopoctlError

    count = capture.get("nvml", {}).get("nvmlDeviceGetCount")
    if (
        isinstance(count, dict)
        and "ok" in count
        and (type(count["ok"]) is not int or not 0 <= count["ok"] <= MAX_GPUS)
    ):
        above = type(count["ok"]) is int and count["ok"] > MAX_GPUS
        raise TopoctlError(
            f"{name}: not a valid capture (device count {count['ok']!r}"
            + (f", more than {MAX_GPUS}, the most one snapshot may hold)" if above else ")"),
            hint="re-record it with `topoctl probe --record FILE`",
        )
    if isinstance(count, dict) and "ok" in count:
        from topoctl.core.safe_read import check_capture_gpus

        check_capture_gpus(
            count["ok"], len(capture.get("nvml", {})), name
        )  # before any per-GPU work
    try:
        snapshot = run_probe(Session(replay=capture), with_torch=bool(capture.get("torch")))
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
        raise TopoctlError(
            f"{name}: not a valid capture (an answer has the wrong shape: "
            f"{type(exc).__name__}: {str(exc)[:120]})",
            hint="re-record it with `topoctl probe --record FILE`",
        ) from None
    snapshot["source"] = {
        "kind": kind,
        "name": name,
        "captured_at": capture.get("recorded_at"),
        "synthetic": bool(capture.get("synthetic")),
    }
    return snapshot
