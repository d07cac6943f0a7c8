"""Which op a compiled kernel belongs to, from its shared object's path and its (mangled) symbol
name.

The patterns name what the wheels' own symbols say: CUTLASS collective names carry the architecture
they were written for (MainloopSm90..., Sm100Fmha...) and the element types (float_e4m3_t,
float_e2m1_t).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LENGTH_PREFIX = re.compile(r"(\d+)(?=[A-Za-z_])")
_NAMESPACE_ARCH = re.compile(
    r"^[Ss]m(\d{2,3})[af]?$"
)  # namespaces such as flash_mla's sm90:: / sm100::
_CAMEL_ARCH = re.compile(
    r"Sm(\d{2,3})(?=[A-Z_]|$)"
)  # CUTLASS class names: MainloopSm90..., Sm100Fmha...


@dataclass(frozen=True)
class Rule:
    op: str
    path: str  # regex on the file's path inside the wheel
    name: str  # regex on the mangled kernel name ("" = any)
    exclude: str = ""


# First match wins, so the specific grouped (MoE) patterns come before the plain GEMM ones.
SO_RULES: tuple[Rule, ...] = (
    Rule("attention.fa3", r"flash_ops", r""),
    Rule("attention.flashmla", r"flashmla_ops|flash_mla/", r""),
    Rule("attention.cutlass_mla", r"", r"FmhaMla|cutlass_mla|MlaKernel"),
    # get_group_gemm_starts: the pointer-array setup kernels of the grouped (MoE) GEMMs
    Rule("moe.cutlass.w4a8", r"", r"int4_fp8_get_group_gemm_starts"),
    Rule("moe.cutlass.nvfp4", r"", r"get_group_gemm_starts\w*float_e2m1"),
    Rule("moe.cutlass.fp8_blockwise", r"", r"get_group_gemm_starts\w*float_e4m3"),
    Rule("moe.cutlass.fp8_blockwise", r"", r"Array\w*Blockwise|Fp8BlockwiseGroupedGemm"),
    Rule(
        "moe.cutlass.nvfp4",
        r"",
        r"Array\w*BlockScaled\w*|PtrArray\w*float_e2m1",
        r"BlockwiseScaling",
    ),
    Rule("moe.cutlass.w4a8", r"", r"ArrayTmaGmmaWarpSpecializedMixed|w4a8"),
    Rule("moe.marlin.wna16", r"", r"marlin_moe"),
    Rule("gemm.fp8_blockwise", r"", r"Blockwise|BlockwiseScaling"),
    Rule(
        "gemm.nvfp4",
        r"",
        r"BlockScaled\w*float_e2m1|float_e2m1\w*BlockScaled|cvt_fp16_to_fp4|scaled_fp4",
    ),
    Rule("gemm.fp8_scaled_mm", r"", r"float_e4m3"),
    Rule("gemm.w8a8_int8", r"", r"int8_scaled_mm|GemmWithEpilogueVisitor|DefaultGemmWithVisitor"),
    Rule("gemm.awq", r"", r"awq"),
    Rule("gemm.gptq_marlin", r"", r"marlin|gptq_marlin"),
    Rule("gemm.gptq_exllama", r"", r"4gptq"),
    Rule("allreduce.custom", r"", r"cross_device_reduce"),
    Rule("allreduce.mscclpp", r"", r"allreduce_LL"),
    Rule(
        "allreduce.fusion",
        r"",
        r"allreduce_fusion|AllReduceFusion|allreduce_fused|oneshot_allreduce",
    ),
    Rule(
        "moe.align_sum_gate", r"", r"moe_align|moe_sum|moe_fused_gate|moeSoftmax|moeTopK|topkGating"
    ),
    Rule("deep_gemm", r"deep_gemm/", r""),
)


def classify_kernel(path: str, name: str) -> str | None:
    """The op of one kernel, or None when no rule names it."""
    for rule in SO_RULES:
        if rule.path and not re.search(rule.path, path):
            continue
        if rule.name and not re.search(rule.name, name):
            continue
        if rule.exclude and re.search(rule.exclude, name):
            continue
        return rule.op
    return None


def identifiers(mangled: str) -> list[str]:
    """The <length><identifier> source names inside an Itanium-mangled symbol."""
    out: list[str] = []
    pos = 0
    while (m := _LENGTH_PREFIX.search(mangled, pos)) is not None:
        size = int(m.group(1))
        start = m.end()
        out.append(mangled[start : start + size])
        pos = start + size if size else start + 1
    return out


def arch_tokens(name: str) -> set[int]:
    """The SM numbers a kernel's name says it was written for (CUTLASS MainloopSm90..., namespace
    sm100::)."""
    found: set[int] = set()
    for ident in identifiers(name):
        m = _NAMESPACE_ARCH.match(ident)
        found.update([int(m.group(1))] if m else (int(t) for t in _CAMEL_ARCH.findall(ident)))
    return {t for t in found if t >= 80}


def cubin_op(path: str) -> str | None:
    """The op of one standalone cubin of flashinfer-cubin, from its directory and file name."""
    leaf = path.rsplit("/", 1)[-1]
    if "/fmha/trtllm-gen/" in path:
        kind = "trtllm_mla" if re.search(r"H(?:Qk)?576|HQk576|Mla", leaf) else "trtllm_mha"
        phase = "prefill" if "Context" in leaf else "decode"
        return f"attention.{kind}.{phase}"
    if "/fmha/cute-dsl/" in path:
        return "attention.flashinfer_cute_dsl"
    if "/batched_gemm-" in path:
        return "moe.flashinfer_trtllm." + _trtllm_dtype(leaf)
    if "/gemm-" in path:
        return "gemm.trtllm_gen." + _trtllm_dtype(leaf)
    if "/deep-gemm/" in path:
        return "gemm.flashinfer_deep_gemm.fp8"
    return None


def _trtllm_dtype(leaf: str) -> str:
    # trtllm-gen names are <Kind>_<Out>_<A><B>_...; the A/B element types decide the quantization.
    parts = leaf.split("_")
    ab = parts[2] if len(parts) > 2 else leaf
    for token, dtype in (
        ("MxE2m1", "mxfp4"),
        ("E2m1", "nvfp4"),
        ("MxE4m3", "mxfp8"),
        ("E4m3", "fp8"),
        ("Bfloat16", "bf16"),
        ("Fp16", "fp16"),
    ):
        if token in ab:
            return dtype
    return "other"
