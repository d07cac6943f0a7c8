"""The extractor held to SGLang's own argparse parser, built from the release wheels.

Runs only where the wheels are: set TOPOCTL_SGLANG_WHEELS to a folder of sglang-<version>-*.whl files (see
docs/sglang-versions.md); elsewhere, CI included, it is skipped, and tests/test_sglang_flag_data.py holds the
shipped data to the committed results of this same check instead.
"""
from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path

import pytest

WHEELS = os.environ.get("TOPOCTL_SGLANG_WHEELS", "")
pytestmark = pytest.mark.skipif(not WHEELS or not list(Path(WHEELS).glob("sglang-*.whl")),
                                reason="TOPOCTL_SGLANG_WHEELS names no folder of SGLang wheels")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))


def _wheels() -> list[Path]:
    return sorted(Path(WHEELS).glob("sglang-*.whl")) if WHEELS else []


@pytest.mark.parametrize("wheel", _wheels(), ids=lambda p: p.name.split("-")[1])
def test_extracted_data_matches_the_real_parser(wheel, tmp_path):
    pytest.importorskip("msgspec")
    from sglang_flags.check import check_version
    from sglang_flags.cli import build_document, write

    doc = build_document(wheel)  # extracted afresh from the wheel, not the shipped file
    write(doc, tmp_path / "data")
    src = tmp_path / "src"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(src, [n for n in archive.namelist() if n.startswith("sglang/") and n.endswith(".py")])
    result = check_version(doc["sglang_version"], src, tmp_path / "data")
    assert result["disagreements"] == []
    assert result["flags_real"] == result["flags_data"]
