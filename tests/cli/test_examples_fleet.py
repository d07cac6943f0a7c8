"""examples/slurm/probe-nodes.sbatch runs as Slurm would run it: a stand-in `srun` starts the step once per
node with that node's SLURMD_NODENAME (what slurmd sets), and `topoctl probe` replays a capture in place of
the hardware. The script must leave one snapshot per node and end with `topoctl fleet`'s verdict."""
from __future__ import annotations

import os
import stat
import subprocess
import sys

from conftest import FIXTURES, ROOT

SBATCH = os.path.join(ROOT, "examples", "slurm", "probe-nodes.sbatch")


def _executable(path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_sbatch_script_gathers_one_snapshot_per_node_and_compares_them(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    capture = os.path.join(FIXTURES, "h100-8x-8nic-ib")
    # srun: run the step once per node of a 3-node allocation, as slurmd does, each with its node name
    _executable(bin_dir / "srun", '#!/bin/sh\nshift\nfor n in gpu01 gpu02 gpu03; do SLURMD_NODENAME=$n "$@" || exit 1; done\n')
    # topoctl: the real one; `probe` replays the fixture's capture instead of asking NVML
    _executable(bin_dir / "topoctl", f'#!/bin/sh\nif [ "$1" = probe ]; then set -- "$@" --from-capture {capture}; fi\n'
                                     f'exec {sys.executable} -m topoctl "$@"\n')
    done = subprocess.run(["bash", SBATCH], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(tmp_path / "nodes")) == ["gpu01.yaml", "gpu02.yaml", "gpu03.yaml"]
    assert done.stdout.startswith("3 nodes: 3 alike, 0 differ from the majority")


def test_probe_names_its_file_after_the_node(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("SLURMD_NODENAME", "gpu42")
    capture = os.path.join(FIXTURES, "h100-8x-8nic-ib")
    assert cli(["probe", "--from-capture", capture, "-o", str(tmp_path / "%N.yaml")])[0] == 0
    assert os.listdir(tmp_path) == ["gpu42.yaml"]
    assert cli(["probe", "--from-capture", capture, "-o", str(tmp_path / "100%%-%N.yaml")])[0] == 0
    assert "100%-gpu42.yaml" in os.listdir(tmp_path)
