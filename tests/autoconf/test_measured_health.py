"""A pair that failed `topoctl bench`'s P2P health check is a pair without P2P everywhere
downstream.

The fixture is synthetic: the shipped 8x RTX PRO 6000 system (P2P OK on all 56 pairs by NVML,
synthetic, see its README) with a `measurements` block written here in the format `topoctl bench`
writes, saying the copy 0->1 hung. Nothing else about the machine changes.
"""

from __future__ import annotations

import copy
import json

import pytest

from topoctl.autoconf.placement import choose_gpus
from topoctl.cli.app import main
from topoctl.snapshot.catalogue import system_snapshot
from topoctl.snapshot.document import load_snapshot

FAILED = {
    "method": "synthetic (tests/autoconf/test_measured_health.py)",
    "backend": "nccl",
    "gpus": list(range(8)),
    "p2p": [
        {
            "src": 0,
            "dst": 1,
            "healthy": False,
            "reason": "timeout after 30 s (the copy hung)",
            "bandwidth_gbps": None,
            "latency_us": None,
        },
        {
            "src": 1,
            "dst": 0,
            "healthy": True,
            "reason": None,
            "bandwidth_gbps": {"one_way": 52.1, "both_ways": 98.0},
            "latency_us": 2.4,
        },
    ],
    "allreduce": [],
    "coalescing": [],
}


@pytest.fixture
def failed_snapshot(tmp_path):
    snapshot = copy.deepcopy(system_snapshot("rtx-pro-6000-8x-pcie"))
    snapshot["measurements"] = FAILED
    path = tmp_path / "machine.json"
    path.write_text(json.dumps(snapshot))
    return str(path)


def _launch(capsys, argv):
    assert main(argv) == 0
    out = capsys.readouterr().out
    return {
        line.split("=", 1)[0]: line.split("=", 1)[1]
        for line in out.splitlines()
        if "=" in line and not line.startswith("#")
    }


def test_summary_says_the_pair_has_no_p2p(failed_snapshot):
    summary = load_snapshot(failed_snapshot)["summary"]
    assert summary["all_pairs_p2p"] is False and summary["p2p_pairs_ok"] == 55
    assert summary["p2p_failed_health_check"] == [[0, 1]]


def test_recommend_keeps_nccl_and_custom_allreduce_off_p2p(failed_snapshot, capsys):
    before = _launch(
        capsys, ["recommend", "--system", "rtx-pro-6000-8x-pcie", "--model", "kimi-k2.5"]
    )
    after = _launch(capsys, ["recommend", "--topology", failed_snapshot, "--model", "kimi-k2.5"])
    assert "NCCL_P2P_DISABLE" not in before  # the measurement is what changes the launch
    assert (
        after["NCCL_P2P_DISABLE"] == "'1'" and "--disable-custom-all-reduce" in after["SGLANG_ARGS"]
    )


def test_check_blocks_a_launch_that_uses_p2p_over_the_failed_pair(
    failed_snapshot, tmp_path, capsys
):
    env = tmp_path / "launch.env"
    env.write_text("SGLANG_ARGS='--tp-size 8 --disable-custom-all-reduce'\n")
    assert main(["check", str(env), "--topology", failed_snapshot]) == 1
    assert "p2p-failed-health-check" in capsys.readouterr().out
    env.write_text("NCCL_P2P_DISABLE='1'\nSGLANG_ARGS='--tp-size 8 --disable-custom-all-reduce'\n")
    assert main(["check", str(env), "--topology", failed_snapshot]) == 0


def test_a_smaller_launch_is_placed_on_gpus_without_the_pair(failed_snapshot):
    placement = choose_gpus(load_snapshot(failed_snapshot), 4)
    assert not {0, 1} <= set(placement.gpus)
    assert set(choose_gpus(system_snapshot("rtx-pro-6000-8x-pcie"), 4).gpus) == {0, 1, 2, 3}


def test_show_names_the_failed_pair(failed_snapshot, capsys):
    assert main(["show", "--topology", failed_snapshot, "--no-color"]) == 0
    out = capsys.readouterr().out
    assert "P2P: 1/2 ordered pairs healthy" in out
    assert "P2P 0->1 FAILED: timeout after 30 s (the copy hung)" in out
