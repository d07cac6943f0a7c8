"""Every built-in rule's own cases, one pytest case each, plus checks on the shipped files
themselves."""

from __future__ import annotations

import json

import pytest
import yaml

from topoctl.rules.engine import load_rules
from topoctl.rules.engine.loader import builtin_rule_files, rule_schema, validate_against_schema
from topoctl.rules.engine.selftest import run_case

RULESET = load_rules()
CASES = [(rule, case) for rule in RULESET.rules for case in rule.tests]


@pytest.mark.parametrize(
    "rule, case", CASES, ids=[f"{rule.id}::{case.name}" for rule, case in CASES]
)
def test_rule_case(rule, case):
    result = run_case(rule, case)
    assert result.passed, result.describe()


@pytest.mark.parametrize("path", builtin_rule_files(), ids=lambda path: path.rsplit("/", 1)[-1])
def test_builtin_file_matches_published_schema(path):
    # Built-ins are not schema-validated at start-up (speed); this is where they are.
    with open(path, encoding="utf-8") as handle:
        validate_against_schema(path, yaml.safe_load(handle))


def test_schema_file_is_a_valid_json_schema():
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(rule_schema())


@pytest.mark.parametrize("rule", RULESET.rules, ids=lambda rule: rule.id)
def test_every_rule_names_its_source_and_scope(rule):
    for item in rule.evidence:
        assert item["source"].startswith(("field-report", "upstream:", "measured:")), item
        assert item["scope"], item
    assert rule.scope, f"{rule.id} has no scope text"


def test_knowledge_covers_the_field_report():
    """Each fact of the field report is carried by a rule (ids are the stable interface)."""
    expected = {
        "flashinfer-allreduce-fusion-sm12x",
        "torch-symm-mem-sm12x-keyerror",
        "torch-symm-mem-sm12x-skipped",
        "custom-allreduce-forced-pcie",
        "custom-allreduce-without-p2p",
        "nccl-tree-cuda-graph-sm120-pcie",
        "nccl-fewer-channels-oom-sm120-pcie",
        "ep-flashinfer-a2a-sm120",
        "cuda-graph-max-bs-128-sm120-kimi",
        "eagle3-slower-pcie-allreduce-bound",
        "pcie-ipc-allreduce-sm120",
        "nccl-ll128-without-nvlink",
        "nccl-p2p-level-through-host-bridge",
        "vm-p2p-iommu-acs",
        "nccl-nvls-needs-nvswitch-sm90",
        "allreduce-coalescing-evidence",
        "p2p-status-unverified",
        "custom-allreduce-nvlink-fast",
    }
    assert expected <= {rule.id for rule in RULESET.rules}


def test_measured_numbers_of_the_field_report_are_in_the_evidence():
    text = json.dumps([rule.evidence for rule in RULESET.rules])
    for number in ("38", "54.1", "89.5", "24.4", "205"):
        assert number in text, number


def test_a_case_asserts_the_effect_and_fails_when_it_is_wrong(tmp_path):
    """`violates:` holds a rule's effect to the case's launch: a wrong assertion is a failing case."""
    from rules_helpers import rule_text, write_rules

    from topoctl.rules.engine import load_rules
    from topoctl.rules.engine.selftest import run_all

    case = (
        "      - name: the launch that it blocks\n        expect: fire\n"
        '        snapshot: {gpus: [{index: 0, sm: 120}], software: {sglang: "0.5.12"}}\n'
        "        request: {launch: {torch_symm_mem: true}}\n        violates: [%s]\n"
    )
    for asserted, passes in (("torch_symm_mem", True), ("", False), ("custom_all_reduce", False)):
        write_rules(tmp_path / asserted, rule_text().rstrip("\n") + "\n" + case % asserted)
        results = [
            r
            for r in run_all(load_rules(extra_dirs=[str(tmp_path / asserted)], builtin=False).rules)
            if r.case.violates is not None
        ]
        assert len(results) == 1 and results[0].passed is passes, results[0].describe()


def test_conflicting_defaults_are_reported(tmp_path, cli):
    """Two rules that say SGLang does different things by itself on the same machine: `rules test`
    says so."""
    from rules_helpers import rule_text, write_rules

    def with_default(rule_id, value):
        text = rule_text(rule_id=rule_id, severity="info")
        return text.replace(
            "    effect:\n      forbid:\n        - {setting: torch_symm_mem, values: [true]}",
            f"    effect:\n      defaults: {{cuda_graph_max_bs: {value}}}",
        )

    write_rules(tmp_path, with_default("site-default-a", 128), name="a.yaml")
    write_rules(tmp_path, with_default("site-default-b", 256), name="b.yaml")
    code, out, _ = cli(["rules", "test", "--no-builtin", "--rules", str(tmp_path)])
    assert code == 1 and "CONFLICT" in out and "site-default-a" in out and "site-default-b" in out
    assert "cuda_graph_max_bs" in out and "1 conflicting defaults" in out
    write_rules(
        tmp_path, with_default("site-default-b", 128), name="b.yaml"
    )  # agreeing defaults are fine
    code, out, _ = cli(["rules", "test", "--no-builtin", "--rules", str(tmp_path)])
    assert code == 0 and "CONFLICT" not in out, out


def test_the_built_in_rules_have_no_conflicting_defaults():
    from topoctl.rules.engine import load_rules
    from topoctl.rules.engine.selftest import default_conflicts

    assert default_conflicts(load_rules().rules) == []
