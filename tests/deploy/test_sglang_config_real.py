"""topoctl's `--config` merge held to SGLang's own ConfigArgumentMerger, run from the release
wheels.

In CI: the argument list SGLang's `prepare_server_args` handed argparse for each config file of
scripts/dump_real_parsers.py CONFIGS, recorded per release in
tests/data/real_parsers/sglang-config.json.xz, must be the one topoctl.deploy.launcher_args builds.
Where the wheels are (TOPOCTL_SGLANG_WHEELS, as for tests/rules/test_sglang_real_parser.py) SGLang's
code runs again (scripts/sglang_flags/real_parser.py, with PyYAML imported for real so that the
config file is read) and must give the recording.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from topoctl.cli.commands._options import flag_set_for
from topoctl.deploy.launcher_args import prepare
from topoctl.deploy.launchers import Launch

sys.path.insert(0, os.path.join(ROOT, "scripts"))
from dump_real_parsers import CONFIG_COMMAND, CONFIG_RELEASES, CONFIGS, read_dump, unpack_sglang  # noqa: E402

WHEELS = os.environ.get("TOPOCTL_SGLANG_WHEELS", "")
RECORDED = read_dump("sglang-config")


def _ours(version: str, name: str, folder: Path) -> list[str]:
    config = folder / "c.yaml"
    config.write_text(CONFIGS[name], encoding="utf-8")
    cli = [str(config) if word == "{config}" else word for word in CONFIG_COMMAND]
    args = prepare(
        Launch("sglang.launch_server", args=cli, base_dir=str(folder)), flag_set_for(version)
    ).args
    return ["{config}" if word == str(config) else word for word in args]


def test_the_recording_covers_each_config_behaviour_boundary():
    assert sorted(RECORDED["releases"]) == sorted(CONFIG_RELEASES)
    assert RECORDED["configs"] == CONFIGS and RECORDED["command"] == CONFIG_COMMAND


@pytest.mark.parametrize("version", CONFIG_RELEASES)
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_merged_argument_list_is_sglangs(version, name, tmp_path):
    assert _ours(version, name, tmp_path) == RECORDED["releases"][version][name]


def _wheels() -> list[Path]:
    return (
        [
            w
            for w in sorted(Path(WHEELS).glob("sglang-*.whl"))
            if w.name.split("-")[1] in CONFIG_RELEASES
        ]
        if WHEELS
        else []
    )


@pytest.mark.skipif(not _wheels(), reason="TOPOCTL_SGLANG_WHEELS names no folder of SGLang wheels")
@pytest.mark.parametrize("wheel", _wheels(), ids=lambda p: p.name.split("-")[1])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_sglang_merges_as_recorded(wheel, name, tmp_path):
    pytest.importorskip("msgspec")
    from dump_real_parsers import config_argv

    src = unpack_sglang(wheel, tmp_path / "src")
    assert (
        config_argv(src, CONFIGS[name], tmp_path)
        == RECORDED["releases"][wheel.name.split("-")[1]][name]
    )
