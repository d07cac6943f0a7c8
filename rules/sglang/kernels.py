"""Whether a kernel SGLang would run exists for a GPU's SM, per release: read from the kernel
matrix.

The matrix (generated/kernel-matrix.json, scripts/extract_kernel_matrix.py, docs/kernel-matrix.md)
says which SMs each op's kernels are compiled for in the wheels a release pins, and which majors
FlashInfer's JIT modules accept. This module maps SGLang's flag values to those ops and answers, for
one op, one release and one SM:

    answer = kernel_for("0.5.9", 120, attention("fa3"))
    answer.verdict        # "missing": fa3 is built for SM 80/86/89/90 only, and nothing compiles it at run time
    answer.source         # "sgl-kernel==0.3.21 sgl_kernel/flash_ops.abi3.so (sm_80, sm_86, sm_90a)"

Verdicts: "built" (a prebuilt kernel targets the SM), "jit" (not prebuilt for it, but a FlashInfer
JIT module of the op accepts its major: compiled at run time), "missing" (prebuilt for other SMs, no
JIT path: the op cannot run), "doubt" (not shown for the SM, but the reading is not sure enough to
block: a sibling SM of the same major has it (an arch-specific build a custom wheel may add), or
only a JIT gate speaks), "unknown" (the release's wheels do not hold the op). A FlashInfer JIT
module's `supported_major_versions` is a hard gate: FlashInfer raises "No supported CUDA
architectures found" when the GPU's major is not among them (flashinfer-python 0.6.7.post2
flashinfer/compilation_context.py:79-93, get_nvcc_flags_list).

Layer: knowledge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from typing import Any

from topoctl.core import knowledge_cache as cache
from topoctl.core import safe_read as limits

MATRIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "generated", "kernel-matrix.json")
JIT_PREFIX = "flashinfer_jit."
MOE_DTYPES = ("bf16", "fp8", "mxfp4", "mxfp8", "nvfp4")
_TRTLLM_MOE_JIT = ("gen_trtllm_gen_fused_moe_sm100_module",)


@dataclass(frozen=True)
class Op:
    """One thing SGLang runs: the matrix ops that hold its prebuilt kernels, the FlashInfer JIT
    modules that can build it at run time, and how a user names it (`--attention-backend fa3`)."""

    name: str
    prebuilt: tuple[str, ...]
    jit: tuple[str, ...] = ()
    blocks: bool = (
        True  # False: a gap is never more than a warning (SGLang may skip the op on that SM)
    )


@dataclass(frozen=True)
class KernelAnswer:
    op: Op
    release: str
    sm: int
    verdict: str  # built | jit | missing | doubt | unknown
    built_for: tuple[int, ...]
    jit_for: tuple[int, ...]
    source: str  # the wheel, the file in it and its targets (or the JIT module's file:line)
    jit_source: str


# SGLang's attention backends with kernels in the kernel wheels; the others (flashinfer, triton, fa4
# ...) are built at run time for every SM the matrix lists, or are not in any wheel.
_ATTENTION: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "fa3": (("attention.fa3",), ()),
    "flashmla": (("attention.flashmla",), ()),
    "cutlass_mla": (("attention.cutlass_mla",), ()),
    "trtllm_mha": (
        ("attention.trtllm_mha.prefill", "attention.trtllm_mha.decode"),
        (
            "gen_trtllm_fmha_v2_sm120_module",
            "gen_trtllm_fmha_v2_module",
            "gen_fmha_v2_module",
            "gen_xqa_module",
        ),
    ),
    "trtllm_mla": (("attention.trtllm_mla.decode",), ("gen_xqa_module_mla", "gen_mla_module")),
}
# sgl-kernel's CUTLASS MoE per weight format (SGLang's `cutlass` runner: fp8.py
# cutlass_fused_experts_fp8, modelopt_quant.py cutlass_moe_fp4 in 0.5.10).
_CUTLASS_MOE = {
    "fp8": "moe.cutlass.fp8_blockwise",
    "nvfp4": "moe.cutlass.nvfp4",
    "w4afp8": "moe.cutlass.w4a8",
}
_FUSION_JIT = {
    "trtllm": ("gen_trtllm_comm_module",),
    "mnnvl": ("gen_trtllm_mnnvl_comm_module",),
    "auto": ("gen_trtllm_comm_module", "gen_trtllm_mnnvl_comm_module"),
}


# SGLang's --quantization values (and checkpoint schemes) -> the MoE weight formats of the matrix
_DTYPES = {
    "fp8": "fp8",
    "modelopt_fp8": "fp8",
    "w8a8_fp8": "fp8",
    "fbgemm_fp8": "fp8",
    "modelopt_fp4": "nvfp4",
    "nvfp4": "nvfp4",
    "mxfp4": "mxfp4",
    "mxfp8": "mxfp8",
    "w4afp8": "w4afp8",
}


def moe_dtype(written_quant: str | None, model: dict[str, Any] | None) -> str | None:
    """The MoE weight format: --quantization, else the checkpoint's scheme; bf16 for a known
    unquantized model."""
    if written_quant:
        return _DTYPES.get(written_quant.lower())
    if model is None:
        return None
    quant = model.get("quantization") or {}
    scheme = quant.get("scheme") or quant.get("method")
    return _DTYPES.get(str(scheme).lower()) if scheme else "bf16"


def attention(backend: str) -> Op | None:
    """The op of an attention backend name, None for one with no kernel in the wheels."""
    found = _ATTENTION.get(backend)
    return Op(f"attention backend {backend}", *found) if found else None


def moe_runner(runner: str, dtype: str | None) -> Op | None:
    """The op of a MoE runner for a weight format (None: unknown, every format's kernels must be
    missing)."""
    if runner in ("flashinfer_trtllm", "flashinfer_trtllm_routed", "flashinfer_mxfp4"):
        dtype = "mxfp4" if runner == "flashinfer_mxfp4" else dtype
        formats = (dtype,) if dtype in MOE_DTYPES else MOE_DTYPES
        label = f"MoE runner {runner}" + (f" ({dtype})" if dtype in MOE_DTYPES else "")
        return Op(label, tuple(f"moe.flashinfer_trtllm.{fmt}" for fmt in formats), _TRTLLM_MOE_JIT)
    if runner == "cutlass" and dtype in _CUTLASS_MOE:
        return Op(f"MoE runner cutlass ({dtype})", (_CUTLASS_MOE[dtype],))
    return None


def fusion(backend: str) -> Op | None:
    """FlashInfer's allreduce fusion: JIT only, and SGLang applies it on SM90/SM100 only (0.5.9
    layers/communicator.py:95), so a gap warns."""
    modules = _FUSION_JIT.get(backend)
    return (
        Op(f"FlashInfer allreduce fusion ({backend})", (), modules, blocks=False)
        if modules
        else None
    )


def _compact() -> dict[str, Any]:
    """The matrix cut to what answers need: per release, op -> [wheel, SMs, source text]."""
    doc = json.loads(limits.read_file(MATRIX, limits.MAX_DATA_FILE_BYTES))
    out: dict[str, dict[str, list[object]]] = {}
    for release, entry in doc["releases"].items():
        ops: dict[str, list[object]] = {}
        for wheel, table in entry["wheels"].items():
            details = doc["wheels"].get(wheel, {}).get("ops", {})
            for op, sms in table.items():
                ops[op] = [wheel, list(sms), _source_text(wheel, details.get(op, {}))]
        out[release] = ops
    return out


def _source_text(wheel: str, detail: dict[str, Any]) -> str:
    parts = []
    for row in detail.get("sources", [])[:2]:
        if "line" in row:
            parts.append(f"{row['file']}:{row['line']} {row.get('text', '')}".strip())
        else:
            parts.append(f"{row['file']} ({', '.join(row.get('targets', []))})")
    return f"{wheel} " + "; ".join(parts)


@functools.lru_cache(maxsize=1)
def matrix() -> dict[str, Any]:
    """{release: {op: [wheel, SMs, source]}}, served from the knowledge cache when the matrix is
    unchanged."""
    return dict(cache.cached("sglang-kernel-matrix", [MATRIX, __file__], _compact))


def _sibling(sm: int, sms: set[int]) -> bool:
    """Another SM of the same major has it (121 vs 120, 103 vs 100): an arch-specific build gap, not
    sure enough."""
    return any(other // 10 == sm // 10 for other in sms)


def kernel_for(release: str, sm: int, op: Op) -> KernelAnswer:
    """Whether `op` has a kernel for `sm` in `release` (a release with flag data, as FlagSet.version
    names it; one the matrix lacks answers "unknown"), with the source to cite."""
    table = matrix().get(release, {})
    rows = [table[name] for name in op.prebuilt if name in table]
    jits = [table[JIT_PREFIX + name] for name in op.jit if JIT_PREFIX + name in table]
    built = {s for row in rows for s in row[1]}
    jit_for = {s for row in jits for s in row[1]}
    source = "; ".join(dict.fromkeys(row[2] for row in rows))
    jit_source = "; ".join(dict.fromkeys(row[2] for row in jits))

    def answer(verdict: str) -> KernelAnswer:
        return KernelAnswer(
            op,
            release,
            sm,
            verdict,
            tuple(sorted(built)),
            tuple(sorted(jit_for)),
            source,
            jit_source,
        )

    if not rows and not jits:
        return answer("unknown")
    # every format's kernels must miss the SM: one of them present means the op may run there
    if any(sm in row[1] for row in rows):
        return answer("built")
    if (
        sm in jit_for
    ):  # an op with no prebuilt kernels in the release is built (or fetched) at run time anyway
        return answer("jit" if rows else "built")
    if not rows or not op.blocks or _sibling(sm, built | jit_for):
        return answer("doubt")
    return answer("missing")


# Where `--moe-runner-backend auto` becomes flashinfer_mxfp4 for GptOssForCausalLM with an MXFP4
# checkpoint on a GPU of major 10 or 12 (is_blackwell_supported(), utils/common.py):
# sglang/srt/server_args.py, per release. 0.5.5.post3-0.5.8.post1 check
# --enable-piecewise-cuda-graph first; 0.5.10 asks is_sm100_supported() instead and sends SM120 to
# triton_kernel (0.5.10 server_args.py:1748).
GPT_OSS_MXFP4_AUTO = {
    "0.5.5": 982,
    "0.5.5.post1": 994,
    "0.5.5.post2": 994,
    "0.5.5.post3": 1010,
    "0.5.6": 1108,
    "0.5.6.post1": 1132,
    "0.5.6.post2": 1161,
    "0.5.7": 1199,
    "0.5.8": 1307,
    "0.5.8.post1": 1307,
    "0.5.9": 1371,
}


def auto_moe_runner(
    release: str, sm: int, architecture: str, dtype: str | None, piecewise: bool
) -> tuple[str, str] | None:
    """(the runner SGLang's `auto` picks, the server_args.py line that picks it), where that
    dispatch is read."""
    line = GPT_OSS_MXFP4_AUTO.get(release)
    if line is None or architecture != "GptOssForCausalLM" or dtype != "mxfp4" or piecewise:
        return None
    if sm // 10 not in (10, 12):
        return None
    return "flashinfer_mxfp4", f"sglang=={release} sglang/srt/server_args.py:{line}"


def launch_unbuilt(
    release: str, sm: int, launch: dict[str, Any], model: dict[str, Any] | None, tp: int
) -> list[KernelAnswer]:
    """What recommend must not write on `sm`: the missing kernels check blocks (launch_missing), and
    FlashInfer allreduce fusion where this SM's wheels have no kernel for it, which check warns on
    (topoctl-kernel-not-prebuilt) and SGLang does not apply."""
    found = launch_missing(release, sm, launch, model)
    runner = launch.get("moe_runner_backend") or "auto"
    if runner == "auto" and model is not None and model.get("moe", True):
        # what SGLang's `auto` resolves to, where its dispatch is read (check resolves it the same way)
        dtype = moe_dtype(str(launch.get("quantization") or "") or None, model)
        picked = auto_moe_runner(release, sm, str(model.get("architecture")), dtype, False)
        moe_op = moe_runner(picked[0], dtype) if picked else None
        moe_answer = kernel_for(release, sm, moe_op) if moe_op is not None else None
        if moe_answer is not None and moe_answer.verdict == "missing":
            found.append(moe_answer)
    if tp > 1 and (
        launch.get("flashinfer_allreduce_fusion") is True
        or launch.get("flashinfer_allreduce_fusion_backend")
    ):
        op = fusion(str(launch.get("flashinfer_allreduce_fusion_backend") or "auto"))
        answer = kernel_for(release, sm, op) if op is not None else None
        if answer is not None and answer.verdict in ("missing", "jit", "doubt"):
            found.append(answer)
    return found


def launch_missing(
    release: str, sm: int, launch: dict[str, Any], model: dict[str, Any] | None
) -> list[KernelAnswer]:
    """The kernels a launch of logical settings (recommend's candidates) names that are missing on
    `sm`."""
    first = attention(str(launch.get("attention_backend") or ""))
    ops = [first] if first is not None else []
    runner = launch.get("moe_runner_backend")
    if runner and runner != "auto" and (model is None or model.get("moe", True)):
        op = moe_runner(str(runner), moe_dtype(launch.get("quantization"), model))
        ops += [op] if op is not None else []
    answers = [kernel_for(release, sm, op) for op in ops]
    return [answer for answer in answers if answer.verdict == "missing"]
