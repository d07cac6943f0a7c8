"""Pair quantifiers and pair summaries judge the launch's GPU group (request.gpus, else the first
tp_size x dp_size GPUs, else every GPU), not every pair of the machine."""

from __future__ import annotations

import pytest

from topoctl.rules.engine import evaluate, load_rules
from topoctl.rules.engine.facts import Context
from topoctl.snapshot.catalogue import system_snapshot

RULES = load_rules()


def _fired(snapshot, request, cache=None):
    return {f.rule_id: f.status for f in evaluate(RULES, snapshot, request, cache).findings}


@pytest.mark.parametrize(
    "request_, blocked",
    [
        ({"gpus": [0, 1], "tp_size": 2}, False),  # same socket, P2P OK
        ({"gpus": [2, 3], "tp_size": 2}, False),
        ({"gpus": [0, 2], "tp_size": 2}, True),  # across sockets: CNS
        ({"tp_size": 2}, False),  # the first two GPUs
        ({"tp_size": 1, "dp_size": 2}, False),
        (
            {"tp_size": 2, "dp_size": 2},
            False,
        ),  # replicas 0,1 and 2,3: replicas do not allreduce together
        (
            {"tp_size": 2, "dp_size": 2, "gpus": [0, 2, 1, 3]},
            True,
        ),  # replicas 0,2 and 1,3 cross the sockets
        ({"tp_size": 2, "dp_size": 2, "gpus": [1, 0, 3, 2]}, False),
        # four PCIe-only GPUs in one TP group: SGLang's own gate turns custom allreduce off before
        # any P2P test
        ({"tp_size": 4}, False),
        ({}, False),  # no size: every GPU (four, PCIe only)
    ],
)
def test_custom_allreduce_without_p2p_judges_the_group(request_, blocked):
    snapshot = system_snapshot("l40s-4x-pcie-2numa")
    snapshot["software"]["sglang"] = "0.5.13"  # 0.5.12 serves custom allreduce over NVLink only
    fired = _fired(snapshot, request_)
    assert ("custom-allreduce-without-p2p" in fired) is blocked


def test_an_unknown_pair_outside_the_group_is_not_the_launchs_business():
    snapshot = system_snapshot("rtx-pro-6000-8x-pcie")
    for entry in snapshot["pairs"]:
        if {entry["src"], entry["dst"]} == {6, 7}:
            entry["p2p"]["read"] = "unknown"
    snapshot["summary"]["all_pairs_p2p"] = None
    snapshot["software"]["sglang"] = "0.5.13"  # 0.5.12 serves custom allreduce over NVLink only
    # a TP2 group (SGLang's gate lets custom allreduce through on two PCIe GPUs) holding the unknown
    # pair
    inside = _fired(snapshot, {"tp_size": 2, "gpus": [6, 7]})
    assert inside.get("custom-allreduce-without-p2p") == "unknown"
    outside = _fired(snapshot, {"tp_size": 2, "gpus": [0, 1]})
    assert "custom-allreduce-without-p2p" not in outside
    assert "p2p-status-unverified" not in outside


def test_pair_summaries_follow_the_group_and_the_shared_cache_keeps_groups_apart():
    snapshot = system_snapshot("l40s-4x-pcie-2numa")
    cache: dict = {}
    for gpus, expected in (([0, 1], True), ([0, 2], False), ([0, 1], True), (None, False)):
        request = {"tp_size": 2 if gpus else 4, "gpus": gpus}
        context = Context(snapshot, request, cache)
        assert context.fact("all_pairs_p2p") is expected
        evaluate(RULES, snapshot, request, cache)
    context = Context(snapshot, {"gpus": [2, 3]})
    assert context.fact("p2p_pairs_ok") == 2 and context.fact("p2p_pairs_total") == 2
    assert context.fact("group.gpus") == [2, 3] and context.fact("group.size") == 2
    assert context.fact("nvlink.all_pairs") is False
    whole = Context(snapshot, {})
    assert whole.fact("group.gpus") == [0, 1, 2, 3] and whole.fact("p2p_pairs_ok") == 4


def test_a_group_of_one_has_no_pairs():
    fired = _fired(system_snapshot("rtx-4090-2x-pcie-no-p2p"), {"tp_size": 1})
    assert "custom-allreduce-without-p2p" not in fired


def test_gpus_the_snapshot_does_not_have_are_ignored():
    context = Context(system_snapshot("l40s-4x-pcie-2numa"), {"gpus": [1, 0, 9]})
    assert context.group() == (0, 1)


def test_data_parallel_replicas_are_the_scope():
    context = Context(
        system_snapshot("l40s-4x-pcie-2numa"), {"tp_size": 2, "dp_size": 2, "gpus": [3, 2, 1, 0]}
    )
    assert context.scope() == ((3, 2), (1, 0))
    assert context.fact("group.gpus") == [0, 1, 2, 3]
    assert {label for label, _ in context.pairs()} == {
        "pairs[0->1]",
        "pairs[1->0]",
        "pairs[2->3]",
        "pairs[3->2]",
    }
    assert context.fact("all_pairs_p2p") is True and context.fact("p2p_pairs_total") == 4
