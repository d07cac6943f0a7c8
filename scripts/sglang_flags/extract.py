"""Walk server_args.py: every add_argument call and every add_cli_args_from_dataclass(...) call;
scan the env."""

from __future__ import annotations

import ast
import re
from typing import Any

from .classic import classic_flag
from .common import SERVER_ARGS, _text
from .evaluate import Evaluator
from .fields import _dataclass_sources, _field_defaults, class_fields, declarative_flag
from .wheel import Wheel

KNOWN_ENV = [
    "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE",
    "SGLANG_PCIE_IPC_MAX_NUMEL",
    "SGLANG_SKIP_P2P_CHECK",
    "SGLANG_USE_1STAGE_ALLREDUCE",
    "SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2",
    "SGLANG_CUSTOM_ALL_REDUCE_V2_MAX_SIZE_KB",
    "SGLANG_ENABLE_CUSTOM_ALL_REDUCE_V2_MULTINODE",
    "SGLANG_USE_JIT_ALL_REDUCE",
    "SGLANG_SYMM_MEM_PREALLOC_GB_SIZE",
    "SGLANG_DEBUG_SYMM_MEM",
    "SGLANG_MSCCLPP_MAX_BYTES",
    "SGLANG_NCCL_SO_PATH",
    "SGLANG_DETERMINISTIC_NCCL_NCHANNELS",
    "SGLANG_USE_CUDA_IPC_TRANSPORT",
]
# Besides the known list, any SGLANG_* name about all-reduce, P2P, PCIe IPC, NCCL or symmetric
# memory that appears in the serving runtime (sglang/srt/) is recorded, so new knobs show up in
# review of the diff.
ENV_PATTERN = re.compile(
    r"\bSGLANG_[A-Z0-9_]*(?:ALLREDUCE|ALL_REDUCE|CUSTOM_AR|SYMM_MEM|P2P|PCIE|NCCL|NVLS|MSCCL)[A-Z0-9_]*\b"
)

# argparse actions that take no value on the command line.


def extract(wheel: Wheel) -> dict[str, Any]:
    module = wheel.module("sglang.srt.server_args")
    if module is None:
        raise SystemExit(f"{wheel.path.name}: no {SERVER_ARGS} in the wheel")

    # defaults of the ServerArgs fields (classic calls say default=ServerArgs.x)
    server_sources = _dataclass_sources(module, "ServerArgs")
    field_defaults = _field_defaults(module, server_sources)
    ev = Evaluator(module, field_defaults)

    flags: dict[str, dict[str, Any]] = {}
    problems: list[str] = []

    def add(rec: dict[str, Any] | None) -> None:
        if rec is None:
            return
        key = rec["options"][0]
        if key in flags:
            problems.append(f"{key} registered twice")
        flags[key] = rec

    allow_abbrev: bool | None = None
    conflict_handler = "error"

    def walk(node: ast.AST, conditions: list[str]) -> None:
        nonlocal allow_abbrev, conflict_handler
        for child in ast.iter_child_nodes(node):
            conds = conditions
            if isinstance(child, ast.If):
                walk(child.test, conditions)
                for stmt in child.body:
                    walk_stmt(stmt, conditions + [_text(child.test)])
                for stmt in child.orelse:
                    walk_stmt(stmt, conditions + ["not (" + _text(child.test) + ")"])
                continue
            if isinstance(child, ast.FunctionDef):
                ev.locals = {}
                ev.mutated = set()
                for sub in ast.walk(child):
                    if (
                        isinstance(sub, ast.Assign)
                        and len(sub.targets) == 1
                        and isinstance(sub.targets[0], ast.Name)
                    ):
                        ev.locals[sub.targets[0].id] = sub.value
                    if (
                        isinstance(sub, ast.Call)
                        and isinstance(sub.func, ast.Attribute)
                        and sub.func.attr in ("add", "append", "extend", "update")
                        and isinstance(sub.func.value, ast.Name)
                    ):
                        ev.mutated.add(sub.func.value.id)
            if isinstance(child, ast.Call):
                fname = _text(child.func)
                if fname.endswith(".add_argument"):
                    add(classic_flag(child, ev, module, " and ".join(conds) or None))
                elif fname.split(".")[-1] == "add_cli_args_from_dataclass" and len(child.args) >= 2:
                    for mod, cls in _dataclass_sources(module, _text(child.args[1])):
                        cev = Evaluator(mod, field_defaults)
                        for fmod, name, fnode in class_fields(mod, cls):
                            add(declarative_flag(fmod, name, fnode, cev, cls.name))
                elif fname.split(".")[-1] == "ArgumentParser":
                    for kw in child.keywords:
                        if kw.arg == "allow_abbrev" and isinstance(kw.value, ast.Constant):
                            allow_abbrev = bool(kw.value.value)
                        if kw.arg == "conflict_handler" and isinstance(kw.value, ast.Constant):
                            conflict_handler = str(kw.value.value)
            walk(child, conds)

    def walk_stmt(stmt: ast.AST, conditions: list[str]) -> None:
        wrapper = ast.Module(body=[stmt], type_ignores=[])  # type: ignore[list-item]  # stmt is an ast.stmt
        walk(wrapper, conditions)

    walk(module.tree, [])

    env = scan_env(wheel)
    return {
        "allow_abbrev": True if allow_abbrev is None else allow_abbrev,
        "allow_abbrev_source": "explicit"
        if allow_abbrev is not None
        else "argparse default (not set in " + SERVER_ARGS + ")",
        "conflict_handler": conflict_handler,
        "flags": flags,
        "env": env,
        "problems": problems,
        "declared_in": sorted({SERVER_ARGS} | {m.path for m, _ in server_sources}),
    }


def scan_env(wheel: Wheel) -> list[dict[str, Any]]:
    hits: dict[str, set[str]] = {}
    for name in sorted(wheel.names):
        if not name.endswith(".py") or not name.startswith("sglang/"):
            continue
        text = wheel.zip.read(name).decode("utf-8", "replace")
        for var in KNOWN_ENV:
            if var in text:
                hits.setdefault(var, set()).add(name)
        if name.startswith("sglang/srt/"):
            for var in ENV_PATTERN.findall(text):
                hits.setdefault(var, set()).add(name)
    return [
        {"name": k, "known": k in KNOWN_ENV, "files": sorted(v)[:4], "file_count": len(v)}
        for k, v in sorted(hits.items())
    ]
