"""The terms of one decode step, as arithmetic on a launch's features and a set of fitted
parameters.

This is the part of the launch model that turns bytes and layers into microseconds. Everything here
is plain arithmetic so that benchmarks/launch_model_checks.py can fit the parameters on the public
corpus (benchmarks/data/public-decode.yaml) and score them source by source; launch_model.estimate
reads the fitted values from autoconf/data/decode-fit.yaml (written by that script, never by hand).

One forward pass over T tokens on one GPU of a TP group:

    read(T)  = non-expert weights (attention, dense MLP, shared experts, router, norms, lm_head, one
               embedding row per token) + MoE layers x one expert's bytes x distinct experts(T)
    distinct experts(T) = E x (1 - (1 - k/E) ** (1 + rho x (T - 1)))       rho: routing correlation, fitted
               (a distinct expert costs its bytes and nothing more: SGLang's fused MoE kernels run every
               routed expert in one launch, each block streaming its expert's weight tiles once,
               fused_moe_triton_kernels.py:395-460 in 0.5.5; no fixed cost per expert is added)
    achieved bandwidth  = s / (s / (datasheet x eta[family]) + t_layer)   s: bytes a layer streams per GPU;
                          t_layer: the fixed time of streaming one layer (launching and draining its
                          kernels in a CUDA graph), measured on an H200, the same on every GPU
    step(T)  = read(T) / achieved bandwidth
             + layers x (attention or MLA overhead) + MoE layers x MoE overhead
             + layers x (T - 1) x per-token cost                           (tree verify, wider GEMMs)
             + context x KV bytes per token / (stream rate x kv[kind])              kind: MLA or GQA
             + allreduces x latency(path, T tokens) + per-step scheduler overhead

    context = the mean number of tokens in the KV cache while a request decodes (input + output / 2 for a
              benchmark's requests); KV bytes per token per GPU as the memory model counts them (the MLA
              latent on every GPU, a GQA model's share of its KV heads, at least one head); kv[kind]: the
              fraction of the weight stream's rate the decode attention kernel reads the cache at, fitted;
              stream rate: the slope of the machine's decode-step rows (`topoctl bench`), else
              datasheet x eta[family]

Speculative decoding (EAGLE / EAGLE-3) runs cycles as SGLang's EAGLE worker does (0.5.1.post3 and
0.5.5, speculative/eagle_worker.py): `steps - 1` draft decode forwards over `topk` tokens a request
(the loop breaks before the last step's forward: the first draft token comes from the previous
cycle's extend), one verify pass over `draft_tokens` tokens, and one draft extend over `steps + 1`
tokens a request (the only forward that runs the replicated fc over the target's hidden states). A
draft forward reads one decoder layer and an lm_head over the draft vocabulary at the draft's own
width, pays a fitted draft overhead and, under TP > 1, its 3 allreduces (vocab-parallel embedding,
attention output, MLP down projection) and the NCCL all-gather of its logits. A fitted per-cycle
overhead covers what runs between the graphs (tree build, verify bookkeeping, the host syncs of a
cycle that the overlap scheduler, off for EAGLE, no longer hides). A cycle yields the accept length:

    accept = 1 + sum_{i=1..d} p ** i,  d = min(steps, draft_tokens - 1),
             p = 1 - (1 - a) ** (w ** tree),  w = min(topk, draft_tokens / d)   a, tree: fitted

(the accept length the source published, or --accept-length, replaces the formula when given).

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

MB = 1e6

# Parameter names, their defaults (the starting point of a fit and what a launch uses when no fit is
# stored) and their units; the fit works on their logarithms, so every one stays positive.
PARAMETERS: dict[str, tuple[float, str]] = {
    "eta_hopper": (0.85, "fraction of datasheet bandwidth, Hopper"),
    "eta_blackwell": (0.75, "fraction of datasheet bandwidth, Blackwell"),
    "eta_other": (0.75, "fraction of datasheet bandwidth, other GPUs"),
    "stream_fixed_us": (
        20.0,
        "us a layer's stream takes beyond bytes / bandwidth (its kernels' launch and drain)",
    ),
    "attention_us": (8.0, "us per dense-attention layer"),
    "mla_us": (15.0, "us per MLA layer"),
    "moe_us": (10.0, "us per MoE layer (routing, top-k, expert dispatch)"),
    "step_us": (200.0, "us per forward pass (scheduler, sampling, launch)"),
    "rho": (
        0.5,
        "routing correlation of the tokens of one verify pass (0: independent, 1: as one token)",
    ),
    "token_us": (0.3, "us per extra token per layer in a multi-token pass"),
    "draft_us": (120.0, "us per draft forward beyond its weight reads"),
    "cycle_us": (150.0, "us per speculative cycle (tree build, verify bookkeeping, host syncs)"),
    "cycle_tp_us": (
        300.0,
        "us more per speculative cycle under TP > 1 (the scheduler's broadcast over the TP "
        "group, host syncs that wait for every rank)",
    ),
    "accept_a": (0.6, "per-depth acceptance of a one-wide draft chain"),
    "accept_tree": (0.5, "how much a wider draft tree raises the per-depth acceptance"),
    "kv_mla": (
        1.0,
        "fraction of the weight stream's rate (its slope: measured by bench, else datasheet x "
        "eta) an MLA decode kernel reads the KV cache at",
    ),
    "kv_gqa": (
        1.0,
        "fraction of the weight stream's rate (its slope: measured by bench, else datasheet x "
        "eta) a GQA/MHA decode kernel reads the KV cache at",
    ),
    "moe_trtllm_us": (
        10.0,
        "us per MoE layer on a trtllm-gen MoE runner (flashinfer_mxfp4, flashinfer_trtllm: "
        "routing, both expert GEMMs and the finalize in one fused module)",
    ),
}
BOUNDED = {
    "eta_hopper": 1.0,
    "eta_blackwell": 1.0,
    "eta_other": 1.0,
    "rho": 1.0,
    "accept_a": 0.97,
    "accept_tree": 1.0,
    "kv_mla": 1.0,
    "kv_gqa": 1.0,
}
DRAFT_VOCAB = (
    32000  # EAGLE-3 drafts predict over a reduced vocabulary (draft_vocab_size in their configs)
)
# The mean decode context (tokens in the KV cache while a request decodes) taken where none is
# given: by recommend without --decode-context, and for every corpus row whose source states no
# workload. An assumed round figure for a chat turn; the SGLang cookbook's 1000-in / 1000-out
# latency runs average 821 tokens (610 in + 422 / 2 out per request, from their printed totals).
DEFAULT_DECODE_CONTEXT = 1000
# Collectives of one draft forward under TP > 1 (SGLang 0.5.5 models/llama_eagle3.py): the
# vocab-parallel embedding allreduces its lookup (layers/vocab_parallel_embedding.py:476-482), the
# decoder layer's output and down projections are row-parallel (one allreduce each), and the
# lm_head's logits are all-gathered through NCCL (layers/logits_processor.py:852-881,
# distributed/parallel_state.py:728-741).
DRAFT_ALLREDUCES = 3
# The products of one layer of the H200 decode-step bench (probe/bench/decode_step.py: QKV, output,
# gate+up and down, or an MoE layer's two expert products beside QKV and output), whose measured
# fixed time a layer (stream_fixed_us) is their launch and drain in a CUDA graph: one kernel's share
# prices a kernel saved.
BENCH_KERNELS_PER_LAYER = 4
GENERIC_PATH = (
    "generic path (no entry of autoconf/data/sglang-kernels.yaml for this release, GPU and model)"
)
# Which allreduces of a pass a fused path runs as one allreduce + residual + RMSNorm call
# (KernelPath.fused; sglang-kernels.yaml `explicit`): every one but the last layer's MLP output (the
# models whose MLP leaves its allreduce to the next layer's fused call), or the attention output's
# of every layer (the MLP's down projection allreducing by itself).
ALL_BUT_LAST, ATTENTION_ONLY = "all_but_last", "attention"
FUSED_TEXT = {
    ALL_BUT_LAST: "every allreduce but the last layer's MLP output",
    ATTENTION_ONLY: "the attention output's allreduce of every layer (the MLP's down projection "
    "allreduces by itself)",
}


@dataclass(frozen=True)
class KernelPath:
    """The decode kernels SGLang picks for a launch by default (autoconf/data/sglang-kernels.yaml):
    its MoE runner and that runner's kernel family, its decode attention backend, and whether the
    flashinfer allreduce + residual + RMSNorm fusion is on (for passes of at most fusion_max_tokens
    tokens), on which allreduces (`fused`, FUSED_TEXT), and, where the launch asks for the fusion
    but SGLang runs none of it or turns it off, why (`fusion_note`: no norm kernel is saved)."""

    moe_runner: str = "auto"
    moe_family: str = "generic"
    decode_attention: str = "default"
    allreduce_fusion: bool = False
    fusion_max_tokens: int = 0
    source: str = GENERIC_PATH
    fused: str = ALL_BUT_LAST
    fusion_note: str = ""

    @property
    def trtllm_moe(self) -> bool:
        return self.moe_family == "trtllm-gen"


@dataclass(frozen=True)
class Terms:
    """One set of parameter values (see PARAMETERS)."""

    eta_hopper: float = PARAMETERS["eta_hopper"][0]
    eta_blackwell: float = PARAMETERS["eta_blackwell"][0]
    eta_other: float = PARAMETERS["eta_other"][0]
    stream_fixed_us: float = PARAMETERS["stream_fixed_us"][0]
    attention_us: float = PARAMETERS["attention_us"][0]
    mla_us: float = PARAMETERS["mla_us"][0]
    moe_us: float = PARAMETERS["moe_us"][0]
    step_us: float = PARAMETERS["step_us"][0]
    rho: float = PARAMETERS["rho"][0]
    token_us: float = PARAMETERS["token_us"][0]
    draft_us: float = PARAMETERS["draft_us"][0]
    cycle_us: float = PARAMETERS["cycle_us"][0]
    cycle_tp_us: float = PARAMETERS["cycle_tp_us"][0]
    accept_a: float = PARAMETERS["accept_a"][0]
    accept_tree: float = PARAMETERS["accept_tree"][0]
    kv_mla: float = PARAMETERS["kv_mla"][0]
    kv_gqa: float = PARAMETERS["kv_gqa"][0]
    moe_trtllm_us: float = PARAMETERS["moe_trtllm_us"][0]

    @classmethod
    def from_vector(cls, names: list[str], values: list[float], base: Terms | None = None) -> Terms:
        data = dict((base or cls()).as_dict())
        for name, value in zip(names, values, strict=True):
            data[name] = min(value, BOUNDED[name]) if name in BOUNDED else value
        return cls(**data)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Terms:
        known = {f.name for f in fields(cls)}
        return cls(**{k: float(v) for k, v in data.items() if k in known})

    def as_dict(self) -> dict[str, float]:
        return {f.name: float(getattr(self, f.name)) for f in fields(self)}

    def eta(self, family: str) -> float:
        return {"hopper": self.eta_hopper, "blackwell": self.eta_blackwell}.get(
            family, self.eta_other
        )

    def kv(self, mla: bool) -> float:
        return self.kv_mla if mla else self.kv_gqa


@dataclass(frozen=True)
class Draft:
    """A speculative launch's draft shape."""

    steps: int
    topk: int
    draft_tokens: int
    bytes_per_gpu: (
        float  # one draft layer + lm_head, per GPU of the TP group (what every draft forward reads)
    )
    fc_bytes: float = (
        0.0  # the fc over the target's hidden states: replicated on every GPU, read by the extend
    )

    @property
    def decode_forwards(self) -> int:
        """Draft decode forwards a cycle runs: steps - 1 (eagle_worker.py draft_forward breaks
        before the last step's forward; 0.5.5 :587-597, 0.5.1.post3 :663-672)."""
        return max(self.steps - 1, 0)

    @property
    def extend_tokens(self) -> int:
        """Tokens a request feeds the draft extend after verify: steps + 1 (eagle_worker.py:916, the
        extend graph's num_tokens_per_bs, eagle_draft_extend_cuda_graph_runner.py:69)."""
        return self.steps + 1


@dataclass
class Features:
    """What one launch's decode step depends on, computed once from the model, the GPU and the TP
    size."""

    layers: int
    moe_layers: int
    mla: bool
    experts: int
    active_experts: int
    base_bytes: float  # per GPU per forward: everything but the routed experts
    expert_bytes: float  # per GPU: one expert of one MoE layer
    bandwidth: float  # datasheet, bytes/s
    family: str
    allreduce_us: dict[int, float] = field(
        default_factory=dict
    )  # tokens -> us per call (0 without TP)
    gather_us: dict[int, float] = field(
        default_factory=dict
    )  # tokens -> us per NCCL logits all-gather (0 without TP)
    allreduces: int = 0
    measured_bandwidth: Any = (
        None  # a callable (bytes per layer) -> bytes/s, from `topoctl bench` rows
    )
    measured_stream: float | None = (
        None  # bytes/s, the slope of those rows (time per layer against bytes per layer)
    )
    kv_bytes: float = (
        0.0  # KV cache bytes per token of context per GPU, every layer (memory.kv_bytes_per_token)
    )
    context: float = 0.0  # mean tokens in the KV cache while the request decodes
    kernel: KernelPath = field(
        default_factory=KernelPath
    )  # the decode kernels SGLang picks (sglang-kernels.yaml)

    def distinct_experts(self, tokens: int, rho: float) -> float:
        if not self.experts:
            return 0.0
        share = self.active_experts / self.experts
        effective = 1.0 + rho * max(tokens - 1, 0)
        return self.experts * (1.0 - (1.0 - share) ** effective)

    def read_bytes(self, tokens: int, rho: float) -> float:
        return self.base_bytes + self.moe_layers * self.expert_bytes * self.distinct_experts(
            tokens, rho
        )

    def per_layer_bytes(self) -> float:
        return (self.base_bytes + self.moe_layers * self.expert_bytes * self.active_experts) / max(
            self.layers, 1
        )


def achieved_bandwidth(feat: Features, terms: Terms, layer_bytes: float) -> float:
    """Bytes/s a layer of `layer_bytes` per GPU streams at: measured on this machine when `topoctl
    bench` measured it, else the line through the H200 decode-step rows carried to this GPU: its
    bytes at the datasheet figure times the measured efficiency, plus the measured fixed time of a
    layer. The fixed time is kept in microseconds, not as a size of half bandwidth, because it is
    the launch and drain of the layer's kernels inside a CUDA graph, which does not shrink with a
    faster memory (a size of half bandwidth would scale it by 1 / datasheet: 27 us a layer on an
    H100, 11 us on a B200)."""
    if feat.measured_bandwidth is not None:
        return float(feat.measured_bandwidth(layer_bytes))
    if layer_bytes <= 0:
        return feat.bandwidth * terms.eta(feat.family)
    seconds = layer_bytes / (feat.bandwidth * terms.eta(feat.family)) + terms.stream_fixed_us * 1e-6
    return layer_bytes / seconds


def moe_overhead_us(feat: Features, terms: Terms) -> float:
    """Fixed time of one MoE layer: moe_trtllm_us on a trtllm-gen MoE runner, else moe_us."""
    return terms.moe_trtllm_us if feat.kernel.trtllm_moe else terms.moe_us


def overhead_us(feat: Features, terms: Terms) -> float:
    """Fixed time of one forward pass beside its weight reads and allreduces."""
    per_layer = terms.mla_us if feat.mla else terms.attention_us
    return feat.layers * per_layer + feat.moe_layers * moe_overhead_us(feat, terms) + terms.step_us


def fused_allreduces(feat: Features, tokens: int) -> int:
    """Allreduces of a pass over `tokens` tokens that run as one fused allreduce + residual +
    RMSNorm call, when the launch's path has the fusion on, under TP > 1, up to its token limit:
    every one but the last layer's MLP output (the fusion hands that norm to the next layer, and the
    last layer has none), or on a path that fuses the attention output only, one a layer."""
    path = feat.kernel
    if not (path.allreduce_fusion and feat.allreduces and tokens <= path.fusion_max_tokens):
        return 0
    if path.fused == ATTENTION_ONLY:
        return min(feat.layers, feat.allreduces)
    return max(feat.allreduces - 1, 0)


def norm_kernel_us(terms: Terms) -> float:
    """One small kernel's time in a CUDA graph (its launch and drain): the measured fixed time of a
    layer of the H200 decode-step line over the BENCH_KERNELS_PER_LAYER products that layer runs.
    Not fitted."""
    return terms.stream_fixed_us / BENCH_KERNELS_PER_LAYER


def fusion_saved_us(feat: Features, terms: Terms, tokens: int) -> float:
    """Time a fused pass saves: the RMSNorm kernel after each fused allreduce no longer runs on its
    own (the fused call itself is priced as the allreduce it replaces, from the allreduce latency
    table)."""
    return fused_allreduces(feat, tokens) * norm_kernel_us(terms)


def kv_rate(feat: Features, terms: Terms) -> float:
    """Bytes/s the decode attention kernel reads the KV cache at: the weight stream's rate without
    its per-layer fixed time, which the weight reads of the same layer already pay (the slope of
    this machine's decode-step rows when `topoctl bench` measured them, else datasheet x eta, the
    slope of the H200 decode-step line), times the fitted fraction of the attention kind. MLA and
    GQA are apart because SGLang runs them through different kernels (an MLA kernel reads one latent
    head of 576 values a token, a GQA kernel K and V of each KV head)."""
    stream = (
        feat.measured_stream if feat.measured_stream else feat.bandwidth * terms.eta(feat.family)
    )
    return stream * terms.kv(feat.mla)


def kv_read_us(feat: Features, terms: Terms) -> float:
    """Time (us) one forward pass spends reading the KV cache of its request's context. A verify
    pass over T tokens reads the same cache once (its tokens attend to one context), so the term
    does not grow with T."""
    rate = kv_rate(feat, terms)
    if rate <= 0 or feat.context <= 0:
        return 0.0
    return feat.context * feat.kv_bytes / rate * 1e6


def forward_parts(feat: Features, terms: Terms, tokens: int) -> dict[str, float]:
    """The parts (us) of one forward pass over `tokens` tokens. Its layers stream at the achieved
    bandwidth of the bytes a layer reads in this pass (a wider MoE pass reads more experts a layer),
    so each layer pays the fixed time of its stream once, as in the decode-step rows the line is
    drawn through (an MoE layer's bytes there are those of the experts its 1, 4 or 16 tokens read).
    """
    read = feat.read_bytes(tokens, terms.rho)
    bandwidth = achieved_bandwidth(feat, terms, read / max(feat.layers, 1))
    return {
        "weights": read / bandwidth * 1e6,
        "kv": kv_read_us(feat, terms),
        "overhead": overhead_us(feat, terms),
        "tokens": feat.layers * max(tokens - 1, 0) * terms.token_us,
        "allreduce": feat.allreduces * feat.allreduce_us.get(tokens, 0.0),
        "fusion": -fusion_saved_us(feat, terms, tokens),
    }


def forward_us(feat: Features, terms: Terms, tokens: int = 1) -> float:
    return sum(forward_parts(feat, terms, tokens).values())


def draft_forward_us(
    feat: Features, terms: Terms, draft: Draft, tokens: int | None = None, extend: bool = False
) -> float:
    """One draft forward over `tokens` tokens (topk for a draft decode step): its weight reads (the
    extend also reads the replicated fc), the fitted draft overhead and, under TP > 1, its
    DRAFT_ALLREDUCES allreduces and the all-gather of its logits at that width."""
    width = draft.topk if tokens is None else tokens
    read = draft.bytes_per_gpu + (draft.fc_bytes if extend else 0.0)
    bandwidth = achieved_bandwidth(feat, terms, read)
    parallel = (
        DRAFT_ALLREDUCES * feat.allreduce_us.get(width, 0.0) + feat.gather_us.get(width, 0.0)
        if feat.allreduces
        else 0.0
    )
    return read / bandwidth * 1e6 + terms.draft_us + parallel


def draft_us(feat: Features, terms: Terms, draft: Draft, batch: int = 1) -> float:
    """The draft's part of a cycle: steps - 1 decode forwards over topk tokens a request and one
    extend over steps + 1 tokens a request (see Draft.decode_forwards, Draft.extend_tokens)."""
    decode = draft.decode_forwards * draft_forward_us(feat, terms, draft, batch * draft.topk)
    return decode + draft_forward_us(feat, terms, draft, batch * draft.extend_tokens, extend=True)


def accept_length(terms: Terms, draft: Draft) -> float:
    """Tokens a cycle yields, from the draft shape (see the module docstring)."""
    depth = max(1, min(draft.steps, draft.draft_tokens - 1))
    width = max(1.0, min(float(draft.topk), draft.draft_tokens / depth))
    per_depth = 1.0 - (1.0 - terms.accept_a) ** (width**terms.accept_tree)
    return 1.0 + sum(per_depth**i for i in range(1, depth + 1))


def cycle_us(feat: Features, terms: Terms, draft: Draft, batch: int = 1) -> float:
    """One speculative cycle of `batch` streams: the verify pass, the draft's forwards, the cycle
    overhead."""
    verify = forward_us(feat, terms, batch * draft.draft_tokens)
    return verify + draft_us(feat, terms, draft, batch) + cycle_overhead_us(feat, terms)


def cycle_overhead_us(feat: Features, terms: Terms) -> float:
    """Host time a cycle runs in series with the GPU: EAGLE turns SGLang's overlap scheduler off
    (0.5.5 server_args.py:1548-1552, 0.5.1.post3 :618-624), so each cycle runs the scheduler loop
    (event_loop_normal) and its host syncs between the draft, verify and extend graphs; under TP > 1
    every iteration also broadcasts the received requests over the TP group's CPU group
    (scheduler.py:1099-1105) and each sync waits for the slowest rank. The plain step overlaps that
    time with the GPU, so it has no such term."""
    return terms.cycle_us + (terms.cycle_tp_us if feat.allreduces else 0.0)


def tokens_per_s(
    feat: Features, terms: Terms, draft: Draft | None = None, accept: float | None = None
) -> float:
    """Predicted tokens/s of one stream."""
    if draft is None:
        return 1e6 / forward_us(feat, terms, 1)
    length = accept if accept else accept_length(terms, draft)
    return length * 1e6 / cycle_us(feat, terms, draft)


def log_ratio(predicted: float, measured: float) -> float:
    return math.log(predicted / measured)
