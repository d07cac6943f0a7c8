"""topoctl's reading of a `python -m dynamo.sglang` line held to Dynamo's own parsers, run from the wheels.

Runs only where the wheels are: set TOPOCTL_DYNAMO_WHEELS to a folder of ai_dynamo-<version>-*.whl files;
elsewhere it is skipped. scripts/extract_dynamo_flags.py imports the wheel's argument-group code and runs
Dynamo's parse_known_args (and, from 1.5, the router's) on the probe; what they leave for SGLang must be
what topoctl.sglang.prepare leaves, and an argparse error of theirs must be a blocking finding of topoctl's.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from topoctl.commands._options import flag_set_for
from topoctl.sglang.launchers import Launch
from topoctl.sglang.prepare import load_dynamo, prepare

WHEELS = os.environ.get("TOPOCTL_DYNAMO_WHEELS", "")
pytestmark = pytest.mark.skipif(not WHEELS or not list(Path(WHEELS).glob("ai_dynamo-*.whl")),
                                reason="TOPOCTL_DYNAMO_WHEELS names no folder of ai-dynamo wheels")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
PROBES = [
    ["--model-path", "m", "--namespace", "ns", "--endpoint", "dyn://a.b.c", "--tp-size", "4", "--page-size", "16"],
    ["--model-path", "m", "--router-mode", "kv", "--enable-metrics", "--connector", "nixl", "--tp", "2"],
    ["--namesp", "ns", "--model-path=m", "--custom-jinja-template=t.jinja", "--mem-fraction-static", "0.8"],
    ["--tcp-tls", "x", "--model-path", "m"],
]


def _wheels() -> list[Path]:
    return sorted(Path(WHEELS).glob("ai_dynamo-*.whl")) if WHEELS else []


@pytest.mark.parametrize("wheel", _wheels(), ids=lambda p: p.name.split("-")[1])
@pytest.mark.parametrize("probe", range(len(PROBES)))
def test_what_dynamo_leaves_for_sglang(wheel, probe):
    pytest.importorskip("msgspec")
    from extract_dynamo_flags import extract

    version = wheel.name.split("-")[1]
    if version < "1.0":
        pytest.skip("0.x releases read the launch with one parser")
    real = extract(wheel, PROBES[probe])
    table = load_dynamo(version)
    prepared = prepare(Launch("dynamo.sglang", args=list(PROBES[probe])), flag_set_for(table.sglang_pin), table)
    blocking = [p for p in prepared.problems if p.severity == "block"]
    if "probe_error" in real:
        assert blocking and "ambiguous" in " ".join(real["probe_error"]), (real["probe_error"], prepared.problems)
    else:
        assert not blocking and prepared.args == real["probe_rest"]
