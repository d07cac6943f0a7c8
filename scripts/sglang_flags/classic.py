"""Flags declared the classic way: parser.add_argument(...) calls."""

from __future__ import annotations

import ast
from typing import Any

from .common import NO_VALUE_ACTIONS, Unresolved, _text
from .evaluate import Evaluator
from .records import (
    _action_default_nargs,
    _boolean_optional_options,
    _choices,
    _default,
    _dest_for,
    _finish,
    _type_name,
    action_init_defaults,
)
from .wheel import Module


def classic_flag(
    call: ast.Call, ev: Evaluator, module: Module, condition: str | None
) -> dict[str, Any] | None:
    options = [
        a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
    ]
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
    rec["dest"] = (
        ev.eval(kw["dest"])
        if "dest" in kw and isinstance(kw["dest"], ast.Constant)
        else _dest_for(options)
    )
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
    own = (
        action_init_defaults(module, action)
        if action not in ("store", "append", "extend")
        else None
    )
    if own is not None and "default" not in kw and "default" in own:
        rec["default"] = own[
            "default"
        ]  # a custom action's own default (DeprecatedStoreTrueAction: False)
    if "const" in kw:
        try:
            rec["const"] = ev.eval(kw["const"])
        except Unresolved:
            pass
    elif own is not None and own.get("const") is not None:
        rec["const"] = own["const"]
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
