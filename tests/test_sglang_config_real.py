"""topoctl's `--config` merge held to SGLang's own ConfigArgumentMerger, run from the release wheels.

Runs only where the wheels are: set TOPOCTL_SGLANG_WHEELS to a folder of sglang-<version>-*.whl files (as for
tests/test_sglang_real_parser.py); elsewhere it is skipped. SGLang's `prepare_server_args` runs for real
(scripts/sglang_flags/real_parser.py, with PyYAML imported for real so that the config file is read), and the
argument list it hands argparse must be the one topoctl.sglang.prepare builds.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from topoctl.commands._options import flag_set_for
from topoctl.sglang.launchers import Launch
from topoctl.sglang.prepare import prepare

WHEELS = os.environ.get("TOPOCTL_SGLANG_WHEELS", "")
pytestmark = pytest.mark.skipif(not WHEELS or not list(Path(WHEELS).glob("sglang-*.whl")),
                                reason="TOPOCTL_SGLANG_WHEELS names no folder of SGLang wheels")
SCRIPTS = Path(__file__).resolve().parent.parent / "scripts" / "sglang_flags"
DRIVER = ("import sys; sys.path.insert(0, sys.argv[1]); import real_parser; real_parser.REAL_PACKAGES.add('yaml'); "
          "sys.argv = ['real_parser.py', *sys.argv[2:]]; sys.exit(real_parser.main())")
CONFIGS = {
    "scalars-and-store-true": "tp-size: 8\nenable-metrics: true\nskip-server-warmup: false\nmem-fraction-static: 0.7\n",
    "lists": "served-model-name: [a]\nmem-fraction-static: 0.8\n",
}


def _wheels() -> list[Path]:
    wanted = {"0.5.5", "0.5.7", "0.5.8", "0.5.12", "0.5.14", "0.5.18", "0.5.22", "0.5.23"}
    return [w for w in sorted(Path(WHEELS).glob("sglang-*.whl")) if w.name.split("-")[1] in wanted] if WHEELS else []


@pytest.mark.parametrize("wheel", _wheels(), ids=lambda p: p.name.split("-")[1])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_merged_argument_list_is_sglangs(wheel, name, tmp_path):
    pytest.importorskip("msgspec")
    version = wheel.name.split("-")[1]
    src = tmp_path / "src"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(src, [n for n in archive.namelist() if n.startswith("sglang/") and n.endswith(".py")])
    config = tmp_path / "c.yaml"
    config.write_text(CONFIGS[name])
    cli = ["--model-path", "m", "--config", str(config), "--tp-size", "4"]
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(SCRIPTS), str(src), "parse", "--", *cli],
                          capture_output=True, text=True, timeout=300)
    real = json.loads(proc.stdout)["argv"]
    ours = prepare(Launch("sglang.launch_server", args=cli, base_dir=str(tmp_path)), flag_set_for(version)).args
    assert ours == real
