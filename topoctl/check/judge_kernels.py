"""The judge stage of check, kernels: a backend the launch names (or SGLang's `auto` resolves to,
where its dispatch is read: rules/sglang/kernels.py) whose kernels were never built for the target
GPU's SM.

Blocks only where the kernel matrix shows the op's kernels for other SMs, none for this one, and no
JIT path (rules/sglang/kernels.py `missing`); a gap the matrix cannot settle warns.

Layer: judge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from typing import Any

from topoctl.check.outcome import Item
from topoctl.check.parse import written_value
from topoctl.core.errors import one_line
from topoctl.core.vocab import Severity
from topoctl.rules.sglang import kernels
from topoctl.rules.sglang.spelling import switch
from topoctl.snapshot.view import SnapshotLike, view_of

_ATTENTION_DESTS = ("attention_backend", "prefill_attention_backend", "decode_attention_backend")
_AVOID_MOE = {"mxfp4": "triton_kernel"}


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _sms(snapshot: SnapshotLike) -> list[int]:
    return sorted(
        {sm for gpu in view_of(snapshot).indexed_gpus if isinstance(sm := gpu.get("sm"), int)}
    )


def _asks(
    parsed: Any, model: dict[str, Any] | None, release: str, sm: int, tp: int
) -> list[tuple[kernels.Op, str, str]]:
    """(op, the flag that names it as written, where it comes from) for each kernel the launch runs."""
    out: list[tuple[kernels.Op, str, str]] = []
    for dest in _ATTENTION_DESTS:
        value, _ = written_value(parsed, dest)
        op = kernels.attention(value) if value else None
        if op is not None:
            out.append((op, f"{_flag(dest)} {value}", "written"))
    if model is None or model.get("moe", True):
        quant, _ = written_value(parsed, "quantization")
        dtype = kernels.moe_dtype(quant, model)
        runner, _ = written_value(parsed, "moe_runner_backend")
        if runner and runner != "auto":
            op = kernels.moe_runner(runner, dtype)
            if op is not None:
                out.append((op, f"--moe-runner-backend {runner}", "written"))
        elif model is not None:
            piecewise = written_value(parsed, "enable_piecewise_cuda_graph")[0] is not None
            picked = kernels.auto_moe_runner(
                release, sm, str(model.get("architecture")), dtype, piecewise
            )
            op = kernels.moe_runner(picked[0], dtype) if picked else None
            if op is not None and picked is not None:
                out.append(
                    (op, f"--moe-runner-backend {runner or 'auto'}", f"resolved by {picked[1]}")
                )
    backend, _ = written_value(parsed, "flashinfer_allreduce_fusion_backend")
    if tp > 1 and (backend or switch(parsed.settings, "flashinfer_allreduce_fusion")):
        op = kernels.fusion(backend or "auto")
        if op is not None:
            out.append(
                (op, f"--flashinfer-allreduce-fusion-backend {backend or 'auto'}", "written")
            )
    return out


def _avoid(op: kernels.Op, flag: str, dtype: str | None) -> str:
    if flag.startswith("--moe-runner-backend"):
        return (
            f"pass --moe-runner-backend {_AVOID_MOE.get(dtype or '', 'triton')} (Triton "
            "kernels, compiled at run time)"
        )
    if flag.startswith("--flashinfer-allreduce-fusion"):
        return "drop the FlashInfer allreduce fusion flags"
    return f"pass {flag.split()[0]} flashinfer or triton (compiled at run time for every SM)"


def _item(
    answer: kernels.KernelAnswer, flag: str, origin: str, avoid: str, where: str
) -> Item | None:
    op, sm = answer.op, answer.sm
    built = "/".join(str(s) for s in answer.built_for) or "none"
    jit = "/".join(str(s) for s in answer.jit_for)
    how = f" ({origin})" if origin != "written" else ""
    cited = "; ".join(filter(None, [answer.source, answer.jit_source]))
    if answer.verdict == "missing":
        message = (
            f"{flag}{how}: {op.name} has no kernel for SM{sm} in SGLang {answer.release}: its "
            f"wheels build it for SM {built} only"
            + (
                f", its JIT module accepts SM {jit} only"
                if jit
                else ", and nothing compiles it at run time"
            )
            + f" [{cited}]"
        )
        return Item(
            "topoctl-kernel-not-built",
            Severity.BLOCK,
            "kernel not built for this GPU",
            one_line(message, 600),
            avoid,
            where,
        )
    if answer.verdict in ("jit", "doubt"):
        reason = (
            f"compiled at run time by FlashInfer's JIT (it accepts SM {jit})"
            if answer.verdict == "jit"
            else "SGLang may still run it (a build of the same GPU major has it, or only a JIT "
            "gate or a skipped op speaks)"
        )
        message = (
            f"{flag}{how}: {op.name} is not in SGLang {answer.release}'s prebuilt wheels for "
            f"SM{sm} (built for SM {built}); {reason} [{cited}]"
        )
        return Item(
            "topoctl-kernel-not-prebuilt",
            Severity.WARN,
            "kernel not prebuilt for this GPU",
            one_line(message, 600),
            avoid if answer.verdict == "doubt" else "",
            where,
        )
    return None


def kernel_items(
    parsed: Any, snapshot: SnapshotLike, version: str, model: dict[str, Any] | None, tp: int
) -> list[Item]:
    """The launch's kernels against every SM of the target's GPUs, for SGLang `version`
    (FlagSet.version: the release whose flag data, and so whose matrix, judges the launch)."""
    release = version
    quant, _ = written_value(parsed, "quantization")
    dtype = kernels.moe_dtype(quant, model)
    where = str(getattr(parsed, "where", "") or "")
    items: list[Item] = []
    for sm in _sms(snapshot):
        for op, flag, origin in _asks(parsed, model, release, sm, tp):
            item = _item(
                kernels.kernel_for(release, sm, op), flag, origin, _avoid(op, flag, dtype), where
            )
            if item is not None and all(item.message != seen.message for seen in items):
                items.append(item)
    return items
