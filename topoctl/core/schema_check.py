"""A JSON Schema compiled into plain Python checks: is a document valid, yes or no.

jsonschema interprets a schema anew for every document (about 2,000 keyword calls per rule file,
seconds for a 128-GPU snapshot); this module walks the schema once and returns one function of
nested closures that answers the same question in a fraction of the time. It answers only yes or no:
for a document that fails, the caller asks jsonschema for its error, so every message stays
jsonschema's. Used for site rule files (rules/engine/loader.py) and snapshot files
(topoctl/snapshot/document.py); tests/core/test_schema_check.py holds it to jsonschema's verdict on
every built-in rule file, every fixture snapshot and generated mutations of them.

It covers the keywords those schemas use, with JSON Schema 2020-12 semantics: type, enum, const,
minimum, minLength, pattern, minItems, maxItems, items, required, properties, additionalProperties,
minProperties, maxProperties, propertyNames, anyOf, oneOf and local $ref ("#/$defs/..."). A schema
using any other keyword makes compile_schema raise, so a schema change cannot silently weaken the
check. With strict_integers an integer is a Python int only (2.0 is not one), as topoctl's snapshot
validator has it.

Layer: core types and data (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import re
from typing import Any, Callable

Check = Callable[[object], bool]
_ANNOTATIONS = {
    "description",
    "title",
    "$schema",
    "$id",
    "$defs",
    "examples",
    "default",
    "$comment",
}
_KEYWORDS = {
    "type",
    "enum",
    "const",
    "minimum",
    "minLength",
    "pattern",
    "minItems",
    "maxItems",
    "items",
    "required",
    "properties",
    "additionalProperties",
    "minProperties",
    "maxProperties",
    "propertyNames",
    "anyOf",
    "oneOf",
    "$ref",
}


def _is_integer(value: object) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and value.is_integer()
    )


_TYPES: dict[str, Check] = {
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "string": lambda value: isinstance(value, str),
    "integer": _is_integer,
    "number": lambda value: isinstance(value, (int, float)) and not isinstance(value, bool),
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
}


def _same(one: object, two: object) -> bool:
    """JSON equality as jsonschema's enum and const use it: true is not 1, 1 is 1.0, containers
    compare deep."""
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one == two
    if isinstance(one, dict) and isinstance(two, dict):
        return one.keys() == two.keys() and all(_same(one[key], two[key]) for key in one)
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(_same(a, b) for a, b in zip(one, two, strict=True))
    return bool(one == two) and (isinstance(one, str) == isinstance(two, str))


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Compiler:
    def __init__(self, root: dict[str, Any], strict_integers: bool = False) -> None:
        self.root = root
        self.refs: dict[str, Check] = {}
        self.types = dict(_TYPES, integer=_is_int) if strict_integers else _TYPES

    def ref(self, pointer: str) -> Check:
        """A local reference, compiled once and resolved late (the condition schema refers to
        itself)."""
        if not pointer.startswith("#/"):
            raise ValueError(f"only local references are compiled, got {pointer!r}")
        if pointer not in self.refs:
            target: Any = self.root
            for part in pointer[2:].split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            slot: list[Check] = []
            self.refs[pointer] = lambda value: slot[0](value)
            slot.append(self.compile(target))
        return self.refs[pointer]

    def compile(self, schema: Any) -> Check:
        if schema is True:
            return lambda value: True
        if schema is False:
            return lambda value: False
        unknown = set(schema) - _KEYWORDS - _ANNOTATIONS
        if unknown:
            raise ValueError(f"schema keywords not compiled: {sorted(unknown)}")
        checks = [
            check
            for check in (
                self._type(schema),
                self._values(schema),
                self._number(schema),
                self._string(schema),
                self._array(schema),
                self._object(schema),
                self._combined(schema),
            )
            if check is not None
        ]
        if "$ref" in schema:
            checks.append(self.ref(schema["$ref"]))
        return _every(checks)

    def _type(self, schema: dict[str, Any]) -> Check | None:
        if "type" not in schema:
            return None
        names = [schema["type"]] if isinstance(schema["type"], str) else list(schema["type"])
        tests = [self.types[name] for name in names]
        if len(tests) == 1:
            return tests[0]
        return _some(tests)

    def _values(self, schema: dict[str, Any]) -> Check | None:
        if "enum" in schema:
            choices = list(schema["enum"])
            if "const" in schema:
                raise ValueError("enum and const together are not compiled")
            if all(
                isinstance(choice, str) for choice in choices
            ):  # _same on text is plain equality
                names = frozenset(choices)
                return lambda value: isinstance(value, str) and value in names
            return lambda value: any(_same(value, choice) for choice in choices)
        if "const" in schema:
            wanted = schema["const"]
            return lambda value: _same(value, wanted)
        return None

    def _number(self, schema: dict[str, Any]) -> Check | None:
        if "minimum" not in schema:
            return None
        least = schema["minimum"]
        return lambda value: (
            isinstance(value, bool) or not isinstance(value, (int, float)) or value >= least
        )

    def _string(self, schema: dict[str, Any]) -> Check | None:
        least = schema.get("minLength")
        pattern = re.compile(schema["pattern"]) if "pattern" in schema else None
        if least is None and pattern is None:
            return None

        def check(value: object) -> bool:
            if not isinstance(value, str):
                return True
            return (least is None or len(value) >= least) and (
                pattern is None or pattern.search(value) is not None
            )

        return check

    def _array(self, schema: dict[str, Any]) -> Check | None:
        least, most = schema.get("minItems"), schema.get("maxItems")
        items = self.compile(schema["items"]) if "items" in schema else None
        if least is None and most is None and items is None:
            return None

        def check(value: object) -> bool:
            if not isinstance(value, list):
                return True
            if (least is not None and len(value) < least) or (
                most is not None and len(value) > most
            ):
                return False
            if items is not None:
                for item in value:
                    if not items(item):
                        return False
            return True

        return check

    def _object(self, schema: dict[str, Any]) -> Check | None:
        keys = (
            "required",
            "properties",
            "additionalProperties",
            "minProperties",
            "maxProperties",
            "propertyNames",
        )
        if not any(key in schema for key in keys):
            return None
        required = list(schema.get("required", ()))
        properties = {
            name: self.compile(sub) for name, sub in (schema.get("properties") or {}).items()
        }
        extra = schema.get("additionalProperties", True)
        others = None if extra is True else self.compile(extra)
        least, most = schema.get("minProperties"), schema.get("maxProperties")
        names = self.compile(schema["propertyNames"]) if "propertyNames" in schema else None

        def check(value: object) -> bool:
            if not isinstance(value, dict):
                return True
            if any(name not in value for name in required):
                return False
            if (least is not None and len(value) < least) or (
                most is not None and len(value) > most
            ):
                return False
            for key, item in value.items():
                sub = properties.get(key) if isinstance(key, str) else None
                if sub is not None:
                    if not sub(item):
                        return False
                elif others is not None and not others(item):
                    return False
                if names is not None and not names(key):
                    return False
            return True

        return check

    def _combined(self, schema: dict[str, Any]) -> Check | None:
        if "anyOf" in schema and "oneOf" in schema:
            raise ValueError("anyOf and oneOf together are not compiled")
        if "anyOf" in schema:
            return _some([self.compile(sub) for sub in schema["anyOf"]])
        if "oneOf" in schema:
            options = [self.compile(sub) for sub in schema["oneOf"]]
            return lambda value: sum(1 for option in options if option(value)) == 1
        return None


def _every(checks: list[Check]) -> Check:
    """All of `checks` (a plain loop: the checks run once per value of every site rule file)."""
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda value: first(value) and second(value)

    def check(value: object) -> bool:
        for one in checks:
            if not one(value):
                return False
        return True

    return check


def _some(checks: list[Check]) -> Check:
    """One of `checks`, the first that holds ending the search."""

    def check(value: object) -> bool:
        for one in checks:
            if one(value):
                return True
        return False

    return check


def compile_schema(schema: dict[str, Any], strict_integers: bool = False) -> Check:
    """One function: whether a document is valid against `schema` (ValueError for a keyword not
    covered)."""
    return _Compiler(schema, strict_integers).compile(schema)
