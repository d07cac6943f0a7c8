"""The model's own decode step on this GPU: its matrices, at its dtype, streamed layer after layer.

Run by `topoctl bench --decode-step --model NAME --tp LIST` (in a worker process of
probe/bench/runner.py).

For each layer of the model (its shapes from the built-in profile or a config.json, one GPU's share
under tensor parallelism TP) one set of weight matrices is allocated on the GPU: the fused QKV and
output projections, the gated MLP (gate+up, down) of a dense layer, and for an MoE layer the routed
experts. A forward over T tokens multiplies a [T, hidden] activation by every matrix of every layer
in turn; an MoE layer reads the distinct experts T tokens are routed to (k experts per token drawn
uniformly) in one product for the up projections and one for the down projections, as a fused MoE
kernel reads every routed expert's weights once. The whole pass is captured in one CUDA graph and
replayed; time per replay gives the achieved bandwidth (weight bytes read / time) and the time per
layer. The same pass is then run without a graph and timed with the host clock, and a
device-to-device copy is timed as a third figure.

Weights are bf16/fp16 (`x @ W`) or fp8 e4m3 (`torch._scaled_mm`, per-tensor scales, the activation
padded to 16 rows as cuBLASLt's fp8 products want; the bytes read are the weights' either way).
4-bit formats have no plain-torch product, so they are not timed here. When the whole shard does not
fit in 80% of the free GPU memory, the first layers that fit are measured (`layers` against
`model_layers`): every layer of a kind has the same matrices, so the time per layer carries over;
the bytes per layer are what the launch model reads.

The rows are what the launch model reads first (snapshot measurements.decode_step; origin "measured
on this machine"). Attention over a KV cache, norms and sampling are not in the pass: it measures
the weight reads. This module imports torch (lazily, in the worker); nothing on the import path of
recommend/check/show does.

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import json
import random
import statistics
import time
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Iterator

from topoctl.probe.bench.decode_ops import Gemm
from topoctl.probe.bench.records import Bytes, Microseconds, Row

if TYPE_CHECKING:
    import torch

DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp8": "float8_e4m3fn"}
FP8_ROWS = 16  # cuBLASLt's fp8 products want every dimension a multiple of 16
MEMORY_SHARE = 0.8  # of the free GPU memory the weights may take
ORIGIN = "measured on this machine"


@dataclass(frozen=True)
class Shapes:
    """The matrix shapes of one GPU's share of a model's decoder layers."""

    name: str
    layers: int
    hidden: int
    qkv_out: int
    o_in: int
    inter: int  # dense MLP width (0 when every layer is MoE)
    experts: int
    active: int
    moe_inter: int
    dense_layers: int
    tp: int = 1
    qkv_fixed: int = (
        0  # columns of the first attention matrix that TP does not split (MLA's down-projections)
    )
    shared: int = 0  # shared experts every token of an MoE layer reads

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers if self.experts else 0


def shapes_from_config(name: str, text: dict[str, Any]) -> Shapes:
    """Shapes from a config.json's values (the keys models.py reads). MLA attention (kv_lora_rank
    set) has five projections; they are read as two matrices of the same bytes: [hidden -> q_lora +
    kv_lora + rope] (not split by TP) with the q and kv up-projections folded in (split), and the
    output projection."""
    hidden = int(text["hidden_size"])
    heads = int(text["num_attention_heads"])
    kv = int(text.get("num_key_value_heads") or heads)
    head_dim = int(text.get("head_dim") or hidden // heads)
    experts = int(
        text.get("num_experts")
        or text.get("num_local_experts")
        or text.get("n_routed_experts")
        or 0
    )
    layers = int(text["num_hidden_layers"])
    dense = int(text.get("first_k_dense_replace") or 0) if experts else layers
    qkv_out, o_in, fixed = (heads + 2 * kv) * head_dim, heads * head_dim, 0
    if text.get("kv_lora_rank"):
        q_lora, kv_lora = int(text.get("q_lora_rank") or 0), int(text["kv_lora_rank"])
        nope, rope = (
            int(text.get("qk_nope_head_dim") or 128),
            int(text.get("qk_rope_head_dim") or 64),
        )
        v_dim = int(text.get("v_head_dim") or nope)
        fixed = q_lora + kv_lora + rope
        q_up = (q_lora or hidden) * heads * (nope + rope)
        split = (q_up + kv_lora * heads * (nope + v_dim)) // hidden
        qkv_out, o_in = fixed + split, heads * v_dim
    return Shapes(
        name,
        layers,
        hidden,
        qkv_out,
        o_in,
        int(text.get("intermediate_size") or 0),
        experts,
        int(text.get("num_experts_per_tok") or 0),
        int(text.get("moe_intermediate_size") or text.get("intermediate_size") or 0),
        dense,
        qkv_fixed=fixed,
        shared=int(text.get("n_shared_experts") or 0) if experts else 0,
    )


def sharded(shapes: Shapes, tp: int) -> Shapes:
    """One GPU's share of the layers under tensor parallelism TP (heads, MLP and expert widths
    split)."""
    if tp <= 1:
        return shapes
    qkv = (shapes.qkv_out - shapes.qkv_fixed) // tp + shapes.qkv_fixed
    return Shapes(
        shapes.name,
        shapes.layers,
        shapes.hidden,
        _multiple(qkv),
        _multiple(shapes.o_in // tp),
        _multiple(shapes.inter // tp),
        shapes.experts,
        shapes.active,
        _multiple(shapes.moe_inter // tp),
        shapes.dense_layers,
        tp,
        shapes.qkv_fixed,
        shapes.shared,
    )


def _multiple(width: int, of: int = 16) -> int:
    """A width rounded up to a multiple of 16 (fp8 products need it; a bf16 shard is a few columns
    wider)."""
    return -(-width // of) * of if width else 0


def first_layers(shapes: Shapes, layers: int) -> Shapes:
    """The first `layers` layers of a shard (dense layers first, as the model has them)."""
    layers = max(1, min(layers, shapes.layers))
    return Shapes(
        shapes.name,
        layers,
        shapes.hidden,
        shapes.qkv_out,
        shapes.o_in,
        shapes.inter,
        shapes.experts,
        shapes.active,
        shapes.moe_inter,
        min(shapes.dense_layers, layers),
        shapes.tp,
        shapes.qkv_fixed,
        shapes.shared,
    )


def expected_distinct(shapes: Shapes, tokens: int) -> int:
    """Experts allocated per MoE layer: the most `tokens` tokens can be routed to (k each, at most
    all), and the shared experts."""
    return min(shapes.experts, shapes.active * max(tokens, 1)) + shapes.shared


def layer_bytes(shapes: Shapes, element: int, experts_held: int) -> tuple[int, int]:
    """(bytes of one dense-MLP layer, bytes of one MoE layer) as allocated, attention included."""
    attention = shapes.hidden * shapes.qkv_out + shapes.o_in * shapes.hidden
    dense = attention + 3 * shapes.hidden * shapes.inter
    moe = attention + experts_held * 3 * shapes.hidden * shapes.moe_inter
    return dense * element, moe * element


def layers_that_fit(shapes: Shapes, element: int, experts_held: int, free_bytes: float) -> int:
    """How many of the shard's layers fit in MEMORY_SHARE of `free_bytes` (dense layers first)."""
    dense, moe = layer_bytes(shapes, element, experts_held)
    room = free_bytes * MEMORY_SHARE
    count = 0
    for layer in range(shapes.layers):
        cost = moe if shapes.experts and layer >= shapes.dense_layers else dense
        if room < cost:
            break
        room -= cost
        count += 1
    return count


class Layers:
    """The weight matrices of every layer, one allocation each (nothing is shared, so no read hits
    L2).

    Matrices are stored [out, in] as checkpoints hold them; a product is x @ W.t(). An MoE layer's
    experts are stored concatenated along `out` (up: [experts x 2 x moe_inter, hidden], down:
    [hidden, experts x moe_inter]), so that the first n experts' weights are one contiguous block
    read by one product."""

    def __init__(
        self,
        torch: ModuleType,
        shapes: Shapes,
        dtype_name: str,
        device: torch.device,
        experts_held: int,
    ):
        self.torch, self.shapes, self.dtype_name = torch, shapes, dtype_name
        self.fp8 = dtype_name == "fp8"
        self.dtype = getattr(torch, DTYPES[dtype_name])
        self.compute = torch.bfloat16 if self.fp8 else self.dtype
        self.device = device
        self.element = torch.empty((), dtype=self.dtype).element_size()
        self.experts_held = experts_held
        s = shapes
        self.attn = [
            (self._mat(s.qkv_out, s.hidden), self._mat(s.hidden, s.o_in)) for _ in range(s.layers)
        ]
        dense_count = s.dense_layers if s.experts else s.layers
        self.dense = [
            (self._mat(2 * s.inter, s.hidden), self._mat(s.hidden, s.inter))
            for _ in range(dense_count)
        ]
        self.moe = [
            (
                self._mat(experts_held * 2 * s.moe_inter, s.hidden),
                self._mat(s.hidden, experts_held * s.moe_inter),
            )
            for _ in range(s.moe_layers)
        ]
        self.one = torch.ones((), dtype=torch.float32, device=device)

    def _mat(self, rows: int, cols: int) -> torch.Tensor:
        torch = self.torch
        if not self.fp8:
            return torch.empty((rows, cols), dtype=self.dtype, device=self.device).normal_(0, 0.02)
        out = torch.empty((rows, cols), dtype=self.dtype, device=self.device)
        for start in range(0, rows, 4096):  # through bf16 in slices: no second full-size copy
            block = torch.empty(
                (min(4096, rows - start), cols), dtype=torch.bfloat16, device=self.device
            )
            out[start : start + block.shape[0]] = block.normal_(0, 0.02).to(self.dtype)
        return out

    def routed(self, tokens: int, seed: int = 0) -> list[int]:
        """Per MoE layer, how many distinct experts `tokens` tokens are routed to (k each, drawn
        uniformly)."""
        rng = random.Random(seed)
        out = []
        for _ in self.moe:
            chosen: set[int] = set()
            for _ in range(tokens):
                chosen.update(rng.sample(range(self.shapes.experts), self.shapes.active))
            out.append(min(len(chosen) + self.shapes.shared, self.experts_held))
        return out

    def bytes_read(self, routed: list[int]) -> int:
        s = self.shapes
        per_attn = s.hidden * s.qkv_out + s.o_in * s.hidden
        dense = len(self.dense) * 3 * s.hidden * s.inter
        experts = sum(routed) * 3 * s.hidden * s.moe_inter
        return (s.layers * per_attn + dense + experts) * self.element

    def product(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """x [rows, in] times a stored [out, in] matrix: [rows, out] in the compute dtype."""
        if not self.fp8:
            return x @ weight.t()
        return self.torch._scaled_mm(
            x.to(self.dtype), weight.t(), scale_a=self.one, scale_b=self.one, out_dtype=self.compute
        )

    def forward(self, x: torch.Tensor, routed: list[int]) -> torch.Tensor:
        """One pass: x [T, hidden] through every layer's matrices."""
        s = self.shapes
        out = x
        moe_index = dense_index = 0
        for layer in range(s.layers):
            qkv, o = self.attn[layer]
            attn_out = self.product(self.product(out, qkv)[:, : s.o_in].contiguous(), o)
            if s.experts and layer >= s.dense_layers:
                up, down = self.moe[moe_index]
                n = routed[moe_index]
                inner = self.product(attn_out, up[: n * 2 * s.moe_inter])
                gated = inner.view(inner.shape[0], n, 2 * s.moe_inter)[:, :, : s.moe_inter].reshape(
                    inner.shape[0], -1
                )
                out = self.product(gated.contiguous(), down[:, : n * s.moe_inter])
                moe_index += 1
            else:
                up, down = self.dense[dense_index]
                out = self.product(self.product(attn_out, up)[:, : s.inter].contiguous(), down)
                dense_index += 1
        return out

    def activation(self, tokens: int) -> torch.Tensor:
        rows = max(tokens, FP8_ROWS) if self.fp8 else tokens
        return self.torch.randn(rows, self.shapes.hidden, dtype=self.compute, device=self.device)


def _graph_time_us(
    torch: ModuleType, layers: Layers, x: torch.Tensor, routed: list[int], replays: int
) -> list[Microseconds]:
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            layers.forward(x, routed)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        layers.forward(x, routed)
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    del graph
    return times[2:] if len(times) > 4 else times


def _plain_time_us(
    sync: Callable[[], None], layers: Layers, x: torch.Tensor, routed: list[int], repeats: int
) -> list[Microseconds]:
    times = []
    for _ in range(repeats):
        sync()
        begin = time.perf_counter()
        layers.forward(x, routed)
        sync()
        times.append((time.perf_counter() - begin) * 1e6)
    return times[1:] if len(times) > 2 else times


def copy_bandwidth(
    torch: ModuleType, device: torch.device, nbytes: Bytes, repeats: int = 10
) -> float:
    """Bytes/s of a device-to-device copy (read + write counted) of `nbytes`: a bandwidth figure
    that shares nothing with the matrix products."""
    src = torch.empty(nbytes // 2, dtype=torch.int16, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000.0)
    del src, dst
    return 2 * nbytes / statistics.median(times)


@dataclass(frozen=True)
class Request:
    """One decode-step measurement: a model's shard at one TP size and dtype, over several token
    counts."""

    shapes: (
        Shapes  # the whole shard (every layer); `layers` in the rows says how many were allocated
    )
    dtype: str
    tokens: tuple[int, ...]
    replays: int = 20
    on_gpu: bool = True
    gemms: tuple[Gemm, ...] = ()  # the step's GEMMs timed alone after the pass (decode_ops.py)


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "median": statistics.median(values),
        "min": float(min(values)),
        "max": float(max(values)),
        "n": len(values),
    }


def _row(
    request: Request,
    layers: Layers,
    tokens: int,
    routed: list[int],
    graph: list[float] | None,
    plain: list[float],
) -> Row:
    s = layers.shapes
    nbytes = layers.bytes_read(routed)
    g = statistics.median(graph) if graph else None
    p = statistics.median(plain)
    return {
        "model": s.name,
        "dtype": request.dtype,
        "tp": s.tp,
        "tokens": tokens,
        "layers": s.layers,
        "model_layers": request.shapes.layers,
        "bytes_read": nbytes,
        "bytes_per_layer": nbytes / s.layers,
        "distinct_experts_per_moe_layer": statistics.mean(routed) - s.shared if routed else None,
        "shared_experts": s.shared or None,
        "graph_us": _summary(graph) if graph else None,
        "graph_bandwidth_gb_s": nbytes / g / 1e3 if g else None,
        "graph_us_per_layer": g / s.layers if g else None,
        "plain_us": _summary(plain),
        "plain_bandwidth_gb_s": nbytes / p / 1e3,
        "plain_us_per_layer": p / s.layers,
        "moe_experts": "one product per layer for the routed experts" if s.experts else None,
        "cuda_graph": graph is not None,
        "origin": ORIGIN,
        "status": "ok",
        "device": layers.torch.cuda.get_device_name(layers.device) if request.on_gpu else "cpu",
        "torch": str(layers.torch.__version__),
    }


def measure(request: Request, announce: Callable[[str], None] = lambda item: None) -> Iterator[Row]:
    """A row for every token count of `request`, each as soon as it is measured (the copy figure,
    timed first, on each). `announce` is told before each step (the watchdog names what hung)."""
    import torch

    device = torch.device("cuda") if request.on_gpu else torch.device("cpu")
    held = expected_distinct(request.shapes, max(request.tokens))
    element = torch.empty((), dtype=getattr(torch, DTYPES[request.dtype])).element_size()
    fit = request.shapes.layers
    if request.on_gpu:
        free, _ = torch.cuda.mem_get_info()
        fit = layers_that_fit(request.shapes, element, held, free)
        if fit < 1:
            raise MemoryError(
                f"one layer of {request.shapes.name} at TP {request.shapes.tp} does not fit in "
                f"{MEMORY_SHARE:.0%} of the GPU's free memory"
            )
    copy = None
    if request.on_gpu:
        dense, moe = layer_bytes(request.shapes, element, held)
        announce("device copy")
        copy = (
            copy_bandwidth(torch, device, int(min(max(fit * max(dense, moe), 1 << 30), 8 << 30)))
            / 1e9
        )
    announce(
        f"allocating {request.shapes.name} TP {request.shapes.tp} {request.dtype} ({fit} layers)"
    )
    layers = Layers(torch, first_layers(request.shapes, fit), request.dtype, device, held)
    sync = torch.cuda.synchronize if request.on_gpu else (lambda: None)
    try:
        for count in request.tokens:
            announce(
                f"decode step {request.shapes.name} TP {request.shapes.tp} {request.dtype} "
                f"T={count}"
            )
            routed = layers.routed(count)
            x = layers.activation(count)
            graph = (
                _graph_time_us(torch, layers, x, routed, request.replays)
                if request.on_gpu
                else None
            )
            plain = _plain_time_us(sync, layers, x, routed, max(5, request.replays // 4))
            row = _row(request, layers, count, routed, graph, plain)
            row["copy_bandwidth_gb_s"] = copy
            yield row
    finally:
        del layers


def merge_rows(existing: list[Row] | None, rows: list[Row]) -> list[Row]:
    """The snapshot's decode-step rows with those of the (model, dtype, TP) measured now replaced."""

    def key(row: Row) -> tuple[object, object, object]:
        return row.get("model"), row.get("dtype"), row.get("tp", 1)

    measured = {key(r) for r in rows}
    return [r for r in existing or [] if key(r) not in measured] + rows


def load_config(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        config = json.load(handle)
    return dict(config.get("text_config") or config)


def failed_row(request: Request, reason: str) -> Row:
    """The row of a request that could not be measured: what was asked and why not (never used as a
    figure)."""
    return {
        "model": request.shapes.name,
        "dtype": request.dtype,
        "tp": request.shapes.tp,
        "tokens": None,
        "layers": None,
        "model_layers": request.shapes.layers,
        "cuda_graph": request.on_gpu,
        "origin": ORIGIN,
        "status": f"failed: {reason}",
    }
