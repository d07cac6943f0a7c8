"""Every rule's version scope is a boundary its evidence names, in a real release, with file and
line."""

from __future__ import annotations

import pytest
from packaging.version import Version

from topoctl.rules.engine import load_rules
from topoctl.rules.engine.boundaries import known_releases, problems, specifier_bounds
from topoctl.rules.sglang import flags
from topoctl.rules.sglang.releases import (
    flashinfer_pin,
    flashinfer_release_versions,
    release_versions,
)

RULESET = load_rules()
RELEASES = known_releases()


@pytest.mark.parametrize("rule", RULESET.rules, ids=lambda rule: rule.id)
def test_rule_boundaries_are_named_releases(rule):
    assert problems(rule.id, rule.when, rule.evidence, RELEASES) == []


def test_release_list_is_the_releases_with_flag_data():
    # The flag data (one file per release, topoctl.rules.sglang.flags.known_versions) and the
    # release list that rule boundaries are held to describe the same releases; pre-releases with
    # flag data are not boundaries.
    releases = [version for version in flags.known_versions() if not Version(version).is_prerelease]
    assert releases == release_versions()


def test_release_list_is_the_package_index_range():
    versions = release_versions()
    assert versions[0] == "0.5.5" and len(versions) == len(set(versions)) == 29
    assert versions == sorted(versions, key=Version)
    assert "0.5.5.post3" in versions and "0.5.15.post1" in versions
    assert not any(Version(version).is_prerelease for version in versions)


def test_every_pin_is_a_flashinfer_release():
    for version in release_versions():
        assert flashinfer_pin(version) in flashinfer_release_versions(), version


def test_pins_read_from_the_wheels():
    # Requires-Dist lines of the wheels' METADATA (0.5.5: flashinfer_python==0.5.0; 0.5.22:
    # ==0.7.1).
    assert flashinfer_pin("0.5.5") == "0.5.0"
    assert flashinfer_pin("0.5.5.post3") == "0.5.2"
    assert flashinfer_pin("0.5.21") == "0.6.18"
    assert flashinfer_pin("0.5.22") == "0.7.1"
    assert flashinfer_pin("0.5.12+cu129") == flashinfer_pin("0.5.12") == "0.6.11.post1"
    assert flashinfer_pin("0.5.4") is None


# ---- the checker itself: it must catch what it is there to catch (synthetic rules, not shipped
# ones)
EVIDENCE = [
    {
        "source": "upstream:sglang 0.5.5-0.5.23",
        "level": "upstream-reported",
        "summary": "s",
        "scope": "s",
        "releases": {
            "package": "sglang",
            "holds_from": {"release": "0.5.5", "at": "sglang/srt/a.py:83"},
            "stops_at": {"release": "0.5.14", "at": "sglang/srt/a.py:78"},
            "read_through": "0.5.23",
        },
    }
]


def test_bound_on_the_named_boundary_passes():
    when = {"fact": "software.sglang", "version": "<0.5.14"}
    assert problems("r", when, EVIDENCE, RELEASES) == []


def test_bound_between_releases_the_evidence_does_not_name_fails():
    when = {
        "all": [
            {"fact": "gpu.sm", "any_in": [120]},
            {"fact": "software.sglang", "version": "<0.5.18"},
        ]
    }
    found = problems("r", when, EVIDENCE, RELEASES)
    assert any("<0.5.18" in text and "not a boundary release" in text for text in found), found


def test_bound_that_is_not_a_release_fails():
    evidence = [
        dict(
            EVIDENCE[0],
            releases=dict(
                EVIDENCE[0]["releases"], stops_at={"release": "0.5.14.post7", "at": "a.py:1"}
            ),
        )
    ]
    found = problems(
        "r", {"fact": "software.sglang", "version": "<0.5.14.post7"}, evidence, RELEASES
    )
    assert any("not a known sglang release" in text for text in found), found


def test_upstream_sglang_evidence_without_releases_fails():
    evidence = [
        {
            "source": "upstream:sglang 0.5.23",
            "level": "upstream-reported",
            "summary": "s",
            "scope": "s",
        }
    ]
    assert any(
        "names no releases" in text
        for text in problems("r", {"fact": "gpu.count", "ge": 2}, evidence, RELEASES)
    )


def test_open_ended_scope_must_be_read_through_the_newest_release():
    evidence = [
        dict(
            EVIDENCE[0],
            releases={
                "package": "sglang",
                "holds_from": {"release": "0.5.5", "at": "a.py:1"},
                "read_through": "0.5.18",
            },
        )
    ]
    assert any(
        "read it too" in text
        for text in problems("r", {"fact": "gpu.count", "ge": 2}, evidence, RELEASES)
    )


def test_boundary_without_file_and_line_fails():
    evidence = [
        dict(
            EVIDENCE[0],
            releases=dict(EVIDENCE[0]["releases"], holds_from={"release": "0.5.5", "at": "a.py"}),
        )
    ]
    assert any(
        "not file:line" in text
        for text in problems("r", {"fact": "gpu.count", "ge": 2}, evidence, RELEASES)
    )


def test_flashinfer_bounds_are_flashinfer_releases():
    when = {"fact": "software.flashinfer_target", "version": ">=0.7.0"}
    evidence = [
        {
            "source": "upstream:flashinfer 0.6.18-0.7.2",
            "level": "upstream-reported",
            "summary": "s",
            "scope": "s",
            "releases": {
                "package": "flashinfer",
                "holds_from": {"release": "0.7.0", "at": "f.py:38"},
                "read_through": "0.7.2",
            },
        }
    ]
    assert problems("r", when, evidence, RELEASES) == []
    assert problems(
        "r", {"fact": "software.flashinfer_target", "version": ">=0.6.19"}, evidence, RELEASES
    )


def test_specifier_bounds_walks_the_whole_condition():
    when = {
        "not": {
            "any": [
                {"fact": "software.sglang", "version": ">=0.5.5,<0.5.8"},
                {"any_pair": {"fact": "pair.p2p_ok", "eq": False}},
                {"fact": "request.sglang_version", "version": "==0.5.7.*"},
            ]
        }
    }
    assert sorted(specifier_bounds(when)) == [
        ("sglang", "<", "0.5.8"),
        ("sglang", "==", "0.5.7"),
        ("sglang", ">=", "0.5.5"),
    ]


def test_docs_table_lists_every_builtin_rule_with_its_severity():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "rules.md").read_text(encoding="utf-8")
    for rule in RULESET.rules:
        assert f"| `{rule.id}` | {rule.severity} |" in text, rule.id


def test_grep_releases_reads_every_release_in_order_and_prints_the_changes(tmp_path, capsys):
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "grep_releases", Path(__file__).resolve().parents[2] / "scripts" / "grep_releases.py"
    )
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    # synthetic releases: the pattern appears in 0.5.6, moves in 0.5.10 (same text), goes away in
    # 0.5.11
    for version, body in (
        ("0.5.5", "x = 1\n"),
        ("0.5.6", "table[key]\n"),
        ("0.5.10", "\ntable[key]\n"),
        ("0.5.11", "table.get(key)\n"),
        ("0.5.11rc0", "table[key]\n"),
        ("notes", ""),
    ):
        folder = tmp_path / version / "pkg"
        folder.mkdir(parents=True)
        (folder / "a.py").write_text(body)
    assert tool.main([str(tmp_path), r"table\[key\]", "--changes"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "0.5.5: (absent)",
        "0.5.6: pkg/a.py:1: table[key]",
        "0.5.11: (absent)",
    ]
    assert tool.main([str(tmp_path), "table[key]", "--fixed", "--first", "0.5.10"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "0.5.10: pkg/a.py:2: table[key]",
        "0.5.11: (absent)",
    ]
    assert tool.main([str(tmp_path / "missing"), "x"]) == 2
