"""The snapshot's one contract, topoctl/snapshot/schema/snapshot.schema.json: a valid JSON Schema,
which every shipped snapshot meets; topoctl's validator (jsonschema with a strict integer) gives the
plain jsonschema verdict except on integral floats; the field list in docs/architecture.md is
generated from it."""

from __future__ import annotations

import copy
import json
import os
import sys

import jsonschema
import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topoctl.core import vocab
from topoctl.snapshot import document as snapshot
from topoctl.snapshot.catalogue import list_systems, system_snapshot

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VALIDATOR = jsonschema.Draft202012Validator(snapshot.schema())


def ours(data) -> bool:
    """The schema part of topoctl's validation (no checks across fields)."""
    return snapshot._first_schema_problem(data) is None


def _has_integral_float(value) -> bool:
    """JSON Schema calls 2.0 an integer; topoctl does not (a GPU index or byte count is never 2.0)."""
    if isinstance(value, float):
        return value.is_integer()
    if isinstance(value, dict):
        return any(_has_integral_float(item) for item in value.values())
    if isinstance(value, list):
        return any(_has_integral_float(item) for item in value)
    return False


def test_the_schema_is_a_valid_json_schema_with_a_versioned_id():
    jsonschema.Draft202012Validator.check_schema(snapshot.schema())
    assert snapshot.schema()["$id"] == f"urn:topoctl:snapshot:{snapshot.SCHEMA_VERSION}"
    assert snapshot.schema()["properties"]["schema_version"]["const"] == snapshot.SCHEMA_VERSION


_NOT_SCHEMA_FOLDERS = {
    "tests",
    "build",
    "dist",
    "node_modules",
    "__pycache__",
}  # tests/data holds others' schemas


def _schema_files():
    """Every *.schema.json the product ships or reads (the tree without tests/, builds and
    environments), found by walking the checkout: a schema added later is held to the same rule
    without anyone listing it."""
    found = []
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = sorted(
            name
            for name in subfolders
            if not name.startswith(".")
            and name not in _NOT_SCHEMA_FOLDERS
            and not name.endswith(".egg-info")
            and not os.path.isfile(os.path.join(folder, name, "pyvenv.cfg"))
        )
        found += [
            os.path.relpath(os.path.join(folder, name), ROOT)
            for name in files
            if name.endswith(".schema.json")
        ]
    return sorted(found)


def _says_nothing(items) -> bool:
    """`items: {}` or `items: true` accepts anything, as a missing `items` does."""
    return items is True or (
        isinstance(items, dict) and not set(items) - {"description", "title", "$comment"}
    )


def _arrays_without_items(node, where="#"):
    """Every array type in a schema that does not say what its items are."""
    if isinstance(node, list):
        return [
            found
            for n, item in enumerate(node)
            for found in _arrays_without_items(item, f"{where}/{n}")
        ]
    if not isinstance(node, dict):
        return []
    types = node.get("type")
    names = [types] if isinstance(types, str) else (types or [])
    said = "prefixItems" in node or ("items" in node and not _says_nothing(node["items"]))
    found = [where] if "array" in names and not said else []
    return found + [
        f for key, value in node.items() for f in _arrays_without_items(value, f"{where}/{key}")
    ]


def test_the_schema_walk_finds_the_product_schemas():
    assert {"topoctl/snapshot/schema/snapshot.schema.json", "rules/schema/rule.schema.json"} <= set(
        _schema_files()
    )


def test_an_array_that_does_not_say_its_items_is_found():
    """The check below can fail: a bare array, one with `items: {}`, one nested in $defs and anyOf."""
    schema = {
        "properties": {
            "a": {"type": ["array", "null"]},
            "b": {"type": "array", "items": {}},
            "c": {"type": "array", "items": {"type": "integer"}},
        },
        "$defs": {
            "d": {
                "anyOf": [{"type": "array", "items": True}, {"type": "array", "prefixItems": [{}]}]
            }
        },
    }
    assert _arrays_without_items(schema) == [
        "#/properties/a",
        "#/properties/b",
        "#/$defs/d/anyOf/0",
    ]


@pytest.mark.parametrize("path", _schema_files())
def test_every_array_in_the_schemas_says_what_its_items_are(path):
    """An array without `items` accepts anything inside, and readers then meet what they cannot read
    (`summary.acs_redirect_pairs: [0]` once crashed `topoctl show`)."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        assert _arrays_without_items(json.load(handle)) == []


@pytest.mark.parametrize("name", list_systems())
def test_every_built_in_system_meets_the_schema(name):
    data = system_snapshot(name)
    assert VALIDATOR.is_valid(data) and ours(data)


def test_vocabularies_agree_with_the_schema():
    summary = snapshot.schema()["properties"]["summary"]["properties"]
    assert set(summary["interconnect"]["enum"]) - {None} == set(vocab.INTERCONNECTS)
    for key in vocab.SOFTWARE_KEYS:
        assert key in snapshot.schema()["properties"]["software"]["description"]


def test_measurements_in_the_agreed_format_are_valid():
    data = system_snapshot("h200-2x-nvswitch-vm")
    data["measurements"] = {
        "method": "topoctl bench",
        "topoctl_version": "0.2.0",
        "measured_at": "2026-12-01T11:00:00Z",
        "versions": {
            "torch": "2.11.0",
            "nccl": "2.28.9",
            "cuda_runtime": "13.0",
            "driver": "580.159.04",
            "sglang": None,
        },
        "gpus": [0, 1],
        "p2p": [
            {
                "src": 0,
                "dst": 1,
                "healthy": True,
                "reason": None,
                "bandwidth_gbps": {"one_way": 380.1, "both_ways": 700.2},
                "latency_us": 4.1,
            }
        ],
        "allreduce": [
            {
                "path": "nccl",
                "world_size": 2,
                "gpus": [0, 1],
                "bytes": 43008,
                "dtype": "bfloat16",
                "cuda_graph": True,
                "latency_us": {"median": 21.3, "p10": 20.9, "p90": 22.8},
                "repetitions": 200,
                "status": "ok",
                "reason": None,
            },
            {
                "path": "pcie_ipc",
                "world_size": 2,
                "bytes": 43008,
                "latency_us": None,
                "status": "unavailable",
                "reason": "SGLang not installed",
            },
        ],
        "coalescing": [
            {
                "path": "nccl",
                "world_size": 2,
                "n": 122,
                "bytes_each": 43008,
                "many_small_us": 2500.0,
                "two_large_us": 900.0,
                "repetitions": 50,
            }
        ],
        "new_kind_of_measurement": {"anything": 1},  # later additions validate
    }
    snapshot.validate_snapshot(data, origin="x")
    assert VALIDATOR.is_valid(data)
    data["measurements"]["allreduce"][0]["world_size"] = "two"
    assert not VALIDATOR.is_valid(data) and not ours(data)


def test_unknown_fields_are_allowed_so_newer_probes_stay_readable():
    data = system_snapshot("l40s-4x-pcie-2numa")
    data["gpus"][0]["bar1"] = {"total_bytes": 1 << 36}
    data["host"]["iommu"] = {"mode": "translated"}
    data["pcie"]["acs"] = [{"bdf": "0000:17:00.0", "enabled": True}]
    snapshot.validate_snapshot(data, origin="x")


# ----------------------------------------------------------------------- ours == jsonschema, on
# mutations
LEAF_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=2000),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=6),
    st.sampled_from(["OK", "NS", "U", "unknown", "9.0", "pcie", "nvswitch"]),
    st.builds(list),
    st.builds(dict),
    st.builds(lambda: [0, 1]),
)  # fresh objects


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value[:3]):
            yield from _paths(item, prefix + (index,))


BASE = system_snapshot("rtx-4090-2x-pcie-no-p2p")
PATHS = [path for path in _paths(BASE) if path]


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(PATHS), LEAF_VALUES), min_size=1, max_size=3))
def test_our_validator_gives_the_jsonschema_verdict(changes):
    data = copy.deepcopy(BASE)
    for path, value in changes:
        target = data
        try:
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue
    if _has_integral_float(data):
        return  # JSON Schema's integer includes 2.0; ours does not (stricter by design)
    assert ours(data) == VALIDATOR.is_valid(data), [e.message for e in VALIDATOR.iter_errors(data)][
        :3
    ]


# ---------------------------------------------------------------------------------------- the docs
def test_the_docs_field_list_is_generated_from_the_schema():
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    try:
        import snapshot_fields
    finally:
        sys.path.remove(os.path.join(ROOT, "scripts"))
    assert snapshot_fields.main(["--check"]) == 0, (
        "docs/architecture.md is stale: python scripts/snapshot_fields.py"
    )
    table = snapshot_fields.field_table()
    for key in snapshot.schema()["properties"]:
        assert f"| `{key}` |" in table


def test_the_schema_ships_with_the_package():
    setup = open(os.path.join(ROOT, "setup.cfg"), encoding="utf-8").read()
    assert "topoctl.snapshot = schema/*.json" in setup
    assert json.load(open(snapshot.SCHEMA_FILE, encoding="utf-8"))["title"].startswith(
        "topoctl snapshot"
    )


def test_loading_a_snapshot_never_imports_the_probe():
    """The probe <-> snapshot cycle is gone: snapshot.py (and the catalogue) stand on their own."""
    import subprocess

    code = (
        "import sys, topoctl.snapshot.document, topoctl.snapshot.catalogue; "
        "topoctl.snapshot.catalogue.list_systems(); print(sorted(m for m in sys.modules if "
        "m.startswith('topoctl.probe')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
