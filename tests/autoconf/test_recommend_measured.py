"""recommend follows what `topoctl bench` measured on the target.

Synthetic: the shipped 8x H100 NVSwitch system (synthetic, see its README) with `measurements`
written here in the format bench writes (docs/bench.md), at world size 8 and the model's message
sizes, once with NCCL much faster than custom allreduce and once the other way round. Nothing else
about the machine changes.
"""

from __future__ import annotations

import copy
import json

from topoctl.cli.app import main
from topoctl.snapshot.catalogue import system_snapshot

SIZES = (4096, 16384, 65536, 262144, 1048576, 4194304)


def _with(tmp_path, nccl_us: float, custom_us: float) -> str:
    snapshot = copy.deepcopy(system_snapshot("h100-8x-nvswitch"))
    rows = [
        {
            "path": path,
            "world_size": 8,
            "gpus": list(range(8)),
            "bytes": size,
            "dtype": "bfloat16",
            "cuda_graph": True,
            "latency_us": {"median": us, "p10": us * 0.98, "p90": us * 1.05},
            "repetitions": 100,
            "status": "ok",
            "reason": None,
        }
        for size in SIZES
        for path, us in (("nccl", nccl_us), ("custom", custom_us))
    ]
    snapshot["measurements"] = {
        "method": "synthetic (tests/autoconf/test_recommend_measured.py)",
        "backend": "nccl",
        "gpus": list(range(8)),
        "p2p": [],
        "allreduce": rows,
        "coalescing": [],
    }
    path = tmp_path / f"h100-{nccl_us}-{custom_us}.json"
    path.write_text(json.dumps(snapshot))
    return str(path)


def _args(capsys, argv) -> str:
    assert main(argv) == 0
    out = capsys.readouterr().out
    return next(line for line in out.splitlines() if line.startswith("SGLANG_ARGS="))


def test_a_measured_slower_path_is_not_chosen(tmp_path, capsys):
    unmeasured = _args(
        capsys, ["recommend", "--system", "h100-8x-nvswitch", "--model", "llama-3.1-70b"]
    )
    nccl_faster = _args(
        capsys, ["recommend", "--topology", _with(tmp_path, 5.0, 80.0), "--model", "llama-3.1-70b"]
    )
    custom_faster = _args(
        capsys, ["recommend", "--topology", _with(tmp_path, 80.0, 5.0), "--model", "llama-3.1-70b"]
    )
    assert (
        "--disable-custom-all-reduce" not in unmeasured
    )  # the reference table favours custom on NVSwitch
    assert "--disable-custom-all-reduce" in nccl_faster  # the measurement says NCCL: it wins
    assert "--disable-custom-all-reduce" not in custom_faster


def test_explain_names_the_measurement_as_the_source(tmp_path, capsys):
    assert (
        main(
            [
                "recommend",
                "--topology",
                _with(tmp_path, 5.0, 80.0),
                "--model",
                "llama-3.1-70b",
                "--explain",
            ]
        )
        == 0
    )
    err = capsys.readouterr()
    text = err.out + err.err
    assert "snapshot measurements (topoctl bench)" in text
