"""The launch corpus (tests/data/launch_corpus/, files in the forms public repositories use, each naming the
public file it follows): every file is judged as expected.yaml says, decided from SGLang's source. This is the
test of record for check: no false block, no "no launch" on a file that holds one, every finding at its line."""
from __future__ import annotations

import json
import os
import re

import pytest
import yaml
from conftest import LAUNCH_CORPUS

EXPECTED = yaml.safe_load(open(os.path.join(LAUNCH_CORPUS, "expected.yaml"), encoding="utf-8"))


def _line(where: str) -> int | None:
    match = re.match(r"^(.*?):(\d+)(?: \(.*\))?$", where or "")
    return int(match.group(2)) if match else None


def judged(cli, relative: str) -> tuple[list[tuple[int, str, list[str]]], list[int]]:
    """(launches as [line, verdict, blocking ids], lines without a launch) as `topoctl check --format json` says."""
    entry = EXPECTED[relative]
    system = entry.get("system", "h100-8x-nvswitch")
    code, out, err = cli(["check", os.path.join(LAUNCH_CORPUS, relative), "--system", system, "--format", "json"])
    assert code in (0, 1), err
    doc = json.loads(out)
    launches = []
    for result in doc["results"]:
        line = _line(result["origin"]) or 1
        verdict = "block" if result["blocking"] else "warn" if result["warnings"] else "ok"
        ids = []
        for item in result["findings"]:
            if item["severity"] != "block":
                continue
            at = _line(item["where"])
            ids.append(item["id"] if at in (None, line) else f"{item['id']}@{at}")
        launches.append((line, verdict, sorted(ids)))
    return sorted(launches), sorted(_line(item["origin"]) or 1 for item in doc["no_launch"])


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_each_corpus_file_is_judged_as_sglang_would_run_it(cli, relative):
    launches, none = judged(cli, relative)
    entry = EXPECTED[relative]
    assert launches == sorted((line, verdict, sorted(ids)) for line, verdict, ids in entry["launches"])
    assert none == sorted(entry.get("none", []))


def test_the_corpus_covers_every_kind_with_sixty_launch_files():
    holding = [name for name, entry in EXPECTED.items() if entry["launches"]]
    assert len(holding) >= 60
    kinds = {name.split("/", 1)[0] for name in holding}
    assert kinds >= {"scripts", "kubernetes", "lws", "dynamo", "ome", "kserve", "skypilot", "docker", "helm",
                     "compose", "env"}
    listed = set()
    for root, _, files in os.walk(LAUNCH_CORPUS):
        for name in files:
            relative = os.path.relpath(os.path.join(root, name), LAUNCH_CORPUS)
            if name in ("expected.yaml", "Chart.yaml", "values.yaml") or "/templates/" in f"/{relative}":
                continue
            listed.add(relative)
    charts = {name for name in EXPECTED if name.startswith("helm/")}
    assert listed == set(EXPECTED) - charts  # every file of the corpus has its expectation, and no more


def test_every_corpus_file_names_the_public_form_it_follows():
    for root, _, files in os.walk(LAUNCH_CORPUS):
        for name in files:
            if name == "expected.yaml" or "/templates/" in root + "/":
                continue
            with open(os.path.join(root, name), encoding="utf-8") as handle:
                head = handle.read(600)
            assert "Form: " in head and "Written for the topoctl" in head, os.path.join(root, name)
