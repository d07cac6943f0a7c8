"""The launch model reads `topoctl bench` rows by kind: a decode launch with CUDA graphs (SGLang's
default) takes the CUDA-graph rows, an eager one (--disable-cuda-graph) the eager rows; one kind
alone is used for both and the source says so. --explain and json name where every input came from.

Real rows: fixtures/h200-1x-vm (a real 1x H200 run, docs/bench.md). Synthetic rows: written here in
the format bench writes, on the shipped 8x H100 NVSwitch system (synthetic, see its README)."""

from __future__ import annotations

import copy
import json
import os

import pytest
from conftest import FIXTURES

from topoctl.autoconf import launch_model, memory, models
from topoctl.autoconf.gpu_specs import target_gpu
from topoctl.snapshot.catalogue import system_snapshot

SIZES = (4096, 16384, 65536, 262144, 1048576)


def _real() -> dict:
    with open(os.path.join(FIXTURES, "h200-1x-vm", "snapshot.json"), encoding="utf-8") as handle:
        return json.load(handle)


def test_real_rows_are_not_merged_across_graph_and_eager():
    curves = launch_model.measured_curves(_real())
    graph = curves[launch_model.GRAPH]["torch_symm_mem"][1]
    eager = curves[launch_model.EAGER]["torch_symm_mem"][1]
    # 4 KiB: one-shot 3.809 us / two-shot 3.6 us in a CUDA graph; 16.259 / 10.7 us eager (the slower
    # kept)
    assert dict(graph.points)[4.0] == 3.809 and dict(eager.points)[4.0] == 16.259
    assert (
        len(graph.points) == len({p[0] for p in graph.points}) == 14
    )  # one point per size, not two
    assert "CUDA-graph rows" in graph.source and "eager rows" in eager.source
    # NCCL's CUDA-graph rows are unavailable at world size 1 (empty capture): only eager rows exist
    assert "nccl" in curves[launch_model.EAGER] and "nccl" not in curves[launch_model.GRAPH]


def _rows(path: str, graph: bool, us: float) -> list[dict]:
    return [
        {
            "path": path,
            "world_size": 8,
            "gpus": list(range(8)),
            "bytes": size,
            "dtype": "bfloat16",
            "cuda_graph": graph,
            "latency_us": {"median": us, "p10": us * 0.98, "p90": us * 1.05},
            "repetitions": 100,
            "status": "ok",
            "reason": None,
        }
        for size in SIZES
    ]


def _snapshot(rows: list[dict]) -> dict:
    snapshot = copy.deepcopy(system_snapshot("h100-8x-nvswitch"))
    snapshot["measurements"] = {
        "method": "synthetic (tests/autoconf/test_launch_model_measured.py)",
        "backend": "nccl",
        "gpus": list(range(8)),
        "p2p": [],
        "allreduce": rows,
        "coalescing": [],
    }
    return snapshot


def _write(tmp_path, rows: list[dict], name: str) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(_snapshot(rows)))
    return str(path)


# NCCL faster than custom allreduce in a CUDA graph (20 against 30 us); eagerly custom is much the
# faster (3 against 200 us), so rows merged across the two kinds would pick custom allreduce for a
# CUDA-graph launch.
BOTH = (
    _rows("nccl", True, 20.0)
    + _rows("nccl", False, 200.0)
    + _rows("custom", True, 30.0)
    + _rows("custom", False, 3.0)
)


def _per_call(snapshot: dict, path: str, launch: dict) -> launch_model.Estimate:
    gpu = target_gpu(snapshot)
    model = models.profile("llama-3.1-70b")
    fit = memory.fit(memory.FitCase(model, gpu["memory_bytes"], 8, "0.5.12", False))
    est = launch_model.estimate(
        launch_model.EstimateCase(
            model, dict({"tp_size": 8}, **launch), path, gpu, launch_model.Latencies(snapshot), fit
        )
    )
    assert est is not None
    return est


def test_graph_launch_takes_graph_rows_and_eager_launch_eager_rows():
    snapshot = _snapshot(BOTH)
    graph = _per_call(snapshot, "nccl", {})
    eager = _per_call(snapshot, "nccl", {"cuda_graph": False})
    assert graph.allreduce_us == 160 * 20.0 and eager.allreduce_us == 160 * 200.0
    assert (
        "nccl CUDA-graph rows" in graph.allreduce_source
        and "nccl eager rows" in eager.allreduce_source
    )
    assert _per_call(snapshot, "custom", {"cuda_graph": False}).allreduce_us == 160 * 3.0


def test_one_kind_measured_is_used_and_said(tmp_path, cli):
    snapshot = _snapshot(_rows("nccl", False, 5.0) + _rows("custom", False, 80.0))
    est = _per_call(snapshot, "nccl", {})
    assert est.allreduce_us == 160 * 5.0
    assert "only eager rows were measured for nccl" in est.allreduce_source
    code, out, err = cli(
        [
            "recommend",
            "--topology",
            _write(
                tmp_path, _rows("nccl", False, 5.0) + _rows("custom", False, 80.0), "eager-only"
            ),
            "--model",
            "llama-3.1-70b",
            "--format",
            "json",
        ]
    )
    assert code == 0, err
    inputs = {item["name"]: item for item in json.loads(out)["chosen"]["estimate"]["inputs"]}
    call = inputs["allreduce latency per call (decode)"]
    assert call["value"] == 5.0 and "only eager rows were measured" in call["source"]
    assert call["origin"].startswith("measured in the snapshot (nccl eager rows")


def test_recommend_follows_the_graph_rows_end_to_end(tmp_path, cli):
    # graphs on by default: NCCL's 20 us graph rows win over custom's 30 us, whatever the eager rows
    # say
    code, out, err = cli(
        ["recommend", "--topology", _write(tmp_path, BOTH, "both"), "--model", "llama-3.1-70b"]
    )
    assert code == 0, err
    args = next(line for line in out.splitlines() if line.startswith("SGLANG_ARGS="))
    assert "--disable-custom-all-reduce" in args  # NCCL chosen
    flipped = (
        _rows("nccl", True, 30.0)
        + _rows("nccl", False, 3.0)
        + _rows("custom", True, 20.0)
        + _rows("custom", False, 200.0)
    )
    code, out, err = cli(
        [
            "recommend",
            "--topology",
            _write(tmp_path, flipped, "flipped"),
            "--model",
            "llama-3.1-70b",
        ]
    )
    assert code == 0, err
    args = next(line for line in out.splitlines() if line.startswith("SGLANG_ARGS="))
    assert "--disable-custom-all-reduce" not in args  # custom's graph rows are the faster ones now


def test_explain_says_measured_not_modelled(tmp_path, cli):
    code, out, err = cli(
        [
            "recommend",
            "--topology",
            _write(tmp_path, BOTH, "both"),
            "--model",
            "llama-3.1-70b",
            "--explain",
            "-o",
            str(tmp_path / "launch.env"),
        ]
    )
    assert code == 0, err
    text = out + err
    chosen = next(line for line in text.splitlines() if line.startswith("chosen:"))
    assert "modelled" not in chosen
    assert "allreduce latency: measured in the snapshot (nccl CUDA-graph rows)" in chosen
    call = next(line for line in text.splitlines() if "input: allreduce latency per call" in line)
    assert "[measured in the snapshot (nccl CUDA-graph rows)]" in call


def test_explain_names_the_cited_table_and_the_field_report(cli):
    code, out, err = cli(
        ["recommend", "--system", "h100-8x-nvswitch", "--model", "llama-3.1-70b", "--explain"]
    )
    assert code == 0, err
    text = out + err
    call = next(line for line in text.splitlines() if "input: allreduce latency per call" in line)
    # both GPUs have op tables (autoconf/step_model.py): the call is their row, named by its file
    assert "[op table, reference (h100_sxm)]" in call and "custom_allreduce_perf.parquet" in call
    code, out, err = cli(
        ["recommend", "--system", "rtx-pro-6000-8x-pcie", "--model", "kimi-k2.5", "--explain"]
    )
    assert code == 0, err
    text = out + err
    call = next(line for line in text.splitlines() if "input: allreduce latency per call" in line)
    assert "[op table, reference (rtx_pro_6000_server)]" in call and "nccl_perf.parquet" in call
    # the custom path on this PCIe box stays the field report's (measured on a box like it)
    custom = next(line for line in text.splitlines() if "allreduce=custom" in line)
    assert "allreduce latency: field report" in custom
    small = next(line for line in text.splitlines() if "op: small kernels a layer" in line)
    assert "[bandwidth-model]" in small


# ---------------------------------------------------------- the KV read at the stream rate measured
# on the box

BENCH_RUN = os.path.join(
    os.path.dirname(FIXTURES), "benchmarks", "data", "h200-decode-step-bench", "snapshot.json"
)


def _bench_rows(scale: float = 1.0) -> list[dict]:
    """The H200 bench run's decode-step rows, as a box whose memory streams `scale` times as fast
    would give them."""
    with open(BENCH_RUN, encoding="utf-8") as handle:
        rows = json.load(handle)["measurements"]["decode_step"]
    for row in rows:
        row["graph_bandwidth_gb_s"] *= scale
        row["graph_us_per_layer"] /= scale
    return rows


def _slope(rows: list[dict]) -> float:
    """Bytes/s: 1 / the least-squares slope of time per layer against bytes per layer, over the bf16
    rows."""
    points = [(r["bytes_per_layer"], r["graph_us_per_layer"]) for r in rows if r["dtype"] == "bf16"]
    n = len(points)
    mx, my = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
    return 1e6 * sum((x - mx) ** 2 for x, _ in points) / sum((x - mx) * (y - my) for x, y in points)


def _kv_estimate(
    rows: list[dict] | None, model_name: str = "llama-3.1-8b"
) -> tuple[launch_model.Estimate, dict]:
    snapshot = copy.deepcopy(system_snapshot("h200-1x-vm"))
    if rows is not None:
        snapshot.setdefault("measurements", {})["decode_step"] = rows
    gpu = target_gpu(snapshot)
    model = models.profile(model_name)
    fit = memory.fit(memory.FitCase(model, gpu["memory_bytes"], 1, "0.5.12", False))
    est = launch_model.estimate(
        launch_model.EstimateCase(
            model, {"tp_size": 1}, "nccl", gpu, launch_model.Latencies(snapshot), fit
        )
    )
    assert est is not None
    return est, {item.name: item for item in est.inputs}


def _expected_kv_us(inputs: dict, rate: float) -> float:
    context = inputs[launch_model.DECODE_CONTEXT_INPUT].value
    return context * inputs["KV cache bytes per token of context per GPU"].value * 1e3 / rate * 1e6


def test_the_kv_read_streams_at_the_rate_bench_measured_on_the_box():
    terms, _ = launch_model.fitted_terms()
    slow = _bench_rows(0.7)  # a box that streams at 70% of the H200 run's rate
    est, inputs = _kv_estimate(slow)
    rate = inputs["KV read rate"]
    assert rate.origin.startswith(launch_model.MEASURED_HERE) and "slope" in rate.origin
    measured = _slope(slow) * terms.kv_gqa
    assert rate.value == pytest.approx(measured / 1e9, rel=1e-9)
    assert "the slope of 30 bf16 decode-step rows" in rate.source
    assert est.kv_us == pytest.approx(_expected_kv_us(inputs, measured), rel=1e-6)
    # the box's own rows keep the fitted model they calibrate (a measurement outranks another box's
    # reference rows); the same box without rows composes its step from the H200 op tables, and each
    # says which
    assert est.step_basis.startswith(
        "fitted launch model, calibrated by this machine's decode-step rows"
    )
    plain, _ = _kv_estimate(None)
    assert plain.step_basis.startswith("composed from the h200_sxm op tables") and plain.step_ops


def test_the_h200_run_on_its_own_box_gives_the_h200_line():
    """The datasheet x eta figure is the slope of this very run (benchmarks/launch_model_checks.py),
    so on the H200 it was measured on the measured rate and the fitted one agree (eta is stored
    rounded)."""
    terms, _ = launch_model.fitted_terms()
    _, inputs = _kv_estimate(_bench_rows())
    assert inputs["KV read rate"].value * 1e9 == pytest.approx(
        _slope(_bench_rows()) * terms.kv_gqa, rel=1e-9
    )
    assert inputs["KV read rate"].value * 1e9 == pytest.approx(
        4.8e12 * terms.eta_hopper * terms.kv_gqa, rel=1e-3
    )


def test_a_measured_line_steeper_than_the_datasheet_is_capped_and_one_size_gives_no_line():
    terms, _ = launch_model.fitted_terms()
    _, inputs = _kv_estimate(_bench_rows(1.3))  # 5.4 TB/s on a 4.8 TB/s part: not the memory
    assert inputs["KV read rate"].value * 1e9 == pytest.approx(4.8e12 * terms.kv_gqa)
    assert "capped at the datasheet 4800 GB/s" in inputs["KV read rate"].source
    one = [
        r
        for r in _bench_rows()
        if r["model"] == "llama-3.1-8b" and r["dtype"] == "bf16" and r["tp"] == 1
    ]
    assert {r["bytes_per_layer"] for r in one} == {one[0]["bytes_per_layer"]}
    _, inputs = _kv_estimate(
        one
    )  # one layer size: a rate at that size, but no slope to read a stream rate from
    assert inputs["achieved bandwidth at this layer size"].origin == launch_model.MEASURED_HERE
    assert inputs["KV read rate"].origin == launch_model.FIT_ORIGIN


def test_recommend_json_names_the_measured_kv_rate(cli):
    code, out, err = cli(
        ["recommend", "--topology", BENCH_RUN, "--model", "llama-3.1-8b", "--format", "json"]
    )
    assert code == 0, err
    estimate = json.loads(out)["chosen"]["estimate"]
    rate = next(item for item in estimate["inputs"] if item["name"] == "KV read rate")
    assert rate["origin"].startswith("measured on this machine (the decode-step rows' slope")
