"""docs/architecture.md says what a snapshot holds: its schema block names exactly the keys the
probe writes (checked on the real 2x H200 fixture), and the real fixtures' README.md files say what
their captures say."""

from __future__ import annotations

import json
import os
import re

import pytest
from conftest import FIXTURES, ROOT

DOC = os.path.join(ROOT, "docs", "architecture.md")
REAL = {"h200-2x-nvswitch-vm": 2, "h200-4x-nvswitch-vm": 4}


def schema_block() -> list[str]:
    text = open(DOC, encoding="utf-8").read()
    section = text[text.index("## Snapshot (schema_version 1)") :]
    body = section[section.index("```yaml\n") + len("```yaml\n") :]
    return [
        re.sub(r"\s+#.*$", "", line).rstrip() for line in body[: body.index("```")].splitlines()
    ]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _balanced(text: str) -> str:
    """The first `{...}` of `text`, braces balanced (`{a, b}|null` -> `{a, b}`)."""
    text = text[text.index("{") :]
    depth = 0
    for position, char in enumerate(text):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth == 0:
            return text[: position + 1]
    raise AssertionError(f"unbalanced braces: {text}")


def _flow_keys(text: str) -> set[str]:
    """Keys of a one-level flow mapping written `{a, b: x, c: [..], d: {..}}` (bare names are keys
    too)."""
    items, depth, current = [], 0, ""
    for char in _balanced(text)[1:-1]:
        if char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    items.append(current)
    return {item.split(":")[0].strip() for item in items if item.strip()}


def keys(path: list[str]) -> set[str]:
    """Keys under `path` in the doc's block: ["gpus"] means the keys of a GPU entry, ["gpus",
    "pcie"] of its pcie."""
    lines = [line for line in schema_block() if line.strip()]
    start, indent = 0, -2
    for depth, name in enumerate(path):
        for number in range(start, len(lines)):
            line = lines[number]
            stripped = line.strip().removeprefix("- ")
            level = _indent(line) + (2 if line.strip().startswith("- ") else 0)
            if number > start and level <= indent:
                raise AssertionError(
                    f"{'.'.join(path)} not in the doc's schema block"
                )  # left the parent's block
            if (level == 0 if depth == 0 else level > indent) and stripped.startswith(f"{name}:"):
                start, indent = number, level
                break
        else:
            raise AssertionError(f"{'.'.join(path)} not in the doc's schema block")
    line = lines[start]
    rest = line.split(":", 1)[1].strip()
    if rest.startswith("{"):
        text, number = rest, start
        while text.count("{") != text.count("}"):
            number += 1
            text += " " + lines[number].strip()
        return _flow_keys(text)
    found: set[str] = set()
    child = None
    for line in lines[start + 1 :]:
        level = _indent(line) + (2 if line.strip().startswith("- ") else 0)
        if level <= indent:
            break
        child = level if child is None else child
        if level == child:
            match = re.match(r"(?:- )?([a-z0-9_]+):", line.strip())
            if match:
                found.add(match.group(1))
    return found


def top_keys() -> set[str]:
    return {
        match.group(1) for line in schema_block() if (match := re.match(r"([a-z0-9_]+):", line))
    }


@pytest.fixture(scope="module")
def real():
    with open(
        os.path.join(FIXTURES, "h200-2x-nvswitch-vm", "snapshot.json"), encoding="utf-8"
    ) as handle:
        return json.load(handle)


def test_top_level_keys_match_the_real_fixture(real):
    assert top_keys() == set(real)


def test_gpu_keys_match_the_real_fixture(real):
    assert keys(["gpus"]) == set(real["gpus"][0])
    assert keys(["gpus", "pcie"]) == set(real["gpus"][0]["pcie"])
    assert keys(["gpus", "nvlink"]) == set(real["gpus"][0]["nvlink"])
    assert keys(["gpus", "nvlink", "remote"]) == set(real["gpus"][0]["nvlink"]["remote"])
    assert keys(["gpus", "fabric"]) == set(real["gpus"][0]["fabric"])


def test_bridge_keys_match_a_fixture_with_bridges():
    with open(
        os.path.join(FIXTURES, "rtx-pro-6000-8x-pcie", "snapshot.json"), encoding="utf-8"
    ) as handle:
        bridge = json.load(handle)["gpus"][0]["pcie_bridges"][0]
    block = "\n".join(schema_block())
    listed = re.search(r"pcie_bridges:.*?\n\s+- (\{[^}]*\})", block, re.S)
    assert listed and _flow_keys(listed.group(1)) == set(bridge)


def test_the_other_sections_match_the_real_fixture(real):
    assert keys(["source"]) == set(real["source"])
    assert keys(["host"]) == set(real["host"])
    assert keys(["pairs"]) == set(
        real["pairs"][0]
    )  # recorded --with-torch: torch_can_access_peer too
    assert keys(["pairs", "p2p"]) == set(real["pairs"][0]["p2p"])
    assert keys(["nvlink"]) == set(real["nvlink"])
    assert keys(["pcie"]) == set(real["pcie"])
    assert keys(["software"]) == set(real["software"])
    assert keys(["summary"]) == set(real["summary"])


def test_nvlink_version_comment_matches_the_probe_table():
    from topoctl.probe.nvml import NVLINK_VERSION_NAME

    line = next(line for line in open(DOC, encoding="utf-8") if "version: int|null" in line)
    assert "?" not in line
    for code, name in re.findall(r"(\d+) = (\d\.\d)", line):
        assert NVLINK_VERSION_NAME[int(code)] == name


@pytest.mark.parametrize("name,count", sorted(REAL.items()))
def test_real_fixture_readme_says_what_its_capture_says(name, count):
    folder = os.path.join(FIXTURES, name)
    readme = open(os.path.join(folder, "README.md"), encoding="utf-8").read()
    with open(os.path.join(folder, "capture.json"), encoding="utf-8") as handle:
        capture = json.load(handle)
    with open(os.path.join(folder, "snapshot.json"), encoding="utf-8") as handle:
        snapshot = json.load(handle)
    assert "REAL" in readme and "SYNTHETIC" not in readme and capture["synthetic"] is False
    assert f"NVIDIA H200 x{count}" in readme and snapshot["summary"]["gpu_count"] == count
    assert {gpu["name"] for gpu in snapshot["gpus"]} == {"NVIDIA H200"}
    software = snapshot["software"]
    for fact in (
        software["driver"],
        f"CUDA {software['cuda_driver']}",
        f"torch {software['torch']}",
        f"NCCL {software['nccl']}",
        capture["recorded_at"],
    ):
        assert fact in readme, fact
    links = {gpu["nvlink"]["active_links"] for gpu in snapshot["gpus"]}
    versions = {gpu["nvlink"]["version_name"] for gpu in snapshot["gpus"]}
    assert links == {18} and versions == {"4.0"} and "18 NVLink 4.0 links per GPU" in readme
    assert {pair["link"] for pair in snapshot["pairs"]} == {"NV18"} and "NV18" in readme
    assert (
        all(gpu["virtualization_mode"] == "passthrough" for gpu in snapshot["gpus"])
        and "pass-through" in readme
    )
    for path in (
        "scripts/real_hardware_check.sh",
        "--with-torch --record",
        "tests/probe/test_nvidia_smi.py",
    ):
        assert path in readme, path
    for output in sorted(os.listdir(folder)):
        if output.startswith("nvidia-smi-"):
            assert output in readme, output
