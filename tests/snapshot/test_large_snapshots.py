"""Snapshots up to topoctl.snapshot.document.MAX_GPUS load and recommend; one GPU more is one clear
error (exit 2).

The large snapshots are benchmarks/large_snapshots.py's synthetic copies of an 8-GPU reference
system."""

from __future__ import annotations

import json

from topoctl.snapshot.document import MAX_GPUS, validate_snapshot


def test_the_synthetic_large_snapshots_are_valid_snapshots(large_snapshot):
    for count in (16, 64):
        data = large_snapshot(count)
        validate_snapshot(data, origin=f"{count}.json")
        assert len(data["gpus"]) == count and len(data["pairs"]) == count * (count - 1)
        assert data["source"]["synthetic"] is True


def test_recommend_at_the_ceiling_places_each_replica_on_one_socket(cli, tmp_path, large_snapshot):
    path = tmp_path / "big.json"
    path.write_text(json.dumps(large_snapshot(MAX_GPUS)))
    code, out, err = cli(
        [
            "recommend",
            "--topology",
            str(path),
            "--model",
            "llama-3.1-70b",
            "--tp-size",
            "4",
            "--dp-size",
            str(MAX_GPUS // 4),
            "--format",
            "json",
        ]
    )
    assert code == 0, err
    placement = json.loads(out)["placement"]
    assert placement["replicas"][:2] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert len(placement["replicas"]) == MAX_GPUS // 4 and placement["worst_link"] == "PXB"


def test_more_gpus_than_the_ceiling_is_one_line_with_a_hint(cli, tmp_path, large_snapshot):
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(large_snapshot(MAX_GPUS + 8)))
    for argv in (
        ["show", "--topology", str(path)],
        ["recommend", "--topology", str(path)],
        [
            "check",
            "--topology",
            str(path),
            "--",
            "python",
            "-m",
            "sglang.launch_server",
            "--tp",
            "8",
        ],
    ):
        code, out, err = cli(argv)
        assert code == 2, argv
        assert (
            f"lists {MAX_GPUS + 8} GPUs, more than {MAX_GPUS}, the most one snapshot may hold"
            in err
        )
        assert "probe each machine on its own" in err and "Traceback" not in err
