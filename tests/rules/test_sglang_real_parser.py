"""The shipped flag data held to SGLang's own argparse parser, built from the release wheels.

In CI: every data file is compared, field by field (scripts/sglang_flags/check.py `compare`), with
the parser SGLang's prepare_server_args built from that release's wheel, as recorded in
tests/data/real_parsers/sglang-parsers.json.xz (scripts/dump_real_parsers.py). Where the wheels are
(set TOPOCTL_SGLANG_WHEELS to a folder of sglang-<version>-*.whl files, see
docs/sglang-versions.md), the extractor also runs afresh on each wheel and the real parser is built
again, and both must agree with the data and with the recording.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from topoctl.rules.sglang.flags import known_versions

sys.path.insert(0, os.path.join(ROOT, "scripts"))
from dump_real_parsers import read_dump, unpack_sglang  # noqa: E402
from sglang_flags.check import compare  # noqa: E402

WHEELS = os.environ.get("TOPOCTL_SGLANG_WHEELS", "")
DATA_DIR = Path(ROOT) / "rules" / "sglang" / "generated"
RECORDED = read_dump("sglang-parsers")


def _data(version: str) -> dict:
    return json.loads((DATA_DIR / f"sglang-{version}.json").read_text(encoding="utf-8"))


def test_the_recording_covers_every_data_file_from_its_own_wheel():
    assert set(RECORDED["releases"]) == set(known_versions())
    for version, digest in RECORDED["wheels"].items():
        assert digest == _data(version)["source"]["sha256"], version


@pytest.mark.parametrize("version", known_versions())
def test_the_data_is_the_real_parser(version):
    real = RECORDED["releases"][version]
    result = compare(real, _data(version))
    assert result["disagreements"] == []
    assert result["unresolved_in_data"] == []
    assert (
        result["flags_real"] == result["flags_data"]
        and result["compared_fields"] > 7 * result["flags_real"]
    )


def _wheels() -> list[Path]:
    return sorted(Path(WHEELS).glob("sglang-*.whl")) if WHEELS else []


@pytest.mark.skipif(not _wheels(), reason="TOPOCTL_SGLANG_WHEELS names no folder of SGLang wheels")
@pytest.mark.parametrize("wheel", _wheels(), ids=lambda p: p.name.split("-")[1])
def test_extracted_data_matches_the_real_parser(wheel, tmp_path):
    pytest.importorskip("msgspec")
    from dump_real_parsers import real_parser_dump
    from sglang_flags.check import check_version
    from sglang_flags.cli import build_document, write

    doc = build_document(wheel)  # extracted afresh from the wheel, not the shipped file
    write(doc, tmp_path / "data")
    src = unpack_sglang(wheel, tmp_path / "src")
    result = check_version(doc["sglang_version"], src, tmp_path / "data")
    assert result["disagreements"] == []
    assert result["flags_real"] == result["flags_data"]
    assert (
        real_parser_dump(src) == RECORDED["releases"][doc["sglang_version"]]
    )  # the recording is not stale
