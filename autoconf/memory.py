"""Memory fit of a candidate launch: does it load, and how many tokens of KV cache does it leave?

Per GPU, under tensor parallel size TP (expert parallel size EP inside it):
  weights = every part split by TP (embeddings and lm_head are vocab-parallel, attention heads, dense MLP,
            experts: EP x (TP/EP) shards, shared experts), plus what SGLang replicates on every GPU (MLA's
            q_a/kv_a projections, the MoE router, norms);
  reserve = GPU memory x (1 - mem_fraction_static), with mem_fraction_static as the target SGLang version
            computes it when the launch leaves it out (`static_fraction`, read from its server_args.py);
  KV cache = GPU memory x mem_fraction_static - weights - the EAGLE-3 draft model's weights;
  tokens  = KV cache / KV bytes per token per GPU (MLA keeps one latent of kv_lora_rank + qk_rope_head_dim
            per layer on every GPU; GQA keeps K and V of the GPU's share of KV heads, at least one head).
A launch whose KV cache comes out at or below zero does not load: SGLang stops with "Not enough memory"
(model_executor/pool_configurator.py:53 in 0.5.12, after model_runner_kv_cache_mixin.py:70 computes the rest
as free memory after loading less total x (1 - mem_fraction_static)).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from packaging.version import InvalidVersion, Version

MIB = 1024 * 1024
REPLICATED_PARTS = ("router", "norms")


@dataclass
class Fit:
    fits: bool
    gpu_memory_bytes: int
    mem_fraction_static: float
    mem_fraction_source: str
    cuda_graph_max_bs: int
    weights_by_part: dict[str, float]
    draft_bytes: float
    kv_bytes_per_token: float
    kv_cache_bytes: float
    kv_tokens: int
    context_length: int | None
    why: str = ""
    max_running_requests: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def weights_bytes(self) -> float:
        return sum(self.weights_by_part.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "fits": self.fits, "why": self.why or None,
            "gpu_memory_bytes": self.gpu_memory_bytes,
            "mem_fraction_static": self.mem_fraction_static, "mem_fraction_source": self.mem_fraction_source,
            "cuda_graph_max_bs": self.cuda_graph_max_bs,
            "weights_bytes_per_gpu": round(self.weights_bytes),
            "weights_bytes_per_gpu_by_part": {k: round(v) for k, v in sorted(self.weights_by_part.items())},
            "draft_bytes_per_gpu": round(self.draft_bytes),
            "kv_bytes_per_token_per_gpu": round(self.kv_bytes_per_token, 1),
            "kv_cache_bytes_per_gpu": round(self.kv_cache_bytes),
            "kv_cache_tokens": self.kv_tokens,
            "context_length": self.context_length,
            "full_context_requests": (self.kv_tokens // self.context_length) if self.context_length else None,
            "max_running_requests": self.max_running_requests,
            "kv_tokens_per_running_request": (self.kv_tokens // self.max_running_requests
                                              if self.max_running_requests else None),
            "notes": list(self.notes),
        }


# --------------------------------------------------------------------- SGLang's mem_fraction_static

def _version(text: str | None) -> Version | None:
    try:
        return Version(str(text)) if text else None
    except InvalidVersion:
        return None


def graph_and_prefill_defaults(gpu_mib: float, tp: int) -> tuple[int, int]:
    """(chunked_prefill_size, cuda_graph_max_bs) SGLang picks by GPU memory when the launch leaves them out:
    the same buckets in 0.5.5 (server_args.py:665-772, HIP-only buckets aside), 0.5.12 (server_args.py:1425-1488)
    and 0.5.18 (server_args.py:4830-4890)."""
    if gpu_mib < 20 * 1024:
        return 2048, 8
    if gpu_mib < 35 * 1024:
        return 2048, 24 if tp < 4 else 80
    if gpu_mib < 60 * 1024:
        return 4096, 32 if tp < 4 else 160
    if gpu_mib < 160 * 1024:
        return 8192, 256 if tp < 4 else 512
    return 16384, 512


def piecewise_token_count(max_tokens: int) -> int:
    """Length of SGLang 0.5.12's piecewise CUDA graph token list (server_args.py:1657-1675)."""
    sizes = (list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32))
             + list(range(576, 1025, 64)) + list(range(1280, 4097, 256)) + list(range(4608, max_tokens + 1, 512)))
    return len([s for s in sizes if s <= max_tokens])


def static_fraction(gpu_bytes: int, tp: int, version: str | None, mla: bool, speculative: bool,
                    cuda_graph_max_bs: int | None) -> tuple[float, int, str]:
    """(mem_fraction_static, cuda_graph_max_bs, source) as SGLang computes them when the launch sets neither
    (single node, no DP attention, no pipeline parallelism)."""
    gpu_mib = gpu_bytes / MIB
    chunked, graph_default = graph_and_prefill_defaults(gpu_mib, tp)
    graph_bs = cuda_graph_max_bs or graph_default
    parsed = _version(version)
    older = parsed is not None and parsed < Version("0.5.6")
    reserved = 512 + max(chunked, 2048) * 1.5 + graph_bs * 2 + tp / 8 * 1024
    if older:
        cite = "SGLang 0.5.5 server_args.py:785-823"
    else:
        cite = "SGLang 0.5.12 server_args.py:1541-1587"
        # piecewise CUDA graphs are on by default in 0.5.12 (disable_piecewise_cuda_graph: False, line 737)
        reserved += 1.5 * 1024 if mla else piecewise_token_count(chunked) * 8
    if gpu_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if speculative:
        reserved += (2 if older else 4) * 1024  # "eagle draft models and cuda graphs"
    if parsed is not None and parsed >= Version("0.5.13"):
        cite += (f" (the rule read in 0.5.12; {version} was not read for it, and 0.5.18 restructured it: "
                 "server_args.py:4802-5120)")
    elif parsed is not None and Version("0.5.6") <= parsed < Version("0.5.12"):
        cite += f" (the rule read in 0.5.12; {version} was not read for it)"
    return round((gpu_mib - reserved) / gpu_mib, 3), graph_bs, cite


# ------------------------------------------------------------------------------------------ the fit

def weights_per_gpu(model: dict[str, Any], tp: int) -> dict[str, float]:
    """Bytes of each part on one GPU under TP (EP changes which experts a GPU holds, not how many bytes)."""
    return per_gpu(model["parts_bytes"], model, tp)


def per_gpu(parts: dict[str, float], model: dict[str, Any], tp: int) -> dict[str, float]:
    """Bytes of each of `parts` (a model's whole or active parts) on one GPU of a TP group."""
    out = {}
    for part, total in parts.items():
        out[part] = total if part in REPLICATED_PARTS else total / tp
    replicated = model.get("replicated_attention_bytes") or 0.0
    if replicated and parts["attention"] >= replicated:
        out["attention"] = (parts["attention"] - replicated) / tp + replicated
    if model["attention"] != "mla" and model["kv_heads"] < tp:
        # K and V projections of a head are copied onto the GPUs that share it
        kv_share = 2 * model["kv_heads"] * model["head_dim"] * model["hidden_size"] * model["layers"]
        per_weight = parts["attention"] / max(model["parts_params"]["attention"], 1)
        out["attention"] += kv_share * per_weight * (1 / model["kv_heads"] - 1 / tp)
    return out


def kv_bytes_per_token(model: dict[str, Any], tp: int) -> float:
    layers = model["layers"]
    if model["attention"] == "mla":
        return float(model["kv_bytes_per_token_layer"] * layers)
    heads_here = max(1, model["kv_heads"] // tp)
    return float(2 * heads_here * model["head_dim"] * model["dtype_bytes"] * layers)


def draft_bytes(model: dict[str, Any], draft: dict[str, Any] | None, tp: int) -> tuple[float, str]:
    """Weights of the EAGLE-3 draft on one GPU: the draft folder's own bytes when given, else modelled as one
    decoder layer of the target's width with its own lm_head (its vocabulary taken as the target's)."""
    if draft is not None:
        return draft["weight_bytes"] / tp, f"draft model {draft['source']}"
    hidden = model["hidden_size"]
    heads, kv, hd = model["heads"], model["kv_heads"], model["head_dim"]
    inter = 3 * hidden * 4 * hidden  # MLP width modelled as 4 x hidden
    layer = 2 * hidden * heads * hd + 2 * hidden * kv * hd + inter
    params = layer + 3 * hidden * hidden + model["vocab_size"] * hidden
    return params * 2 / tp, "modelled EAGLE-3 draft: one decoder layer + fc + lm_head, bf16"


def fit(model: dict[str, Any], gpu_bytes: int, tp: int, version: str | None, speculative: bool,
        cuda_graph_max_bs: int | None = None, context_length: int | None = None,
        draft: dict[str, Any] | None = None, max_running_requests: int | None = None) -> Fit:
    """The memory fit of one candidate launch."""
    fraction, graph_bs, source = static_fraction(gpu_bytes, tp, version, model["attention"] == "mla",
                                                 speculative, cuda_graph_max_bs)
    weights = weights_per_gpu(model, tp)
    notes = []
    extra, draft_note = (draft_bytes(model, draft, tp) if speculative else (0.0, ""))
    if draft_note:
        notes.append(draft_note)
    per_token = kv_bytes_per_token(model, tp)
    if speculative:
        per_token += per_token / model["layers"]  # the draft's one layer keeps its own KV
    kv = gpu_bytes * fraction - sum(weights.values()) - extra
    tokens = int(kv // per_token) if kv > 0 else 0
    result = Fit(True, gpu_bytes, fraction, source, graph_bs, weights, extra, per_token, kv, tokens,
                 context_length, notes=notes, max_running_requests=max_running_requests)
    if kv <= 0:
        result.fits = False
        result.why = (f"needs {sum(weights.values()) / 1e9:.1f} GB of weights per GPU"
                      + (f" + {extra / 1e9:.1f} GB draft" if extra else "")
                      + f", more than the {gpu_bytes * fraction / 1e9:.1f} GB SGLang leaves for weights and KV cache "
                      f"(mem_fraction_static {fraction} of {gpu_bytes / 1e9:.1f} GB)")
    elif context_length and tokens < context_length:
        result.fits = False
        result.why = (f"KV cache holds {tokens} tokens per GPU, fewer than --context-length {context_length}")
    return result
