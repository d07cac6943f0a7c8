"""The typed shape of a snapshot (topoctl/snapshot/shape.py: Snapshot and the TypedDicts it is made
of) is the published schema's, key for key: read from topoctl/snapshot/schema/snapshot.schema.json
itself, so a field added to or dropped from either side fails here instead of drifting apart. Every
TypedDict reachable from Snapshot is held to the schema node it types (its properties, and which of
them the schema requires)."""

from __future__ import annotations

import json
import os
import types
import typing

import pytest

from topoctl.snapshot import shape as snapshot_types
from topoctl.snapshot.shape import Snapshot

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
with open(
    os.path.join(ROOT, "topoctl", "snapshot", "schema", "snapshot.schema.json"), encoding="utf-8"
) as _handle:
    SCHEMA = json.load(_handle)


def _resolve(node: dict) -> dict:
    """The schema node a `$ref` (#/$defs/NAME) points at, or the node itself."""
    ref = node.get("$ref")
    if ref is None:
        return node
    assert ref.startswith("#/$defs/"), ref
    return _resolve(SCHEMA["$defs"][ref[len("#/$defs/") :]])


def _is_typeddict(hint) -> bool:
    return isinstance(hint, type) and typing.is_typeddict(hint)


def _typeddicts_in(hint, node: dict):
    """(TypedDict, schema node) for each TypedDict that `hint` names at `node`: itself, inside `X |
    None`, or as a list's items (then the node is the schema's `items`)."""
    node = _resolve(node)
    origin = typing.get_origin(hint)
    if _is_typeddict(hint):
        yield hint, node
    elif origin in (typing.Union, types.UnionType, typing.Required, typing.NotRequired):
        for arg in typing.get_args(hint):
            yield from _typeddicts_in(arg, node)
    elif origin is list:
        (item,) = typing.get_args(hint)
        yield from _typeddicts_in(item, node.get("items", {}))


def _pairs():
    """Every TypedDict reachable from Snapshot, with the schema node it types."""
    found, todo = {}, [(Snapshot, SCHEMA)]
    while todo:
        cls, node = todo.pop()
        if cls in found:
            continue
        found[cls] = node
        hints = typing.get_type_hints(cls, include_extras=True)
        for key, hint in hints.items():
            todo.extend(_typeddicts_in(hint, node.get("properties", {}).get(key, {})))
    return found


PAIRS = _pairs()


def _required(cls) -> set[str]:
    """The keys marked Required (read from the annotations: with postponed annotations Python 3.11
    does not fill __required_keys__ from Required[...] in a total=False TypedDict)."""
    hints = typing.get_type_hints(cls, include_extras=True)
    return {key for key, hint in hints.items() if typing.get_origin(hint) is typing.Required}


def test_every_section_of_the_schema_with_properties_has_its_typeddict():
    """The top level, each object section of it, and the GPU and pair entries are all typed."""
    typed = {cls.__name__ for cls in PAIRS}
    assert {
        "Snapshot",
        "SnapshotSource",
        "SnapshotHost",
        "SnapshotNvlink",
        "SnapshotPcie",
        "SnapshotSummary",
        "SnapshotMeasurements",
        "SnapshotIommu",
        "SnapshotNetwork",
        "GpuEntry",
        "PairEntry",
    } <= typed
    sections = {key for key, node in SCHEMA["properties"].items() if "properties" in _resolve(node)}
    hints = typing.get_type_hints(Snapshot, include_extras=True)
    assert all(
        any(True for _ in _typeddicts_in(hints[key], SCHEMA["properties"][key])) for key in sections
    )


@pytest.mark.parametrize("cls", list(PAIRS), ids=lambda cls: cls.__name__)
def test_a_typeddict_has_the_keys_of_its_schema_node(cls):
    node = PAIRS[cls]
    assert set(typing.get_type_hints(cls)) == set(node["properties"])


@pytest.mark.parametrize("cls", list(PAIRS), ids=lambda cls: cls.__name__)
def test_a_typeddict_requires_what_its_schema_node_requires(cls):
    assert _required(cls) == set(PAIRS[cls].get("required", []))


def test_the_typeddicts_are_the_ones_the_module_exports():
    """A TypedDict of the snapshot module that Snapshot does not reach would be held to nothing
    here."""
    defined = {
        value
        for value in vars(snapshot_types).values()
        if _is_typeddict(value) and value.__module__ == snapshot_types.__name__
    }
    assert defined == set(PAIRS)
