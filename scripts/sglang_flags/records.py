"""One flag record: deprecation read from help and action, value-taking, choices, defaults, types."""

from __future__ import annotations

import ast
import re
from typing import Any

from .common import (
    BUILTIN_TYPES,
    HELP_MAX,
    NO_VALUE_ACTIONS,
    SUPPRESS,
    Unresolved,
    _jsonable,
    _text,
)
from .evaluate import Evaluator
from .wheel import Module

_VALUE = (
    r"(?:=[\w<>{},.:-]+| <[\w-]+>| "
    r"(?!instead\b|with\b|to\b|and\b|or\b|in\b|the\b|for\b)[a-z0-9_]+\b)?"
)
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


def action_init_defaults(module: Module, action_name: str) -> dict[str, Any] | None:
    """nargs, const and default an argparse.Action subclass of the wheel uses when the caller gives
    none: the constants of its __init__ signature, overridden by constants it passes to
    super().__init__ itself. None when the class is not in the wheel."""
    found = _action_class(module, action_name)
    if not found:
        return None
    _, cls = found
    out: dict[str, Any] = {}
    for item in cls.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            args = item.args
            pos = args.args
            defaults = [None] * (len(pos) - len(args.defaults)) + list(args.defaults)
            pairs = list(zip(pos, defaults, strict=True)) + list(
                zip(args.kwonlyargs, args.kw_defaults, strict=True)
            )
            for a, d in pairs:
                if a.arg in ("nargs", "const", "default") and isinstance(d, ast.Constant):
                    out[a.arg] = d.value
            for sub in ast.walk(item):
                if (
                    isinstance(sub, ast.Call)
                    and isinstance(sub.func, ast.Attribute)
                    and sub.func.attr == "__init__"
                ):
                    for kw in sub.keywords:
                        if kw.arg in ("nargs", "const", "default") and isinstance(
                            kw.value, ast.Constant
                        ):
                            out[kw.arg] = kw.value.value
    return out


def _action_default_nargs(module: Module, action_name: str) -> Any:
    """nargs an argparse.Action subclass uses when the caller gives none ("unknown" when not in the
    wheel; None is argparse.Action's own default: one value)."""
    found = action_init_defaults(module, action_name)
    if found is None:
        return "unknown"
    return found.get("nargs")


def _dest_for(options: list[str]) -> str:
    long = [o for o in options if o.startswith("--")]
    return (long[0] if long else options[0]).lstrip("-").replace("-", "_")


def _finish(rec: dict[str, Any]) -> dict[str, Any]:
    """Derive takes_value / deprecation and trim help."""
    action = rec.get("action", "store")
    if action == "BooleanOptionalAction":
        rec["nargs"] = 0  # argparse.BooleanOptionalAction.__init__ sets nargs=0
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


def _choices(
    rec: dict[str, Any], node: ast.AST | None, ev: Evaluator, module: Module | None = None
) -> None:
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


def _default(
    rec: dict[str, Any],
    node: ast.AST | None,
    ev: Evaluator,
    action: str,
    module: Module | None = None,
) -> None:
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
