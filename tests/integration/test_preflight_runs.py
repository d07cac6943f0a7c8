"""`topoctl preflight` end to end over gloo (CPU processes stand in for the GPUs): a launch that
passes, and the faults the harness injects (a collective that never completes, one that returns
wrong sums, a worker that dies, a process group that cannot start), each reported in bounded time
with exit 1, nothing left running, and the recorded failure blocking the same launch in check."""

from __future__ import annotations

import json
import multiprocessing
import time

import pytest
from conftest import FIXTURES

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

SNAPSHOT = f"{FIXTURES}/h200-2x-nvswitch-vm/snapshot.json"


@pytest.fixture
def launch(tmp_path):
    path = tmp_path / "launch.env"
    path.write_text('SGLANG_ARGS="--model-path m --tp-size 2"\nTOPOCTL_MODEL=llama-3.1-8b\n')
    return str(path)


def _preflight(cli, launch, *extra):
    start = time.monotonic()
    code, out, err = cli(
        ["preflight", launch, "--backend", "gloo", "--timeout", "5", "--topology", SNAPSHOT, *extra]
    )
    return code, out, err, time.monotonic() - start


def test_a_launch_whose_sums_are_right_passes_and_says_what_was_not_run(cli, launch):
    code, out, err, _ = _preflight(cli, launch, "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["world_size"] == 2 and report["sizes"] == [8192, 8192 * 160, 8192 * 8192]
    assert report["results"][0]["status"] == "ok" and not report["blocked"]
    assert any(r["status"] == "not run" and "custom" in r["what"] for r in report["results"])


@pytest.mark.parametrize(
    ("fault", "status"),
    [
        ("allreduce=hang", "hung"),
        ("allreduce=corrupt", "wrong result"),
        ("allreduce=die", "crashed"),
        ("init=fail", "init failed"),
    ],
)
def test_each_fault_blocks_in_bounded_time_and_leaves_nothing_running(
    cli, launch, monkeypatch, tmp_path, fault, status
):
    monkeypatch.setenv("TOPOCTL_PREFLIGHT_FAULT", fault)
    saved = tmp_path / "machine.json"
    code, out, err, seconds = _preflight(cli, launch, "--format", "json", "-o", str(saved))
    assert code == 1, err
    results = json.loads(out)["results"]
    assert status in [r["status"] for r in results if r["status"] != "not run"]
    assert seconds < 40  # the watchdog (5 s) and the process group's own timeout bound it
    assert multiprocessing.active_children() == []
    monkeypatch.delenv("TOPOCTL_PREFLIGHT_FAULT")
    code, out, err = cli(["check", launch, "--topology", str(saved)])
    assert code == 1 and "topoctl-preflight-failed" in out, out
