"""The user-failure corpus (tests/data/kernel_failures.yaml): launches from public reports that
crashed on a kernel never built for the GPU, each blocked for that cause, or named as a gap."""

from __future__ import annotations

import json
import os

import pytest
import yaml
from click.testing import CliRunner

from topoctl.cli.app import cli

CORPUS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "kernel_failures.yaml")
with open(CORPUS, encoding="utf-8") as handle:
    CASES = yaml.safe_load(handle)


def _findings(case: dict) -> list[dict]:
    args = [
        "check",
        "--system",
        case["system"],
        "--sglang-version",
        case["sglang"],
        "--format",
        "json",
    ]
    args += ["--model", case["model"]] if case.get("model") else []
    argv = [*args, "--", "python", "-m", "sglang.launch_server", *case["argv"]]
    result = CliRunner().invoke(cli, argv)
    doc = json.loads(result.stdout)
    return [item for launch in doc["results"] for item in launch["findings"]]


@pytest.mark.parametrize(
    "case",
    CASES,
    ids=[c["source"].rsplit("/", 3)[-3] + "#" + c["source"].rsplit("/", 1)[-1] for c in CASES],
)
def test_each_public_failure_is_blocked_for_its_kernel(case):
    assert case["source"].startswith("https://github.com/")
    kernel_blocks = [
        f
        for f in _findings(case)
        if f["id"] == "topoctl-kernel-not-built" and f["severity"] == "block"
    ]
    if case["expect"] == "block":
        assert kernel_blocks, case["source"]
    else:
        assert not kernel_blocks, case["source"]
