"""Turn wheel scans into the kernel-matrix document (plain JSON-ready data, deterministic)."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

from .jitsrc import SourceFact, flashinfer_jit_facts, sgl_kernel_loader
from .scan import OpFacts, scan_wheel


def _route(facts: OpFacts, loader: SourceFact | None) -> dict[str, list[int]]:
    """Per file, the SMs that can load it: sgl_kernel sends SM90 to sm90/ and every other GPU to
    sm100/."""
    out: dict[str, list[int]] = {}
    for file, sms in facts.sms.items():
        keep = set(sms)
        if loader is not None and file.startswith("sgl_kernel/sm90/"):
            keep &= {90}
        elif loader is not None and file.startswith("sgl_kernel/sm100/"):
            keep -= {90}
        out[file] = sorted(keep)
    return out


def _binary_ops(wheel: Path, ops: dict[str, OpFacts], loader: SourceFact | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for op, facts in sorted(ops.items()):
        routed = _route(facts, loader)
        sources: list[dict[str, Any]] = [
            {"wheel": wheel.name, "file": file, "targets": sorted(facts.targets[file]), "sms": sms}
            for file, sms in sorted(routed.items())
        ]
        if loader is not None and any(
            f.startswith(("sgl_kernel/sm90/", "sgl_kernel/sm100/")) for f in routed
        ):
            sources.append(
                {"wheel": wheel.name, "file": loader.file, "line": loader.line, "text": loader.text}
            )
        out[op] = {
            "sms": sorted({s for sms in routed.values() for s in sms}),
            "kernels": facts.kernels,
            "read_from": "binary",
            "sources": sources,
        }
    return out


def _source_ops(wheel: Path, facts: list[SourceFact]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fact in facts:
        entry = out.setdefault(fact.op, {"sms": [], "read_from": "source", "sources": []})
        entry["sms"] = sorted(set(entry["sms"]) | set(fact.sms))
        entry["sources"].append(
            {"wheel": wheel.name, "file": fact.file, "line": fact.line, "text": fact.text}
        )
    return out


def wheel_record(wheel: Path) -> dict[str, Any]:
    """Everything the matrix says about one kernel wheel."""
    with zipfile.ZipFile(wheel) as zf:
        loader = sgl_kernel_loader(zf)
        jit = flashinfer_jit_facts(zf)
    ops = _binary_ops(wheel, scan_wheel(wheel), loader)
    ops.update(_source_ops(wheel, jit))
    return {"wheel": wheel.name, "bytes": wheel.stat().st_size, "ops": ops}


def release_view(wheels: dict[str, Any], keys: list[str]) -> dict[str, dict[str, list[int]]]:
    """release -> pinned wheel -> op -> SMs, the short form of the wheels table."""
    return {
        key: {op: entry["sms"] for op, entry in sorted(wheels[key]["ops"].items())}
        for key in sorted(keys)
        if key in wheels
    }
