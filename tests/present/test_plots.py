"""`topoctl plot p2p|allreduce` (topoctl/present/plots.py): measurements as pictures through the
optional `plot` extra."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

from topoctl.snapshot.catalogue import system_snapshot

NEEDS_MATPLOTLIB = pytest.mark.skipif(
    subprocess.run([sys.executable, "-c", "import matplotlib"], capture_output=True).returncode
    != 0,
    reason="matplotlib (the plot extra) is not installed here",
)


def _with_p2p(name: str, failed: tuple[int, int] | None = None) -> dict:
    """A reference system with P2P rows in the form topoctl bench writes (probe/bench/worker.py
    _pair_row); the bandwidths are test inputs, not measurements: 100 + 10*src + dst GB/s, so each
    cell is identifiable."""
    snapshot = copy.deepcopy(system_snapshot(name))
    gpus = [gpu["index"] for gpu in snapshot["gpus"]]
    rows = []
    for src in gpus:
        for dst in gpus:
            if src != dst:
                healthy = (src, dst) != failed
                rows.append(
                    {
                        "src": src,
                        "dst": dst,
                        "healthy": healthy,
                        "bytes": 268435456,
                        "latency_us": 2.0,
                        "reason": None if healthy else "timeout after 30 s (the copy hung)",
                        "bandwidth_gbps": {"one_way": 100.0 + 10 * src + dst, "both_ways": None},
                    }
                )
    snapshot["measurements"] = {
        "method": "topoctl bench 0.2.0",
        "measured_at": "2026-12-01T00:00:00Z",
        "gpus": gpus,
        "p2p": rows,
        "allreduce": [],
        "coalescing": [],
        "local_copy": [],
    }
    return snapshot


def test_p2p_matrix_places_each_measured_pair():
    from topoctl.present.plots import p2p_matrix

    gpus, matrix = p2p_matrix(_with_p2p("l40s-4x-pcie-2numa", failed=(2, 1)))
    assert gpus == [0, 1, 2, 3]
    assert matrix[0][3] == 103.0 and matrix[3][0] == 130.0 and matrix[1][1] is None
    assert matrix[2][1] is None  # the failed copy has no bandwidth to show


def test_allreduce_series_on_the_real_h200_measurements():
    from topoctl.present.plots import allreduce_series

    series = {line.label: line for line in allreduce_series(system_snapshot("h200-1x-vm"))}
    assert "nccl (eager)" in series and "torch_symm_mem/one_shot (CUDA graph)" in series
    nccl = series["nccl (eager)"].points
    assert [point[0] for point in nccl] == sorted(point[0] for point in nccl) and nccl[0][0] == 4096
    assert all(p10 <= median <= p90 for _, median, p10, p90 in nccl)


@NEEDS_MATPLOTLIB
def test_heatmap_svg_shows_the_values_and_the_failed_pair(cli, tmp_path):
    topology = tmp_path / "measured.json"
    topology.write_text(json.dumps(_with_p2p("l40s-4x-pcie-2numa", failed=(2, 1))))
    out = tmp_path / "p2p.svg"
    code, _, err = cli(["plot", "p2p", "--topology", str(topology), "-o", str(out)])
    assert code == 0, err
    svg = out.read_text()
    assert svg.lstrip().startswith("<?xml") and "GPU3" in svg and "one-way GB/s" in svg
    assert "<!-- 103 -->" in svg and "<!-- 130 -->" in svg and "<!-- - -->" in svg
    again = tmp_path / "again.svg"
    assert cli(["plot", "p2p", "--topology", str(topology), "-o", str(again)])[0] == 0
    assert again.read_bytes() == out.read_bytes()  # same data, same picture


@NEEDS_MATPLOTLIB
def test_allreduce_png_from_a_snapshot_with_measurements(cli, tmp_path):
    out = tmp_path / "allreduce.png"
    code, _, err = cli(["plot", "allreduce", "--system", "h200-1x-vm", "-o", str(out)])
    assert code == 0, err
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_nothing_measured_is_a_clear_error(cli, tmp_path):
    code, _, err = cli(["plot", "p2p", "--system", "h200-1x-vm", "-o", str(tmp_path / "p.svg")])
    assert code == 2 and "no measured P2P bandwidth" in err and "topoctl bench" in err
    code, _, err = cli(
        ["plot", "allreduce", "--system", "h100-8x-nvswitch", "-o", str(tmp_path / "a.svg")]
    )
    assert code == 2 and "no allreduce latency measured" in err
    assert not (tmp_path / "p.svg").exists() and not (tmp_path / "a.svg").exists()


def test_the_picture_name_picks_the_format(cli, tmp_path):
    code, _, err = cli(
        ["plot", "allreduce", "--system", "h200-1x-vm", "-o", str(tmp_path / "a.pdf")]
    )
    assert code == 2 and "must end in .svg or .png" in err


def test_without_matplotlib_one_line_and_the_extra_named(cli, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    code, _, err = cli(
        ["plot", "allreduce", "--system", "h200-1x-vm", "-o", str(tmp_path / "a.svg")]
    )
    assert code == 2
    assert "plots need matplotlib, which is not installed" in err and "pip install '.[plot]'" in err
    assert "Traceback" not in err and not (tmp_path / "a.svg").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "--system", "h200-1x-vm"],
        ["recommend", "--system", "h200-1x-vm", "--model", "llama-3.1-8b"],
        ["rules", "list"],
        [
            "check",
            "--system",
            "h200-1x-vm",
            "--",
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "M",
        ],
    ],
)
def test_show_recommend_check_and_rules_never_import_matplotlib(argv):
    run = (
        "import sys\nfrom topoctl.cli.app import main\ncode = main(sys.argv[1:])\nprint('LOADED' "
        "if [m for m in ('matplotlib', 'torch') if m in sys.modules] else 'CLEAN', "
        "file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", run, *argv], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "CLEAN"
