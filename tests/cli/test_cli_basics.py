"""The CLI's front door: help, version, and bad input as one line with a hint (exit 2), never a
traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from topoctl import __version__
from topoctl.cli.app import cli as cli_group


def assert_one_line_error(err: str, *words: str) -> None:
    lines = err.strip().splitlines()
    assert "Traceback" not in err
    assert lines and lines[0].startswith("topoctl: error: ")
    assert len(lines) <= 2 and (len(lines) == 1 or lines[1].startswith("  hint: "))
    for word in words:
        assert word in lines[0]


def test_version(cli):
    code, out, _ = cli(["--version"])
    assert code == 0 and __version__ in out


def test_help_lists_subcommands_without_importing_them(cli):
    code, out, _ = cli(["--help"])
    assert code == 0
    for name in ("probe", "show", "recommend", "check", "rules"):
        assert name in out


def test_probe_help(cli):
    code, out, _ = cli(["probe", "--help"])
    assert code == 0 and "--from-capture" in out and "--record" in out and "Exit code 3" in out


def test_unknown_subcommand_and_option_exit_2(cli):
    code, _, err = cli(["frobnicate"])
    assert code == 2 and "Traceback" not in err
    code, _, err = cli(["probe", "--no-such-option"])
    assert code == 2 and "Traceback" not in err
    code, _, err = cli(["probe", "--format", "xml"])
    assert code == 2 and "Traceback" not in err


def test_missing_capture(cli, tmp_path):
    code, out, err = cli(["probe", "--from-capture", str(tmp_path / "nope.json")])
    assert code == 2 and out == ""
    assert_one_line_error(err, "no such capture")


def test_empty_folder_as_capture(cli, tmp_path):
    code, _, err = cli(["probe", "--from-capture", str(tmp_path)])
    assert code == 2
    assert_one_line_error(err, "no such capture")


@pytest.mark.parametrize(
    "content", ["not json at all", '{"capture_version": 1,', "", "\x00\x01\x02"]
)
def test_non_json_capture(content, cli, tmp_path):
    path = tmp_path / "capture.json"
    path.write_text(content)
    code, _, err = cli(["probe", "--from-capture", str(path)])
    assert code == 2
    assert_one_line_error(err, "not a valid capture")


def test_binary_capture(cli, tmp_path):
    path = tmp_path / "capture.json"
    path.write_bytes(b"\xff\xfe\x80\x81 binary")
    code, _, err = cli(["probe", "--from-capture", str(path)])
    assert code == 2
    assert_one_line_error(err)


WRONG_SHAPES = [
    [1, 2, 3],
    "a string",
    {"no": "version"},
    {"capture_version": 2, "nvml": {}},
    {"capture_version": "1", "nvml": {}},
    {"capture_version": 1, "nvml": []},
    {"capture_version": 1, "files": "x"},
    {
        "capture_version": 1,
        "nvml": {"nvmlInit": {"ok": None}, "nvmlDeviceGetCount": {"ok": "four"}},
    },
    {"capture_version": 1, "nvml": {"nvmlInit": {"ok": None}, "nvmlDeviceGetCount": {"ok": 10**9}}},
    {"capture_version": 1, "nvml": {"nvmlInit": {"ok": None}, "nvmlDeviceGetCount": {"ok": -1}}},
    {
        "capture_version": 1,
        "nvml": {
            "nvmlInit": {"ok": None},
            "nvmlDeviceGetCount": {"ok": 1},
            "nvmlDeviceGetPciInfo|0": {"ok": 7},
        },
    },
    {
        "capture_version": 1,
        "nvml": {
            "nvmlInit": {"ok": None},
            "nvmlDeviceGetCount": {"ok": 2},
            "nvmlDeviceGetNvLinkState|0|0": {"ok": 1},
            "nvmlDeviceGetNvLinkRemoteDeviceType|0|0": {"ok": [2]},
        },
    },
    {
        "capture_version": 1,
        "nvml": {"nvmlInit": {"ok": None}, "nvmlDeviceGetCount": {"ok": 1}},
        "torch": {"facts": {"ok": {"peer": {"x": True}}}},
    },
]


@pytest.mark.parametrize("document", WRONG_SHAPES, ids=range(len(WRONG_SHAPES)))
def test_wrong_shape_capture(document, cli, tmp_path):
    path = tmp_path / "capture.json"
    path.write_text(json.dumps(document))
    code, out, err = cli(["probe", "--from-capture", str(path), "--format", "json"])
    assert code == 2, err
    assert out == ""
    assert_one_line_error(err)


def test_wrong_shape_capture_in_a_real_subprocess(tmp_path):
    path = tmp_path / "capture.json"
    path.write_text(json.dumps(WRONG_SHAPES[-1]))
    result = subprocess.run(
        [sys.executable, "-m", "topoctl", "probe", "--from-capture", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr and result.stdout == ""


def test_record_and_replay_together_is_bad_usage(cli, tmp_path):
    code, _, err = cli(
        [
            "probe",
            "--record",
            str(tmp_path / "c.json"),
            "--from-capture",
            os.path.join(FIXTURES, "h100-8x-nvswitch"),
        ]
    )
    assert code == 2
    assert_one_line_error(err, "cannot be combined")
    assert not (tmp_path / "c.json").exists()


def test_output_into_a_missing_folder(cli, tmp_path):
    code, _, err = cli(
        [
            "probe",
            "--from-capture",
            os.path.join(FIXTURES, "h100-8x-nvswitch"),
            "-o",
            str(tmp_path / "no" / "such" / "dir.json"),
        ]
    )
    assert code == 2
    assert_one_line_error(err, "does not exist")


def test_an_old_capture_missing_new_questions_still_replays(cli, tmp_path):
    """Answers the capture never recorded become unknown fields (NotRecorded), the replay goes on."""
    with open(
        os.path.join(FIXTURES, "l40s-4x-pcie-2numa", "capture.json"), encoding="utf-8"
    ) as handle:
        capture = json.load(handle)
    for key in [k for k in capture["nvml"] if k.startswith("nvmlDeviceGetMaxPcieLinkWidth")]:
        del capture["nvml"][key]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(capture))
    code, out, err = cli(["probe", "--from-capture", str(path), "--format", "json"])
    assert code == 0, err
    snapshot = json.loads(out)
    assert all(snapshot["unknown"][f"gpus.{i}.pcie.max_width"] == "NotRecorded" for i in range(4))
    assert snapshot["summary"]["downtrained_gpus"] == []  # unknown, not claimed


def test_probe_stdout_is_yaml_by_default():
    import yaml

    result = CliRunner().invoke(
        cli_group, ["probe", "--from-capture", os.path.join(FIXTURES, "rtx-4090-2x-pcie-no-p2p")]
    )
    assert result.exit_code == 0
    assert yaml.safe_load(result.output)["summary"]["gpu_count"] == 2


def test_version_is_answered_without_click_and_agrees_with_the_flag_data():
    import subprocess
    import sys

    from topoctl.core.version import flag_data_versions, version_text
    from topoctl.rules.sglang.flags import known_versions, newest_version

    assert flag_data_versions() == known_versions()
    assert f"to {newest_version()};" in version_text()
    code = (
        "import sys; from topoctl.entry import main; main(['--version']); print(sorted(m for m "
        "in sys.modules if m.split('.')[0] == 'click' or m == 'topoctl.rules.sglang.flags'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.splitlines()[-1] == "[]" and out.startswith("topoctl ")
