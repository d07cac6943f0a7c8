"""The processes `topoctl bench` starts: one per GPU for the collectives, one for the P2P pairs.

Everything here imports torch. A worker reports through a multiprocessing queue, one message at a
time: `{"kind": "start", "item": label}` before each measurement (so the parent's watchdog can name
what hung), `{"kind": "row", "section": ..., "row": {...}}` after it, `{"kind": "fatal", "reason":
...}` when it cannot go on, and `{"kind": "done"}`. Only rank 0 sends rows; every rank takes part in
every collective.

GPU-only parts sit behind `Device` (devices: CudaDevice, CpuDevice): CI runs the same harness, sweep
and statistics on CPU over gloo; CUDA graphs, symmetric memory and peer copies need the GPU back
end.

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import gc
import os
import time
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable

from topoctl.probe.bench.plan import Plan, repetitions
from topoctl.probe.bench.records import Bytes, GBps, Message, MessageQueue, Row
from topoctl.probe.bench.stats import spread

if TYPE_CHECKING:
    import torch

    from topoctl.probe.bench import decode_step

MULTICAST_OFF = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}


EMPTY_GRAPH = (
    "the captured CUDA graph is empty: the call launched no GPU work here (NCCL at "
    "world size 1 moves no data)"
)
WORLD_ONE_NOTE = "world size 1: NCCL moves no data; this is the cost of the call alone"


class Unavailable(Exception):
    """A path or feature this machine cannot run; the message is the reason recorded."""


def _torch() -> ModuleType:
    import torch

    return torch


# ---------------------------------------------------------------------------------------------
# devices


class Device:
    """Where tensors live and how time is taken. Subclasses: CudaDevice (GPU), CpuDevice (gloo on
    CPU)."""

    graphs_reason: str | None = None  # why CUDA graphs cannot be captured here (None: they can)

    def __init__(self, index: int) -> None:
        self.index = index
        self.torch = _torch()

    def tensor_device(self) -> torch.device:
        raise NotImplementedError

    def sync(self) -> None:
        raise NotImplementedError

    def time(self, fn: Callable[[], object], count: int) -> float:
        """Seconds for `count` back-to-back calls of fn (device work included)."""
        raise NotImplementedError

    def capture(self, fn: Callable[[], object], count: int) -> Callable[[], object]:
        """A callable that replays `count` calls of fn captured in one CUDA graph."""
        raise Unavailable(self.graphs_reason or "CUDA graphs are not available")


class CpuDevice(Device):
    graphs_reason = "CUDA graphs need a GPU (CPU back end)"

    def tensor_device(self) -> torch.device:
        return self.torch.device("cpu")

    def sync(self) -> None:
        return None

    def time(self, fn: Callable[[], object], count: int) -> float:
        started = time.perf_counter()
        for _ in range(count):
            fn()
        return time.perf_counter() - started


class CudaDevice(Device):
    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.torch.cuda.set_device(index)
        self.device = self.torch.device("cuda", index)

    def tensor_device(self) -> torch.device:
        return self.device

    def sync(self) -> None:
        self.torch.cuda.synchronize(self.device)

    def time(self, fn: Callable[[], object], count: int) -> float:
        cuda = self.torch.cuda
        start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        start.record()
        for _ in range(count):
            fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1000.0

    def capture(self, fn: Callable[[], object], count: int) -> Callable[[], object]:
        cuda = self.torch.cuda
        side = cuda.Stream()
        side.wait_stream(cuda.current_stream())
        with cuda.stream(side):  # warm up outside the capture, as PyTorch asks
            for _ in range(2):
                fn()
        cuda.current_stream().wait_stream(side)
        self.sync()
        graph = cuda.CUDAGraph()
        import warnings

        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with cuda.graph(graph):
                    for _ in range(count):
                        fn()
        except Exception as exc:
            raise Unavailable(
                f"CUDA graph capture failed: {type(exc).__name__}: {str(exc)[:160]}"
            ) from None
        if any("graph is empty" in str(warning.message).lower() for warning in caught):
            # PyTorch warns when a capture recorded no GPU work (seen with NCCL at world size 1 on
            # torch 2.11): replaying it would time an empty graph, not the operation.
            raise Unavailable(EMPTY_GRAPH)
        return graph.replay


# ------------------------------------------------------------------------------------------
# measuring


def measure(
    device: Device, fn: Callable[[], object], slice_s: float, graph: bool
) -> tuple[list[float], int]:
    """Per-operation seconds, one per sample, and the number of operations timed."""
    for _ in range(3):
        fn()
    device.sync()
    per_op = device.time(fn, 1)
    inner, samples = _agree(device, *repetitions(per_op, slice_s))
    if graph:
        replay = device.capture(fn, inner)
        replay()
        device.sync()
        times = [device.time(replay, 1) / inner for _ in range(samples)]
    else:
        times = [device.time(fn, inner) / inner for _ in range(samples)]
    return times, inner * samples


def _agree(device: Device, inner: int, samples: int) -> tuple[int, int]:
    """Every rank must issue the same number of collectives: the largest (inner, samples) of any
    rank wins."""
    import torch.distributed as dist

    if not dist.is_initialized() or dist.get_world_size() == 1:
        return inner, samples
    torch = device.torch
    tensor = torch.tensor([inner, samples], dtype=torch.int64, device=device.tensor_device())
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return int(tensor[0].item()), int(tensor[1].item())


def _all_ranks_ok(ok: bool, device: Device) -> bool:
    """Whether every rank's data check passed: ranks that disagree would go on to issue different
    collectives (one times the path, another returns its failed row) and the group would desync."""
    import torch.distributed as dist

    if not dist.is_initialized() or dist.get_world_size() == 1:
        return ok
    torch = device.torch
    flag = torch.tensor([1 if ok else 0], dtype=torch.int64, device=device.tensor_device())
    dist.all_reduce(flag, op=dist.ReduceOp.MIN)
    return bool(flag.item() == 1)


def _slowest_rank(times: list[float], device: Device) -> list[float]:
    """Each sample as the slowest rank saw it (a collective is as slow as its slowest member)."""
    import torch.distributed as dist

    torch = device.torch
    tensor = torch.tensor(times, dtype=torch.float64, device=device.tensor_device())
    if dist.get_world_size() > 1:
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return [float(value) for value in tensor.tolist()]


def _dtype(torch: ModuleType, name: str) -> torch.dtype:
    return {"bfloat16": torch.bfloat16, "float32": torch.float32, "float16": torch.float16}[name]


def _element_count(nbytes: Bytes, torch_dtype: torch.dtype) -> int:
    width = _torch().tensor([], dtype=torch_dtype).element_size()
    return max(1, nbytes // width)


# ------------------------------------------------------------------------------------- allreduce
# paths


class Path:
    """One allreduce implementation: `prepare(nbytes)` returns the call to time and a checker of its
    result."""

    name = "?"
    variant: str | None = None

    def __init__(self, device: Device, plan: Plan) -> None:
        self.device, self.plan = device, plan
        self.torch = device.torch

    def available(self) -> None:
        """Raise Unavailable with the reason when this machine cannot run the path."""

    def prepare(self, nbytes: int) -> tuple[Callable[[], object], Callable[[], bool]]:
        raise NotImplementedError


class DistPath(Path):
    """torch.distributed.all_reduce on the process group: NCCL on GPUs, gloo on CPU."""

    def __init__(self, device: Device, plan: Plan) -> None:
        super().__init__(device, plan)
        self.name = "nccl" if plan.backend == "nccl" else plan.backend

    def prepare(self, nbytes: int) -> tuple[Callable[[], object], Callable[[], bool]]:
        import torch.distributed as dist

        torch, where = self.torch, self.device.tensor_device()
        dtype = _dtype(torch, self.plan.dtype)
        count = _element_count(nbytes, dtype)
        buffer = torch.empty(count, dtype=dtype, device=where)

        fault = self.plan.faults.get("allreduce") if self.plan.backend != "nccl" else None

        def check() -> bool:
            _allreduce_fault(fault, dist.get_rank())
            buffer.fill_(dist.get_rank() + 1)
            dist.all_reduce(buffer)
            if fault == "corrupt" and dist.get_rank() == 0:
                buffer.add_(1)  # the CPU fake's stand-in for a path that returns wrong sums
            world = dist.get_world_size()
            expected = world * (world + 1) / 2
            ok = bool(torch.all(buffer == expected).item())
            buffer.normal_(0, 1e-3)  # never time on zeros or on growing sums
            return ok

        return (lambda: dist.all_reduce(buffer)), check


def _allreduce_fault(fault: str | None, rank: int) -> None:
    """The CPU fake's stand-ins for a collective that never completes and a worker that dies
    (Plan.faults["allreduce"]: hang | die | corrupt; rank 1 misbehaves, the others wait on it)."""
    if rank != 1:
        return
    if fault == "die":
        os._exit(3)
    while fault == "hang":
        time.sleep(1.0)


class SymmMemPath(Path):
    """torch symmetric memory one-shot / two-shot allreduce (no multicast:
    TORCH_SYMM_MEM_DISABLE_MULTICAST=1)."""

    name = "torch_symm_mem"

    def __init__(self, device: Device, plan: Plan, variant: str) -> None:
        super().__init__(device, plan)
        self.variant = variant

    def available(self) -> None:
        if not isinstance(self.device, CudaDevice):
            raise Unavailable("torch symmetric memory needs GPUs (CPU back end)")
        if os.environ.get("TORCH_SYMM_MEM_DISABLE_MULTICAST") != "1":
            raise Unavailable(
                "TORCH_SYMM_MEM_DISABLE_MULTICAST=1 is not set: refusing to risk multicast"
            )
        try:
            import torch.distributed._symmetric_memory  # noqa: F401
        except Exception as exc:
            raise Unavailable(
                f"torch.distributed._symmetric_memory: {type(exc).__name__}: {exc}"
            ) from None
        op = "one_shot_all_reduce" if self.variant == "one_shot" else "two_shot_all_reduce_"
        if not hasattr(getattr(self.torch.ops, "symm_mem", None), op):
            raise Unavailable(f"this torch has no torch.ops.symm_mem.{op}")

    def prepare(self, nbytes: int) -> tuple[Callable[[], object], Callable[[], bool]]:
        import torch.distributed as dist
        import torch.distributed._symmetric_memory as symm_mem

        torch = self.torch
        dtype = _dtype(torch, self.plan.dtype)
        count = _element_count(nbytes, dtype)
        world_group = dist.group.WORLD
        if world_group is None:
            raise Unavailable("no default process group")
        group = world_group.group_name
        try:
            buffer = symm_mem.empty(count, dtype=dtype, device=self.device.tensor_device())
            symm_mem.rendezvous(buffer, group)
        except Exception as exc:
            raise Unavailable(
                f"symmetric memory rendezvous failed: {type(exc).__name__}: {str(exc)[:160]}"
            ) from None
        ops = torch.ops.symm_mem

        if self.variant == "one_shot":

            def call() -> object:
                return ops.one_shot_all_reduce(buffer, "sum", group)
        else:

            def call() -> object:
                return ops.two_shot_all_reduce_(buffer, "sum", group)

        def check() -> bool:
            buffer.fill_(dist.get_rank() + 1)
            dist.barrier()
            out = call()
            out = buffer if self.variant == "two_shot" else out
            world = dist.get_world_size()
            ok = bool(torch.all(out == world * (world + 1) / 2).item())
            buffer.normal_(0, 1e-3)
            dist.barrier()
            return ok

        return call, check


def custom_allreduce_reason() -> str:
    """Why SGLang's / vLLM's custom allreduce is not measured on this machine."""
    import importlib.util

    found = [name for name in ("sglang", "vllm") if importlib.util.find_spec(name) is not None]
    if not found:
        return "SGLang and vLLM are not installed (their custom allreduce kernels come with them)"
    return (
        f"{' and '.join(found)} installed, but topoctl bench does not drive its custom allreduce "
        "yet "
        "(measure it with the package's own benchmark)"
    )


def build_paths(device: Device, plan: Plan) -> tuple[list[Path], list[Row]]:
    """The paths to time, and the rows of the paths that cannot run here (with the reason)."""
    paths: list[Path] = [DistPath(device, plan)]
    unavailable: list[Row] = []
    if "torch_symm_mem" in plan.paths:
        for variant in ("one_shot", "two_shot"):
            path = SymmMemPath(device, plan, variant)
            try:
                path.available()
                paths.append(path)
            except Unavailable as why:
                unavailable.append(_unavailable_row(plan, "torch_symm_mem", str(why), variant))
    if "custom" in plan.paths:
        unavailable.append(_unavailable_row(plan, "custom", custom_allreduce_reason()))
        # SGLang's other allreduce paths (rules/sglang/data/spelling.yaml) live inside SGLang's own
        # process groups: recorded, with the reason, rather than left out.
        for name in ("pcie_ipc", "nccl_symm_mem"):
            unavailable.append(
                _unavailable_row(
                    plan,
                    name,
                    f"SGLang's {name} allreduce runs inside SGLang's "
                    "process groups; topoctl bench does not drive it yet",
                )
            )
    return paths, unavailable


def _unavailable_row(plan: Plan, path: str, reason: str, variant: str | None = None) -> Row:
    row: Row = {
        "path": path,
        "world_size": plan.world_size,
        "gpus": list(range(plan.world_size)),
        "bytes": None,
        "dtype": plan.dtype,
        "cuda_graph": None,
        "latency_us": None,
        "repetitions": 0,
        "status": "unavailable",
        "reason": reason,
    }
    if variant:
        row["variant"] = variant
    return row


# --------------------------------------------------------------------------------------------
# workers


def _send(queue: MessageQueue, rank: int, message: Message) -> None:
    if rank == 0:
        queue.put(message)


def _quiet_interrupts() -> None:
    """Ctrl-C reaches the whole process group: the parent ends the workers itself and keeps what
    they sent, so a worker ignores SIGINT instead of dying with a traceback."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def allreduce_worker(rank: int, plan_dict: dict[str, Any], port: int, queue: MessageQueue) -> None:
    """One rank of the collective measurements (spawned by runner.py)."""
    _quiet_interrupts()
    os.environ.update(MULTICAST_OFF)
    plan = Plan(**plan_dict)
    try:
        import torch.distributed as dist

        device: Device = CudaDevice(rank) if plan.backend == "nccl" else CpuDevice(rank)
        if (
            plan.backend != "nccl" and plan.faults.get("init") == "fail"
        ):  # the CPU fake's stand-in for an NCCL failure
            raise RuntimeError("simulated process group failure")
        import datetime

        address, timeout = f"tcp://127.0.0.1:{port}", datetime.timedelta(seconds=plan.timeout_s)
        if plan.backend == "nccl":  # device_id only where NCCL binds the group to this rank's GPU
            dist.init_process_group(
                plan.backend,
                init_method=address,
                rank=rank,
                world_size=plan.world_size,
                timeout=timeout,
                device_id=device.tensor_device(),
            )
        else:
            dist.init_process_group(
                plan.backend,
                init_method=address,
                rank=rank,
                world_size=plan.world_size,
                timeout=timeout,
            )
    except Exception as exc:
        queue.put(
            {
                "kind": "fatal",
                "rank": rank,
                "reason": f"{plan.backend.upper()} init failed: {type(exc).__name__}: "
                f"{str(exc)[:200]}",
            }
        )
        return
    try:
        _allreduce_sweep(rank, plan, device, queue)
        _coalescing(rank, plan, device, queue)
        _send(queue, rank, {"kind": "done"})
    except Exception as exc:
        queue.put(
            {"kind": "fatal", "rank": rank, "reason": f"{type(exc).__name__}: {str(exc)[:200]}"}
        )
    finally:
        try:
            dist.destroy_process_group()
        except Exception:
            pass


def _allreduce_sweep(rank: int, plan: Plan, device: Device, queue: MessageQueue) -> None:
    paths, unavailable = build_paths(device, plan)
    for row in unavailable:
        _send(queue, rank, {"kind": "row", "section": "allreduce", "row": row})
    sizes = plan.all_sizes()
    modes = [False, True]
    items = max(1, len(paths) * len(sizes) * len(modes))
    slice_s = plan.slice_s("allreduce", items)
    for path in paths:
        for nbytes in sizes:
            for graph in modes:
                label = (
                    f"allreduce {path.name}{'/' + path.variant if path.variant else ''} {nbytes} B"
                    f"{' graph' if graph else ''}"
                )
                _send(queue, rank, {"kind": "start", "item": label, "section": "allreduce"})
                row = _allreduce_row(plan, device, path, nbytes, graph, slice_s)
                _send(queue, rank, {"kind": "row", "section": "allreduce", "row": row})


def _allreduce_row(
    plan: Plan, device: Device, path: Path, nbytes: int, graph: bool, slice_s: float
) -> Row:
    torch = device.torch
    row: Row = {
        "path": path.name,
        "world_size": plan.world_size,
        "gpus": list(range(plan.world_size)),
        "bytes": nbytes,
        "dtype": plan.dtype,
        "cuda_graph": graph,
    }
    if path.variant:
        row["variant"] = path.variant
    try:
        if graph and device.graphs_reason:
            raise Unavailable(device.graphs_reason)
        call, check = path.prepare(nbytes)
        if not _all_ranks_ok(check(), device):
            return {
                **row,
                "latency_us": None,
                "repetitions": 0,
                "status": "failed",
                "reason": "wrong result: the allreduce did not sum the ranks' values",
            }
        times, count = measure(device, call, slice_s, graph)
        times = _slowest_rank(times, device)
    except Unavailable as why:
        return {
            **row,
            "latency_us": None,
            "repetitions": 0,
            "status": "unavailable",
            "reason": str(why),
        }
    except torch.cuda.OutOfMemoryError:
        return {
            **row,
            "latency_us": None,
            "repetitions": 0,
            "status": "failed",
            "reason": "out of memory on the GPU (is another process using it?)",
        }
    out = {
        **row,
        "latency_us": spread(times, 1e6),
        "repetitions": count,
        "status": "ok",
        "reason": None,
    }
    if plan.world_size == 1 and isinstance(path, DistPath):
        out["note"] = WORLD_ONE_NOTE
    return out


def _coalescing(rank: int, plan: Plan, device: Device, queue: MessageQueue) -> None:
    import torch.distributed as dist

    torch = device.torch
    n, each = plan.coalescing["n"], plan.coalescing["bytes_each"]
    dtype = _dtype(torch, plan.dtype)
    where = device.tensor_device()
    small = [
        torch.randn(_element_count(each, dtype), dtype=torch.float32, device=where).to(dtype) * 1e-3
        for _ in range(n)
    ]
    large_bytes = n * each // 2
    large = [
        torch.randn(_element_count(large_bytes, dtype), dtype=torch.float32, device=where).to(dtype)
        * 1e-3
        for _ in range(2)
    ]

    def many() -> None:
        for tensor in small:
            dist.all_reduce(tensor)

    def two() -> None:
        for tensor in large:
            dist.all_reduce(tensor)

    graph = device.graphs_reason is None
    slice_s = plan.slice_s("coalescing", 2)
    _send(
        queue,
        rank,
        {
            "kind": "start",
            "item": f"coalescing {n} x {each} B vs 2 x {large_bytes} B",
            "section": "coalescing",
        },
    )
    row: Row = {
        "path": "nccl" if plan.backend == "nccl" else plan.backend,
        "world_size": plan.world_size,
        "n": n,
        "bytes_each": each,
        "bytes_large": large_bytes,
        "cuda_graph": graph,
        "dtype": plan.dtype,
    }
    try:
        results = {}
        for name, fn in (("many_small", many), ("two_large", two)):
            times, count = measure(device, fn, slice_s / 2, graph)
            results[name] = spread(_slowest_rank(times, device), 1e6)
            row["repetitions"] = count
        row.update(
            {
                "many_small_us": results["many_small"]["median"],
                "two_large_us": results["two_large"]["median"],
                "many_small": results["many_small"],
                "two_large": results["two_large"],
                "status": "ok",
            }
        )
    except Unavailable as why:
        row.update({"status": "unavailable", "reason": str(why)})
    except torch.cuda.OutOfMemoryError:
        row.update({"status": "failed", "reason": "out of memory on the GPU"})
    _send(queue, rank, {"kind": "row", "section": "coalescing", "row": row})


# ------------------------------------------------------------------------------------------------
# P2P


def _pattern(torch: ModuleType, count: int, device: torch.device, seed: int) -> torch.Tensor:
    """A deterministic, non-constant int32 pattern, made where it is needed (never copied to
    compare)."""
    values = torch.arange(count, dtype=torch.int64, device=device) * 2654435761 + seed
    return (values & 0x7FFFFFFF).to(torch.int32)


class PeerCopies:
    """Copies between devices for the P2P checks. CudaPeers copies between GPUs; FakePeers (CPU)
    stands in for them in CI, with faults (hang, corrupt, crawl) a test can ask for."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.torch = _torch()

    def where(self, index: int) -> torch.device:
        raise NotImplementedError

    def copy(self, dst: torch.Tensor, src: torch.Tensor, pair: tuple[int, int]) -> None:
        dst.copy_(src, non_blocking=True)

    def sync(self, *indices: int) -> None:
        return None

    def bus_ids(self) -> list[str | None]:
        return [None] * self.plan.world_size


class CudaPeers(PeerCopies):
    def where(self, index: int) -> torch.device:
        return self.torch.device("cuda", index)

    def sync(self, *indices: int) -> None:
        for index in indices:
            self.torch.cuda.synchronize(index)

    def bus_ids(self) -> list[str | None]:
        out: list[str | None] = []
        for index in range(self.torch.cuda.device_count()):
            props = self.torch.cuda.get_device_properties(index)
            if hasattr(props, "pci_bus_id"):
                out.append(
                    f"{getattr(props, 'pci_domain_id', 0):08x}:{props.pci_bus_id:02x}:"
                    f"{getattr(props, 'pci_device_id', 0):02x}.0"
                )
            else:
                out.append(None)
        return out


class FakePeers(PeerCopies):
    def where(self, index: int) -> torch.device:
        return self.torch.device("cpu")

    def copy(self, dst: torch.Tensor, src: torch.Tensor, pair: tuple[int, int]) -> None:
        fault = self.plan.faults.get(f"{pair[0]}-{pair[1]}")
        if fault == "hang":
            time.sleep(3600)
        if fault == "crawl":
            time.sleep(2.0)  # 0.5 MB/s for the CPU back end's 1 MiB buffer
        dst.copy_(src)
        if fault == "corrupt":
            dst.view(-1)[dst.numel() // 2] += 1


def p2p_worker(
    plan_dict: dict[str, Any],
    pairs: list[list[int]],
    queue: MessageQueue,
    bad: list[list[int]] | None = None,
) -> None:
    """P2P health, bandwidth and latency for `pairs`, in one process that sees every GPU (spawned).
    `bad`: pairs already found broken (an earlier worker hung on them): a both-ways copy never runs
    over them again."""
    _quiet_interrupts()
    os.environ.update(MULTICAST_OFF)
    plan = Plan(**plan_dict)
    broken = {tuple(pair) for pair in bad or []}
    try:
        peers: PeerCopies = CudaPeers(plan) if plan.backend == "nccl" else FakePeers(plan)
        queue.put({"kind": "devices", "bus_ids": peers.bus_ids()})
        if plan.backend == "nccl":
            _local_copies(plan, peers, queue)
        for src, dst in pairs:
            queue.put(
                {"kind": "start", "item": f"p2p {src}->{dst}", "section": "p2p", "pair": [src, dst]}
            )
            row = _pair_row(plan, peers, src, dst, reverse_broken=(dst, src) in broken)
            if not row["healthy"]:
                broken.add((src, dst))
            queue.put({"kind": "row", "section": "p2p", "row": row})
        queue.put({"kind": "done"})
    except Exception as exc:
        queue.put({"kind": "fatal", "reason": f"{type(exc).__name__}: {str(exc)[:200]}"})


def _copy_seconds(
    peers: PeerCopies,
    pairs: list[tuple[torch.Tensor, torch.Tensor, tuple[int, int]]],
    devices: list[int],
    reps: int,
) -> float:
    peers.sync(*devices)
    started = time.perf_counter()
    for _ in range(reps):
        for dst, src, pair in pairs:
            peers.copy(dst, src, pair)
    peers.sync(*devices)
    return time.perf_counter() - started


def _local_copies(plan: Plan, peers: PeerCopies, queue: MessageQueue) -> None:
    """Device-to-device copy bandwidth inside each GPU: the yardstick for the peer figures (bytes
    read + written are 2x the buffer; reported as buffer bytes per second, like the peer copies)."""
    torch = peers.torch
    for index in range(plan.world_size):
        queue.put({"kind": "start", "item": f"local copy on GPU {index}", "section": "local_copy"})
        where = peers.where(index)
        count = plan.p2p_bytes // 4
        src = _pattern(torch, count, where, 7)
        dst = torch.empty_like(src)
        _copy_seconds(peers, [(dst, src, (index, index))], [index], 2)
        samples = [
            _copy_seconds(peers, [(dst, src, (index, index))], [index], 5) / 5 for _ in range(5)
        ]
        bandwidth = [plan.p2p_bytes / seconds / 1e9 for seconds in samples]
        queue.put(
            {
                "kind": "row",
                "section": "local_copy",
                "row": {
                    "gpu": index,
                    "bytes": plan.p2p_bytes,
                    "bandwidth_gbps": spread(bandwidth, 1.0, 1),
                    "repetitions": 25,
                },
            }
        )


def _gbps(value: GBps) -> GBps:
    """GB/s for the record: one decimal, or three significant digits below 1 GB/s (never rounded to
    0)."""
    return round(value, 1) if value >= 1 else float(f"{value:.3g}")


def _pair_row(
    plan: Plan, peers: PeerCopies, src: int, dst: int, reverse_broken: bool = False
) -> Row:
    torch = peers.torch
    pair = (src, dst)
    row: Row = {
        "src": src,
        "dst": dst,
        "healthy": False,
        "reason": None,
        "bandwidth_gbps": None,
        "latency_us": None,
        "bytes": plan.p2p_bytes,
    }
    try:
        count = plan.p2p_bytes // 4
        source = _pattern(torch, count, peers.where(src), 11 + src)
        target = torch.full((count,), -1, dtype=torch.int32, device=peers.where(dst))
        started = time.perf_counter()
        peers.copy(target, source, pair)
        peers.sync(src, dst)
        first = time.perf_counter() - started
        if not torch.equal(target, _pattern(torch, count, peers.where(dst), 11 + src)):
            row["reason"] = "data mismatch: the copied buffer differs from what was sent"
            return row
        first_gbps = plan.p2p_bytes / max(first, 1e-9) / 1e9
        if first_gbps < plan.crawl_gbps:
            # The first copy also pays for enabling peer access: a second one decides. Both slow:
            # crawling, and the budget is not spent on it.
            first = _copy_seconds(peers, [(target, source, pair)], [src, dst], 1)
            first_gbps = plan.p2p_bytes / max(first, 1e-9) / 1e9
        if first_gbps < plan.crawl_gbps:
            row["bandwidth_gbps"] = {"one_way": _gbps(first_gbps), "both_ways": None}
            row["first_copy_s"] = round(first, 4)
            row["reason"] = f"crawl: {first_gbps:.3g} GB/s one way (below {plan.crawl_gbps:g} GB/s)"
            return row
        # The P2P share of the budget, split over the pairs: 3 samples one way and 3 both ways of
        # `reps` copies each (9 x reps buffer copies), 1 to 5 copies per sample.
        slice_s = plan.slice_s("p2p", len(plan.p2p_pairs))
        reps = max(1, min(5, int(slice_s / (9 * max(first, 1e-6)))))
        row["repetitions"] = 3 * reps
        one_way = [
            plan.p2p_bytes
            / (_copy_seconds(peers, [(target, source, pair)], [src, dst], reps) / reps)
            / 1e9
            for _ in range(3)
        ]
        both: list[float] | None = None
        if (
            not reverse_broken
        ):  # both ways needs the reverse direction, which failed already: not again
            back_src = _pattern(torch, count, peers.where(dst), 5)
            back_dst = torch.empty(count, dtype=torch.int32, device=peers.where(src))
            both = [
                2
                * plan.p2p_bytes
                / (
                    _copy_seconds(
                        peers,
                        [(target, source, pair), (back_dst, back_src, (dst, src))],
                        [src, dst],
                        reps,
                    )
                    / reps
                )
                / 1e9
                for _ in range(3)
            ]
        tiny_src = source[:2]
        tiny_dst = target[:2]
        latency_reps = 100
        latency = [
            _copy_seconds(peers, [(tiny_dst, tiny_src, pair)], [src, dst], latency_reps)
            / latency_reps
            * 1e6
            for _ in range(3)
        ]
        one_way_gbps = sorted(one_way)[1]
        row["bandwidth_gbps"] = {
            "one_way": _gbps(one_way_gbps),
            "both_ways": _gbps(sorted(both)[1]) if both else None,
        }
        row["latency_us"] = round(sorted(latency)[1], 2)
        row["first_copy_s"] = round(first, 4)
        if one_way_gbps < plan.crawl_gbps:
            row["reason"] = (
                f"crawl: {one_way_gbps:.3g} GB/s one way (below {plan.crawl_gbps:g} GB/s)"
            )
            return row
        row["healthy"] = True
    except torch.cuda.OutOfMemoryError:
        row["reason"] = "out of memory on the GPU (is another process using it?)"
    except RuntimeError as exc:
        row["reason"] = f"copy failed: {str(exc)[:160]}"
    return row


def decode_step_worker(requests: list[decode_step.Request], queue: MessageQueue) -> None:
    """The decode-step measurements (probe/bench/decode_step.py), one request after another; a
    request that fails (no fp8 product on this GPU, out of memory) is recorded as a row with its
    reason and the next one goes on."""
    _quiet_interrupts()
    os.environ.update(MULTICAST_OFF)
    from topoctl.probe.bench import decode_ops, decode_step

    def announce(item: str) -> None:
        queue.put({"kind": "start", "item": item, "section": "decode_step"})

    try:
        for request in requests:
            try:
                for row in decode_step.measure(request, announce):
                    queue.put({"kind": "row", "section": "decode_step", "row": row})
                if request.on_gpu and request.gemms:
                    for row in decode_ops.measure_ops(
                        request.shapes.name,
                        request.shapes.tp,
                        request.dtype,
                        request.gemms,
                        request.tokens,
                        request.replays,
                        announce,
                    ):
                        queue.put({"kind": "row", "section": "decode_ops", "row": row})
            except Exception as exc:
                queue.put(
                    {
                        "kind": "row",
                        "section": "decode_step",
                        "row": decode_step.failed_row(
                            request, f"{type(exc).__name__}: {str(exc)[:200]}"
                        ),
                    }
                )
            _free_gpu_memory()
        queue.put({"kind": "done"})
    except Exception as exc:
        queue.put({"kind": "fatal", "reason": f"{type(exc).__name__}: {str(exc)[:200]}"})


def _free_gpu_memory() -> None:
    gc.collect()
    torch = _torch()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
