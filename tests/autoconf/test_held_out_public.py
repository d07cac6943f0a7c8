"""The held-out public decode file (benchmarks/data/held-out-public.yaml): its schema, not the
model's accuracy.

Every row must say where its figure comes from (a source with an address, the place in it), what the
figure is (value, unit, metric), which SGLang ran it (a release, or 'unstated' with a date) and the
launch the report predicts (GPU, GPU count, TP, concurrency); a row the model cannot predict must
say why.
"""

from __future__ import annotations

import datetime
import os
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATH = os.path.join(ROOT, "benchmarks", "data", "held-out-public.yaml")
METRICS = {"tpot_ms": "ms", "stream_tok_s": "tok/s", "total_tok_s": "tok/s"}


def _doc() -> dict:
    with open(PATH, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


DOC = _doc()
CASES = DOC["cases"]


def test_the_file_says_it_is_held_out_and_when_it_was_added():
    head = open(PATH, encoding="utf-8").read().split("schema_version")[0]
    assert "HELD OUT" in head and "2026-12-07" in head and "Nothing was fitted or tuned" in head
    assert str(DOC["added"]) == "2026-12-07"


def test_there_are_at_least_26_rows_with_unique_ids():
    ids = [c["id"] for c in CASES]
    assert len(ids) >= 26
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_each_row_names_a_source_with_an_address_and_a_place(case):
    source = DOC["sources"].get(case["source"])
    assert source is not None, f"unknown source {case['source']}"
    assert str(source.get("url") or "").startswith("https://")
    assert source.get("what") and case.get("place")


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_each_row_has_a_figure_its_unit_and_what_it_measures(case):
    assert isinstance(case["figure"], (int, float)) and case["figure"] > 0
    assert case["metric"] in METRICS
    assert case["unit"] == METRICS[case["metric"]]
    assert case.get("harness")


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_each_row_names_a_release_or_a_date(case):
    release = str(case.get("sglang") or "")
    assert release, "sglang must be a release or 'unstated'"
    date = case.get("date")
    if not release[:1].isdigit():
        assert release.startswith("unstated") and date is not None
    if date is not None:
        assert isinstance(date, datetime.date)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_each_row_describes_the_launch_it_measured(case):
    for key in ("model", "gpu", "gpus", "tp", "concurrency", "quantization"):
        assert case.get(key) not in (None, ""), key
    assert int(case["gpus"]) >= int(case["tp"]) >= 1
    assert 1 <= int(case["concurrency"]) <= 100
    if not case.get("profile"):
        assert case.get("profile_note"), "a row without a profile says why"


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.get("spec")], ids=[c["id"] for c in CASES if c.get("spec")]
)
def test_a_speculative_row_gives_its_shape_and_a_baseline_of_the_file(case):
    spec = case["spec"]
    assert {"algorithm", "steps", "topk", "draft_tokens"} <= set(spec)
    base = next(c for c in CASES if c["id"] == case["baseline"])
    assert (
        base["spec"] is None
        and base["concurrency"] == case["concurrency"]
        and base["gpu"] == case["gpu"]
    )


def test_no_row_repeats_a_point_of_the_calibration_corpus():
    corpus = yaml.safe_load(
        open(os.path.join(ROOT, "benchmarks", "data", "public-decode.yaml"), encoding="utf-8")
    )
    used = {
        (c["gpu"], c["model"], c["tp"], float(c["tok_s"]))
        for c in corpus["cases"]
        if c.get("tok_s")
    }
    for case in CASES:
        if case["metric"] == "stream_tok_s":
            assert (
                case["gpu"],
                case.get("profile"),
                case["tp"],
                float(case["figure"]),
            ) not in used, case["id"]
        # SpecForge 339's batch-1 rows are corpus rows: only its larger batches may be here
        assert case["concurrency"] > 1 or case["source"] != "specforge-339"


def test_the_report_reads_every_row(capsys):
    # the report must list every row, predicted or with the reason it is not
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import held_out_report

    scored = held_out_report.score()
    assert [s.row["id"] for s in scored] == [c["id"] for c in CASES]
    assert all(s.predicted is not None or s.reason for s in scored)
