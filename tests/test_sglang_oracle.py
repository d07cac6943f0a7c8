"""check's verdicts held to SGLang's own code: the committed oracle outcomes (tests/data/oracle/), one per
release and grid launch, regenerated from the wheels by scripts/sglang_oracle_regenerate.py.

Every launch SGLang refuses or crashes on at start-up must be blocked; no launch it starts may be blocked
unless the block is one of the behaviours the oracle cannot reach (compare.BEYOND_REACH), each of which is a
rule with its own must-fire / must-not-fire cases. No network, no wheels: the data is committed.

There is no list of tolerated disagreements: one disagreement fails the test, with the launch, the release's
outcome and check's verdict (`python scripts/sglang_oracle_compare.py` prints them all).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

from sglang_oracle import compare  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "oracle"


@pytest.fixture(scope="module")
def docs() -> list[dict]:
    return compare.load(DATA)


def test_oracle_outcomes_are_releases_topoctl_knows(docs):
    releases = json.loads((ROOT / "topoctl" / "sglang" / "data" / "releases.json").read_text())["releases"]
    assert {doc["version"] for doc in docs} <= {entry["version"] for entry in releases}
    assert sum(len(doc["launches"]) for doc in docs) >= 20_000


def test_the_oracle_answers_nearly_every_launch(docs):
    """An outcome the stubs could not produce (oracle-error) is no verdict: they stay a small remainder."""
    total = sum(len(doc["launches"]) for doc in docs)
    unanswered = sum(1 for doc in docs for launch in doc["launches"] if launch["outcome"]["kind"] == "oracle-error")
    assert unanswered <= total // 50


def test_check_agrees_with_sglang_on_every_committed_launch(docs):
    disagreements, counts = compare.compare(docs)
    found = sorted({item.line() for item in disagreements})
    assert counts["compared"] >= 20_000
    assert not found, f"{len(found)} disagreements of {counts['compared']} launches:\n" + "\n".join(found[:25])


def test_a_start_up_error_that_check_passes_is_a_disagreement():
    """The comparison can fail: SGLang refusing a launch that check passes is reported."""
    launch = {"id": 0, "system": "h200-4x-nvswitch-vm", "arch": "LlamaForCausalLM", "argv": ["--tp-size", "4"],
              "env": {}, "outcome": {"kind": "startup-error", "type": "ValueError", "message": "made up", "at": "x:1"}}
    doc = {"version": "0.5.12", "launches": [launch]}
    disagreements, _ = compare.compare([doc])
    assert [d.kind for d in disagreements] == ["missed-failure"]


def test_a_block_on_a_launch_sglang_starts_is_a_disagreement():
    launch = {"id": 0, "system": "rtx-pro-6000-8x-pcie", "arch": "LlamaForCausalLM",
              "argv": ["--tp-size", "4", "--enable-torch-symm-mem"], "env": {},
              "outcome": {"kind": "ok", "final": {}, "gates": {}}}
    doc = {"version": "0.5.12", "launches": [launch]}  # 0.5.12 crashes there (KeyError 12): check blocks
    disagreements, _ = compare.compare([doc])
    assert [d.kind for d in disagreements] == ["false-block"]
