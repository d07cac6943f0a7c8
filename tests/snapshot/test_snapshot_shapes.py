"""Snapshot values of the wrong shape that benchmarks/fuzz_shapes.py found passing the schema and
ending a command in an internal error: each is now one line and exit 2 naming the file and field."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT

SNAPSHOT = f"{ROOT}/fixtures/h200-2x-nvswitch-vm/snapshot.json"


@pytest.mark.parametrize("clique_id", [[1], {"a": 1}, [], {}, "x", -1])
@pytest.mark.parametrize("command", [["export", "nfd"], ["show"]])
def test_a_fabric_clique_id_that_is_not_a_count(cli, tmp_path, clique_id, command):
    # was: TypeError (unhashable) in present/nfd_labels._clique, exit 70 of `export nfd`
    data = json.loads(open(SNAPSHOT, encoding="utf-8").read())
    data["gpus"][0]["fabric"]["clique_id"] = clique_id
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(data))
    code, _, err = cli([*command, "--topology", str(path), *_output(command, tmp_path)])
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) <= 2 and "internal error" not in err, err
    assert lines[0].startswith(f"topoctl: error: {path}: gpus[0].fabric.clique_id "), err


def _output(command: list[str], tmp_path) -> list[str]:
    return ["-o", str(tmp_path / "labels")] if command[0] == "export" else []


def test_a_fabric_as_the_probe_writes_it_is_read(cli, tmp_path):
    code, _, err = cli(["export", "nfd", "--topology", SNAPSHOT, "-o", str(tmp_path / "labels")])
    assert code == 0 and "nvlink.clique=0" in (tmp_path / "labels").read_text(), err
