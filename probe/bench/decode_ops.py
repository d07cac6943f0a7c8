"""Each GEMM of a model's decode step on this GPU, timed alone: the rows the composed step reads
before the op tables' reference rows (autoconf/measured_ops.py).

Run by `topoctl bench --decode-step` after the whole pass of probe/bench/decode_step.py, in the same
worker. The CLI asks the launch model which GEMMs its step prices for the model at each TP size
(autoconf/step_model.gemm_shapes: name, N, K), so a row's shape is the one the model looks up. For
each shape and each token count M, `copies` weight matrices [N, K] are allocated so that together
they exceed L2_FLUSH_BYTES (a decode GEMM streams its weights from HBM; one matrix replayed alone
would be read from the L2 cache after the first pass), the product x[M, K] @ W.T over every copy is
captured in one CUDA graph, and replays run back to back (a sample spans about 2 ms of GPU work)
give the time per replay; divided by the copies it is the row's time.

bf16/fp16 use `x @ W.t()`; fp8 uses torch._scaled_mm with per-tensor scales (the activation padded
to 16 rows), so an fp8 row is table dtype "fp8" (per-tensor); GEMMs the model looks up in a dtype torch has no
product of (fp8_block, nvfp4, int4) are not timed and keep their reference rows. This module imports
torch lazily, in the worker.

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from topoctl.probe.bench.records import Row

if TYPE_CHECKING:
    import torch

# the op tables' GEMM dtypes (aiconfigurator's gemm_dtype values) torch has a product of, and its
# dtype for each; fp8_block, nvfp4, int4... have none, so those GEMMs keep their reference rows
TORCH_DTYPES = {"bfloat16": "bfloat16", "float16": "float16", "fp8": "float8_e4m3fn"}
L2_FLUSH_BYTES = 256 << 20  # several times any GPU's L2 (H200: 50 MiB; B200: 126 MiB)
MAX_COPIES = 256
BATCH_US = 2000.0  # GPU time between a sample's two events
MAX_INNER = 100
FP8_ROWS = 16
ORIGIN = "measured on this machine"
METHOD = (
    "topoctl bench --decode-step: one CUDA graph of the product over weight copies that exceed "
    "the L2 cache, back-to-back replay time / copies"
)


@dataclass(frozen=True)
class Gemm:
    """One GEMM the launch model prices for a decode step: its op name, N (outputs) and K (inputs)
    of one GPU's share, and the op tables' dtype it is looked up in (a TORCH_DTYPES key)."""

    name: str
    n: int
    k: int
    dtype: str = "bfloat16"


def copies_for(element: int, gemm: Gemm) -> int:
    """Weight copies whose bytes together exceed L2_FLUSH_BYTES (at least one, at most
    MAX_COPIES)."""
    nbytes = max(gemm.n * gemm.k * element, 1)
    return max(1, min(MAX_COPIES, math.ceil(L2_FLUSH_BYTES / nbytes)))


class Product:
    """x @ W.t() at one dtype, with the fp8 path's scales and padding held once."""

    def __init__(self, torch: ModuleType, table_dtype: str, device: torch.device) -> None:
        self.torch = torch
        self.fp8 = table_dtype == "fp8"
        self.dtype = getattr(torch, TORCH_DTYPES[table_dtype])
        self.compute = torch.bfloat16 if self.fp8 else self.dtype
        self.device = device
        self.element = torch.empty((), dtype=self.dtype).element_size()
        self.one = torch.ones((), dtype=torch.float32, device=device)

    def weight(self, n: int, k: int) -> torch.Tensor:
        block = self.torch.empty((n, k), dtype=self.compute, device=self.device).normal_(0, 0.02)
        return block.to(self.dtype) if self.fp8 else block

    def activation(self, m: int, k: int) -> torch.Tensor:
        rows = max(m, FP8_ROWS) if self.fp8 else m
        data = self.torch.randn(rows, k, dtype=self.compute, device=self.device)
        return data.to(self.dtype) if self.fp8 else data

    def __call__(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        if not self.fp8:
            return x @ weight.t()
        return self.torch._scaled_mm(
            x, weight.t(), scale_a=self.one, scale_b=self.one, out_dtype=self.compute
        )


def _graph_us(torch: ModuleType, run: Callable[[], object], replays: int) -> list[float]:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            run()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run()
    inner = 1
    times = []
    for _ in range(replays + 2):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0 / inner)
        # back-to-back replays filling BATCH_US: a GPU idle between short replays runs the first
        # kernels slower (up to 25% on H100), where a decode step's kernels follow one another
        inner = max(1, min(MAX_INNER, math.ceil(BATCH_US / max(times[-1], 1.0))))
    del graph
    return times[2:]


def time_gemm(
    product: Product, gemm: Gemm, tokens: tuple[int, ...], replays: int
) -> Iterator[tuple[int, list[float], int]]:
    """(M, per-product times in us, copies) for each token count, the weights allocated once (and
    freed with this generator)."""
    copies = copies_for(product.element, gemm)
    weights = [product.weight(gemm.n, gemm.k) for _ in range(copies)]
    for m in tokens:
        x = product.activation(m, gemm.k)

        def run(x: torch.Tensor = x, weights: list[torch.Tensor] = weights) -> None:
            for weight in weights:
                product(x, weight)

        times = _graph_us(product.torch, run, replays)
        yield m, [t / copies for t in times], copies


def measure_ops(
    model: str,
    tp: int,
    dtype_name: str,
    gemms: tuple[Gemm, ...],
    tokens: tuple[int, ...],
    replays: int = 20,
    announce: Callable[[str], None] = lambda item: None,
) -> Iterator[Row]:
    """A row per GEMM and token count, each as soon as it is measured (needs a CUDA GPU);
    `dtype_name` is the request's pass format, kept on the row for the record."""
    import torch

    device = torch.device("cuda")
    products: dict[str, Product] = {}
    name, version = torch.cuda.get_device_name(0), str(torch.__version__)
    for gemm in gemms:
        if gemm.dtype not in TORCH_DTYPES:
            continue
        product = products.setdefault(gemm.dtype, Product(torch, gemm.dtype, device))
        announce(f"decode op {model} TP {tp} {gemm.name} [{gemm.n}x{gemm.k}] {gemm.dtype}")
        for m, times, copies in time_gemm(product, gemm, tokens, replays):
            yield {
                "model": model,
                "tp": tp,
                "dtype": dtype_name,
                "op": gemm.name,
                "kind": "gemm",
                "gemm_dtype": gemm.dtype,
                "m": m,
                "n": gemm.n,
                "k": gemm.k,
                "us": statistics.median(times),
                "us_min": min(times),
                "us_max": max(times),
                "samples": len(times),
                "weight_copies": copies,
                "cuda_graph": True,
                "method": METHOD,
                "origin": ORIGIN,
                "status": "ok",
                "device": name,
                "torch": version,
            }


def merge_op_rows(existing: list[Row] | None, rows: list[Row]) -> list[Row]:
    """The snapshot's op rows with those of the (model, TP) measured now replaced (a row's format is
    the one the step looks up, whatever --dtype the pass ran at)."""

    def key(row: Row) -> tuple[object, object]:
        return row.get("model"), row.get("tp", 1)

    measured = {key(r) for r in rows}
    return [r for r in existing or [] if key(r) not in measured] + rows
