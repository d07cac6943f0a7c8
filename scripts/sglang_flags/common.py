"""Shared names of the SGLang flag extractor: constants, the Unresolved signal, source text."""

from __future__ import annotations

import ast
import json
from typing import Any

SERVER_ARGS = "sglang/srt/server_args.py"
HELP_MAX = 160

NO_VALUE_ACTIONS = {
    "store_true",
    "store_false",
    "store_const",
    "append_const",
    "count",
    "help",
    "version",
    "BooleanOptionalAction",
}
BUILTIN_TYPES = {"int": "int", "float": "float", "str": "str", "bool": "bool"}


class Unresolved(Exception):
    pass


def _text(node: ast.AST | None) -> str:
    return "" if node is None else ast.unparse(node)


SUPPRESS = "==SUPPRESS=="


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value, sort_keys=True)
        return True
    except (TypeError, ValueError):
        return False
