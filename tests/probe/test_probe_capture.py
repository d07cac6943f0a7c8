"""Capture replay reads typed answers: a value of the wrong type is exit 2 naming the answer, never
a status.

An NVML P2P status is an integer code (0 is NVML_P2P_STATUS_OK); JSON's false equals 0 in Python, so
an untyped replay read `{"ok": false}` as "P2P OK" and a box without P2P passed a launch that must
be blocked.
"""

from __future__ import annotations

import json
import os

import pytest
from conftest import FIXTURES

NO_P2P = os.path.join(FIXTURES, "rtx-4090-2x-pcie-no-p2p", "capture.json")


def _capture(tmp_path, change) -> str:
    with open(NO_P2P, encoding="utf-8") as handle:
        data = json.load(handle)
    change(data)
    path = tmp_path / "capture.json"
    path.write_text(json.dumps(data))
    return str(path)


def _p2p_keys(data) -> list[str]:
    return [key for key in data["nvml"] if key.startswith("nvmlDeviceGetP2PStatus|")]


@pytest.mark.parametrize("value", [False, True, 0.0, "0", None, [0]])
def test_a_p2p_status_of_another_type_is_exit_2_naming_the_answer(cli, tmp_path, value):
    def change(data):
        for key in _p2p_keys(data):
            data["nvml"][key] = {"ok": value}

    code, out, err = cli(["probe", "--from-capture", _capture(tmp_path, change)])
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 2
    assert "nvmlDeviceGetP2PStatus|" in lines[0] and ".ok must be an integer" in lines[0]


def test_the_untouched_capture_still_blocks_custom_allreduce(cli, tmp_path):
    snapshot = tmp_path / "snap.json"
    code, _, err = cli(["probe", "--from-capture", NO_P2P, "-o", str(snapshot), "--format", "json"])
    assert code == 0, err
    code, out, _ = cli(
        [
            "check",
            "--topology",
            str(snapshot),
            "--sglang-version",
            "0.5.13",
            "--",
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "m",
            "--tp-size",
            "2",
        ]
    )
    assert code == 1 and "custom-allreduce-without-p2p" in out


@pytest.mark.parametrize("answer", [{"ok": 0, "err": "x"}, {}, {"value": 0}, {"err": 5}, [0], "OK"])
def test_an_answer_that_is_neither_ok_nor_err_is_exit_2(cli, tmp_path, answer):
    def change(data):
        data["nvml"][_p2p_keys(data)[0]] = answer

    code, _, err = cli(["probe", "--from-capture", _capture(tmp_path, change)])
    assert code == 2 and "nvmlDeviceGetP2PStatus|" in err


@pytest.mark.parametrize(
    "key, value",
    [
        ("nvmlDeviceGetCount", "2"),
        ("nvmlDeviceGetMemoryInfo|0", -1),
        ("nvmlDeviceGetName|0", 7),
        ("nvmlDeviceGetCudaComputeCapability|0", [8]),
        ("nvmlDeviceGetTopologyCommonAncestor|0|1", True),
    ],
)
def test_other_nvml_answers_are_typed_too(cli, tmp_path, key, value):
    def change(data):
        data["nvml"][key] = {"ok": value}

    code, _, err = cli(["probe", "--from-capture", _capture(tmp_path, change)])
    assert code == 2 and key in err
