"""Bad rule files end in one line naming the file, the rule and the field; the CLI exits 2, no
traceback."""

from __future__ import annotations

import re

import pytest
from rules_helpers import rule_text, write_rules

from topoctl.cli.app import main
from topoctl.core.errors import TopoctlError
from topoctl.rules.engine import load_rules


def with_number(number: str) -> str:
    """The valid site rule with one evidence number (a YAML flow mapping) added."""
    return rule_text().replace(
        "        scope: our 8x SM120 box",
        "        scope: our 8x SM120 box\n        numbers:\n          - " + number,
    )


BAD_FILES = {
    "yaml syntax error": (
        rule_text().replace("severity: block", "severity: [block"),
        "not valid YAML",
    ),
    "unknown field": (
        rule_text().replace("    severity: block", "    severity: block\n    colour: red"),
        "unknown field 'colour'",
    ),
    "bad version specifier": (rule_text(specifier=">>0.5"), "invalid PEP 440 version specifier"),
    "python object tag": (
        rule_text().replace(
            "title: A site rule for tests", 'title: !!python/object/apply:os.system ["true"]'
        ),
        "not valid YAML",
    ),
    "unknown fact": (
        rule_text().replace("gpu.sm_majors", "gpu.sm_major"),
        "unknown fact 'gpu.sm_major'",
    ),
    "operator on the wrong type": (
        rule_text().replace('version: "<0.6"', "gt: 5"),
        "gt needs a numeric fact",
    ),
    "unknown setting": (
        rule_text().replace("setting: torch_symm_mem", "setting: torch_sym_mem"),
        "unknown setting 'torch_sym_mem'",
    ),
    "bad severity": (rule_text(severity="fatal"), "severity"),
    "no must-fire case": (rule_text(expect_on_sm120="silent"), "at least one case that must fire"),
    "evidence level outside the schema": (
        rule_text().replace("level: measured", "level: rumour"),
        "rumour",
    ),
    "evidence number without a kind": (
        with_number(
            "{metric: decode throughput, value: 50, unit: tok/s, config: {allreduce: nccl}}"
        ),
        "kind",
    ),
    "evidence config in words": (
        with_number(
            "{metric: decode throughput, kind: throughput, value: 50, unit: tok/s, config: "
            '"EAGLE-3, NCCL"}'
        ),
        "field 'evidence[0].numbers[0].config': must be a mapping, got text",
    ),
    "evidence config with an unknown key": (
        with_number(
            "{metric: decode throughput, kind: throughput, value: 50, unit: tok/s, config: "
            "{cuda_graph_maxbs: 8}}"
        ),
        "unknown key 'cuda_graph_maxbs'",
    ),
    "evidence unit that does not fit the kind": (
        with_number(
            "{metric: allreduce latency, kind: latency, value: 5, unit: tok/s, config: "
            "{allreduce: nccl}}"
        ),
        "a latency number is in us or ms",
    ),
    "relative number without a baseline": (
        with_number(
            '{metric: decode throughput change, kind: relative, value: 9, unit: "%", config: '
            "{cuda_graph_max_bs: 128}}"
        ),
        "needs the baseline",
    ),
    "evidence setting of the wrong type": (
        with_number(
            "{metric: decode throughput, kind: throughput, value: 50, unit: tok/s, config: "
            "{tp_size: eight}}"
        ),
        "tp_size takes a int",
    ),
    "pair fact outside a quantifier": (
        rule_text().replace("gpu.sm_majors, any_in: [12]", "pair.link, eq: SYS"),
        "pair fact",
    ),
    # structure: the schema's errors, in the loader's words
    "missing field": (
        rule_text().replace("    severity: block\n", ""),
        "field 'severity': missing",
    ),
    "blank title": (
        rule_text().replace("title: A site rule for tests", "title: '   '"),
        "field 'title': must be non-empty text",
    ),
    "unknown effect field": (
        rule_text().replace("  effect:\n", "  effect:\n      forbids: []\n", 1),
        "field 'effect.forbids': unknown field 'forbids' (allowed: forbid, require",
    ),
    "evidence not a list": (
        rule_text().replace(
            "    evidence:\n      - source: measured:site-box-1\n        level: "
            "measured\n        summary: Seen on our machine.\n        scope: our 8x SM120 box\n",
            "    evidence: none\n",
        ),
        "field 'evidence': must be a list, got text",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_rule_file_is_one_line_naming_file_rule_and_field(tmp_path, name):
    text, needle = BAD_FILES[name]
    path = write_rules(tmp_path, text)
    with pytest.raises(TopoctlError) as caught:
        load_rules(extra_dirs=[str(tmp_path)])
    message = caught.value.message
    assert needle in message
    assert caught.value.hint and "\n" not in caught.value.hint  # every error says where to look
    assert str(path) in message and "site-sm120-symm-mem" in message
    assert "\n" not in message


def test_field_is_named(tmp_path):
    write_rules(tmp_path, rule_text(specifier=">>0.5"))
    with pytest.raises(TopoctlError) as caught:
        load_rules(extra_dirs=[str(tmp_path)])
    assert "field 'when.all[1].version'" in caught.value.message


def test_python_tag_is_never_constructed(tmp_path, monkeypatch):
    import os

    called = []
    monkeypatch.setattr(os, "system", lambda *args: called.append(args))
    write_rules(tmp_path, BAD_FILES["python object tag"][0])
    with pytest.raises(TopoctlError):
        load_rules(extra_dirs=[str(tmp_path)])
    assert called == []


def test_duplicate_id_within_site_files(tmp_path):
    write_rules(tmp_path, rule_text(), name="a.yaml")
    write_rules(tmp_path, rule_text(), name="b.yaml")
    duplicate = (
        r"b\.yaml: rule 'site-sm120-symm-mem': field 'id': duplicate id \(already "
        r"defined in .*a\.yaml\)"
    )
    with pytest.raises(TopoctlError, match=duplicate):
        load_rules(extra_dirs=[str(tmp_path)])


def test_duplicate_of_a_builtin_id(tmp_path):
    write_rules(tmp_path, rule_text(rule_id="torch-symm-mem-sm12x-keyerror"))
    with pytest.raises(TopoctlError, match="duplicate id"):
        load_rules(extra_dirs=[str(tmp_path)])


def test_a_bad_id_and_a_bad_file_shape_are_told_by_the_schema(tmp_path):
    write_rules(tmp_path, rule_text(rule_id="x"))
    with pytest.raises(
        TopoctlError, match=r"rule 'x': field 'id': must match \^\[A-Za-z0-9\]"
    ) as caught:
        load_rules(extra_dirs=[str(tmp_path)])
    assert "Stable identifier" in caught.value.hint  # the schema's description of the field
    write_rules(tmp_path, "- just a list\n")
    with pytest.raises(TopoctlError, match=r"site\.yaml: must be a mapping, got a list"):
        load_rules(extra_dirs=[str(tmp_path)])
    write_rules(tmp_path, "rules: []\nextras: 1\n")
    with pytest.raises(
        TopoctlError,
        match=r"field 'extras': unknown field 'extras' \(allowed: schema_version, rules, "
        r"disable\)",
    ):
        load_rules(extra_dirs=[str(tmp_path)])


def test_disable_entry_needs_reason(tmp_path):
    write_rules(tmp_path, "disable:\n  - id: nccl-ll128-without-nvlink\n    reason: ''\n")
    with pytest.raises(TopoctlError, match=r"site\.yaml: field 'disable\[0\]\.reason'"):
        load_rules(extra_dirs=[str(tmp_path)])


def test_missing_rules_folder():
    with pytest.raises(TopoctlError, match="no such folder"):
        load_rules(extra_dirs=["/nonexistent/rules"])


@pytest.mark.parametrize(
    "name", ["yaml syntax error", "unknown field", "bad version specifier", "python object tag"]
)
def test_cli_exits_2_without_traceback(tmp_path, capsys, name):
    write_rules(tmp_path, BAD_FILES[name][0])
    assert main(["rules", "list", "--rules", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.startswith("topoctl: error: ") and "site-sm120-symm-mem" in err
    assert len([line for line in err.splitlines() if line.startswith("topoctl: error")]) == 1


def test_the_schema_spells_the_closed_sets_the_loader_relies_on():
    """The loader no longer repeats these checks: the schema must hold exactly the sets the code
    knows."""
    from topoctl.core import vocab
    from topoctl.rules.engine.conditions import FORBID_OPERATORS
    from topoctl.rules.engine.loader import rule_schema

    defs = rule_schema()["$defs"]
    assert set(defs["forbid"]["properties"]) == {"setting", *FORBID_OPERATORS}
    assert defs["number"]["properties"]["kind"]["enum"] == list(vocab.EVIDENCE_KINDS)
    assert defs["rule"]["properties"]["severity"]["enum"] == list(vocab.SEVERITIES)
    assert defs["evidence"]["properties"]["level"]["enum"] == list(vocab.EVIDENCE_LEVELS)


def test_a_cached_rule_s_matchers_compiled_on_first_run_answer_as_compiled_at_once():
    """The knowledge cache's rules compile each matcher when it first runs (checked=True): on every
    built-in rule's own cases, and on every other rule's cases (other facts, other launches), the
    answer and the unknown facts are those of the condition compiled whole at once."""
    from dataclasses import replace

    from topoctl.rules.engine import conditions
    from topoctl.rules.engine.evaluation import evaluate_rule
    from topoctl.rules.engine.loader import builtin_rules

    rules = builtin_rules()
    cases = [case for rule in rules for case in rule.tests]
    assert len(cases) > 100
    for rule in rules:
        eager = replace(rule, condition=conditions.compile_condition(rule.when, "when"))
        deferred = replace(
            rule, condition=conditions.compile_condition(rule.when, "when", checked=True)
        )
        for case in cases:
            assert evaluate_rule(deferred, case.snapshot, case.request) == evaluate_rule(
                eager, case.snapshot, case.request
            ), (rule.id, case.name)


def test_a_checked_condition_compiles_no_matcher_until_it_runs(monkeypatch):
    from topoctl.rules.engine import conditions

    compiled = []
    real = conditions._compile_matcher
    monkeypatch.setattr(
        conditions, "_compile_matcher", lambda *args: compiled.append(args) or real(*args)
    )
    when = {"all": [{"fact": "gpu.count", "gt": 0}, {"fact": "gpu.count", "lt": 0}]}
    conditions.compile_condition(when, "when", checked=True)
    assert compiled == []
    conditions.compile_condition(when, "when")
    assert len(compiled) == 2


def test_a_rule_read_from_its_file_is_compiled_whole_so_a_bad_matcher_is_refused(tmp_path):
    """Deferring is for checked cache entries only: a site rule whose condition shares its text with
    nothing checked still has every matcher checked when the file is read."""
    from topoctl.rules.engine.conditions import ConditionError
    from topoctl.rules.engine.loader import _compiled

    with pytest.raises(ConditionError):
        _compiled(
            {"all": [{"fact": "gpu.count", "gt": 0}, {"fact": "gpu.count", "version": ">=1"}]}
        )
    _compiled(
        {"all": [{"fact": "gpu.count", "gt": 0}, {"fact": "gpu.count", "version": ">=1"}]},
        checked=True,
    )


ID_LINE = re.compile(
    r"^\s*-\s*id:\s*['\"]?([A-Za-z0-9][A-Za-z0-9._-]*)", re.M
)  # what rule_ids must find


@pytest.mark.parametrize(
    "text",
    [
        "- id: first\n",
        "rules:\n  - id: a-1\n\n\n  -\n    id: 'b.2'\n- id:\"c\"\n",
        "  - id: x\r\n  - id: y",
        "\n\n- id: z",
        "#- id: no\n -id: no2\n - id: yes_3",
    ],
)
def test_rule_ids_finds_what_the_id_line_pattern_finds(text):
    from topoctl.rules.engine.loader import rule_ids

    assert rule_ids(text) == ID_LINE.findall(text)


def test_rule_ids_of_every_shipped_file_are_the_id_line_pattern_s():
    from topoctl.core import safe_read as limits
    from topoctl.rules.engine.loader import builtin_rule_files, rule_ids

    for path in builtin_rule_files():
        text = limits.read_text(path, limits.MAX_DATA_FILE_BYTES)
        assert rule_ids(text) == ID_LINE.findall(text) != [], path
