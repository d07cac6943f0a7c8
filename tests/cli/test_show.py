"""`topoctl show`: the matrix for people; colour only when asked or on a terminal; hostile text
stays on one line."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import fixture_dirs

from topoctl.cli.app import cli, main
from topoctl.probe.render_matrix import render
from topoctl.snapshot.catalogue import system_snapshot

SYSTEMS = [name for name in fixture_dirs() if name != "no-gpu"]
ESC = "\x1b"


@pytest.mark.parametrize("name", SYSTEMS)
def test_show_every_system(name):
    result = CliRunner().invoke(cli, ["show", "--system", name])
    assert result.exit_code == 0, result.output
    snapshot = system_snapshot(name)
    n = len(snapshot["gpus"])
    lines = result.output.splitlines()
    assert lines[0].split()[:n] == [f"GPU{i}" for i in range(n)]
    for i in range(n):
        row = lines[1 + i].split()
        assert row[0] == f"GPU{i}" and row[1 + i] == "X"
        for j in range(n):
            if j != i:
                pair = next(p for p in snapshot["pairs"] if (p["src"], p["dst"]) == (i, j))
                assert (
                    row[1 + j]
                    == f"{pair['link']}{'+' if pair['p2p']['read'] == pair['p2p']['write'] == 'OK' else '-'}"
                )
    assert ESC not in result.output
    assert "Legend:" in result.output


def test_show_marks_the_down_trained_gpu():
    out = CliRunner().invoke(cli, ["show", "--system", "l40s-4x-pcie-2numa"]).output
    gpu_lines = [
        line for line in out.splitlines() if line.startswith("GPU") and ":" in line.split()[0]
    ]
    assert [line.split(":")[0] for line in gpu_lines if "DOWN-TRAINED" in line] == ["GPU2"]
    assert "x8/16" in next(line for line in gpu_lines if line.startswith("GPU2:"))
    assert "P2P read+write OK on 4/12 ordered pairs" in out


def test_show_no_p2p_system():
    out = CliRunner().invoke(cli, ["show", "--system", "rtx-4090-2x-pcie-no-p2p"]).output
    assert "PHB-" in out and "PHB+" not in out and "0/2 ordered pairs" in out


def test_show_from_a_topology_file_json_and_yaml(tmp_path):
    for fmt in ("json", "yaml"):
        path = tmp_path / f"machine.{fmt}"
        assert (
            main(
                [
                    "probe",
                    "--from-capture",
                    os.path.join("fixtures", "rtx-pro-6000-8x-pcie")
                    if os.path.isdir("fixtures")
                    else _fixture("rtx-pro-6000-8x-pcie"),
                    "--format",
                    fmt,
                    "-o",
                    str(path),
                ]
            )
            == 0
        )
        result = CliRunner().invoke(cli, ["show", "--topology", str(path)])
        assert result.exit_code == 0 and "56/56 ordered pairs" in result.output


def _fixture(name: str) -> str:
    from conftest import FIXTURES

    return os.path.join(FIXTURES, name)


def test_no_colour_when_not_a_terminal():
    result = CliRunner().invoke(cli, ["show", "--system", "l40s-4x-pcie-2numa"])
    assert ESC not in result.output


def test_colour_when_asked():
    result = CliRunner().invoke(
        cli, ["show", "--system", "l40s-4x-pcie-2numa", "--color"], env={"NO_COLOR": ""}
    )
    assert (
        "\x1b[32m" in result.output and "\x1b[31m" in result.output and "\x1b[0m" in result.output
    )


def test_explicit_colour_flag_wins_over_no_color():
    result = CliRunner().invoke(
        cli, ["show", "--system", "l40s-4x-pcie-2numa", "--color"], env={"NO_COLOR": "1"}
    )
    assert "\x1b[32m" in result.output


def test_no_colour_with_no_color_flag_or_env():
    result = CliRunner().invoke(cli, ["show", "--system", "l40s-4x-pcie-2numa", "--no-color"])
    assert ESC not in result.output
    result = CliRunner().invoke(
        cli, ["show", "--system", "l40s-4x-pcie-2numa"], env={"NO_COLOR": "1"}
    )
    assert ESC not in result.output


def test_no_colour_in_a_real_pipe():
    result = subprocess.run(
        [sys.executable, "-m", "topoctl", "show", "--system", "h100-8x-nvswitch"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0 and ESC not in result.stdout and "NV18+" in result.stdout


def test_colour_and_plain_differ_only_by_escape_codes():
    import re

    snapshot = system_snapshot("l40s-4x-pcie-2numa")
    coloured = render(snapshot, color=True)
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == render(snapshot, color=False)


HOSTILE = "EVIL\nGPU\x1b[31m\r\x07\tname\u2028end"


def test_hostile_names_print_on_one_line(tmp_path):
    snapshot = copy.deepcopy(system_snapshot("rtx-4090-2x-pcie-no-p2p"))
    clean_lines = render(snapshot).count("\n")
    snapshot["gpus"][0]["name"] = HOSTILE
    snapshot["gpus"][1]["pci_bus_id"] = "00000000:41:00.0\n$(reboot)"
    snapshot["gpus"][0]["root_complex"] = "pci0000:00\x1b]0;title\x07"
    snapshot["pairs"][0]["link"] = "PHB\nINJECTED"
    snapshot["software"]["driver"] = "570\n\x1b[2J"
    snapshot["software"]["sglang"] = "0.5.5\r\nX"
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(snapshot))
    for color in ("--no-color", "--color"):
        result = CliRunner().invoke(
            cli, ["show", "--topology", str(path), color], env={"NO_COLOR": ""}
        )
        assert result.exit_code == 0
        out = result.output
        assert out.count("\n") == clean_lines
        for bad in ("\x1b[31mname", "\x1b]0", "\x1b[2J", "\r", "\x07", "\u2028"):
            assert bad not in out
        name_line = next(line for line in out.splitlines() if line.startswith("GPU0:"))
        assert "EVIL?GPU" in name_line and "end" in name_line
        assert not any(
            line.startswith("INJECTED") or line.startswith("$(reboot)") for line in out.splitlines()
        )


def test_show_rejects_bad_targets(capsys):
    assert main(["show", "--system", "no-such-box"]) == 2
    err = capsys.readouterr().err
    assert "unknown system 'no-such-box'" in err and "rtx-pro-6000-8x-pcie" in err
    assert (
        main(["show", "--system", "no-gpu"]) == 2
    )  # a capture that makes no snapshot is not a system
    capsys.readouterr()
    assert main(["show", "--system", "../fixtures"]) == 2
    assert main(["show", "--topology", "x.json", "--system", "h100-8x-nvswitch"]) == 2
    assert main(["show", "--topology", "/nonexistent/x.json"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err


def test_hostile_text_cannot_smuggle_escape_codes_into_coloured_output():
    import re

    snapshot = copy.deepcopy(system_snapshot("l40s-4x-pcie-2numa"))
    snapshot["gpus"][2]["name"] = HOSTILE
    snapshot["pairs"][3]["link"] = "SYS\x1b[5m"
    coloured = render(snapshot, color=True)
    ours = re.sub(r"\x1b\[(?:0|1|31|32|33)m", "", coloured)
    assert ESC not in ours
    assert coloured.count("\n") == render(system_snapshot("l40s-4x-pcie-2numa"), color=True).count(
        "\n"
    )
