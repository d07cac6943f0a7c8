"""A release newer than the hand-read data fails here, not silently.

Adding an SGLang release (docs/sglang-versions.md, "Adding a release") rewrites the generated files
with scripts/regen.py; what a person reads in the release's source is data with a `read_through` or
a last release of its own. Each must reach the newest release of the flag data, or a launch on the
new release would quietly take the generic kernel path, the last memory variant, or no fusion
default.
"""

from __future__ import annotations

import json
import lzma
import os
import re

import yaml

from topoctl.core.pep440 import Version
from topoctl.rules.sglang.flags import known_versions
from topoctl.rules.sglang.releases import newest_release

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NEWEST = newest_release()
HOW = "read the release's source and move it (docs/sglang-versions.md, 'Adding a release')"


def _yaml(*parts: str) -> dict:
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _throughs(node: object) -> list[str]:
    """Every `through:` of a nested document."""
    if isinstance(node, dict):
        found = [str(node["through"])] if "through" in node else []
        return found + [t for value in node.values() for t in _throughs(value)]
    if isinstance(node, list):
        return [t for value in node for t in _throughs(value)]
    return []


def test_the_newest_flag_data_is_the_newest_listed_release():
    finals = [v for v in known_versions() if not Version(v).is_prerelease]
    assert finals[-1] == NEWEST


def test_the_kernel_paths_were_read_through_the_newest_release():
    doc = _yaml("autoconf", "data", "sglang-kernels.yaml")
    assert str(doc["read_through"]) == NEWEST, (
        f"sglang-kernels.yaml read_through {doc['read_through']}: {HOW}"
    )
    late = [t for t in _throughs(doc) if Version(t) > Version(NEWEST)]
    assert not late, f"entries through a release the data does not know: {late}"
    assert NEWEST in _throughs(doc), "no kernel entry holds for the newest release"


def test_the_memory_rules_end_at_the_newest_release():
    doc = _yaml("autoconf", "data", "sglang-memory.yaml")
    for section in ("buckets", "reserve", "prefill_graph", "multimodal"):
        last = max((entry["versions"][1] for entry in doc[section]), key=lambda v: Version(str(v)))
        assert str(last) == NEWEST, f"sglang-memory.yaml {section} ends at {last}: {HOW}"


def test_the_pcie_ipc_allreduce_data_was_read_through_the_newest_release():
    doc = _yaml("rules", "sglang", "data", "pcie-ipc-allreduce.yaml")
    assert str(doc["releases"]["read_through"]) == NEWEST, f"pcie-ipc-allreduce.yaml: {HOW}"
    assert NEWEST in doc["flashinfer_pins"], (
        "pcie-ipc-allreduce.yaml flashinfer_pins lacks the newest release"
    )


def test_the_generated_per_release_files_reach_the_newest_release():
    for parts in (
        ("autoconf", "generated", "sglang-model-lists.yaml"),
        ("rules", "knowledge", "sglang_fusion_auto_on.yaml"),
    ):
        with open(os.path.join(ROOT, *parts), encoding="utf-8") as handle:
            header = handle.readline()
        m = re.search(r"wheels (\S+)\.\.(\S+?);", header)
        assert m and m.group(2) == NEWEST, (
            f"{'/'.join(parts)}: rebuild with scripts/regen.py --wheels DIR"
        )


def test_the_recordings_and_the_oracle_cover_the_newest_release():
    with open(
        os.path.join(ROOT, "tests", "data", "real_parsers", "sglang-parsers.json.xz"), "rb"
    ) as handle:
        recorded = json.loads(lzma.decompress(handle.read()))
    assert NEWEST in recorded["releases"], (
        "re-record: scripts/regen.py --wheels DIR --only real-parsers"
    )
    assert os.path.exists(os.path.join(ROOT, "tests", "data", "oracle", f"sglang-{NEWEST}.json.gz"))
