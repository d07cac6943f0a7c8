"""Flags declared as annotated dataclass fields: A[T, "help"] / A[T, Arg(...)]  (mirrors SGLang's
add_cli_args_from_dataclass, 0.5.13 and later)."""

from __future__ import annotations

import ast
from typing import Any

from .common import BUILTIN_TYPES, Unresolved, _jsonable, _text
from .evaluate import Evaluator
from .records import (
    _action_default_nargs,
    _boolean_optional_options,
    _choices,
    _finish,
    _type_name,
    action_init_defaults,
)
from .wheel import Module

ANNOTATED = {"A", "Annotated", "typing.Annotated"}


def _subscript_parts(node: ast.Subscript) -> list[ast.AST]:
    sl = node.slice
    return list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]


def _unwrap_optional(node: ast.AST) -> ast.AST:
    if isinstance(node, ast.Subscript) and _text(node.value) in ("Optional", "typing.Optional"):
        return node.slice
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        parts: list[ast.AST] = [node.left, node.right]
        non_none = [p for p in parts if not (isinstance(p, ast.Constant) and p.value is None)]
        if len(non_none) == 1:
            return non_none[0]
    if isinstance(node, ast.Subscript) and _text(node.value) in ("Union", "typing.Union"):
        parts = _subscript_parts(node)
        non_none = [p for p in parts if not (isinstance(p, ast.Constant) and p.value is None)]
        if len(non_none) == 1:
            return non_none[0]
    return node


def _field_default_value(
    node: ast.AST | None, ev: Evaluator, module: Module
) -> tuple[bool, Any, str | None]:
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
            factory = kw["default_factory"]
            if isinstance(factory, ast.Lambda) and not factory.args.args:  # lambda: list(CONSTANT)
                try:
                    val = ev.eval(factory.body, module)
                    if _jsonable(val):
                        return True, val, None
                except Unresolved:
                    pass
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


def class_fields(
    module: Module, cls: ast.ClassDef, seen: set[str] | None = None
) -> list[tuple[Module, str, ast.AnnAssign]]:
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


def declarative_flag(
    fmod: Module, name: str, node: ast.AnnAssign, ev: Evaluator, owner: str
) -> dict[str, Any] | None:
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
            isinstance(m, ast.Constant) and not isinstance(m.value, str)
        ):
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
        elif own_defaults and "default" in own_defaults:
            rec["default"] = own_defaults["default"]  # the custom action's own default
        else:
            rec["default"] = None

    own_defaults: dict[str, Any] | None = None

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
            own_defaults = action_init_defaults(fmod, action)
            if own_defaults and own_defaults.get("const") is not None:
                rec["const"] = own_defaults["const"]
        akw = arg_kw.get("action_kwargs")
        if isinstance(akw, ast.Dict):
            for k, v in zip(akw.keys, akw.values, strict=True):
                if isinstance(k, ast.Constant) and k.value in (
                    "nargs",
                    "new_flag",
                    "error_message",
                ):
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
    is_list = (
        isinstance(inner, ast.Subscript) and _text(inner.value) in ("List", "list", "typing.List")
    ) or inner_text in ("list", "List")
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
    own = [
        f
        for f in class_fields(*found)
        if isinstance(f[2].annotation, ast.Subscript) and _text(f[2].annotation.value) in ANNOTATED
    ]
    if own:
        return [found]
    for node in ast.walk(module.tree):
        if (
            isinstance(node, ast.Call)
            and _text(node.func).split(".")[-1] == "collect_input_fields"
            and node.args
        ):
            arg: ast.AST = node.args[0]
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
