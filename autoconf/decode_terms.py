"""The terms of one decode step, as arithmetic on a launch's features and a set of fitted parameters.

This is the part of the launch model that turns bytes and layers into microseconds. Everything here is
plain arithmetic so that benchmarks/launch_model_checks.py can fit the parameters on the public corpus
(benchmarks/data/public-decode.yaml) and score them source by source; launch_model.estimate reads the
fitted values from autoconf/data/decode-fit.yaml (written by that script, never by hand).

One forward pass over T tokens on one GPU of a TP group:

    read(T)  = non-expert weights (attention, dense MLP, shared experts, router, norms, lm_head, one
               embedding row per token) + MoE layers x one expert's bytes x distinct experts(T)
    distinct experts(T) = E x (1 - (1 - k/E) ** (1 + rho x (T - 1)))       rho: routing correlation, fitted
    achieved bandwidth  = s / (s / (datasheet x eta[family]) + t_layer)   s: bytes a layer streams per GPU;
                          t_layer: the fixed time of streaming one layer (launching and draining its
                          kernels in a CUDA graph), measured on an H200, the same on every GPU
    step(T)  = read(T) / achieved bandwidth
             + layers x (attention or MLA overhead) + MoE layers x MoE overhead
             + MoE layers x distinct experts(T) x per-expert cost                (top-4 and top-8 models differ)
             + layers x (T - 1) x per-token cost                           (tree verify, wider GEMMs)
             + context x KV bytes per token / (datasheet x eta[family] x kv[kind])   kind: MLA or GQA
             + allreduces x latency(path, T tokens) + per-step scheduler overhead

    context = the mean number of tokens in the KV cache while a request decodes (input + output / 2 for a
              benchmark's requests); KV bytes per token per GPU as the memory model counts them (the MLA
              latent on every GPU, a GQA model's share of its KV heads, at least one head); kv[kind]: the
              fraction of the weight stream's rate the decode attention kernel reads the cache at, fitted

Speculative decoding (EAGLE / EAGLE-3) runs cycles: `steps` draft forwards and one draft extend (each one
draft layer, its fc and its lm_head at the draft's own width, 2 allreduces, a fitted draft overhead), one
verify pass over `draft_tokens` tokens, and a fitted per-cycle overhead (a draft forward under TP > 1 pays
a fitted extra: its allreduces, the gather of its logits and the synchronisation of the group); a cycle yields the accept length:

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
    "stream_fixed_us": (20.0, "us a layer's stream takes beyond bytes / bandwidth (its kernels' launch and drain)"),
    "attention_us": (8.0, "us per dense-attention layer"),
    "mla_us": (15.0, "us per MLA layer"),
    "moe_us": (10.0, "us per MoE layer (routing, top-k, expert dispatch)"),
    "expert_us": (2.0, "us per distinct routed expert a MoE layer reads (the expert's own products)"),
    "step_us": (200.0, "us per forward pass (scheduler, sampling, launch)"),
    "rho": (0.5, "routing correlation of the tokens of one verify pass (0: independent, 1: as one token)"),
    "token_us": (0.3, "us per extra token per layer in a multi-token pass"),
    "draft_us": (120.0, "us per draft forward beyond its weight reads"),
    "draft_tp_us": (300.0, "us more per draft forward when the draft runs tensor-parallel (TP > 1)"),
    "cycle_us": (150.0, "us per speculative cycle (tree build, verify bookkeeping)"),
    "accept_a": (0.6, "per-depth acceptance of a one-wide draft chain"),
    "accept_tree": (0.5, "how much a wider draft tree raises the per-depth acceptance"),
    "kv_mla": (1.0, "fraction of the weight stream's bandwidth (datasheet x eta) an MLA decode kernel reads the KV "
                    "cache at"),
    "kv_gqa": (1.0, "fraction of the weight stream's bandwidth (datasheet x eta) a GQA/MHA decode kernel reads the "
                    "KV cache at"),
}
BOUNDED = {"eta_hopper": 1.0, "eta_blackwell": 1.0, "eta_other": 1.0, "rho": 1.0, "accept_a": 0.97,
           "accept_tree": 1.0, "kv_mla": 1.0, "kv_gqa": 1.0}
DRAFT_VOCAB = 32000  # EAGLE-3 drafts predict over a reduced vocabulary (draft_vocab_size in their configs)
# The mean decode context (tokens in the KV cache while a request decodes) taken where none is given: by
# recommend without --decode-context, and for every corpus row whose source states no workload. An assumed
# round figure for a chat turn; the SGLang cookbook's 1000-in / 1000-out latency runs average 821 tokens
# (610 in + 422 / 2 out per request, from their printed totals).
DEFAULT_DECODE_CONTEXT = 1000


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
    expert_us: float = PARAMETERS["expert_us"][0]
    step_us: float = PARAMETERS["step_us"][0]
    rho: float = PARAMETERS["rho"][0]
    token_us: float = PARAMETERS["token_us"][0]
    draft_us: float = PARAMETERS["draft_us"][0]
    draft_tp_us: float = PARAMETERS["draft_tp_us"][0]
    cycle_us: float = PARAMETERS["cycle_us"][0]
    accept_a: float = PARAMETERS["accept_a"][0]
    accept_tree: float = PARAMETERS["accept_tree"][0]
    kv_mla: float = PARAMETERS["kv_mla"][0]
    kv_gqa: float = PARAMETERS["kv_gqa"][0]

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
        return {"hopper": self.eta_hopper, "blackwell": self.eta_blackwell}.get(family, self.eta_other)

    def kv(self, mla: bool) -> float:
        return self.kv_mla if mla else self.kv_gqa


@dataclass(frozen=True)
class Draft:
    """A speculative launch's draft shape."""
    steps: int
    topk: int
    draft_tokens: int
    bytes_per_gpu: float  # one draft layer + fc + lm_head, per GPU of the TP group


@dataclass
class Features:
    """What one launch's decode step depends on, computed once from the model, the GPU and the TP size."""
    layers: int
    moe_layers: int
    mla: bool
    experts: int
    active_experts: int
    base_bytes: float  # per GPU per forward: everything but the routed experts
    expert_bytes: float  # per GPU: one expert of one MoE layer
    bandwidth: float  # datasheet, bytes/s
    family: str
    allreduce_us: dict[int, float] = field(default_factory=dict)  # tokens -> us per call (0 without TP)
    allreduces: int = 0
    measured_bandwidth: Any = None  # a callable (bytes per layer) -> bytes/s, from `topoctl bench` rows
    kv_bytes: float = 0.0  # KV cache bytes per token of context per GPU, every layer (memory.kv_bytes_per_token)
    context: float = 0.0  # mean tokens in the KV cache while the request decodes

    def distinct_experts(self, tokens: int, rho: float) -> float:
        if not self.experts:
            return 0.0
        share = self.active_experts / self.experts
        effective = 1.0 + rho * max(tokens - 1, 0)
        return self.experts * (1.0 - (1.0 - share) ** effective)

    def read_bytes(self, tokens: int, rho: float) -> float:
        return self.base_bytes + self.moe_layers * self.expert_bytes * self.distinct_experts(tokens, rho)

    def per_layer_bytes(self) -> float:
        return (self.base_bytes + self.moe_layers * self.expert_bytes * self.active_experts) / max(self.layers, 1)


def achieved_bandwidth(feat: Features, terms: Terms, layer_bytes: float) -> float:
    """Bytes/s a layer of `layer_bytes` per GPU streams at: measured on this machine when `topoctl bench`
    measured it, else the line through the H200 decode-step rows carried to this GPU: its bytes at the
    datasheet figure times the measured efficiency, plus the measured fixed time of a layer. The fixed time
    is kept in microseconds, not as a size of half bandwidth, because it is the launch and drain of the
    layer's kernels inside a CUDA graph, which does not shrink with a faster memory (a size of half
    bandwidth would scale it by 1 / datasheet: 27 us a layer on an H100, 11 us on a B200)."""
    if feat.measured_bandwidth is not None:
        return float(feat.measured_bandwidth(layer_bytes))
    if layer_bytes <= 0:
        return feat.bandwidth * terms.eta(feat.family)
    seconds = layer_bytes / (feat.bandwidth * terms.eta(feat.family)) + terms.stream_fixed_us * 1e-6
    return layer_bytes / seconds


def overhead_us(feat: Features, terms: Terms) -> float:
    """Fixed time of one forward pass beside its weight reads and allreduces."""
    per_layer = terms.mla_us if feat.mla else terms.attention_us
    return feat.layers * per_layer + feat.moe_layers * terms.moe_us + terms.step_us


def kv_rate(feat: Features, terms: Terms) -> float:
    """Bytes/s the decode attention kernel reads the KV cache at: the weight stream's rate (datasheet x eta,
    the slope of the H200 decode-step line, without its per-layer fixed time, which the weight reads of the
    same layer already pay) times the fitted fraction of the attention kind. MLA and GQA are apart because
    SGLang runs them through different kernels (an MLA kernel reads one latent head of 576 values a token,
    a GQA kernel K and V of each KV head)."""
    return feat.bandwidth * terms.eta(feat.family) * terms.kv(feat.mla)


def kv_read_us(feat: Features, terms: Terms) -> float:
    """Time (us) one forward pass spends reading the KV cache of its request's context. A verify pass over
    T tokens reads the same cache once (its tokens attend to one context), so the term does not grow with T."""
    rate = kv_rate(feat, terms)
    if rate <= 0 or feat.context <= 0:
        return 0.0
    return feat.context * feat.kv_bytes / rate * 1e6


def forward_parts(feat: Features, terms: Terms, tokens: int) -> dict[str, float]:
    """The parts (us) of one forward pass over `tokens` tokens."""
    bandwidth = achieved_bandwidth(feat, terms, feat.per_layer_bytes())
    return {"weights": feat.read_bytes(tokens, terms.rho) / bandwidth * 1e6,
            "kv": kv_read_us(feat, terms),
            "overhead": overhead_us(feat, terms),
            "experts": feat.moe_layers * feat.distinct_experts(tokens, terms.rho) * terms.expert_us,
            "tokens": feat.layers * max(tokens - 1, 0) * terms.token_us,
            "allreduce": feat.allreduces * feat.allreduce_us.get(tokens, 0.0)}


def forward_us(feat: Features, terms: Terms, tokens: int = 1) -> float:
    return sum(forward_parts(feat, terms, tokens).values())


def draft_forward_us(feat: Features, terms: Terms, draft: Draft) -> float:
    bandwidth = achieved_bandwidth(feat, terms, draft.bytes_per_gpu)
    parallel = 2 * feat.allreduce_us.get(draft.topk, 0.0) + terms.draft_tp_us if feat.allreduces else 0.0
    return draft.bytes_per_gpu / bandwidth * 1e6 + terms.draft_us + parallel


def accept_length(terms: Terms, draft: Draft) -> float:
    """Tokens a cycle yields, from the draft shape (see the module docstring)."""
    depth = max(1, min(draft.steps, draft.draft_tokens - 1))
    width = max(1.0, min(float(draft.topk), draft.draft_tokens / depth))
    per_depth = 1.0 - (1.0 - terms.accept_a) ** (width ** terms.accept_tree)
    return 1.0 + sum(per_depth ** i for i in range(1, depth + 1))


def cycle_us(feat: Features, terms: Terms, draft: Draft) -> float:
    verify = forward_us(feat, terms, draft.draft_tokens)
    return verify + (draft.steps + 1) * draft_forward_us(feat, terms, draft) + terms.cycle_us


def tokens_per_s(feat: Features, terms: Terms, draft: Draft | None = None, accept: float | None = None) -> float:
    """Predicted tokens/s of one stream."""
    if draft is None:
        return 1e6 / forward_us(feat, terms, 1)
    length = accept if accept else accept_length(terms, draft)
    return length * 1e6 / cycle_us(feat, terms, draft)


def log_ratio(predicted: float, measured: float) -> float:
    return math.log(predicted / measured)
