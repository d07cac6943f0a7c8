"""The composed step reads the per-GEMM rows `topoctl bench --decode-step` measured on the box
before the op tables' reference rows, and only inside the token counts measured.

Real rows: benchmarks/data/h100-decode-ops-bench (a run on a lent 1x H100 80GB HBM3,
benchmarks/run_h200_decode_ops.sh; docs/launch-model.md "Per-op rows measured on the box").
Synthetic rows are written here in the format bench writes, and say so."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest
from conftest import FIXTURES

from topoctl.autoconf import measured_ops, models, op_tables, step_model
from topoctl.autoconf.gpu_specs import target_gpu

RUN = os.path.join(
    os.path.dirname(FIXTURES), "benchmarks", "data", "h100-decode-ops-bench", "snapshot.json"
)


def _run() -> dict:
    with open(RUN, encoding="utf-8") as handle:
        return json.load(handle)


def _row(m: int, us: float, **extra: object) -> dict:  # synthetic, in bench's row format
    row = {"kind": "gemm", "gemm_dtype": "bfloat16", "m": m, "n": 4096, "k": 4096, "us": us}
    row.update({"cuda_graph": True, "status": "ok", "device": "GPU X"})
    row.update(extra)
    return row


def test_a_measured_gemm_is_interpolated_inside_the_measured_tokens_only():
    ops = measured_ops.from_rows([_row(1, 10.0), _row(16, 40.0)])
    assert ops is not None
    assert ops.gemm("bfloat16", 1, 4096, 4096).us == 10.0
    middle = ops.gemm("bfloat16", 6, 4096, 4096)
    assert middle.us == pytest.approx(20.0) and "between the rows of M=1 and M=16" in middle.source
    assert ops.gemm("bfloat16", 17, 4096, 4096) is None  # never stretched past the rows
    assert ops.gemm("fp8", 1, 4096, 4096) is None and ops.gemm("bfloat16", 1, 4096, 2048) is None


def test_failed_eager_and_foreign_rows_are_not_read_and_duplicates_give_their_median():
    rows = [
        _row(1, 10.0),
        _row(1, 30.0),
        _row(1, 14.0),
        _row(1, 1.0, status="failed: out of memory"),
        _row(1, 1.0, cuda_graph=False),
        _row(1, 1.0, kind="moe"),
        {"kind": "gemm", "m": "1"},
        "not a row",
    ]
    ops = measured_ops.from_rows(rows)
    assert ops is not None and ops.gemm("bfloat16", 1, 4096, 4096).us == 14.0
    assert measured_ops.from_rows([_row(1, 1.0, status="failed: x")]) is None


def test_the_step_reads_the_box_s_row_before_the_reference_row():
    tables = op_tables.load_system("h100_sxm")
    ops = measured_ops.from_rows([_row(1, 99.0), _row(8, 120.0)])
    with_rows = replace(tables, measured=ops)
    measured = step_model.gemm(with_rows, "attention output", 32, 1, 4096, 4096, 2.0)
    assert measured.origin == step_model.MEASURED and measured.each_us == 99.0
    assert "topoctl bench --decode-step on GPU X" in measured.source
    outside = step_model.gemm(with_rows, "attention output", 32, 64, 4096, 4096, 2.0)
    reference = step_model.gemm(tables, "attention output", 32, 64, 4096, 4096, 2.0)
    assert outside == reference and reference.origin == step_model.REFERENCE


def test_the_bench_is_asked_for_the_gemms_the_step_looks_up():
    dense = step_model.gemm_shapes(models.profile("llama-3.1-8b"), 1, "NVIDIA H100 80GB HBM3")
    assert [(n, k) for _, n, k, _ in dense] == [
        (6144, 4096),
        (4096, 4096),
        (28672, 4096),
        (4096, 14336),
        (128256, 4096),
    ]
    mla = step_model.gemm_shapes(models.profile("deepseek-r1"), 8, "NVIDIA H100 80GB HBM3")
    formats = {name: dtype for name, _, _, dtype in mla}
    # fp8 block weights are looked up as fp8_block (no torch product: the bench skips them), the
    # router and lm_head in bf16
    assert formats["MoE router"] == "bfloat16" and formats["dense MLP down"] == "fp8_block"
    # the RTX PRO 6000 tables hold no NCCL row at 8 GPUs: the shapes come without the allreduce
    assert step_model.gemm_shapes(
        models.profile("kimi-k2.5"), 8, "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    )


def test_the_h100_run_s_rows_price_every_gemm_of_its_own_launch():
    gpu = target_gpu(_run())
    assert isinstance(gpu["decode_ops"], measured_ops.MeasuredOps)
    rows = _run()["measurements"]["decode_ops"]
    profile = models.profile("llama-3.1-8b")
    for name, n, k, dtype in step_model.gemm_shapes(profile, 1, gpu["name"]):
        answer = gpu["decode_ops"].gemm(dtype, 1, n, k)
        row = next(r for r in rows if (r["n"], r["k"], r["m"]) == (n, k, 1))
        assert answer is not None and answer.us == pytest.approx(row["us"]), name


def test_recommend_on_the_h100_run_says_each_gemm_was_measured_there(tmp_path, cli):
    code, out, err = cli(
        ["recommend", "--topology", RUN, "--model", "llama-3.1-8b", "--format", "json"]
    )
    assert code == 0, err
    inputs = json.loads(out)["chosen"]["estimate"]["inputs"]
    gemms = [i for i in inputs if " GEMM " in i["name"]]
    assert len(gemms) == 5
    assert {i["origin"] for i in gemms} == {step_model.MEASURED}
    others = [i for i in inputs if i["name"].startswith("op: decode attention")]
    assert others and others[0]["origin"] == step_model.REFERENCE
