"""recommend does each piece of work once: snapshot facts across candidate evaluations, each path's
latency, the document behind every format and --explain; and without a model it ranks by per-call
latency, naming no model."""

from __future__ import annotations

import json

from topoctl.rules.engine import evaluate, load_rules
from topoctl.rules.engine import facts as facts_module
from topoctl.snapshot.catalogue import system_snapshot

EAGLE = ["--model", "kimi-k2.5", "--speculative", "eagle3", "--draft-model", "/models/eagle3"]


def _requests():
    for path in (
        {"custom_all_reduce": True},
        {"custom_all_reduce": False},
        {"torch_symm_mem": True},
    ):
        for spec in (None, "eagle3"):
            launch = dict(path, tp_size=8)
            if spec:
                launch["speculative_algorithm"] = spec
            yield {
                "model": {"name": "kimi-k2.5", "moe": True, "layers": 61},
                "speculative": spec,
                "tp_size": 8,
                "ep_size": 1,
                "sglang_version": "0.5.12",
                "launch": launch,
            }


def test_facts_cache_gives_the_same_reports_and_builds_pair_facts_once(monkeypatch):
    ruleset = load_rules()
    snapshot = system_snapshot("rtx-pro-6000-8x-pcie")
    plain = [evaluate(ruleset, snapshot, request).to_dict() for request in _requests()]
    built = []
    original = facts_module._pair_facts
    monkeypatch.setattr(
        facts_module, "_pair_facts", lambda entry, *rest: built.append(1) or original(entry, *rest)
    )
    cache: dict = {}
    shared = [
        evaluate(ruleset, snapshot, request, facts_cache=cache).to_dict() for request in _requests()
    ]
    assert shared == plain
    assert len(built) == len(snapshot["pairs"])  # once per pair, not once per pair per evaluation
    other = system_snapshot("rtx-4090-2x-pcie-no-p2p")  # another snapshot: the cache starts afresh
    assert (
        evaluate(ruleset, other, {"tp_size": 2}, facts_cache=cache).to_dict()
        == evaluate(ruleset, other, {"tp_size": 2}).to_dict()
    )


def test_a_quantifier_over_pair_facts_is_judged_once_per_group_layout(large_snapshot):
    """Launches on the same TP groups share each pair-only quantifier's verdict; other layouts get
    their own; every report is what an evaluation without the shared cache gives."""
    from topoctl.rules.engine import conditions

    ruleset = load_rules()
    snapshot = large_snapshot(16)
    requests = [
        {
            "tp_size": tp,
            "dp_size": 16 // tp,
            "sglang_version": "0.5.12",
            "launch": dict(path, tp_size=tp, dp_size=16 // tp),
        }
        for tp in (2, 4, 8)
        for path in ({"custom_all_reduce": True}, {"custom_all_reduce": False})
    ]
    plain = [evaluate(ruleset, snapshot, request).to_dict() for request in requests]
    cache: dict = {}
    shared = [
        evaluate(ruleset, snapshot, request, facts_cache=cache).to_dict() for request in requests
    ]
    assert shared == plain
    judged = cache["quantifiers\0"]
    layouts = {scope for _, scope in judged}
    assert (
        len(layouts) == 3
    )  # TP 2, 4 and 8 over all 16 GPUs: one verdict per quantifier and layout
    assert conditions._pair_facts_only({"all": [{"fact": "pair.p2p_ok", "eq": False}]})
    assert not conditions._pair_facts_only(
        {"all": [{"fact": "pair.p2p_ok", "eq": False}, {"fact": "launch.tp_size", "gt": 1}]}
    )


def test_path_latency_and_document_are_built_once(monkeypatch, cli):
    from topoctl.autoconf import cost, search
    from topoctl.autoconf import launch_text as render

    calls = {"latency": 0, "document": 0}
    known, document = cost._known_latency, render._document
    monkeypatch.setattr(
        cost,
        "_known_latency",
        lambda *a: calls.__setitem__("latency", calls["latency"] + 1) or known(*a),
    )
    monkeypatch.setattr(
        render,
        "_document",
        lambda r: calls.__setitem__("document", calls["document"] + 1) or document(r),
    )
    code, _, err = cli(["recommend", "--system", "rtx-pro-6000-8x-pcie", *EAGLE, "--explain"])
    assert code == 0, err
    paths = len(search.table.table()["allreduce_paths"])
    assert calls == {"latency": paths, "document": 1}


def test_without_a_model_paths_rank_by_per_call_latency(cli):
    code, out, err = cli(
        ["recommend", "--system", "h200-4x-nvswitch-vm", "--format", "json", "--explain"]
    )
    assert code == 0, err
    doc = json.loads(out)
    assert "no model given: ranked by per-call allreduce latency" in doc["notes"]
    assert "note: no model given: ranked by per-call allreduce latency" in err
    assert "ms per call (no model given)" in err and "per forward]" not in err
    chosen = doc["chosen"]
    # one allreduce's latency (tens of microseconds on NVSwitch), not some model's 122 of them
    assert (
        chosen["allreduce_path"] == "custom"
        and 0 < chosen["modelled_allreduce_ms_per_forward"] < 0.1
    )
