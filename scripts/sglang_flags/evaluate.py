"""A small evaluator for the literal-ish expressions SGLang writes as choices and defaults."""

from __future__ import annotations

import ast
from typing import Any

from .common import SUPPRESS, Unresolved, _text
from .wheel import Module


class Evaluator:
    def __init__(self, module: Module, field_defaults: dict[str, Any] | None = None) -> None:
        self.module = module
        self.field_defaults = field_defaults or {}
        self.locals: dict[
            str, ast.AST
        ] = {}  # simple `name = expr` assignments of the function being read
        self.mutated: set[str] = (
            set()
        )  # local names the function changes (.add/.append/...) after assigning
        self.class_scopes: list[
            tuple[Module, dict[str, ast.AST]]
        ] = []  # class bodies being evaluated

    def eval(self, node: ast.AST, module: Module | None = None, depth: int = 0) -> Any:
        module = module or self.module
        if depth > 20:
            raise Unresolved("too deep")
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            out: list[Any] = []
            for e in node.elts:
                if isinstance(e, ast.Starred):  # [*QUANTIZATION_CHOICES, "unquant"]
                    inner = self.eval(e.value, module, depth + 1)
                    if not isinstance(inner, list):
                        raise Unresolved(_text(node))
                    out.extend(inner)
                else:
                    out.append(self.eval(e, module, depth + 1))
            return out
        if isinstance(node, ast.Set):
            return sorted((self.eval(e, module, depth + 1) for e in node.elts), key=repr)
        if isinstance(node, ast.Dict):
            return {
                self.eval(k, module, depth + 1): self.eval(v, module, depth + 1)
                for k, v in zip(node.keys, node.values, strict=True)
                if k is not None
            }
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.eval(node.operand, module, depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = (
                self.eval(node.left, module, depth + 1),
                self.eval(node.right, module, depth + 1),
            )
            if isinstance(left, list) and isinstance(right, list):
                return left + right
            if isinstance(left, (str, int, float)) and type(left) is type(right):
                return left + right  # type: ignore[operator]  # same type, checked just above
            raise Unresolved(_text(node))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            left, right = (
                self.eval(node.left, module, depth + 1),
                self.eval(node.right, module, depth + 1),
            )
            if isinstance(left, (int, float)) and isinstance(right, (int, float)):
                return left * right
            raise Unresolved(_text(node))
        if isinstance(node, ast.Name):
            if node.id in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.id]
            for scope_module, scope in reversed(
                self.class_scopes
            ):  # names of a class body, inside it
                if scope_module is module and node.id in scope:
                    return self.eval(scope[node.id], module, depth + 1)
            if (
                node.id in self.locals and module is self.module
            ):  # a local of the function being read
                return self.eval(self.locals[node.id], module, depth + 1)
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
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id != "ServerArgs"
        ):
            cls_found = module.class_def(node.value.id)
            if cls_found:
                for item in cls_found[1].body:
                    tgt = (
                        item.targets[0]
                        if isinstance(item, ast.Assign) and len(item.targets) == 1
                        else (
                            item.target
                            if isinstance(item, ast.AnnAssign) and item.value is not None
                            else None
                        )
                    )
                    if isinstance(tgt, ast.Name) and tgt.id == node.attr:
                        body_scope: dict[str, ast.AST] = {}
                        for other in cls_found[1].body:
                            if (
                                isinstance(other, ast.Assign)
                                and len(other.targets) == 1
                                and isinstance(other.targets[0], ast.Name)
                            ):
                                body_scope[other.targets[0].id] = other.value
                        self.class_scopes.append((cls_found[0], body_scope))
                        try:
                            return self.eval(item.value, cls_found[0], depth + 1)  # type: ignore[attr-defined]
                        finally:
                            self.class_scopes.pop()
        if isinstance(node, ast.Attribute):
            if _text(node) == "argparse.SUPPRESS":
                return SUPPRESS
            # ServerArgs.<field> in classic add_argument calls: the dataclass default of that field
            if (
                isinstance(node.value, ast.Name)
                and node.value.id == "ServerArgs"
                and node.attr in self.field_defaults
            ):
                return self.field_defaults[node.attr]
            raise Unresolved(_text(node))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            fname = node.func.id
            if (
                fname in ("list", "tuple", "sorted", "set", "frozenset")
                and len(node.args) == 1
                and not node.keywords
            ):
                val = self.eval(node.args[0], module, depth + 1)
                if isinstance(val, dict):
                    val = list(val)
                if not isinstance(val, list):
                    raise Unresolved(_text(node)) from None
                return (
                    sorted(val, key=repr) if fname in ("sorted", "set", "frozenset") else list(val)
                )
            if (
                fname == "_declared_default"
                and len(node.args) == 1
                and isinstance(node.args[0], ast.Constant)
            ):
                if node.args[0].value in self.field_defaults:
                    return self.field_defaults[node.args[0].value]
        raise Unresolved(_text(node))

    def text(self, node: ast.AST) -> str:
        """Loose source text of a help string: constants joined, f-string holes and names kept as
        text."""
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
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"
        ):
            return self.text(node.func.value)
        try:
            val = self.eval(node)
            return str(val)
        except Unresolved:
            return _text(node)
