"""The engine's semantics: three-valued logic, facts, versions, pair quantifiers, launch settings,
violations with defaults, disabling with reasons, site rules; and scenarios on reference machines.
"""

from __future__ import annotations

from typing import get_args

import pytest
from rules_helpers import (
    h200_8x_nvswitch,
    knock_out,
    make_snapshot,
    rtx_4090_2x_no_p2p,
    rtx_pro_6000_8x_pcie,
    rule_text,
    write_rules,
)

from topoctl.core.errors import TopoctlError
from topoctl.core.vocab import SEVERITIES
from topoctl.rules.engine import evaluate, load_rules, violations
from topoctl.rules.engine.conditions import compile_condition, nccl_list_enables
from topoctl.rules.engine.facts import Context
from topoctl.rules.engine.model import Severity

RULES = load_rules()


def answer(condition, snapshot=None, request=None):
    context = Context(snapshot or {}, request or {})
    return compile_condition(condition)(context), context.unknown_seen


def finding(report, rule_id):
    return next((item for item in report.findings if item.rule_id == rule_id), None)


# ------------------------------------------------------------------------------------------ logic
KNOWN_TRUE = {"fact": "interconnect", "eq": "pcie"}
KNOWN_FALSE = {"fact": "interconnect", "eq": "nvswitch"}
UNKNOWN = {"fact": "virtualized", "eq": True}
SNAP = {"summary": {"interconnect": "pcie", "virtualized": None}}


@pytest.mark.parametrize(
    "condition, expected",
    [
        ({"all": [KNOWN_TRUE, UNKNOWN]}, None),
        ({"all": [KNOWN_FALSE, UNKNOWN]}, False),
        ({"all": [KNOWN_TRUE, KNOWN_TRUE]}, True),
        ({"any": [KNOWN_TRUE, UNKNOWN]}, True),
        ({"any": [KNOWN_FALSE, UNKNOWN]}, None),
        ({"any": [KNOWN_FALSE, KNOWN_FALSE]}, False),
        ({"not": UNKNOWN}, None),
        ({"not": KNOWN_TRUE}, False),
        ([KNOWN_TRUE, UNKNOWN], None),
    ],
)
def test_kleene_logic(condition, expected):
    assert answer(condition, SNAP)[0] is expected


def test_unknown_records_the_fact_name():
    result, unknown = answer({"all": [KNOWN_TRUE, UNKNOWN]}, SNAP)
    assert result is None and unknown == ["virtualized"]


def test_known_operator_is_never_unknown():
    assert answer({"fact": "virtualized", "known": False}, SNAP)[0] is True
    assert answer({"fact": "interconnect", "known": True}, SNAP)[0] is True


# ------------------------------------------------------------------------------------------ facts
def test_sm_facts_derive_from_compute_capability():
    snapshot = {
        "gpus": [
            {"index": 0, "compute_capability": "12.0"},
            {"index": 1, "compute_capability": "9.0"},
        ]
    }
    assert answer({"fact": "gpu.sm_majors", "all_in": [9, 12]}, snapshot)[0] is True
    assert answer({"fact": "gpu.sm_min", "eq": 90}, snapshot)[0] is True
    assert answer({"fact": "gpu.count", "eq": 2}, snapshot)[0] is True


def test_one_unreadable_gpu_makes_the_sm_list_unknown():
    snapshot = {
        "gpus": [{"index": 0, "sm": 90}, {"index": 1, "sm": None, "compute_capability": None}]
    }
    assert answer({"fact": "gpu.sm_majors", "any_in": [12]}, snapshot) == (None, ["gpu.sm_majors"])


@pytest.mark.parametrize(
    "installed, requested, spec, expected",
    [
        ("0.5.12", None, "<0.5.18", True),
        ("0.5.18", None, "<0.5.18", False),
        ("0.5.23", "0.5.12", "<0.5.18", True),  # the target version wins over the installed one
        ("0.5.12", "0.5.23", "<0.5.18", False),
        ("0.5.5.post1", None, "==0.5.5.*", True),
        ("0.5.18rc1", None, ">=0.5.18rc0", True),
        (None, None, "<0.5.18", None),
        ("not-a-version", None, "<0.5.18", None),
    ],
)
def test_sglang_version_specifiers(installed, requested, spec, expected):
    request = {"sglang_version": requested} if requested else {}
    assert (
        answer(
            {"fact": "software.sglang", "version": spec},
            {"software": {"sglang": installed}},
            request,
        )[0]
        is expected
    )


def test_local_version_labels_match():
    assert (
        answer(
            {"fact": "software.torch", "version": ">=2.8,<2.9"},
            {"software": {"torch": "2.8.0+cu129"}},
        )[0]
        is True
    )


# ------------------------------------------------------------------------------------------ pairs
def test_pair_quantifiers():
    pairs = [
        {"src": 0, "dst": 1, "p2p": {"read": "OK", "write": "OK"}},
        {"src": 1, "dst": 0, "p2p": {"read": "unknown", "write": "OK"}},
    ]
    every_ok = {"every_pair": {"fact": "pair.p2p_ok", "eq": True}}
    any_bad = {"any_pair": {"fact": "pair.p2p_ok", "eq": False}}
    result, unknown = answer(every_ok, {"pairs": pairs})
    assert result is None and unknown == ["pairs[1->0].p2p_ok"]
    assert answer(any_bad, {"pairs": pairs})[0] is None
    pairs[1]["p2p"]["read"] = "NS"
    assert answer(every_ok, {"pairs": pairs})[0] is False
    assert answer(any_bad, {"pairs": pairs})[0] is True


def test_pair_quantifiers_on_no_pairs_and_on_a_missing_pair_list():
    assert answer({"every_pair": {"fact": "pair.p2p_ok", "eq": True}}, {"pairs": []})[0] is True
    assert answer({"any_pair": {"fact": "pair.p2p_ok", "eq": False}}, {"pairs": []})[0] is False
    assert answer({"any_pair": {"fact": "pair.p2p_ok", "eq": False}}, {})[0] is None


def test_nvml_u_status_is_unknown_not_a_value():
    assert (
        answer(
            {"any_pair": {"fact": "pair.p2p.read", "eq": "U"}},
            {"pairs": [{"src": 0, "dst": 1, "p2p": {"read": "U"}}]},
        )[0]
        is None
    )


# ------------------------------------------------------------------------------------------ launch
# and NCCL lists
@pytest.mark.parametrize(
    "value, token, expected",
    [
        ("Tree", "tree", True),
        ("Ring,Tree", "Tree", True),
        ("Ring", "Tree", False),
        ("^Tree", "Tree", False),
        ("^LL128", "LL", True),
        ("allreduce:tree;broadcast:ring", "Tree", True),
        ("NVLSTree", "Tree", False),
    ],
)
def test_nccl_list_syntax(value, token, expected):
    assert nccl_list_enables(value, token) is expected


def test_launch_matchers_fire_only_when_the_launch_names_the_setting():
    condition = {"fact": "launch.custom_all_reduce", "eq": True}
    assert (
        answer(condition, {}, {"launch": {}})[0] is False
    )  # default is true, but the launch did not say
    assert answer(condition, {}, {"launch": {"custom_all_reduce": True}})[0] is True
    assert (
        answer(
            {"fact": "launch.env:NCCL_ALGO", "set": True}, {}, {"launch": {"env:NCCL_ALGO": "Ring"}}
        )[0]
        is True
    )


# ------------------------------------------------------------------------------------------
# evaluate / violations
def test_unknown_block_is_reported_as_cannot_verify_and_blocks():
    snapshot = rtx_pro_6000_8x_pcie(sglang=None)
    report = evaluate(RULES, snapshot, {"tp_size": 8})
    symm = finding(report, "torch-symm-mem-sm12x-keyerror")
    assert symm is not None and symm.status == "unknown" and symm.status_text == "cannot verify"
    assert symm.unknown_facts == ["software.sglang"]
    assert any(item.finding is symm for item in violations(report, {"torch_symm_mem": True}))


def test_undecided_non_block_rules_are_listed_not_reported():
    snapshot = knock_out(make_snapshot(count=2), ["summary.virtualized", "host.virtualized"])
    report = evaluate(RULES, snapshot, {})
    assert finding(report, "vm-p2p-iommu-acs") is None
    assert ("vm-p2p-iommu-acs", ["virtualized"]) in report.undecided


def test_require_is_violated_by_a_launch_that_keeps_the_default():
    report = evaluate(RULES, rtx_4090_2x_no_p2p(), {"tp_size": 2})
    rule_violations = [
        item
        for item in violations(report, {})
        if item.finding.rule_id == "custom-allreduce-without-p2p"
    ]
    assert [(item.setting, item.value, item.kind, item.explicit) for item in rule_violations] == [
        ("custom_all_reduce", True, "require", False)
    ]
    assert not [
        item
        for item in violations(report, {"custom_all_reduce": False})
        if item.finding.rule_id == "custom-allreduce-without-p2p"
    ]


def test_forbid_without_values_means_leave_it_unset():
    launch = {"speculative_algorithm": "EAGLE3", "speculative_eagle_topk": 1}
    report = evaluate(RULES, rtx_pro_6000_8x_pcie(), {"tp_size": 8, "launch": launch})

    def broken(settings):
        return [
            (item.setting, item.value)
            for item in violations(report, settings)
            if item.finding.rule_id == "speculative-params-all-or-none"
        ]

    assert broken({"speculative_algorithm": "EAGLE3"}) == []
    assert broken(launch) == [("speculative_eagle_topk", 1)]


KIMI = {"name": "kimi-k2.5", "model_type": "kimi_k25", "moe": True}


def test_fewer_nccl_channels_block_only_the_measured_launch_and_only_a_lowering_cap():
    """The field report saw a channel cap fail for Kimi-K2.5 TP8 on 8x SM120 over PCIe; NCCL clamps
    a cap to its maximum (32 up to 2.24, 64 from 2.25), raises NCCL_MAX_NCHANNELS below 1 to 1,
    ignores NCCL_MAX_CTAS below 1."""

    def ids(model, tp, env):
        report = evaluate(
            RULES, rtx_pro_6000_8x_pcie(), {"model": model, "tp_size": tp, "launch": env}
        )
        return {
            item.finding.rule_id
            for item in violations(report, env)
            if "CHANNELS" in item.setting or "CTAS" in item.setting
        }

    block, warn = "nccl-fewer-channels-oom-sm120-pcie", "nccl-fewer-channels-sm120-pcie-unmeasured"
    for value in ("1", "4", "8", "16", "31", "0", "-1"):
        assert ids(KIMI, 8, {"env:NCCL_MAX_NCHANNELS": value}) == {block}, value
    for value in ("32", "64", "128", "abc", ""):
        assert ids(KIMI, 8, {"env:NCCL_MAX_NCHANNELS": value}) == set(), value
    assert ids(KIMI, 8, {"env:NCCL_MAX_CTAS": "4"}) == {block}
    assert ids(KIMI, 8, {"env:NCCL_MAX_CTAS": "0"}) == set()
    assert ids(KIMI, 8, {}) == set()
    qwen = {"name": "qwen3-30b-a3b", "model_type": "qwen3_moe", "moe": True}
    assert ids(qwen, 8, {"env:NCCL_MAX_NCHANNELS": "4"}) == {warn}
    assert ids(None, 8, {"env:NCCL_MAX_NCHANNELS": "4"}) == {warn}
    assert ids(KIMI, 4, {"env:NCCL_MAX_NCHANNELS": "4"}) == {warn}
    h200 = evaluate(
        RULES,
        h200_8x_nvswitch(),
        {"model": KIMI, "tp_size": 8, "launch": {"env:NCCL_MAX_NCHANNELS": "4"}},
    )
    assert not [
        item
        for item in violations(h200, {"env:NCCL_MAX_NCHANNELS": "4"})
        if "fewer-channels" in item.finding.rule_id
    ]


def test_forbid_by_nccl_token():
    report = evaluate(RULES, rtx_pro_6000_8x_pcie(), {"tp_size": 8, "model": KIMI})

    def tree(launch):
        return [
            item
            for item in violations(report, launch)
            if item.finding.rule_id == "nccl-tree-cuda-graph-sm120-pcie"
        ]

    assert (
        tree({"env:NCCL_ALGO": "Ring,Tree"})
        and not tree({"env:NCCL_ALGO": "Ring"})
        and not tree({})
    )


def test_a_rule_can_say_what_sglang_turns_on_by_itself():
    gpt_oss = {"name": "gpt-oss-120b", "architecture": "GptOssForCausalLM"}
    report = evaluate(RULES, rtx_pro_6000_8x_pcie(sglang="0.5.5"), {"model": gpt_oss, "tp_size": 8})
    by_rule = {(item.finding.rule_id, item.setting) for item in violations(report, {})}
    assert (
        "flashinfer-allreduce-fusion-auto-on-sglang-0.5.5-sm12x",
        "flashinfer_allreduce_fusion",
    ) in by_rule
    assert ("flashinfer-allreduce-fusion-sm12x", "flashinfer_allreduce_fusion") in by_rule
    assert not [
        item
        for item in violations(report, {"flashinfer_allreduce_fusion": False})
        if item.setting == "flashinfer_allreduce_fusion"
    ]


# ------------------------------------------------------------------------------------------
# scenarios
def blocks(snapshot, request):
    return {
        item.rule_id
        for item in evaluate(RULES, snapshot, request).findings
        if item.severity == "block"
    }


def test_rtx_pro_6000_with_sglang_0_5_12():
    found = blocks(rtx_pro_6000_8x_pcie(), {"sglang_version": "0.5.12", "tp_size": 8})
    assert {"torch-symm-mem-sm12x-keyerror", "ep-flashinfer-a2a-sm120"} == found
    # the NCCL Tree and fewer-channels blocks are the field report's launch: Kimi-K2.5 at TP8
    assert {"nccl-tree-cuda-graph-sm120-pcie", "nccl-fewer-channels-oom-sm120-pcie"} <= blocks(
        rtx_pro_6000_8x_pcie(), {"sglang_version": "0.5.12", "tp_size": 8, "model": KIMI}
    )
    # 0.5.12 runs the plain allreduce on SM12x when the fusion is asked for: a warning, not a block.
    report = evaluate(RULES, rtx_pro_6000_8x_pcie(), {"sglang_version": "0.5.12", "tp_size": 8})
    assert finding(report, "flashinfer-allreduce-fusion-sm12x-ignored").status == "fired"


def test_rtx_pro_6000_with_sglang_0_5_5_and_0_5_23_blocks_the_fusion():
    for version in ("0.5.5", "0.5.23"):
        assert "flashinfer-allreduce-fusion-sm12x" in blocks(
            rtx_pro_6000_8x_pcie(), {"sglang_version": version, "tp_size": 8}
        )


def test_rtx_pro_6000_with_sglang_0_5_23_skips_symm_mem_instead():
    report = evaluate(RULES, rtx_pro_6000_8x_pcie(), {"sglang_version": "0.5.23", "tp_size": 8})
    ids = {item.rule_id for item in report.findings}
    assert "torch-symm-mem-sm12x-keyerror" not in ids and "torch-symm-mem-sm12x-skipped" in ids
    assert "pcie-ipc-allreduce-sm120" in ids


def test_h200_nvswitch_has_no_blocks_and_prefers_custom_allreduce():
    report = evaluate(RULES, h200_8x_nvswitch(), {"sglang_version": "0.5.12", "tp_size": 8})
    assert not report.blocking()
    assert finding(report, "custom-allreduce-nvlink-fast").status == "fired"


def test_eagle3_warning_only_when_asked_for():
    request = {"tp_size": 8, "model": KIMI}
    assert (
        finding(
            evaluate(RULES, rtx_pro_6000_8x_pcie(), request), "eagle3-slower-pcie-allreduce-bound"
        )
        is None
    )
    assert (
        finding(
            evaluate(RULES, rtx_pro_6000_8x_pcie(), dict(request, speculative="eagle3")),
            "eagle3-slower-pcie-allreduce-bound",
        ).severity
        == "warn"
    )


def test_eagle3_measurement_applies_to_the_measured_model_and_size_only():
    """Kimi-K2.5 at TP8 was measured; other MoE models and other sizes are the launch model's to
    decide."""
    others = [
        {"name": "deepseek-v3", "model_type": "deepseek_v3", "moe": True},
        {"name": "qwen3-235b-a22b", "model_type": "qwen3_moe", "moe": True},
        None,
    ]
    for model in others:
        report = evaluate(
            RULES, rtx_pro_6000_8x_pcie(), {"tp_size": 8, "model": model, "speculative": "eagle3"}
        )
        assert finding(report, "eagle3-slower-pcie-allreduce-bound") is None, model
    for tp in (2, 4):
        report = evaluate(
            RULES, rtx_pro_6000_8x_pcie(), {"tp_size": tp, "model": KIMI, "speculative": "eagle3"}
        )
        assert finding(report, "eagle3-slower-pcie-allreduce-bound") is None, tp


FIXTURE_BLOCKS = {
    # system name -> (request, blocks that must be there, blocks that must not)
    "rtx-pro-6000-8x-pcie": (
        {"sglang_version": "0.5.12"},
        {"torch-symm-mem-sm12x-keyerror", "ep-flashinfer-a2a-sm120"},
        {"custom-allreduce-without-p2p", "flashinfer-allreduce-fusion-sm12x"},
    ),
    "h200-4x-nvswitch-vm": (
        {"sglang_version": "0.5.12"},
        set(),
        {
            "torch-symm-mem-sm12x-keyerror",
            "nccl-nvls-needs-nvswitch-sm90",
            "custom-allreduce-without-p2p",
        },
    ),
    "h200-2x-nvswitch-vm": (
        {"sglang_version": "0.5.12"},
        set(),
        {"torch-symm-mem-sm12x-keyerror", "flashinfer-allreduce-fusion-sm12x"},
    ),
    "h100-8x-nvswitch": (
        {},
        set(),
        {"torch-symm-mem-sm12x-keyerror", "nccl-nvls-needs-nvswitch-sm90"},
    ),
    "rtx-4090-2x-pcie-no-p2p": (
        {},
        {"custom-allreduce-without-p2p"},
        {"torch-symm-mem-sm12x-keyerror"},
    ),
    # NCCL leaves a forced NVLS off without an NVSwitch: a warning, never a block
    "l40s-4x-pcie-2numa": (
        {},
        set(),
        {"flashinfer-allreduce-fusion-sm12x", "nccl-nvls-needs-nvswitch-sm90"},
    ),
}


def _installed_systems():
    from topoctl.snapshot.catalogue import list_systems

    return [name for name in list_systems() if name in FIXTURE_BLOCKS]


@pytest.mark.parametrize("system", _installed_systems())
def test_reference_systems(system):
    from topoctl.snapshot.catalogue import system_snapshot

    request, must, must_not = FIXTURE_BLOCKS[system]
    found = blocks(system_snapshot(system), request)
    assert must <= found, (system, found)
    assert not (must_not & found), (system, found)


def test_reference_systems_are_installed():
    # The fixtures come from the probe; if one disappears the parametrized test above would silently
    # shrink.
    assert len(_installed_systems()) >= 2


# ------------------------------------------------------------------------------------------
# disabling and site rules
def test_disable_by_id_with_reason_shows_in_report():
    ruleset = load_rules(
        disabled={"nccl-ll128-without-nvlink": "LL128 validated on our PCIe fabric"}
    )
    report = evaluate(ruleset, rtx_pro_6000_8x_pcie(), {"tp_size": 8})
    assert finding(report, "nccl-ll128-without-nvlink") is None
    assert report.disabled == [("nccl-ll128-without-nvlink", "LL128 validated on our PCIe fabric")]
    assert report.to_dict()["disabled"] == [
        {"rule_id": "nccl-ll128-without-nvlink", "reason": "LL128 validated on our PCIe fabric"}
    ]


@pytest.mark.parametrize(
    "disabled, needle",
    [
        ({"nccl-ll128-without-nvlink": " "}, "reason is required"),
        ({"no-such-rule": "because"}, "no rule has this id"),
    ],
)
def test_disable_needs_a_reason_and_an_existing_id(disabled, needle):
    with pytest.raises(TopoctlError, match=needle):
        load_rules(disabled=disabled)


def test_site_rules_add_and_disable(tmp_path):
    write_rules(tmp_path, rule_text())
    write_rules(
        tmp_path,
        "disable:\n  - id: nccl-ll128-without-nvlink\n    reason: our fabric\n",
        name="off.yaml",
    )
    ruleset = load_rules(extra_dirs=[str(tmp_path)])
    site = ruleset.get("site-sm120-symm-mem")
    assert not site.builtin and site.source_file.endswith("site.yaml")
    report = evaluate(ruleset, rtx_pro_6000_8x_pcie(), {"tp_size": 8})
    assert finding(report, "site-sm120-symm-mem").status == "fired"
    assert report.disabled == [("nccl-ll128-without-nvlink", "our fabric")]


def test_site_rules_without_builtins(tmp_path):
    write_rules(tmp_path, rule_text())
    assert [rule.id for rule in load_rules(extra_dirs=[str(tmp_path)], builtin=False).rules] == [
        "site-sm120-symm-mem"
    ]


def test_severity_literal_is_the_vocabulary():
    """model.Severity is what mypy checks a rule's severity against; vocab.SEVERITIES is what the
    schema and the ordering use: one word added to one and not the other fails here."""
    assert get_args(Severity) == SEVERITIES
