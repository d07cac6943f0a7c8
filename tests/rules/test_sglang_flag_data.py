"""The shipped SGLang flag data against what SGLang's own parser did (the committed real-parser
check).

tests/data/sglang_real_parser_check.json is written by `python scripts/check_sglang_parser.py` where
the release wheels are at hand (docs/sglang-versions.md); these tests need no wheel: they hold the
data files and topoctl's own reading of command lines (FlagSet.resolve / argv_flags) to the real
parser's recorded results.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.version import Version

from topoctl.rules.sglang.flags import known_versions, load_flag_set, newest_version

CHECK = Path(__file__).resolve().parents[1] / "data" / "sglang_real_parser_check.json"
RESULTS = {r["version"]: r for r in json.loads(CHECK.read_text(encoding="utf-8"))["results"]}
DATA_DIR = Path(__file__).resolve().parents[2] / "rules" / "sglang" / "generated"


def _doc(version: str) -> dict:
    return json.loads((DATA_DIR / f"sglang-{version}.json").read_text(encoding="utf-8"))


def test_every_release_from_0_5_5_has_data():
    """0.5.5 to 0.5.23 is 29 releases on the package index (post releases included), plus 0.5.10rc0."""
    finals = [v for v in known_versions() if not Version(v).is_prerelease]
    assert len(finals) >= 29 and finals[0] == "0.5.5"
    for v in (
        "0.5.5.post1",
        "0.5.5.post2",
        "0.5.5.post3",
        "0.5.6.post2",
        "0.5.8.post1",
        "0.5.9",
        "0.5.10.post1",
        "0.5.11",
        "0.5.13.post1",
        "0.5.15.post1",
        "0.5.19",
        "0.5.20",
        "0.5.21",
        "0.5.22",
        "0.5.23",
    ):
        assert v in finals


def test_the_real_parser_check_covers_every_data_file_as_shipped():
    assert set(RESULTS) == set(known_versions())
    for version, result in RESULTS.items():
        assert result["wheel_sha256"] == _doc(version)["source"]["sha256"], version
        assert result["flags_real"] == result["flags_data"] == _doc(version)["flag_count"], version


@pytest.mark.parametrize("version", sorted(RESULTS, key=Version))
def test_data_agrees_with_the_real_parser(version):
    result = RESULTS[version]
    assert result["disagreements"] == []
    assert result["compared_fields"] > 7 * result["flags_real"]
    # choices the wheel computes at run time (parser registries, enums) carry the real parser's list
    assert result["unresolved_in_data"] == []


def _topoctl_outcome(version: str, argv: list[str]) -> str:
    resolutions = load_flag_set(version).argv_flags(["--model-path", "model", *argv])
    kinds = {r.kind for r in resolutions}
    if "ambiguous" in kinds:
        return "ambiguous"
    if "unknown" in kinds:
        return "unrecognized"
    return "ok"


def _real_outcome(probe: dict) -> str:
    if probe["ok"]:
        return "ok"
    if "ambiguous option" in probe["error"]:
        return "ambiguous"
    assert "unrecognized arguments" in probe["error"], probe
    return "unrecognized"


@pytest.mark.parametrize("version", sorted(RESULTS, key=Version))
def test_topoctl_reads_each_probe_as_the_real_parser_did(version):
    for probe in RESULTS[version]["probes"]:
        assert _topoctl_outcome(version, probe["argv"]) == _real_outcome(probe), (version, probe)


@pytest.mark.parametrize("version", ["0.5.20", "0.5.21", "0.5.22", "0.5.23"])
def test_cuda_graph_max_bs_stops_the_real_parser_from_0_5_20(version):
    probe = next(p for p in RESULTS[version]["probes"] if p["argv"][0] == "--cuda-graph-max-bs")
    assert (
        probe["exit"] == 2 and "ambiguous option: --cuda-graph-max-bs could match" in probe["error"]
    )
    assert load_flag_set(version).resolve("--cuda-graph-max-bs").kind == "ambiguous"


@pytest.mark.parametrize("version", ["0.5.14", "0.5.19"])
def test_cuda_graph_max_bs_is_a_deprecated_alias_from_0_5_14_to_0_5_19(version):
    fs = load_flag_set(version)
    assert (
        fs.exact
        and fs.is_deprecated("--cuda-graph-max-bs")
        and fs.resolve("--cuda-graph-max-bs").kind == "exact"
    )


@pytest.mark.parametrize("version", ["0.5.9", "0.5.10", "0.5.10.post1", "0.5.11"])
def test_flags_of_0_5_9_to_0_5_11_are_known_in_their_own_release(version):
    fs = load_flag_set(version)
    assert fs.exact
    for option in fs.all_options():
        assert fs.resolve(option).kind == "exact", option
    assert fs.has("--enable-fused-qk-norm-rope")  # added in 0.5.6.post1, after the oldest data file


def test_flag_data_and_the_release_list_name_the_same_releases():
    """rules/sglang/generated/releases.json (the FlashInfer pins) and the flag data cover the same
    releases; the only extra data file is a pre-release that is on the package index (0.5.10rc0)."""
    from topoctl.rules.sglang.releases import newest_release, release_versions

    finals = [v for v in known_versions() if not Version(v).is_prerelease]
    assert finals == release_versions()
    assert newest_release() == newest_version()


def test_the_pin_and_the_flags_of_a_pre_release_come_from_the_same_release():
    from topoctl.rules.sglang.flags import match_version
    from topoctl.rules.sglang.releases import flashinfer_pin

    for version in ("0.5.12rc1", "0.5.12+cu129", "0.5.21rc0"):
        release, _ = match_version(version)
        assert flashinfer_pin(version) == flashinfer_pin(release)


def test_the_versions_page_and_the_readme_list_what_is_covered():
    root = DATA_DIR.parent.parent.parent
    page = (root / "docs" / "sglang-versions.md").read_text(encoding="utf-8")
    for version in known_versions():
        doc = _doc(version)
        assert f"| {version} | {doc['flag_count']} |" in page, version
    readme = (root / "README.md").read_text(encoding="utf-8")
    finals = [v for v in known_versions() if not Version(v).is_prerelease]
    assert f"from {finals[0]} to {newest_version()} ({len(finals)} releases" in readme
