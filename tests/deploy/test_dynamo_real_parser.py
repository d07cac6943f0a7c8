"""topoctl's reading of a `python -m dynamo.sglang` line held to Dynamo's own parsers, run from the
wheels.

In CI: what Dynamo's parse_known_args (and, from 1.5, the router's) left for SGLang of each probe of
scripts/dump_real_parsers.py DYNAMO_PROBES, or the argparse error they stopped with, recorded per
ai-dynamo release in tests/data/real_parsers/dynamo-probes.json.xz: what
topoctl.deploy.launcher_args leaves must be the same, and an argparse error of theirs must be a
blocking finding of topoctl's. Where the wheels are (set TOPOCTL_DYNAMO_WHEELS to a folder of
ai_dynamo-<version>-*.whl files) Dynamo's code runs again (scripts/extract_dynamo_flags.py) and must
give the recording.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from topoctl.cli.commands._options import flag_set_for
from topoctl.deploy.launcher_args import dynamo_versions, load_dynamo, prepare
from topoctl.deploy.launchers import Launch

sys.path.insert(0, os.path.join(ROOT, "scripts"))
from dump_real_parsers import DYNAMO_PROBES, dynamo_outcome, read_dump  # noqa: E402

WHEELS = os.environ.get("TOPOCTL_DYNAMO_WHEELS", "")
RECORDED = read_dump("dynamo-probes")


def test_the_recording_covers_every_release_with_option_data_from_its_own_wheel():
    assert sorted(RECORDED["releases"]) == sorted(dynamo_versions())
    assert RECORDED["probes"] == DYNAMO_PROBES
    data = Path(ROOT) / "rules" / "sglang" / "generated"
    for version, digest in RECORDED["wheels"].items():
        assert (
            json.loads((data / f"dynamo-{version}.json").read_text(encoding="utf-8"))["source"][
                "sha256"
            ]
            == digest
        )


@pytest.mark.parametrize("version", sorted(RECORDED["releases"]))
@pytest.mark.parametrize("probe", range(len(DYNAMO_PROBES)))
def test_what_dynamo_leaves_for_sglang(version, probe):
    real = RECORDED["releases"][version][probe]
    table = load_dynamo(version)
    prepared = prepare(
        Launch("dynamo.sglang", args=list(DYNAMO_PROBES[probe])),
        flag_set_for(table.sglang_pin),
        table,
    )
    blocking = [p for p in prepared.problems if p.severity == "block"]
    if "probe_error" in real:
        assert blocking and "ambiguous" in " ".join(real["probe_error"]), (
            real["probe_error"],
            prepared.problems,
        )
    else:
        assert not blocking and prepared.args == real["probe_rest"]


def _wheels() -> list[Path]:
    return (
        [
            w
            for w in sorted(Path(WHEELS).glob("ai_dynamo-*.whl"))
            if not w.name.split("-")[1].startswith("0.")
        ]
        if WHEELS
        else []
    )


@pytest.mark.skipif(
    not _wheels(), reason="TOPOCTL_DYNAMO_WHEELS names no folder of ai-dynamo wheels"
)
@pytest.mark.parametrize("wheel", _wheels(), ids=lambda p: p.name.split("-")[1])
def test_dynamo_reads_the_probes_as_recorded(wheel):
    pytest.importorskip("msgspec")
    fresh = [dynamo_outcome(wheel, probe) for probe in DYNAMO_PROBES]
    assert fresh == RECORDED["releases"][wheel.name.split("-")[1]]
