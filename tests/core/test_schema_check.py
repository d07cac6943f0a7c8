"""topoctl/core/schema_check.py gives jsonschema's verdict (valid or not) on every built-in rule
file and on generated mutations of them: the compiled check may never pass a file jsonschema
refuses, nor the reverse."""

from __future__ import annotations

import copy

import jsonschema
import pytest
import yaml
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from topoctl.core.schema_check import compile_schema
from topoctl.rules.engine.loader import builtin_rule_files, rule_schema

CHECK = compile_schema(rule_schema())
VALIDATOR = jsonschema.Draft202012Validator(rule_schema())


def _documents() -> list:
    out = []
    for path in builtin_rule_files():
        with open(path, encoding="utf-8") as handle:
            out.append(yaml.safe_load(handle))
    return out


DOCUMENTS = _documents()
ODD_VALUES = [
    None,
    True,
    False,
    0,
    1,
    -1,
    1.0,
    2.5,
    "",
    " ",
    "x",
    "block",
    "info",
    "0.5.12",
    ">=0.5",
    "not a spec!",
    [],
    [1],
    ["a"],
    {},
    {"fact": "gpu.sm"},
    {"all": []},
    {"x": 1},
]


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*prefix, index))


def _set(document, path, value):
    target = document
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value


def _delete(document, path):
    target = document
    for part in path[:-1]:
        target = target[part]
    del target[path[-1]]


@pytest.mark.parametrize("number", range(len(DOCUMENTS)))
def test_every_builtin_file_is_valid_to_both(number):
    assert VALIDATOR.is_valid(DOCUMENTS[number]) and CHECK(DOCUMENTS[number])


def _mutated(data: st.DataObject, documents: list, odd_values: list, hows: list[str]) -> object:
    """A copy of one of `documents` with one to three changes drawn by `data`: a value replaced by
    one of `odd_values` ("set"), a key or item removed ("delete"), or a key added to a mapping
    ("extra-key": a string key, "int-key": an integer key, which JSON cannot hold but a YAML file
    can)."""
    document = copy.deepcopy(data.draw(st.sampled_from(documents)))
    for _ in range(data.draw(st.integers(1, 3))):
        paths = [path for path in _paths(document) if path]
        if not paths:
            break
        path = data.draw(st.sampled_from(paths))
        how = data.draw(st.sampled_from(hows))
        if how == "set":
            _set(document, path, copy.deepcopy(data.draw(st.sampled_from(odd_values))))
        elif how == "delete":
            _delete(document, path)
        else:
            target = document
            for part in path:
                target = target[part]
            if isinstance(target, dict):
                target["unexpected" if how == "extra-key" else 7] = data.draw(
                    st.sampled_from(odd_values)
                )
    return document


@settings(max_examples=examples(400), deadline=None)
@given(st.data())
def test_mutations_get_the_same_verdict(data):
    document = _mutated(data, DOCUMENTS, ODD_VALUES, ["set", "delete", "extra-key", "int-key"])
    assert CHECK(document) == VALIDATOR.is_valid(document)


def test_a_keyword_it_does_not_compile_is_refused():
    with pytest.raises(ValueError, match="not compiled"):
        compile_schema({"type": "object", "dependentRequired": {"a": ["b"]}})


# -- snapshots: the compiled check with strict integers against topoctl.snapshot.document's
# jsonschema validator -------
def _snapshots() -> list:
    import glob
    import json
    import os

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = []
    for path in sorted(glob.glob(os.path.join(root, "fixtures", "*", "snapshot.json"))):
        with open(path, encoding="utf-8") as handle:
            out.append(json.load(handle))
    return out


SNAPSHOTS = _snapshots()
SNAPSHOT_ODD = [*ODD_VALUES, 2.0, -3, 10**6, "NV12", "SYS", "OK", "0000:17:00.0", {"read": "OK"}]


def _snapshot_check():
    from topoctl.snapshot import document as snapshot

    return compile_schema(snapshot.schema(), strict_integers=True), snapshot.validator()


def test_every_fixture_snapshot_is_valid_to_both():
    check, validator = _snapshot_check()
    assert len(SNAPSHOTS) >= 10
    for document in SNAPSHOTS:
        assert validator.is_valid(document) and check(document)


@settings(max_examples=examples(150), deadline=None)
@given(st.data())
def test_snapshot_mutations_get_the_same_verdict(data):
    check, validator = _snapshot_check()
    document = _mutated(data, SNAPSHOTS, SNAPSHOT_ODD, ["set", "delete", "extra-key"])
    assert check(document) == validator.is_valid(document)
