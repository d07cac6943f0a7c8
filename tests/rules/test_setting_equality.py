"""One comparison of launch setting values (rules.settings.equal) behind both violations() and
recommend's ranking, so what a rule says about a default and what recommend counts as that default
cannot disagree."""

from __future__ import annotations

import pytest

from topoctl.autoconf.search import _agrees
from topoctl.rules.engine import Finding, Report, violations
from topoctl.rules.sglang.settings import equal


def _report(effect) -> Report:
    effect = {"forbid": [], "require": {}, "prefer": {}, "defaults": {}, **effect}
    finding = Finding("site-rule", "t", "block", "fired", "m", "r", effect, [], [], "site.yaml")
    return Report(findings=[finding], disabled=[])


@pytest.mark.parametrize(
    "setting,left,right,expected",
    [
        ("custom_all_reduce", None, True, True),  # unset custom allreduce is on
        (
            "custom_all_reduce",
            None,
            False,
            False,
        ),  # ... so it is not "off" (search used to say it was)
        ("torch_symm_mem", "none", False, True),  # `none` in an evidence config means unset
        ("moe_a2a_backend", None, "NONE", True),  # SGLang's default is the value "none"
        ("cuda_graph_max_bs", "128", 128, True),  # an int setting written as digits
        ("cuda_graph_max_bs", None, 512, False),  # decided by SGLang at start-up: unset is not 512
        ("env:NCCL_P2P_DISABLE", True, "1", True),  # env values compare as strings
        ("env:NCCL_ALGO", "ring", "Ring", True),
        ("enable_p2p_check", True, 1, False),  # true never equals 1
    ],
)
def test_equal(setting, left, right, expected):
    assert equal(setting, left, right) is expected
    assert equal(setting, right, left) is expected


def test_ranking_and_violations_agree_that_unset_custom_allreduce_is_on():
    # A number measured with custom allreduce left unset describes launches that run it: not NCCL
    # launches.
    assert _agrees("custom_all_reduce", None, {})
    assert not _agrees("custom_all_reduce", None, {"custom_all_reduce": False})
    # violations() says the same of a launch that leaves it unset: it runs custom allreduce.
    report = _report({"require": {"custom_all_reduce": False}})
    assert [v.setting for v in violations(report, {})] == ["custom_all_reduce"]
    assert violations(report, {"custom_all_reduce": False}) == []


def test_ranking_and_violations_use_a_rule_s_scoped_default():
    report = _report(
        {
            "defaults": {"flashinfer_allreduce_fusion": True},
            "require": {"flashinfer_allreduce_fusion": False},
        }
    )
    scoped = {"flashinfer_allreduce_fusion": True}
    assert [v.setting for v in violations(report, {})] == ["flashinfer_allreduce_fusion"]
    assert _agrees("flashinfer_allreduce_fusion", True, {}, scoped)
    assert not _agrees("flashinfer_allreduce_fusion", False, {}, scoped)


def test_int_setting_written_as_digits_meets_a_requirement():
    report = _report({"require": {"cuda_graph_max_bs": 128}})
    assert (
        violations(report, {"cuda_graph_max_bs": "128"}) == []
    )  # violations() used to call "128" a violation
    assert [v.setting for v in violations(report, {"cuda_graph_max_bs": 256})] == [
        "cuda_graph_max_bs"
    ]
