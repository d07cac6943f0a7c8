"""examples/slurm/probe-nodes.sbatch runs as Slurm would run it: a stand-in `srun` starts the step
once per node with that node's SLURMD_NODENAME (what slurmd sets), and `topoctl probe` replays a
capture in place of the hardware. The script must leave one snapshot per node and end with `topoctl
fleet`'s verdict."""

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


def _run_sbatch(tmp_path, fail_on: str = ""):
    """The batch script under a stand-in srun (each node in turn, every task run even when one
    fails, exit 1 when any failed: Slurm's --kill-on-bad-exit=0) and the real topoctl replaying a
    capture (TOPOCTL_FROM_CAPTURE); the probe on `fail_on` fails as a node without a driver would.
    """
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    capture = os.path.join(FIXTURES, "h100-8x-8nic-ib")
    _executable(
        bin_dir / "srun",
        '#!/bin/sh\nwhile [ "${1#--}" != "$1" ]; do shift; done\nrc=0\n'
        'for n in gpu01 gpu02 gpu03; do SLURMD_NODENAME=$n "$@" || rc=1; done\nexit $rc\n',
    )
    _executable(
        bin_dir / "topoctl",
        f'#!/bin/sh\nif [ "$1" = probe ] && [ "$SLURMD_NODENAME" = "{fail_on}" ]; then\n'
        '  echo "topoctl: error: NVML: driver not loaded" >&2; exit 3; fi\n'
        f'exec {sys.executable} -m topoctl "$@"\n',
    )
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "SLURM_JOB_NODELIST": "gpu[01-03]",
        "TOPOCTL_FROM_CAPTURE": capture,
    }
    return subprocess.run(["bash", SBATCH], cwd=tmp_path, capture_output=True, text=True, env=env)


def test_sbatch_script_gathers_one_snapshot_per_node_and_compares_them(tmp_path):
    done = _run_sbatch(tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(tmp_path / "nodes")) == ["gpu01.yaml", "gpu02.yaml", "gpu03.yaml"]
    assert done.stdout.startswith("3 nodes: 3 alike, 0 differ from the majority")


def test_one_failed_probe_does_not_end_the_collection_and_is_named(tmp_path):
    nodes = tmp_path / "nodes"
    nodes.mkdir()
    (nodes / "gpu02.yaml").write_text("left over from an earlier job\n")
    os.utime(nodes / "gpu02.yaml", (1, 1))
    done = _run_sbatch(tmp_path, fail_on="gpu02")
    assert done.returncode == 1, done.stderr
    assert "a probe failed on some node" in done.stderr
    assert done.stdout.startswith(
        "3 nodes expected: 2 alike, 0 differ from the majority, 1 without a snapshot"
    )
    assert "gpu02: stale: its snapshot" in done.stdout and "NVML: driver not loaded" in done.stdout
    assert "NVML: driver not loaded" in (nodes / "gpu02.failed").read_text()


def test_probe_names_its_file_after_the_node(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("SLURMD_NODENAME", "gpu42")
    capture = os.path.join(FIXTURES, "h100-8x-8nic-ib")
    assert cli(["probe", "--from-capture", capture, "-o", str(tmp_path / "%N.yaml")])[0] == 0
    assert os.listdir(tmp_path) == ["gpu42.yaml"]
    assert cli(["probe", "--from-capture", capture, "-o", str(tmp_path / "100%%-%N.yaml")])[0] == 0
    assert "100%-gpu42.yaml" in os.listdir(tmp_path)
