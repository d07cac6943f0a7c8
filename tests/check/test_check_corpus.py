"""The launch corpus (tests/data/launch_corpus/, files in the forms public repositories use, each
naming the public file it follows): every file is judged as expected.yaml says, decided from
SGLang's source. This is the test of record for check: no false block, no "no launch" on a file that
holds one, every finding at its line."""

from __future__ import annotations

import json
import os
import re

import pytest
import yaml
from conftest import LAUNCH_CORPUS, ROOT

EXPECTED = yaml.safe_load(open(os.path.join(LAUNCH_CORPUS, "expected.yaml"), encoding="utf-8"))


def _line(where: str) -> int | None:
    match = re.match(r"^(.*?):(\d+)(?: \(.*\))?$", where or "")
    return int(match.group(2)) if match else None


def judged(cli, relative: str) -> tuple[list[tuple[int, str, list[str]]], list[int]]:
    """(launches as [line, verdict, blocking ids], lines without a launch) as `topoctl check
    --format json` says."""
    entry = EXPECTED[relative]
    system = entry.get("system", "h100-8x-nvswitch")
    code, out, err = cli(
        ["check", os.path.join(LAUNCH_CORPUS, relative), "--system", system, "--format", "json"]
    )
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
    assert launches == sorted(
        (line, verdict, sorted(ids)) for line, verdict, ids in entry["launches"]
    )
    assert none == sorted(entry.get("none", []))


def test_the_corpus_covers_every_kind_with_sixty_launch_files():
    holding = [name for name, entry in EXPECTED.items() if entry["launches"]]
    assert len(holding) >= 60
    kinds = {name.split("/", 1)[0] for name in holding}
    assert kinds >= {
        "scripts",
        "kubernetes",
        "lws",
        "dynamo",
        "ome",
        "kserve",
        "skypilot",
        "docker",
        "helm",
        "compose",
        "env",
    }
    listed = set()
    for root, _, files in os.walk(LAUNCH_CORPUS):
        for name in files:
            relative = os.path.relpath(os.path.join(root, name), LAUNCH_CORPUS)
            if (
                name in ("expected.yaml", "oracle.json", "Chart.yaml", "values.yaml")
                or "/templates/" in f"/{relative}"
            ):
                continue
            listed.add(relative)
    charts = {name for name in EXPECTED if name.startswith("helm/")}
    assert (
        listed == set(EXPECTED) - charts
    )  # every file of the corpus has its expectation, and no more


def test_every_corpus_file_names_the_public_form_it_follows():
    for root, _, files in os.walk(LAUNCH_CORPUS):
        for name in files:
            if name in ("expected.yaml", "oracle.json") or "/templates/" in root + "/":
                continue
            with open(os.path.join(root, name), encoding="utf-8") as handle:
                head = handle.read(600)
            assert "Form: " in head and "Written for the topoctl" in head, os.path.join(root, name)


# ------------------------------------------------------------------------------------- decided from
# SGLang's source Each expected verdict says why in `why`: citations of a release's own file and
# line (`sglang==V path:LINE what`), and `oracle sglang==V ...` for what that release's parser and
# post-init said of the file's argv (oracle.json, written by scripts/sglang_oracle/corpus.py from
# the release wheels; `--verify-citations` prints each cited line).
CITATION = re.compile(
    r"^(?P<oracle>oracle )?sglang==(?P<version>\d+\.\d+\.\d+(?:\.post\d+)?) "
    r"(?P<path>sglang/[A-Za-z0-9_/]+\.py):(?P<line>[1-9]\d*) \S.*$"
)
ORACLE = json.load(open(os.path.join(LAUNCH_CORPUS, "oracle.json"), encoding="utf-8"))["files"]
FLAG_BLOCKS = {"sglang-unknown-flag", "sglang-unrecognized-arguments"}
SIZE_BLOCKS = {
    "topoctl-tp-exceeds-gpus",
    "sglang-tp-exceeds-given-gpus",
    "topoctl-tp-exceeds-visible-gpus",
}


def _releases() -> set[str]:
    with open(
        os.path.join(ROOT, "rules", "sglang", "generated", "releases.json"), encoding="utf-8"
    ) as handle:
        return {entry["version"] for entry in json.load(handle)["releases"]}


def _blocking(entry: dict, line: int) -> list[list[str]]:
    return [[i.split("@")[0] for i in ids] for at, _, ids in entry["launches"] if at == line]


def test_citation_format_is_checked():
    assert CITATION.match("sglang==0.5.21 sglang/srt/entrypoints/engine.py:1966 ranks per node")
    assert CITATION.match("oracle sglang==0.5.12.post1 sglang/srt/server_args.py:7746 parses: ok")
    for bad in (
        "sglang 0.5.21 sglang/srt/engine.py:10 x",
        "sglang==0.5.21 srt/engine.py:10 x",
        "sglang==0.5.21 sglang/srt/engine.py:0 x",
        "sglang==0.5.21 sglang/srt/engine.py x",
        "read it",
    ):
        assert not CITATION.match(bad), bad


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_each_expected_verdict_cites_the_sglang_source_it_rests_on(relative):
    entry = EXPECTED[relative]
    assert entry.get("why"), f"{relative}: no `why`"
    versions = set()
    for text in entry["why"]:
        match = CITATION.match(text)
        assert match, f"{relative}: {text!r} is not `sglang==X.Y.Z sglang/...py:LINE what`"
        assert match.group("version") in _releases(), text
        if match.group("oracle"):
            versions.add(match.group("version"))
    # every release that reads a launch of the file is cited with its oracle outcome
    assert versions == {launch["version"] for launch in ORACLE[relative]}, relative


def test_the_oracle_record_covers_every_launch_of_the_corpus():
    assert set(ORACLE) == set(EXPECTED)
    for relative, entry in EXPECTED.items():
        assert sorted(launch["line"] for launch in ORACLE[relative]) == sorted(
            line for line, _, _ in entry["launches"]
        )


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_each_expected_verdict_agrees_with_sglang_own_parser_and_post_init(relative):
    """A launch SGLang's parser refuses blocks with a flag finding; one it takes blocks on no flag;
    one whose post-init raises blocks, unless the raise reads the machine it runs on
    (`oracle_machine_only`, its place cited), and so does one the engine's check_server_args
    refuses (`engine_check`) at sizes the file writes; the ranks one node runs (SGLang's tp_size // (nnodes
    // pp_size), read from its final ServerArgs) above the reference system's GPUs block."""
    from topoctl.snapshot.catalogue import system_snapshot

    entry = EXPECTED[relative]
    gpus = len(system_snapshot(entry.get("system", "h100-8x-nvswitch"))["gpus"])
    for launch in ORACLE[relative]:
        outcome, line = launch["sglang"], launch["line"]
        blocks = _blocking(entry, line)
        if outcome["kind"] == "argparse-error":
            assert all(FLAG_BLOCKS & set(ids) for ids in blocks), (
                relative,
                line,
                outcome["message"],
            )
            continue
        assert not any(FLAG_BLOCKS & set(ids) for ids in blocks), (relative, line)
        if outcome["kind"] == "startup-error":
            machine_only = line in entry.get("oracle_machine_only", [])
            assert machine_only or all(ids for ids in blocks), (relative, line, outcome)
            assert not machine_only or any(outcome["at"] in text for text in entry["why"]), (
                relative,
                outcome["at"],
            )
            continue
        final = outcome["final"]
        if "--nnodes" in launch["stand_ins"] or "--tp-size" in launch["stand_ins"]:
            continue  # a size the file leaves to run time: named by check, not judged here
        engine = outcome.get("engine_check") or {"kind": "ok"}
        # check_server_args, which the engine runs before any process: its refusal blocks
        assert engine["kind"] != "startup-error" or all(ids for ids in blocks), (
            relative,
            line,
            engine,
        )
        per_node = final["tp_size"] // max(final["nnodes"] // max(final["pp_size"], 1), 1)
        if per_node > gpus:
            assert all(SIZE_BLOCKS & set(ids) for ids in blocks), (relative, line, per_node)


def test_the_oracle_judged_the_argv_check_reads_today():
    """The record is of today's reading: the same release and argv for every launch (else regenerate
    it: scripts/sglang_oracle/corpus.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "corpus_oracle", os.path.join(ROOT, "scripts", "sglang_oracle", "corpus.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for relative, entry in sorted(EXPECTED.items()):
        now = module.corpus_launches(relative, entry.get("system", "h100-8x-nvswitch"))
        recorded = ORACLE[relative]
        assert [(n["line"], n["version"], n["read"], n["env"]) for n in now] == [
            (r["line"], r["version"], r["read"], r["env"]) for r in recorded
        ], relative
