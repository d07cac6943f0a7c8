"""What SGLang sets by itself (effect.implies): every rule judges the launch as SGLang will run it."""

from __future__ import annotations

import pytest
from rules_helpers import h200_8x_nvswitch, rtx_pro_6000_8x_pcie, write_rules

from topoctl.core.errors import TopoctlError
from topoctl.rules.engine import evaluate, load_rules, violations

RULES = load_rules()


KIMI = {"name": "kimi-k2.5", "model_type": "kimi_k25", "moe": True}


def request(launch, tp=8, version="0.5.12", model=None):
    return {"tp_size": tp, "sglang_version": version, "launch": launch, "model": model}


def broken(snapshot, launch, **kwargs):
    report = evaluate(RULES, snapshot, request(launch, **kwargs))
    return report, {(item.finding.rule_id, item.setting) for item in violations(report, launch)}


def test_deterministic_inference_sets_nccl_tree_and_the_tree_block_fires_on_sm120_pcie():
    report, found = broken(rtx_pro_6000_8x_pcie(), {"deterministic_inference": True}, model=KIMI)
    assert report.implied["env:NCCL_ALGO"] == (
        "allreduce:tree",
        "sglang-deterministic-inference-nccl-tree",
    )
    assert ("nccl-tree-cuda-graph-sm120-pcie", "env:NCCL_ALGO") in found


def test_deterministic_inference_of_an_unmeasured_launch_is_a_tree_warning():
    for model, tp in ((None, 8), (KIMI, 4)):
        _, found = broken(
            rtx_pro_6000_8x_pcie(), {"deterministic_inference": True}, tp=tp, model=model
        )
        assert ("nccl-tree-cuda-graph-sm120-pcie-unmeasured", "env:NCCL_ALGO") in found
        assert not any(rule == "nccl-tree-cuda-graph-sm120-pcie" for rule, _ in found)


def test_sglang_overrides_what_the_launch_says():
    # SGLang assigns os.environ["NCCL_ALGO"]: a launch's own NCCL_ALGO=Ring does not survive.
    _, found = broken(
        rtx_pro_6000_8x_pcie(),
        {"deterministic_inference": True, "env:NCCL_ALGO": "Ring"},
        model=KIMI,
    )
    assert ("nccl-tree-cuda-graph-sm120-pcie", "env:NCCL_ALGO") in found


def test_without_the_option_nothing_is_implied():
    report, found = broken(rtx_pro_6000_8x_pcie(), {})
    assert report.implied == {}
    assert "implied" not in report.to_dict()
    assert not any(rule == "nccl-tree-cuda-graph-sm120-pcie" for rule, _ in found)


def test_one_gpu_deterministic_sets_no_nccl_variable():
    # SGLang only clears the FlashInfer fusion at TP 1 (from 0.5.12, whatever the TP); no NCCL
    # variable, no allreduce
    report, _ = broken(rtx_pro_6000_8x_pcie(), {"deterministic_inference": True}, tp=1)
    assert {setting: value for setting, (value, _) in report.implied.items()} == {
        "flashinfer_allreduce_fusion": False
    }


def test_channel_pinning_from_0_5_18_only():
    assert (
        "env:NCCL_MAX_NCHANNELS"
        not in evaluate(
            RULES,
            rtx_pro_6000_8x_pcie(),
            request({"deterministic_inference": True}, version="0.5.17"),
        ).implied
    )
    report = evaluate(
        RULES, rtx_pro_6000_8x_pcie(), request({"deterministic_inference": True}, version="0.5.18")
    )
    assert report.implied["env:NCCL_MAX_NCHANNELS"][0] == "8"
    assert report.implied["torch_symm_mem"][0] is False


def test_implied_custom_allreduce_off_satisfies_the_p2p_requirement():
    from rules_helpers import rtx_4090_2x_no_p2p

    # 0.5.13: custom allreduce runs over PCIe again (0.5.12 serves only its NVLink-only V2 kernel)
    _, found = broken(rtx_4090_2x_no_p2p(), {}, tp=2, version="0.5.13")
    assert ("custom-allreduce-without-p2p", "custom_all_reduce") in found
    _, found = broken(
        rtx_4090_2x_no_p2p(), {"deterministic_inference": True}, tp=2, version="0.5.13"
    )
    assert ("custom-allreduce-without-p2p", "custom_all_reduce") not in found


def test_symm_mem_forces_nvls_which_pcie_ignores_and_nvswitch_uses():
    report, found = broken(rtx_pro_6000_8x_pcie(), {"nccl_symm_mem": True})
    assert ("nccl-nvls-needs-nvswitch-sm90", "env:NCCL_NVLS_ENABLE") in found
    # NCCL finds no NVLS channels without an NVSwitch and turns NVLS off: a warning, not a block
    assert {
        item.finding.severity
        for item in violations(report, {"nccl_symm_mem": True})
        if item.finding.rule_id == "nccl-nvls-needs-nvswitch-sm90"
    } == {"warn"}
    _, found = broken(h200_8x_nvswitch(), {"nccl_symm_mem": True})
    assert not any(rule == "nccl-nvls-needs-nvswitch-sm90" for rule, _ in found)


def test_violation_detail_says_sglang_set_it():
    report = evaluate(RULES, rtx_pro_6000_8x_pcie(), request({"deterministic_inference": True}))
    details = [
        item.detail
        for item in violations(report, {"deterministic_inference": True})
        if item.setting == "env:NCCL_ALGO"
    ]
    assert details and all("by itself" in detail for detail in details)


def test_implies_names_known_settings(tmp_path):
    text = """schema_version: 1
rules:
  - id: site-implies-bad
    title: t
    severity: info
    when: {fact: gpu.count, ge: 1}
    effect: {implies: {no_such_setting: 1}}
    message: m
    remediation: r
    evidence: [{source: field-report, level: measured, summary: s, scope: s}]
    tests:
      - {name: a, expect: fire, snapshot: {summary: {gpu_count: 2}}}
      - {name: b, expect: silent, snapshot: {summary: {gpu_count: 0}}}
"""
    folder = write_rules(tmp_path, text)
    with pytest.raises(TopoctlError, match="implies"):
        load_rules(extra_dirs=[str(folder)])
