"""The shapes of one decode step's operations, read from a model profile (autoconf/models.py) and a
TP size.

What the step model (step_model.py) looks up in the per-op tables: the GEMMs of attention (GQA or
MLA with its LoRA ranks), the MoE block or dense MLP, the lm_head, and the weight format each part
is stored in. Every number comes from the profile's config fields and its per-part parameter and
byte counts; where the profile does not keep a config field (the MLA q LoRA rank, the MoE and dense
intermediate sizes) it is solved back from those counts, exactly as models.parameter_parts counted
them.

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# models.parameter_parts counts an MLA model with these head widths when its config does not set
# them (DeepSeek-V3's and Kimi-K2's configs both set 128): the same defaults, so the shapes add up
# to its counts.
MLA_NOPE_DIM = 128
MLA_V_DIM = 128


@dataclass(frozen=True)
class Shapes:
    """Per-GPU shapes of one decode step under TP `tp`."""

    tp: int
    layers: int
    moe_layers: int
    hidden: int
    mla: bool
    heads: int  # query heads per GPU
    # KV heads per GPU (at least one: SGLang replicates a KV head over the TP ranks that share it)
    kv_heads: int
    head_dim: int
    q_lora: int
    kv_lora: int
    rope: int
    experts: int
    topk: int
    moe_inter: int  # one expert's intermediate size (whole, before TP)
    shared_inter: int  # shared experts' intermediate size (whole)
    dense_inter: int  # a dense layer's intermediate size (whole)
    vocab: int
    formats: dict[str, float]  # bytes per parameter of each part (attention, experts, ...)

    @property
    def dense_layers(self) -> int:
        return self.layers - self.moe_layers


def _bytes_per_param(model: dict[str, Any], part: str) -> float:
    params = float((model.get("parts_params") or {}).get(part) or 0.0)
    data = float((model.get("parts_bytes") or {}).get(part) or 0.0)
    return data / params if params else float(model.get("dtype_bytes") or 2)


def moe_layers(model: dict[str, Any]) -> int:
    """MoE layers: the router holds hidden x experts weights in each of them (as launch_model counts
    them)."""
    experts = int(model.get("experts") or 0)
    router = (model.get("parts_params") or {}).get("router") or 0
    return int(round(router / (model["hidden_size"] * experts))) if experts else 0


def _mla_q_lora(model: dict[str, Any], hidden: int, kv_lora: int, rope: int) -> int:
    """The q LoRA rank from the replicated q_a/kv_a projections (hidden x (q_lora + kv_lora + rope)
    a layer)."""
    replicated = float(model.get("replicated_attention_bytes") or 0.0)
    per_param = _bytes_per_param(model, "attention")
    if not replicated or not per_param:
        return 0
    return max(
        0, int(round(replicated / per_param / int(model["layers"]) / hidden)) - kv_lora - rope
    )


def shapes(model: dict[str, Any], tp: int) -> Shapes:
    hidden, layers = int(model["hidden_size"]), int(model["layers"])
    mla = model.get("attention") == "mla"
    n_moe = moe_layers(model)
    experts, topk = int(model.get("experts") or 0), int(model.get("active_experts") or 0)
    params = model.get("parts_params") or {}
    moe_inter = (
        int(round(params.get("experts", 0) / (n_moe * experts * 3 * hidden)))
        if n_moe and experts
        else 0
    )
    shared = int(round(params.get("shared_experts", 0) / (n_moe * 3 * hidden))) if n_moe else 0
    dense_layers = layers - n_moe
    dense = (
        int(round(params.get("dense_mlp", 0) / (dense_layers * 3 * hidden))) if dense_layers else 0
    )
    kv_lora = int(model.get("kv_lora_rank") or 0)
    rope = int(model.get("qk_rope_head_dim") or 0)
    return Shapes(
        tp=tp,
        layers=layers,
        moe_layers=n_moe,
        hidden=hidden,
        mla=mla,
        heads=max(1, int(model["heads"]) // tp),
        kv_heads=max(1, int(model["kv_heads"]) // tp),
        head_dim=int(model["head_dim"]),
        q_lora=_mla_q_lora(model, hidden, kv_lora, rope) if mla else 0,
        kv_lora=kv_lora,
        rope=rope,
        experts=experts,
        topk=topk,
        moe_inter=moe_inter,
        shared_inter=shared,
        dense_inter=dense,
        vocab=int(model.get("vocab_size") or 0),
        formats={
            part: _bytes_per_param(model, part)
            for part in ("attention", "experts", "shared_experts", "dense_mlp", "lm_head")
        },
    )


# Bytes per weight -> the op tables' dtype names, narrowest first: (upper bound of bytes, gemm
# dtypes, moe dtypes). A 4-bit format with its scales is below 0.75 bytes, fp8 with block scales
# just above 1.
FORMAT_NAMES: tuple[tuple[float, tuple[str, ...], tuple[str, ...]], ...] = (
    (0.75, ("nvfp4",), ("int4_wo", "w4a16_mxfp4", "nvfp4")),
    (1.5, ("fp8_block", "fp8"), ("fp8_block",)),
    (99.0, ("bfloat16",), ("bfloat16",)),
)
TABLE_BYTES = {
    "nvfp4": 0.5625,
    "int4_wo": 0.5625,
    "w4a16_mxfp4": 0.53125,
    "w4a8_mxfp4_mxfp8": 0.53125,
    "fp8_block": 1.0,
    "fp8": 1.0,
    "int8_wo": 1.0,
    "bfloat16": 2.0,
}


def wanted_formats(per_param: float, moe: bool, scheme: str | None = None) -> tuple[str, ...]:
    """The table dtypes that store a weight of `per_param` bytes, best first; an mxfp4 checkpoint
    asks for the mxfp4 MoE rows first, an nvfp4 one for nvfp4."""
    for bound, gemm, moe_names in FORMAT_NAMES:
        if per_param < bound:
            names = moe_names if moe else gemm
            if scheme and any(scheme in name for name in names):
                names = tuple(sorted(names, key=lambda name: scheme not in name))
            return names
    return ("bfloat16",)
