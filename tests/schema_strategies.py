"""Hypothesis strategies for snapshots, generated from the published schema
(topoctl/snapshot/schema/snapshot.schema.json).

Why not hypothesis-jsonschema (PyPI): its last release, 0.23.1 (February 2024), fails on the
Hypothesis this project tests with (6.170: `'many' object has no attribute 'more'`, an internal API
it reaches into), and it cannot resolve the schema's local `$ref`s under the schema's `urn:` `$id`.
The snapshot schema uses a dozen keywords ($ref, type, enum, const, pattern, minimum, minItems,
maxItems, items, required, properties, additionalProperties), so the interpreter below covers
exactly those and fails loudly on any other: a new keyword in the schema has to be taught here
before the property test runs again.

What it draws: every required field; each optional one or not; fields the schema does not list
(newer probes add facts, and readers must ignore them); strings from the values the reference
snapshots hold plus arbitrary text; integers small (GPU indices, counts) or huge.
`consistent_snapshots()` then makes the draw meet the checks across fields too (indices in range,
every ordered pair once, summary.gpu_count), so that the commands get past loading and reach the
code behind it.
"""

from __future__ import annotations

import glob
import json
import os
from typing import Any

from hypothesis import strategies as st

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA_FILE = os.path.join(ROOT, "topoctl", "snapshot", "schema", "snapshot.schema.json")
KNOWN_KEYWORDS = {
    "$ref",
    "type",
    "enum",
    "const",
    "pattern",
    "minimum",
    "minItems",
    "maxItems",
    "items",
    "required",
    "properties",
    "additionalProperties",
    "description",
    "examples",
    "title",
    "$schema",
    "$id",
    "$defs",
}
MAX_GPUS = (
    8  # the product's range (2-8 GPUs, and 1): more only makes examples slower, not different
)


def _strings_in_fixtures() -> list[str]:
    """Every string value in the reference snapshots: names, versions, links, states the code gives
    meaning to."""
    seen: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
        elif isinstance(node, str) and len(node) <= 80:
            seen.add(node)

    for path in glob.glob(os.path.join(ROOT, "fixtures", "*", "snapshot.json")):
        with open(path, encoding="utf-8") as handle:
            walk(json.load(handle))
    return sorted(seen)


STRINGS = st.one_of(st.sampled_from(_strings_in_fixtures()), st.text(max_size=20))
INTEGERS = st.one_of(st.integers(0, 9), st.integers(-(2**63), 2**63))
NUMBERS = st.one_of(
    INTEGERS,
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, 0.5, 1e-9, 1e308]),
)
SCALARS = st.one_of(st.none(), st.booleans(), INTEGERS, NUMBERS, STRINGS)
ANY_JSON = st.one_of(
    SCALARS, st.lists(SCALARS, max_size=3), st.dictionaries(STRINGS, SCALARS, max_size=2)
)
EXTRA_KEYS = st.sampled_from(["x_newer_fact", "vendor_note", "future"])


class SchemaStrategies:
    """Strategies for one schema's nodes, its $refs resolved from its $defs."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.defs = schema.get("$defs", {})

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        ref = node.get("$ref")
        if ref is None:
            return node
        assert ref.startswith("#/$defs/"), ref
        return self.resolve(
            {**self.defs[ref.rsplit("/", 1)[1]], **{k: v for k, v in node.items() if k != "$ref"}}
        )

    def node(self, node: dict[str, Any], max_items: int = 3) -> st.SearchStrategy[Any]:
        node = self.resolve(node)
        unknown = set(node) - KNOWN_KEYWORDS
        assert not unknown, f"schema keywords the generator does not know: {sorted(unknown)}"
        if "const" in node:
            return st.just(node["const"])
        if "enum" in node:
            return st.sampled_from(node["enum"])
        types = node.get("type")
        names = (
            [types]
            if isinstance(types, str)
            else (types or ["null", "boolean", "integer", "string"])
        )
        return st.one_of([self.of_type(name, node, max_items) for name in names])

    def of_type(self, name: str, node: dict[str, Any], max_items: int) -> st.SearchStrategy[Any]:
        if name == "null":
            return st.none()
        if name == "boolean":
            return st.booleans()
        if name == "integer":
            minimum = node.get("minimum")
            if minimum is None:
                return INTEGERS
            return st.one_of(st.integers(minimum, minimum + 9), st.integers(minimum, 2**63))
        if name == "number":
            return NUMBERS
        if name == "string":
            if "pattern" in node:
                return st.one_of(
                    st.from_regex(node["pattern"], fullmatch=True),
                    *(st.just(example) for example in node.get("examples", [])),
                )
            return STRINGS
        if name == "array":
            low = node.get("minItems", 0)
            high = min(node.get("maxItems", max_items), max(low, max_items))
            return st.lists(
                self.node(node.get("items", {}), max_items), min_size=low, max_size=high
            )
        if name == "object":
            return self.mapping(node, max_items)
        raise AssertionError(f"schema type the generator does not know: {name}")

    def mapping(self, node: dict[str, Any], max_items: int) -> st.SearchStrategy[dict[str, Any]]:
        properties = node.get("properties", {})
        required = set(node.get("required", ()))
        fixed = st.fixed_dictionaries(
            {key: self.node(sub, max_items) for key, sub in properties.items() if key in required},
            optional={
                key: self.node(sub, max_items)
                for key, sub in properties.items()
                if key not in required
            },
        )
        extra_schema = node.get("additionalProperties")
        extra_values = (
            self.node(extra_schema, max_items) if isinstance(extra_schema, dict) else ANY_JSON
        )
        extra_names = (
            STRINGS.filter(lambda key: key not in properties)
            if isinstance(extra_schema, dict)
            else EXTRA_KEYS
        )
        extra = st.dictionaries(extra_names, extra_values, max_size=2)
        return st.builds(lambda known, more: {**more, **known}, fixed, extra)

    def top(self, name: str, max_items: int = 3) -> st.SearchStrategy[Any]:
        return self.node(self.schema["properties"][name], max_items)


def load_schema() -> dict[str, Any]:
    with open(SCHEMA_FILE, encoding="utf-8") as handle:
        return json.load(handle)


SNAPSHOT = SchemaStrategies(load_schema())


@st.composite
def schema_snapshots(draw: st.DrawFn) -> dict[str, Any]:
    """A snapshot the schema accepts (the checks across fields may still reject it)."""
    schema = SNAPSHOT.schema
    data = draw(
        SNAPSHOT.mapping(
            {
                **schema,
                "properties": {
                    k: v for k, v in schema["properties"].items() if k not in ("gpus", "pairs")
                },
            },
            3,
        )
    )
    data["gpus"] = draw(
        st.lists(
            SNAPSHOT.node(schema["properties"]["gpus"]["items"]), min_size=1, max_size=MAX_GPUS
        )
    )
    data["pairs"] = draw(SNAPSHOT.top("pairs", 4))
    return data


@st.composite
def consistent_snapshots(draw: st.DrawFn) -> dict[str, Any]:
    """A schema-valid snapshot made to meet the checks across fields as well (GPU indices 0..n-1,
    every ordered pair once, summary.gpu_count and the GPU index lists in range), so that loading
    accepts it."""
    data = draw(schema_snapshots())
    count = len(data["gpus"])
    for index, gpu in enumerate(data["gpus"]):
        gpu["index"] = index
    pair_schema = SNAPSHOT.schema["properties"]["pairs"]["items"]
    templates = data["pairs"] or [draw(SNAPSHOT.node(pair_schema))]
    data["pairs"] = [
        {**templates[(i * count + j) % len(templates)], "src": i, "dst": j}
        for i in range(count)
        for j in range(count)
        if i != j
    ]
    summary = data["summary"]
    summary["gpu_count"] = count
    for key in ("downtrained_gpus", "bar1_small_gpus"):
        if isinstance(summary.get(key), list):
            summary[key] = [index % count for index in summary[key]]
    if isinstance(summary.get("root_complex_groups"), list):
        summary["root_complex_groups"] = [
            [index % count for index in group] for group in summary["root_complex_groups"]
        ]
    pcie = data.get("pcie")
    if isinstance(pcie, dict) and isinstance(pcie.get("root_complexes"), list):
        for entry in pcie["root_complexes"]:
            if isinstance(entry, dict) and isinstance(entry.get("gpus"), list):
                entry["gpus"] = [index % count for index in entry["gpus"]]
    visible = data.get("cuda_visible_devices")
    if isinstance(visible, dict):
        if isinstance(visible.get("hidden"), list):
            visible["hidden"] = [index % count for index in visible["hidden"]]
        for device in visible["cuda_devices"]:
            if device["gpu"] is not None:
                device["gpu"] %= count
    return data
