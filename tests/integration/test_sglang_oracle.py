"""check's verdicts held to SGLang's own code: the committed oracle outcomes (tests/data/oracle/),
one per release and grid launch, regenerated from the wheels by scripts/sglang_oracle_regenerate.py.

Every launch SGLang refuses or crashes on at start-up must be blocked; no launch it starts may be
blocked unless the block is one of the behaviours the oracle cannot reach (compare.BEYOND_REACH),
each of which is a rule with its own must-fire / must-not-fire cases. No network, no wheels: the
data is committed.

There is no list of tolerated disagreements: one disagreement fails the test, with the launch, the
release's outcome and check's verdict (`python scripts/sglang_oracle_compare.py` prints them all).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from sglang_oracle import compare  # noqa: E402

from topoctl.rules.engine import load_rules  # noqa: E402

pytestmark = pytest.mark.slow  # minutes: its own step of .ci/run (setup.cfg, "markers")

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "oracle"


@pytest.fixture(scope="module")
def docs() -> list[dict]:
    return compare.load(DATA)


def test_oracle_outcomes_are_releases_topoctl_knows(docs):
    releases = json.loads((ROOT / "rules" / "sglang" / "generated" / "releases.json").read_text())[
        "releases"
    ]
    assert {doc["version"] for doc in docs} <= {entry["version"] for entry in releases}
    assert sum(len(doc["launches"]) for doc in docs) >= 20_000


def test_committed_launches_are_the_grid_then_its_checkpoint_launches(docs):
    """Each release's file holds grid.launches() for its index, ids and argv alike: the grid's
    launches, then the checkpoint launches numbered after them (regenerate.py --checkpoint-only adds
    those to a committed file)."""
    from sglang_oracle import grid

    releases = [
        entry["version"]
        for entry in json.loads(
            (ROOT / "rules" / "sglang" / "generated" / "releases.json").read_text()
        )["releases"]
    ]
    for doc in docs:
        expected = [
            (launch.id, launch.system, launch.arch, launch.argv, launch.env)
            for launch in grid.launches(releases.index(doc["version"]))
        ]
        committed = [
            (launch["id"], launch["system"], launch["arch"], launch["argv"], launch["env"])
            for launch in doc["launches"]
        ]
        assert committed == expected, doc["version"]
        checkpoint = [launch for launch in doc["launches"] if launch["arch"] == grid.DEEPSEEK_FP8]
        assert checkpoint and all(
            launch["outcome"]["kind"] != "oracle-error" for launch in checkpoint
        )


def test_the_oracle_answers_nearly_every_launch(docs):
    """An outcome the stubs could not produce (oracle-error) is no verdict: they stay a small
    remainder."""
    total = sum(len(doc["launches"]) for doc in docs)
    unanswered = sum(
        1
        for doc in docs
        for launch in doc["launches"]
        if launch["outcome"]["kind"] == "oracle-error"
    )
    assert unanswered <= total // 50


def test_check_agrees_with_sglang_on_every_committed_launch():
    """Verdicts, and the settings topoctl believes SGLang ends with (what it turns on or off by
    itself: the rules' `implies` and `defaults`, the extracted fusion auto-on among them). Two
    processes, one release each: the CI runner has two cores, and each release is judged on its own.
    """
    disagreements, counts = compare.compare_files(compare.files(DATA), settings=True, jobs=2)
    found = sorted({item.line() for item in disagreements})
    assert counts["compared"] >= 20_000
    assert not found, f"{len(found)} disagreements of {counts['compared']} launches:\n" + "\n".join(
        found[:25]
    )


def _cites_source_or_measures(rule) -> bool:
    """Evidence with a file:line of a released package, or a measurement (published, or the
    machine's own: a rule on topoctl bench's P2P health check)."""
    if "pair.p2p_measured_healthy" in json.dumps(rule.when):
        return True
    for evidence in rule.evidence:
        releases = evidence.get("releases") or {}
        places = [
            str((releases.get(key) or {}).get("at", ""))
            for key in ("holds_from", "last_holding", "stops_at")
        ]
        if evidence.get("level") == "measured" or any(
            re.search(r"\.\w+:\d+", text) for text in places + [str(evidence.get("reference", ""))]
        ):
            return True
    return False


@pytest.mark.parametrize(
    "rule_id",
    sorted(
        {*compare.BEYOND_REACH} - {"topoctl-model-does-not-fit", "topoctl-kernel-not-built"}
        | {r for _, rules in compare.GATES_NOT_RUN.values() for r in rules}
    ),
)
def test_what_the_oracle_cannot_reach_is_a_rule_with_sources_and_cases(rule_id):
    rules = {rule.id: rule for rule in load_rules().rules}
    assert rule_id in rules
    rule = rules[rule_id]
    expects = {case.expect for case in rule.tests}
    assert {"fire", "silent"} <= expects, f"{rule_id}: needs a must-fire and a must-not-fire case"
    assert _cites_source_or_measures(rule), (
        f"{rule_id}: no file:line and no measurement in its evidence"
    )


def test_the_memory_model_block_has_its_own_cases():
    """topoctl-model-does-not-fit is check's memory model, not a rule: its cases are in
    test_check_memory.py."""
    text = (ROOT / "tests" / "check" / "test_check_memory.py").read_text(encoding="utf-8")
    assert text.count('"topoctl-model-does-not-fit"') >= 3 and "code == 0" in text


def test_the_kernel_block_has_its_own_cases():
    """topoctl-kernel-not-built is check's kernel-matrix judge, not a rule: its public crash reports
    (must block) and working launches (must pass) are in tests/data/kernel_failures.yaml."""
    corpus = (ROOT / "tests" / "data" / "kernel_failures.yaml").read_text(encoding="utf-8")
    assert corpus.count("expect: block") >= 3 and corpus.count("sglang/issues") >= 3


def test_a_setting_sglang_ends_with_otherwise_is_a_disagreement():
    """The settings comparison can fail: SGLang 0.5.12 turns the FlashInfer fusion on by itself for
    Qwen3-MoE at TP 2 on H200; an outcome that says it stayed off disagrees with topoctl's extracted
    auto-on."""
    launch = {
        "id": 0,
        "system": "h200-2x-nvswitch-vm",
        "arch": "Qwen3MoeForCausalLM",
        "argv": ["--tp-size", "2"],
        "env": {},
        "outcome": {
            "kind": "ok",
            "final": {"enable_flashinfer_allreduce_fusion": False},
            "gates": {},
        },
    }
    disagreements, _ = compare.compare([{"version": "0.5.12", "launches": [launch]}], settings=True)
    assert [d.detail for d in disagreements] == [
        "flashinfer_allreduce_fusion: topoctl True, SGLang False"
    ]


def test_a_start_up_error_that_check_passes_is_a_disagreement():
    """The comparison can fail: SGLang refusing a launch that check passes is reported."""
    launch = {
        "id": 0,
        "system": "h200-4x-nvswitch-vm",
        "arch": "LlamaForCausalLM",
        "argv": ["--tp-size", "4"],
        "env": {},
        "outcome": {
            "kind": "startup-error",
            "type": "ValueError",
            "message": "made up",
            "at": "x:1",
        },
    }
    doc = {"version": "0.5.12", "launches": [launch]}
    disagreements, _ = compare.compare([doc])
    assert [d.kind for d in disagreements] == ["missed-failure"]


def test_a_block_on_a_launch_sglang_starts_is_a_disagreement():
    launch = {
        "id": 0,
        "system": "rtx-pro-6000-8x-pcie",
        "arch": "LlamaForCausalLM",
        "argv": ["--tp-size", "4", "--enable-torch-symm-mem"],
        "env": {},
        "outcome": {"kind": "ok", "final": {}, "gates": {}},
    }
    doc = {
        "version": "0.5.12",
        "launches": [launch],
    }  # 0.5.12 crashes there (KeyError 12): check blocks
    disagreements, _ = compare.compare([doc])
    assert [d.kind for d in disagreements] == ["false-block"]
