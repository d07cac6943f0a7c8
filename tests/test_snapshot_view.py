"""The typed view of a snapshot (topoctl/snapshot_view.py) answers from the validated data."""
from __future__ import annotations

import pytest

from topoctl.catalogue import list_systems, system_snapshot
from topoctl.snapshot_view import SnapshotView


@pytest.mark.parametrize("name", list_systems())
def test_view_agrees_with_the_snapshot(name):
    data = system_snapshot(name)
    view = SnapshotView(data)
    assert view.gpu_count == data["summary"]["gpu_count"] == len(data["gpus"])
    assert view.interconnect == data["summary"]["interconnect"]
    everyone = [gpu["index"] for gpu in data["gpus"]]
    assert len(view.pairs_of(everyone)) == view.gpu_count * (view.gpu_count - 1)
    assert view.pairs_of(everyone[:1]) == []
    assert view.software("sglang") == data["software"].get("sglang")
    assert view.measurements == data.get("measurements")  # h200-1x-vm ships what topoctl bench measured there
    ok = [row for row in (data.get("measurements") or {}).get("allreduce") or [] if row.get("status") == "ok"]
    assert view.allreduce_measurements() == ok


def test_pairs_of_a_group_and_their_p2p():
    view = SnapshotView(system_snapshot("l40s-4x-pcie-2numa"))
    pairs = view.pairs_of([0, 1])
    assert {(p.src, p.dst) for p in pairs} == {(0, 1), (1, 0)}
    assert all(p.p2p_ok is True for p in pairs)
    assert any(p.p2p_ok is False for p in view.pairs_of([0, 2]))  # across the sockets: CNS


def test_software_keys_are_the_vocabulary_and_measurements_rows_filter():
    data = system_snapshot("h200-2x-nvswitch-vm")
    with pytest.raises(KeyError):
        SnapshotView(data).software("sglangg")
    data["measurements"] = {"allreduce": [{"path": "nccl", "status": "ok", "latency_us": {"median": 20.0}},
                                          {"path": "custom", "status": "unavailable"}]}
    view = SnapshotView(data)
    assert [row["path"] for row in view.allreduce_measurements()] == ["nccl"]
    assert view.allreduce_measurements("custom") == []
