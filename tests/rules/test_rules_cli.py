"""`topoctl rules list | explain | test | schema | facts`, through main() and through click's
CliRunner."""

from __future__ import annotations

import json

from click.testing import CliRunner
from rules_helpers import rule_text, write_rules

from topoctl.cli.app import cli, main
from topoctl.rules.engine import load_rules
from topoctl.rules.engine.loader import rule_schema


def test_rules_test_passes_on_the_shipped_knowledge(capsys):
    assert main(["rules", "test"]) == 0
    cases = sum(len(rule.tests) for rule in load_rules().rules)
    assert f"{cases} passed, 0 failed" in capsys.readouterr().out


def test_rules_test_fails_on_a_wrong_site_case(tmp_path, capsys):
    # The case claims the rule stays silent on SM120 with 0.5.12 although the condition holds there.
    text = rule_text().replace(
        "expect: silent\n        snapshot: {gpus: [{index: 0, sm: 90}]",
        "expect: silent\n        snapshot: {gpus: [{index: 0, sm: 120}]",
    )
    write_rules(tmp_path, text)
    assert main(["rules", "test", "--rules", str(tmp_path), "--no-builtin"]) == 1
    out = capsys.readouterr().out
    assert "1 passed, 1 failed" in out
    assert "FAIL  site-sm120-symm-mem :: silent on SM90: expected silent, got fire" in out


def test_rules_test_with_cli_runner(tmp_path):
    write_rules(tmp_path, rule_text())
    result = CliRunner().invoke(
        cli, ["rules", "test", "--rules", str(tmp_path), "--no-builtin", "-v"]
    )
    assert result.exit_code == 0, result.output
    assert "2 passed, 0 failed (1 rules)" in result.output
    assert "ok    site-sm120-symm-mem :: fires on SM120 (fire)" in result.output


def test_list_json_shows_disabled_reason():
    result = CliRunner().invoke(
        cli,
        [
            "rules",
            "list",
            "--format",
            "json",
            "--disable",
            "nccl-ll128-without-nvlink=validated on our fabric",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    rows = {row["id"]: row for row in data["rules"]}
    assert rows["nccl-ll128-without-nvlink"]["disabled_reason"] == "validated on our fabric"
    assert rows["torch-symm-mem-sm12x-keyerror"]["severity"] == "block"
    assert data["disabled"] == [
        {"rule_id": "nccl-ll128-without-nvlink", "reason": "validated on our fabric"}
    ]


def test_list_table(capsys):
    assert main(["rules", "list", "--severity", "block"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["ID", "SEVERITY", "ORIGIN", "TITLE"]
    assert "torch-symm-mem-sm12x-keyerror" in out and "WARN" not in out


def test_disable_without_reason_is_usage_error(capsys):
    assert main(["rules", "list", "--disable", "nccl-ll128-without-nvlink"]) == 2
    assert "write ID=REASON" in capsys.readouterr().err


def test_explain_shows_what_why_evidence_scope_effect(capsys):
    assert main(["rules", "explain", "custom-allreduce-forced-pcie"]) == 0
    out = capsys.readouterr().out
    for needle in (
        "What:",
        "Scope:",
        "Effect:",
        "forbid  custom_all_reduce",
        "Evidence:",
        "field-report  [measured]",
        "38 tok/s",
        "vs 54.1",
        "upstream:sglang 0.5.5-0.5.23",
    ):
        assert needle in out, needle


def test_explain_unknown_id_suggests(capsys):
    assert main(["rules", "explain", "torch-symm-mem-sm12x"]) == 2
    err = capsys.readouterr().err
    assert "did you mean" in err and "torch-symm-mem-sm12x-keyerror" in err


def test_explain_json():
    result = CliRunner().invoke(
        cli, ["rules", "explain", "pcie-ipc-allreduce-sm120", "--format", "json"]
    )
    data = json.loads(result.output)
    assert data["effect"]["prefer"] == {"pcie_ipc_allreduce": True}
    assert data["evidence"][0]["level"] == "upstream-reported"


def test_schema_prints_the_published_file():
    result = CliRunner().invoke(cli, ["rules", "schema"])
    assert result.exit_code == 0
    assert json.loads(result.output) == rule_schema()


def test_facts_lists_the_namespace(capsys):
    assert main(["rules", "facts"]) == 0
    out = capsys.readouterr().out
    for name in (
        "gpu.sm_majors",
        "software.sglang",
        "pair.p2p.read",
        "launch.custom_all_reduce",
        "launch.env:NAME",
    ):
        assert name in out
