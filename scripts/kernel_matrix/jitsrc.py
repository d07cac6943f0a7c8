"""Facts read from Python source inside the wheels: FlashInfer's JIT supported majors, sgl-kernel's
loader."""

from __future__ import annotations

import ast
import re
import zipfile
from dataclasses import dataclass

from .targets import majors_to_sms


@dataclass(frozen=True)
class SourceFact:
    """One op's supported SMs, read at file:line of a wheel's source."""

    op: str
    sms: tuple[int, ...]
    file: str
    line: int
    text: str


def _literal_majors(node: ast.AST, consts: dict[str, ast.AST]) -> list[int] | None:
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("list", "tuple", "sorted")
    ):
        return _literal_majors(node.args[0], consts) if node.args else None
    if isinstance(node, ast.Name) and node.id in consts:
        return _literal_majors(consts[node.id], consts)
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError):
        return None
    if isinstance(value, (list, tuple, set)) and all(isinstance(v, int) for v in value):
        return sorted(value)
    return None


def _module_consts(tree: ast.Module) -> dict[str, ast.AST]:
    out: dict[str, ast.AST] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            out[node.targets[0].id] = node.value
    return out


def _calls_in(func: ast.AST) -> list[ast.keyword]:
    return [
        kw
        for call in ast.walk(func)
        if isinstance(call, ast.Call)
        for kw in call.keywords
        if kw.arg == "supported_major_versions"
    ]


def flashinfer_jit_facts(zf: zipfile.ZipFile) -> list[SourceFact]:
    """Every `supported_major_versions=` given in flashinfer/jit/**.py, named after its generator
    function."""
    facts: list[SourceFact] = []
    for name in sorted(
        n for n in zf.namelist() if n.startswith("flashinfer/jit/") and n.endswith(".py")
    ):
        text = zf.read(name).decode("utf-8")
        tree = ast.parse(text)
        consts = _module_consts(tree)
        lines = text.splitlines()
        for func in (
            n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        ):
            for kw in _calls_in(func):
                majors = _literal_majors(kw.value, consts)
                if majors is None:
                    continue
                facts.append(
                    SourceFact(
                        f"flashinfer_jit.{func.name}",
                        tuple(majors_to_sms(majors)),
                        name,
                        kw.value.lineno,
                        lines[kw.value.lineno - 1].strip(),
                    )
                )
    return facts


_LOADER_SM90 = re.compile(r"compute_capability\s*==\s*90\s*:")


def sgl_kernel_loader(zf: zipfile.ZipFile) -> SourceFact | None:
    """Where sgl_kernel/load_utils.py sends SM90 to sm90/common_ops and every other GPU to sm100/."""
    name = "sgl_kernel/load_utils.py"
    if name not in zf.namelist():
        return None
    lines = zf.read(name).decode("utf-8").splitlines()
    for i, line in enumerate(lines):
        if _LOADER_SM90.search(line) and any('"sm90"' in nxt for nxt in lines[i + 1 : i + 3]):
            return SourceFact("loader.sm90_subdir", (90,), name, i + 1, line.strip())
    return None
