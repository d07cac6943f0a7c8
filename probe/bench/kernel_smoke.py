"""One call of each kernel torch offers a decode step on this GPU, in a child process under a
watchdog: a bf16 GEMM (cuBLAS), scaled-dot-product attention (the flash or memory-efficient kernel
torch picks), and an fp8 product where the GPU has one (SM 8.9 and newer). `topoctl preflight`
runs it; a kernel missing for this GPU ("no kernel image is available") or one that hangs is a row
with the reason, never a crash of topoctl.

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import multiprocessing
import os
import queue as _queue
import time
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

from topoctl.probe.bench.records import Row
from topoctl.probe.bench.worker import MULTICAST_OFF

if TYPE_CHECKING:
    from multiprocessing.queues import Queue

    import torch

Call = Callable[[], "torch.Tensor"]


def _one(torch: ModuleType, name: str, call: Call) -> Row:
    try:
        out = call()
        torch.cuda.synchronize()
        finite = bool(torch.isfinite(out.float()).all().item())
        if not finite:
            return {"kernel": name, "status": "wrong result", "reason": "non-finite output"}
        return {"kernel": name, "status": "ok", "reason": ""}
    except Exception as exc:  # a kernel torch lacks for this GPU raises; the next one goes on
        return {"kernel": name, "status": "crashed", "reason": f"{type(exc).__name__}: {exc}"[:240]}


def _calls(torch: ModuleType) -> list[tuple[str, Call]]:
    dev = torch.device("cuda")
    a = torch.randn(16, 4096, dtype=torch.bfloat16, device=dev)
    w = torch.randn(4096, 4096, dtype=torch.bfloat16, device=dev)
    q = torch.randn(1, 32, 16, 128, dtype=torch.bfloat16, device=dev)
    kv = torch.randn(1, 32, 1024, 128, dtype=torch.bfloat16, device=dev)
    calls: list[tuple[str, Call]] = [
        ("bf16 GEMM (cuBLAS)", lambda: a @ w.t()),
        (
            "scaled-dot-product attention (bf16)",
            lambda: torch.nn.functional.scaled_dot_product_attention(q, kv, kv),
        ),
    ]
    if torch.cuda.get_device_capability(dev) >= (8, 9):
        one = torch.ones((), dtype=torch.float32, device=dev)
        a8, w8 = a.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
        calls.append(
            (
                "fp8 GEMM (torch._scaled_mm)",
                lambda: torch._scaled_mm(
                    a8, w8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16
                ),
            )
        )
    return calls


def kernel_worker(queue: Queue[Row]) -> None:
    os.environ.update(MULTICAST_OFF)
    try:
        import torch

        for name, call in _calls(torch):
            queue.put({"kernel": name, "status": "start", "reason": ""})
            queue.put(_one(torch, name, call))
        queue.put({"kernel": "", "status": "done", "reason": ""})
    except Exception as exc:
        queue.put({"kernel": "start-up", "status": "crashed", "reason": f"{exc}"[:240]})
        queue.put({"kernel": "", "status": "done", "reason": ""})


def run_kernel_smoke(timeout_s: float) -> list[Row]:
    """The rows of one kernel run; a kernel that does not return within `timeout_s` is "hung" and
    the child is killed (nothing is left running)."""
    ctx = multiprocessing.get_context("spawn")
    out: Queue[Row] = ctx.Queue()
    child = ctx.Process(target=kernel_worker, args=(out,), daemon=True)
    child.start()
    rows: list[Row] = []
    current = "start-up"
    last = time.monotonic()
    try:
        while True:
            try:
                message = out.get(timeout=0.2)
            except _queue.Empty:
                if not child.is_alive() and out.empty():
                    reason = f"the kernel process ended (exit code {child.exitcode})"
                    rows.append({"kernel": current, "status": "crashed", "reason": reason})
                    return rows
                if time.monotonic() - last > timeout_s:
                    reason = f"no answer in {timeout_s:g} s"
                    rows.append({"kernel": current, "status": "hung", "reason": reason})
                    return rows
                continue
            last = time.monotonic()
            if message["status"] == "done":
                return rows
            if message["status"] == "start":
                current = str(message["kernel"])
                continue
            rows.append(message)
    finally:
        if child.is_alive():
            child.kill()
        child.join(timeout=5)
