#!/usr/bin/env python3
"""Extract SGLang's real server CLI flag set from its release wheels into topoctl/sglang/data/sglang-<version>.json.

    python scripts/extract_sglang_flags.py 0.5.5 0.5.12 0.5.18 0.5.23
    python scripts/extract_sglang_flags.py --wheel path/to/sglang-0.5.23-...whl   # offline, a wheel at hand

For each version the wheel is fetched with `pip download --no-deps sglang==VERSION` into a temporary
directory. SGLang is never installed or imported (its imports need torch and CUDA): the wheel is opened as
a zip archive and the Python sources are read with `ast`.

SGLang declares its server flags in two ways, and both are read:

* classic: `parser.add_argument("--flag", type=..., choices=..., help=...)` calls in
  `sglang/srt/server_args.py` (every function of that file; in practice `ServerArgs.add_cli_args`).
  All 0.5.5/0.5.12 flags, and the deprecated / dynamic-choice flags of later releases, are declared so.
* declarative (0.5.18 and later): `add_cli_args_from_dataclass(parser, ServerArgs)` turns annotated fields
  `name: A[T, "help"]` / `A[T, Arg(help=..., choices=..., aliases=..., action=...)]` into flags. The
  fields live on `ServerArgs` in server_args.py (0.5.18) or on the namespace classes listed in
  `_INPUT_NAMESPACES` / `collect_input_fields(...)` (0.5.23, under sglang/srt/arg_groups/fields/). The
  rules of `add_cli_args_from_dataclass` (Optional/Literal/list/bool handling, `no_cli`, `cli_name`)
  are mirrored here.

Choices that name a constant (in the same module or imported from another module of the wheel) are
resolved; anything computed at run time is kept as source text in "choices_unresolved".

The wheel is also scanned, as text, for environment variables topoctl knows about (communication
settings such as SGLANG_ENABLE_PCIE_IPC_ALLREDUCE); the hits go to the "env" section.

Output is deterministic (sorted keys, indent 1), so re-running on the same wheel gives the same file.
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

SERVER_ARGS = "sglang/srt/server_args.py"
HELP_MAX = 160
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "topoctl" / "sglang" / "data"

# Environment variables topoctl reasons about. Each one is looked for in every .py file of the wheel.
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
# Besides the known list, any SGLANG_* name about all-reduce, P2P, PCIe IPC, NCCL or symmetric memory that
# appears in the serving runtime (sglang/srt/) is recorded, so new knobs show up in review of the diff.
ENV_PATTERN = re.compile(
    r"\bSGLANG_[A-Z0-9_]*(?:ALLREDUCE|ALL_REDUCE|CUSTOM_AR|SYMM_MEM|P2P|PCIE|NCCL|NVLS|MSCCL)[A-Z0-9_]*\b"
)

# argparse actions that take no value on the command line.
NO_VALUE_ACTIONS = {"store_true", "store_false", "store_const", "append_const", "count", "help", "version",
                    "BooleanOptionalAction"}
BUILTIN_TYPES = {"int": "int", "float": "float", "str": "str", "bool": "bool"}


class Unresolved(Exception):
    pass


def _text(node: ast.AST | None) -> str:
    return "" if node is None else ast.unparse(node)


# --------------------------------------------------------------------------------------------------
# The wheel: modules parsed on demand, constants resolved across from-imports
# --------------------------------------------------------------------------------------------------


class Wheel:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.zip = zipfile.ZipFile(path)
        self.names = set(self.zip.namelist())
        self._modules: dict[str, "Module | None"] = {}

    def module(self, dotted: str) -> "Module | None":
        if dotted not in self._modules:
            mod = None
            for cand in (dotted.replace(".", "/") + ".py", dotted.replace(".", "/") + "/__init__.py"):
                if cand in self.names:
                    mod = Module(self, dotted, cand, self.zip.read(cand).decode("utf-8"))
                    break
            self._modules[dotted] = mod
        return self._modules[dotted]

    def sha256(self) -> str:
        h = hashlib.sha256()
        with open(self.path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()


class Module:
    def __init__(self, wheel: Wheel, dotted: str, path: str, text: str) -> None:
        self.wheel = wheel
        self.dotted = dotted
        self.path = path
        self.tree = ast.parse(text)
        self.assigns: dict[str, ast.AST] = {}
        self.imports: dict[str, tuple[str, str]] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        pkg = dotted.rsplit(".", 1)[0] if not path.endswith("__init__.py") else dotted
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.assigns[node.targets[0].id] = node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                self.assigns[node.target.id] = node.value
            elif isinstance(node, ast.ImportFrom) and node.module is not None or (
                    isinstance(node, ast.ImportFrom) and node.level):
                base = node.module or ""
                if node.level:
                    parts = pkg.split(".")
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join(parts + ([base] if base else []))
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = (base, alias.name)
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node

    def lookup(self, name: str, depth: int = 0) -> tuple["Module", str, str] | None:
        """Find where `name` is defined: (module, kind 'assign'|'class', name)."""
        if depth > 8:
            return None
        if name in self.classes:
            return self, "class", name
        if name in self.assigns:
            return self, "assign", name
        if name in self.imports:
            mod_name, orig = self.imports[name]
            other = self.wheel.module(mod_name)
            if other is not None:
                return other.lookup(orig, depth + 1)
        return None

    def class_def(self, name: str) -> tuple["Module", ast.ClassDef] | None:
        found = self.lookup(name)
        if found and found[1] == "class":
            return found[0], found[0].classes[found[2]]
        return None


# --------------------------------------------------------------------------------------------------
# A small evaluator for literal-ish expressions (choices, defaults)
# --------------------------------------------------------------------------------------------------

SUPPRESS = "==SUPPRESS=="


class Evaluator:
    def __init__(self, module: Module, field_defaults: dict[str, Any] | None = None) -> None:
        self.module = module
        self.field_defaults = field_defaults or {}
        self.locals: dict[str, ast.AST] = {}  # simple `name = expr` assignments of the function being read

    def eval(self, node: ast.AST, module: Module | None = None, depth: int = 0) -> Any:
        module = module or self.module
        if depth > 20:
            raise Unresolved("too deep")
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.eval(e, module, depth + 1) for e in node.elts]
        if isinstance(node, ast.Set):
            return sorted((self.eval(e, module, depth + 1) for e in node.elts), key=repr)
        if isinstance(node, ast.Dict):
            return {self.eval(k, module, depth + 1): self.eval(v, module, depth + 1)
                    for k, v in zip(node.keys, node.values) if k is not None}
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.eval(node.operand, module, depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.eval(node.left, module, depth + 1), self.eval(node.right, module, depth + 1)
            if isinstance(left, list) and isinstance(right, list):
                return left + right
            if isinstance(left, (str, int, float)) and type(left) is type(right):
                return left + right
            raise Unresolved(_text(node))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            left, right = self.eval(node.left, module, depth + 1), self.eval(node.right, module, depth + 1)
            if isinstance(left, (int, float)) and isinstance(right, (int, float)):
                return left * right
            raise Unresolved(_text(node))
        if isinstance(node, ast.Name):
            if node.id in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.id]
            found = module.lookup(node.id)
            if found and found[1] == "assign":
                return self.eval(found[0].assigns[found[2]], found[0], depth + 1)
            raise Unresolved(node.id)
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            base = self.eval(node.value, module, depth + 1)
            try:
                return base[node.slice.value]
            except (KeyError, IndexError, TypeError):
                raise Unresolved(_text(node)) from None
        if isinstance(node, ast.Name) and node.id in self.locals:
            return self.eval(self.locals[node.id], module, depth + 1)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id != "ServerArgs":
            found = module.class_def(node.value.id)
            if found:
                for item in found[1].body:
                    tgt = item.targets[0] if isinstance(item, ast.Assign) and len(item.targets) == 1 else (
                        item.target if isinstance(item, ast.AnnAssign) and item.value is not None else None)
                    if isinstance(tgt, ast.Name) and tgt.id == node.attr:
                        return self.eval(item.value, found[0], depth + 1)
        if isinstance(node, ast.Attribute):
            if _text(node) == "argparse.SUPPRESS":
                return SUPPRESS
            # ServerArgs.<field> in classic add_argument calls: the dataclass default of that field
            if isinstance(node.value, ast.Name) and node.value.id == "ServerArgs" and node.attr in self.field_defaults:
                return self.field_defaults[node.attr]
            raise Unresolved(_text(node))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            fname = node.func.id
            if fname in ("list", "tuple", "sorted", "set", "frozenset") and len(node.args) == 1 and not node.keywords:
                val = self.eval(node.args[0], module, depth + 1)
                if isinstance(val, dict):
                    val = list(val)
                if not isinstance(val, list):
                    raise Unresolved(_text(node))
                return sorted(val, key=repr) if fname in ("sorted", "set", "frozenset") else list(val)
            if fname == "_declared_default" and len(node.args) == 1 and isinstance(node.args[0], ast.Constant):
                if node.args[0].value in self.field_defaults:
                    return self.field_defaults[node.args[0].value]
        raise Unresolved(_text(node))

    def text(self, node: ast.AST) -> str:
        """Loose source text of a help string: constants joined, f-string holes and names kept as text."""
        if isinstance(node, ast.Constant):
            return str(node.value)
        if isinstance(node, ast.JoinedStr):
            out = []
            for part in node.values:
                if isinstance(part, ast.Constant):
                    out.append(str(part.value))
                elif isinstance(part, ast.FormattedValue):
                    try:
                        val = self.eval(part.value)
                        out.append(str(val) if not isinstance(val, list) else str(val))
                    except Unresolved:
                        out.append("{" + _text(part.value) + "}")
            return "".join(out)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.text(node.left) + self.text(node.right)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            return self.text(node.left)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
            return self.text(node.func.value)
        try:
            val = self.eval(node)
            return str(val)
        except Unresolved:
            return _text(node)


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value, sort_keys=True)
        return True
    except (TypeError, ValueError):
        return False


# --------------------------------------------------------------------------------------------------
# Flag records
# --------------------------------------------------------------------------------------------------

_VALUE = r"(?:=[\w<>{},.:-]+| <[\w-]+>| (?!instead\b|with\b|to\b|and\b|or\b|in\b|the\b|for\b)[a-z0-9_]+\b)?"
REPLACEMENT_PATTERNS = [
    re.compile(r"\balias (?:of|for) [`'\"]?(--[\w-]+" + _VALUE + ")", re.I),
    re.compile(r"\buse [`'\"]?(--[\w-]+(?:=[\w<>{},.:-]+| <[\w-]+>)?)", re.I),
    re.compile(r"\breplaced by [`'\"]?(--[\w-]+)", re.I),
    re.compile(r"\bin favou?r of [`'\"]?(--[\w-]+)", re.I),
    re.compile(r"\b[Uu]se [`'\"]?(SGLANG_[A-Z0-9_]+(?:=\w+)?)"),
]


def _help_says_deprecated(help_text: str, options: list[str]) -> bool:
    """The help text retires this flag (not merely mentions another deprecated flag)."""
    if re.match(r"^\W*(?:note:\s*)?[\[(]?\s*deprecated\b", help_text, re.I):
        return True
    if re.search(r"\bdeprecated alias\b", help_text, re.I):
        return True
    return any(re.search(re.escape(o) + r"\b[`'\"]? is deprecated", help_text) for o in options)


def _replacement_from_help(help_text: str) -> str | None:
    for pat in REPLACEMENT_PATTERNS:
        m = pat.search(help_text)
        if m:
            return m.group(1).rstrip(".,")
    return None


def _action_class(wheel_module: Module, name: str) -> tuple[Module, ast.ClassDef] | None:
    return wheel_module.class_def(name)


def _action_default_nargs(module: Module, action_name: str) -> Any:
    """nargs an argparse.Action subclass uses when the caller gives none (from its __init__ signature)."""
    found = _action_class(module, action_name)
    if not found:
        return "unknown"
    _, cls = found
    for item in cls.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            args = item.args
            pos = args.args
            defaults = [None] * (len(pos) - len(args.defaults)) + list(args.defaults)
            for a, d in zip(pos, defaults):
                if a.arg == "nargs" and d is not None and isinstance(d, ast.Constant):
                    return d.value
            for a, d in zip(args.kwonlyargs, args.kw_defaults):
                if a.arg == "nargs" and d is not None and isinstance(d, ast.Constant):
                    return d.value
            # nargs forced in the super().__init__ call
            for sub in ast.walk(item):
                if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "__init__":
                    for kw in sub.keywords:
                        if kw.arg == "nargs" and isinstance(kw.value, ast.Constant):
                            return kw.value.value
    return None  # argparse.Action default: one value


def _dest_for(options: list[str]) -> str:
    long = [o for o in options if o.startswith("--")]
    return (long[0] if long else options[0]).lstrip("-").replace("-", "_")


def _finish(rec: dict[str, Any]) -> dict[str, Any]:
    """Derive takes_value / deprecation and trim help."""
    action = rec.get("action", "store")
    nargs = rec.get("nargs")
    if action in NO_VALUE_ACTIONS:
        takes_value = False
    elif nargs == 0:
        takes_value = False
    else:
        takes_value = True
    rec["takes_value"] = takes_value
    help_full = rec.pop("_help_full", "") or ""
    if help_full == SUPPRESS:
        rec["hidden"] = True
        rec["help"] = ""
    else:
        help_full = " ".join(help_full.split())
        rec["help"] = help_full[:HELP_MAX]
    dep: dict[str, Any] = {}
    if action.startswith("Deprecated"):
        dep["how"] = "action:" + action
    elif _help_says_deprecated(help_full, rec.get("options", [])):
        dep["how"] = "help"
    if dep:
        repl = rec.pop("_new_flag", None) or _replacement_from_help(help_full)
        if repl:
            dep["replacement"] = repl
        if rec.pop("_error_message", None):
            dep["fails_launch"] = True
        rec["deprecated"] = True
        rec["deprecation"] = dep
    else:
        rec["deprecated"] = False
    for k in [k for k in rec if k.startswith("_")]:
        rec.pop(k)
    return rec


def _boolean_optional_options(options: list[str]) -> list[str]:
    out = list(options)
    for o in options:
        if o.startswith("--"):
            out.append("--no-" + o[2:])
    return out


def _type_name(node: ast.AST | None) -> tuple[str, str | None]:
    """(normalized type, raw callable text or None)."""
    if node is None:
        return "str", None
    raw = _text(node)
    if raw in BUILTIN_TYPES:
        return BUILTIN_TYPES[raw], None
    low = raw.lower()
    if "json" in low:
        return "json", raw
    if "int" in low:
        return "int", raw
    if "float" in low:
        return "float", raw
    if "bool" in low:
        return "bool", raw
    return "str", raw


def classic_flag(call: ast.Call, ev: Evaluator, module: Module, condition: str | None) -> dict[str, Any] | None:
    options = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if not options or not all(o.startswith("-") for o in options):
        return None  # positional argument, not a flag
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    rec: dict[str, Any] = {"origin": "add_argument"}
    action_node = kw.get("action")
    if action_node is None:
        action = "store"
    elif isinstance(action_node, ast.Constant):
        action = str(action_node.value)
    else:
        action = _text(action_node).split(".")[-1]
    rec["action"] = action
    if action == "BooleanOptionalAction":
        options = _boolean_optional_options(options)
    rec["options"] = options
    rec["dest"] = ev.eval(kw["dest"]) if "dest" in kw and isinstance(kw["dest"], ast.Constant) else _dest_for(options)
    if action in ("store_true", "store_false", "BooleanOptionalAction"):
        rec["type"] = "bool"
    elif action in ("store_const", "append_const", "count"):
        rec["type"] = "const" if action != "count" else "int"
    elif "type" in kw:
        rec["type"], raw = _type_name(kw["type"])
        if raw:
            rec["type_parser"] = raw
    elif action.startswith("Deprecated") or action not in ("store", "append", "extend"):
        rec["type"] = "str"
    else:
        rec["type"] = "str"
    if "nargs" in kw:
        try:
            rec["nargs"] = ev.eval(kw["nargs"])
        except Unresolved:
            rec["nargs"] = _text(kw["nargs"])
    elif action not in ("store", "append", "extend") and action not in NO_VALUE_ACTIONS:
        n = _action_default_nargs(module, action)
        if n != "unknown":
            rec["nargs"] = n
    if rec.get("nargs") == 0 and rec["type"] == "str" and action.startswith("Deprecated"):
        rec["type"] = "bool"
    _choices(rec, kw.get("choices"), ev)
    _default(rec, kw.get("default"), ev, action)
    if "const" in kw:
        try:
            rec["const"] = ev.eval(kw["const"])
        except Unresolved:
            pass
    if "required" in kw:
        try:
            if ev.eval(kw["required"]):
                rec["required"] = True
        except Unresolved:
            rec["required"] = _text(kw["required"])
    rec["_help_full"] = ev.text(kw["help"]) if "help" in kw else ""
    for extra in ("new_flag", "error_message"):
        if extra in kw:
            try:
                rec["_" + extra] = ev.eval(kw[extra])
            except Unresolved:
                rec["_" + extra] = _text(kw[extra])
    if condition:
        rec["condition"] = condition
    return _finish(rec)


def _choices(rec: dict[str, Any], node: ast.AST | None, ev: Evaluator, module: Module | None = None) -> None:
    if node is None:
        return
    try:
        val = ev.eval(node, module)
        if isinstance(val, dict):
            val = list(val)
        if not isinstance(val, list) or not _jsonable(val):
            raise Unresolved(_text(node))
        rec["choices"] = val
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        if names & getattr(ev, "mutated", set()):
            rec["choices_note"] = "base set; extended at run time (" + _text(node) + ")"
    except Unresolved:
        rec["choices_unresolved"] = _text(node)


def _default(rec: dict[str, Any], node: ast.AST | None, ev: Evaluator, action: str,
             module: Module | None = None) -> None:
    if node is None:
        if action == "store_true":
            rec["default"] = False
        elif action == "store_false":
            rec["default"] = True
        else:
            rec["default"] = None
        return
    try:
        val = ev.eval(node, module)
        if val == SUPPRESS:
            rec["default_suppressed"] = True
            return
        if not _jsonable(val):
            raise Unresolved(_text(node))
        rec["default"] = val
    except Unresolved:
        rec["default_expr"] = _text(node)


# --------------------------------------------------------------------------------------------------
# Declarative fields: A[T, "help"] / A[T, Arg(...)]  (mirrors add_cli_args_from_dataclass)
# --------------------------------------------------------------------------------------------------

ANNOTATED = {"A", "Annotated", "typing.Annotated"}


def _subscript_parts(node: ast.Subscript) -> list[ast.AST]:
    sl = node.slice
    return list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]


def _unwrap_optional(node: ast.AST) -> ast.AST:
    if isinstance(node, ast.Subscript) and _text(node.value) in ("Optional", "typing.Optional"):
        return node.slice
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        parts = [node.left, node.right]
        non_none = [p for p in parts if not (isinstance(p, ast.Constant) and p.value is None)]
        if len(non_none) == 1:
            return non_none[0]
    if isinstance(node, ast.Subscript) and _text(node.value) in ("Union", "typing.Union"):
        parts = _subscript_parts(node)
        non_none = [p for p in parts if not (isinstance(p, ast.Constant) and p.value is None)]
        if len(non_none) == 1:
            return non_none[0]
    return node


def _field_default_value(node: ast.AST | None, ev: Evaluator, module: Module) -> tuple[bool, Any, str | None]:
    """(has_default, value, expr_text_if_unresolved)."""
    if node is None:
        return False, None, None
    if isinstance(node, ast.Call) and _text(node.func).split(".")[-1] == "field":
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        if "default" in kw:
            node = kw["default"]
        elif "default_factory" in kw:
            fac = _text(kw["default_factory"])
            if fac in ("list", "dict", "set", "tuple"):
                return True, {"list": [], "dict": {}, "set": [], "tuple": []}[fac], None
            return True, None, fac + "()"
        else:
            return False, None, None
    try:
        val = ev.eval(node, module)
        if not _jsonable(val):
            raise Unresolved(_text(node))
        return True, val, None
    except Unresolved:
        return True, None, _text(node)


def class_fields(module: Module, cls: ast.ClassDef, seen: set[str] | None = None) -> list[tuple[Module, str, ast.AnnAssign]]:
    """Annotated fields of a class and its (wheel-resolvable) bases, base fields first."""
    seen = seen if seen is not None else set()
    out: list[tuple[Module, str, ast.AnnAssign]] = []
    for base in cls.bases:
        name = _text(base)
        if "." in name or name in seen:
            continue
        found = module.class_def(name)
        if found:
            seen.add(name)
            out.extend(class_fields(found[0], found[1], seen))
    for item in cls.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            if "ClassVar" in _text(item.annotation).split("[")[0]:
                continue
            out = [f for f in out if f[1] != item.target.id]
            out.append((module, item.target.id, item))
    return out


def declarative_flag(fmod: Module, name: str, node: ast.AnnAssign, ev: Evaluator, owner: str) -> dict[str, Any] | None:
    ann = node.annotation
    if not (isinstance(ann, ast.Subscript) and _text(ann.value) in ANNOTATED):
        return None
    parts = _subscript_parts(ann)
    raw_type, metas = parts[0], parts[1:]
    arg_kw: dict[str, ast.AST] | None = None
    help_node: ast.AST | None = None
    for m in metas:
        if isinstance(m, ast.Call) and _text(m.func).split(".")[-1] == "Arg":
            arg_kw = {k.arg: k.value for k in m.keywords if k.arg}
            help_node = arg_kw.get("help")
            break
        if isinstance(m, (ast.Constant, ast.JoinedStr, ast.BinOp)) and not (
                isinstance(m, ast.Constant) and not isinstance(m.value, str)):
            arg_kw = {}
            help_node = m
            break
    if arg_kw is None:
        return None  # no Arg / help string: not registered automatically

    def kwval(key: str, default: Any = None) -> Any:
        if key not in arg_kw:
            return default
        try:
            return ev.eval(arg_kw[key], fmod)
        except Unresolved:
            return default

    if kwval("no_cli", False):
        return None
    cli_name = kwval("cli_name") or "--" + name.replace("_", "-")
    options = [cli_name] + list(kwval("aliases") or [])
    has_default, default, default_expr = _field_default_value(node.value, ev, fmod)
    rec: dict[str, Any] = {"origin": "field:" + owner, "dest": name}
    fev = Evaluator(fmod, ev.field_defaults)

    def put_default(action: str) -> None:
        if has_default:
            if default_expr is not None:
                rec["default_expr"] = default_expr
            else:
                rec["default"] = default
        elif action == "store_true":
            rec["default"] = False
        else:
            rec["default"] = None

    if "action" in arg_kw:
        action = _text(arg_kw["action"]).split(".")[-1]
        if isinstance(arg_kw["action"], ast.Constant):
            action = str(arg_kw["action"].value)
        if action == "BooleanOptionalAction":
            options = _boolean_optional_options(options)
            rec["type"] = "bool"
        elif action in ("store_true", "store_false"):
            rec["type"] = "bool"
        else:
            rec["type"] = "str"
            n = _action_default_nargs(fmod, action)
            if n not in ("unknown", None):
                rec["nargs"] = n
        akw = arg_kw.get("action_kwargs")
        if isinstance(akw, ast.Dict):
            for k, v in zip(akw.keys, akw.values):
                if isinstance(k, ast.Constant) and k.value in ("nargs", "new_flag", "error_message"):
                    try:
                        rec[("_" if k.value != "nargs" else "") + k.value] = fev.eval(v)
                    except Unresolved:
                        pass
        rec["action"] = action
        rec["options"] = options
        put_default(action)
        rec["_help_full"] = fev.text(help_node) if help_node is not None else ""
        return _finish(rec)

    inner = _unwrap_optional(raw_type)
    inner_text = _text(inner)
    rec["options"] = options
    rec["_help_full"] = fev.text(help_node) if help_node is not None else ""
    type_parser = arg_kw.get("type_parser")
    # Literal[...] -> choices
    if isinstance(inner, ast.Subscript) and _text(inner.value) in ("Literal", "typing.Literal"):
        lits = []
        for p in _subscript_parts(inner):
            try:
                lits.append(fev.eval(p))
            except Unresolved:
                lits.append(_text(p))
        rec["action"] = "store"
        if "choices" in arg_kw:
            _choices(rec, arg_kw["choices"], fev)
        else:
            rec["choices"] = lits
        if type_parser is not None:
            rec["type"], raw = _type_name(type_parser)
            if raw:
                rec["type_parser"] = raw
        else:
            first = lits[0] if lits else ""
            rec["type"] = {int: "int", float: "float"}.get(type(first), "str")
        put_default("store")
        nargs_c = kwval("const")
        if nargs_c is not None:
            rec["const"] = nargs_c
        return _finish(rec)
    # list[X] -> nargs "+"
    is_list = (isinstance(inner, ast.Subscript) and _text(inner.value) in ("List", "list", "typing.List")) or \
        inner_text in ("list", "List")
    if is_list and type_parser is None:
        elem = _text(_subscript_parts(inner)[0]) if isinstance(inner, ast.Subscript) else "str"
        rec["action"] = "store"
        rec["type"] = BUILTIN_TYPES.get(elem, "str") if elem != "bool" else "str"
        rec["nargs"] = kwval("nargs") or "+"
        if "choices" in arg_kw:
            _choices(rec, arg_kw["choices"], fev)
        put_default("store")
        return _finish(rec)
    if inner_text == "bool":
        rec["action"] = "store_true"
        rec["type"] = "bool"
        put_default("store_true")
        return _finish(rec)
    rec["action"] = "store"
    if type_parser is not None:
        rec["type"], raw = _type_name(type_parser)
        if raw:
            rec["type_parser"] = raw
    else:
        rec["type"] = BUILTIN_TYPES.get(inner_text, "str") if inner_text != "bool" else "str"
    if "choices" in arg_kw:
        _choices(rec, arg_kw["choices"], fev)
    n = kwval("nargs")
    if n:
        rec["nargs"] = n
    put_default("store")
    if kwval("const") is not None:
        rec["const"] = kwval("const")
    req = kwval("required")
    if req is True or (req is None and not has_default):
        rec["required"] = True
    return _finish(rec)


# --------------------------------------------------------------------------------------------------
# Walking server_args.py
# --------------------------------------------------------------------------------------------------


def _dataclass_sources(module: Module, class_name: str) -> list[tuple[Module, ast.ClassDef]]:
    """Classes whose fields make up `class_name`'s CLI: the class itself, or (0.5.23) the namespace
    classes handed to collect_input_fields(...) when the class body declares no annotated fields."""
    found = module.class_def(class_name)
    if not found:
        return []
    own = [f for f in class_fields(*found) if isinstance(f[2].annotation, ast.Subscript)
           and _text(f[2].annotation.value) in ANNOTATED]
    if own:
        return [found]
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Call) and _text(node.func).split(".")[-1] == "collect_input_fields" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Name) and arg.id in module.assigns:
                arg = module.assigns[arg.id]
            if isinstance(arg, (ast.List, ast.Tuple)):
                out = []
                for elt in arg.elts:
                    c = module.class_def(_text(elt))
                    if c:
                        out.append(c)
                return out
    return [found]


def _field_defaults(module: Module, sources: list[tuple[Module, ast.ClassDef]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mod, cls in sources:
        ev = Evaluator(mod)
        for fmod, name, node in class_fields(mod, cls):
            has, val, expr = _field_default_value(node.value, ev, fmod)
            if has and expr is None:
                out[name] = val
    return out


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
                    if isinstance(sub, ast.Assign) and len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Name):
                        ev.locals[sub.targets[0].id] = sub.value
                    if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)
                            and sub.func.attr in ("add", "append", "extend", "update")
                            and isinstance(sub.func.value, ast.Name)):
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
        wrapper = ast.Module(body=[stmt], type_ignores=[])
        walk(wrapper, conditions)

    walk(module.tree, [])

    env = scan_env(wheel)
    return {
        "allow_abbrev": True if allow_abbrev is None else allow_abbrev,
        "allow_abbrev_source": "explicit" if allow_abbrev is not None else "argparse default (not set in "
                                                                         + SERVER_ARGS + ")",
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
    return [{"name": k, "known": k in KNOWN_ENV, "files": sorted(v)[:4], "file_count": len(v)}
            for k, v in sorted(hits.items())]


# --------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------


def download(version: str, dest: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q",
           "-d", str(dest), f"sglang=={version}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(dest.glob(f"sglang-{version}-*.whl"))
    if proc.returncode != 0 or not wheels:
        raise SystemExit(f"pip download sglang=={version} failed:\n{proc.stderr[-2000:]}")
    return wheels[0]


def version_of_wheel(path: Path) -> str:
    return path.name.split("-")[1]


def build_document(wheel_path: Path) -> dict[str, Any]:
    wheel = Wheel(wheel_path)
    result = extract(wheel)
    version = version_of_wheel(wheel_path)
    doc = {
        "sglang_version": version,
        "source": {"wheel": wheel_path.name, "sha256": wheel.sha256(), "file": SERVER_ARGS,
                   "declared_in": result["declared_in"]},
        "extracted_by": "scripts/extract_sglang_flags.py",
        "allow_abbrev": result["allow_abbrev"],
        "allow_abbrev_source": result["allow_abbrev_source"],
        "conflict_handler": result["conflict_handler"],
        "flag_count": len(result["flags"]),
        "flags": result["flags"],
        "env_checked": sorted(KNOWN_ENV),
        "env": result["env"],
    }
    if result["problems"]:
        doc["problems"] = result["problems"]
    return doc


def write(doc: dict[str, Any], out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"sglang-{doc['sglang_version']}.json"
    text = json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("versions", nargs="*", help="SGLang versions to fetch with pip download")
    ap.add_argument("--wheel", action="append", default=[], type=Path,
                    help="use this already-downloaded wheel instead of pip download (repeatable)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    args = ap.parse_args(argv)
    if not args.versions and not args.wheel:
        ap.error("give at least one VERSION or --wheel")
    wheels = list(args.wheel)
    with tempfile.TemporaryDirectory(prefix="sglang-wheels-") as tmp:
        for v in args.versions:
            wheels.append(download(v, Path(tmp)))
        for w in wheels:
            doc = build_document(w)
            path = write(doc, args.out)
            dep = sum(1 for f in doc["flags"].values() if f["deprecated"])
            print(f"{doc['sglang_version']}: {doc['flag_count']} flags ({dep} deprecated), "
                  f"{len(doc['env'])} env vars -> {path} ({path.stat().st_size // 1024} KiB)")
            for p in doc.get("problems", []):
                print(f"  warning: {p}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
