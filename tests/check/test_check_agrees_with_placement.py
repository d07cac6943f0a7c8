"""check of recommend's own launch.env for every TP size on every built-in system: the GPU group
recommend chooses (CUDA_VISIBLE_DEVICES) is the group check judges, so check has no block and no
warning."""

from __future__ import annotations

import json

import pytest

from topoctl.cli.app import main
from topoctl.snapshot.catalogue import list_systems, system_snapshot

SYSTEMS = [name for name in list_systems() if system_snapshot(name).get("gpus")]


@pytest.mark.parametrize("system", SYSTEMS)
def test_check_passes_recommend_for_every_tp(system, tmp_path, capsys):
    count = len(system_snapshot(system)["gpus"])
    checked = 0
    for tp in range(1, count + 1):
        for model in ([], ["--model", "kimi-k2.5"], ["--model", "llama-3.1-70b"]):
            code = main(["recommend", "--system", system, "--tp-size", str(tp), *model])
            if (
                code == 1 and model
            ):  # the memory model refuses a model that does not load at this TP size
                assert "does not fit on this machine" in capsys.readouterr()[1], (system, tp, model)
                continue
            assert code == 0, (system, tp, model)
            checked += 1
            path = tmp_path / "launch.env"
            path.write_text(capsys.readouterr()[0])
            code = main(["check", str(path), "--system", system, "--format", "json", *model])
            doc = json.loads(capsys.readouterr()[0])
            found = [
                (item["id"], item["message"])
                for item in doc["results"][0]["findings"]
                if item["severity"] in ("block", "warn")
            ]
            assert code == 0 and not found, (system, tp, model, found)
            visible = "CUDA_VISIBLE_DEVICES=" in path.read_text()
            assert visible == (tp < count), (system, tp)
    assert checked >= count  # every TP size without a model at least


@pytest.mark.parametrize(
    "system, tp, dp",
    [
        ("l40s-4x-pcie-2numa", 2, 2),
        ("rtx-pro-6000-8x-pcie", 2, 4),
        ("rtx-pro-6000-8x-pcie", 4, 2),
        ("h100-8x-nvswitch", 2, 4),
    ],
)
def test_check_passes_recommend_for_data_parallel_replicas(system, tp, dp, tmp_path, capsys):
    # each replica's TP group is chosen by placement, and check cuts the visible GPUs into the same
    # replicas
    assert (
        main(
            [
                "recommend",
                "--system",
                system,
                "--tp-size",
                str(tp),
                "--dp-size",
                str(dp),
                "--model",
                "llama-3.1-8b",
                "--format",
                "json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr()[0])
    assert doc["chosen"]["tp_size"] == tp and doc["chosen"]["dp_size"] == dp
    replicas = doc["placement"]["replicas"]
    assert len(replicas) == dp and all(len(replica) == tp for replica in replicas)
    assert doc["chosen"]["gpus"] == [index for replica in replicas for index in replica]
    assert (
        main(
            [
                "recommend",
                "--system",
                system,
                "--tp-size",
                str(tp),
                "--dp-size",
                str(dp),
                "--model",
                "llama-3.1-8b",
            ]
        )
        == 0
    )
    path = tmp_path / "launch.env"
    path.write_text(capsys.readouterr()[0])
    code = main(
        ["check", str(path), "--system", system, "--format", "json", "--model", "llama-3.1-8b"]
    )
    doc = json.loads(capsys.readouterr()[0])
    found = [
        (item["id"], item["message"])
        for item in doc["results"][0]["findings"]
        if item["severity"] in ("block", "warn")
    ]
    assert code == 0 and not found, (system, tp, dp, found)
