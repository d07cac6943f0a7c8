"""`topoctl bench --decode-step` times each GEMM the launch model prices, alone: what it is asked
for, how many weight copies keep the reads out of L2, and how its rows replace earlier ones. The
timing itself needs a CUDA GPU; it ran on a lent H100 (benchmarks/data/h100-decode-ops-bench)."""

from __future__ import annotations

import json
import os

from conftest import FIXTURES

from topoctl.cli.commands import bench
from topoctl.probe.bench import decode_ops
from topoctl.probe.bench.runner import expected_decode_rows
from topoctl.snapshot.document import validate_snapshot

RUN = os.path.join(os.path.dirname(FIXTURES), "benchmarks", "data", "h100-decode-ops-bench")


def test_weight_copies_exceed_the_l2_flush_and_stay_bounded():
    small, big = decode_ops.Gemm("router", 128, 2048), decode_ops.Gemm("lm_head", 128256, 4096)
    assert decode_ops.copies_for(2, small) == decode_ops.MAX_COPIES
    assert decode_ops.copies_for(2, big) == 1
    middle = decode_ops.Gemm("qkv", 6144, 4096)
    copies = decode_ops.copies_for(2, middle)
    assert copies * 6144 * 4096 * 2 >= decode_ops.L2_FLUSH_BYTES > (copies - 1) * 6144 * 4096 * 2


def test_requests_carry_the_step_s_gemms_in_the_formats_torch_can_time():
    dense = bench._decode_requests(
        "llama-3.1-8b", None, [1, 4], [1, 8], None, on_gpu=True, gpu_name="NVIDIA H100 80GB HBM3"
    )
    assert [len(r.gemms) for r in dense] == [5, 5]
    assert dense[1].gemms[0] == decode_ops.Gemm("QKV projection", 768, 4096, "bfloat16")
    assert expected_decode_rows(dense) == 2 * 2 * (1 + 5)
    mla = bench._decode_requests("deepseek-r1", None, [1], [8], None, on_gpu=True, gpu_name=None)
    # fp8 block weights have no torch product: only the bf16 router and lm_head are timed
    assert {g.name for g in mla[0].gemms} == {"MoE router", "lm_head"}
    cpu = bench._decode_requests("llama-3.1-8b", None, [1], [1], None, on_gpu=False)
    assert expected_decode_rows(cpu) == 1  # gloo on the CPU: the pass only, no per-op rows


def test_rows_of_the_same_model_and_tp_are_replaced_others_kept():
    # the op rows are in the formats the step looks up, whatever --dtype the pass was timed at
    old = [
        {"model": "a", "dtype": "bf16", "tp": 1, "us": 1.0},
        {"model": "a", "dtype": "bf16", "tp": 8, "us": 2.0},
    ]
    new = [{"model": "a", "dtype": "fp8", "tp": 1, "us": 3.0}]
    assert decode_ops.merge_op_rows(old, new) == [old[1], new[0]]
    assert decode_ops.merge_op_rows(None, new) == new


def test_the_h100_run_wrote_a_row_per_gemm_and_token_count_in_the_schema():
    with open(os.path.join(RUN, "snapshot.json"), encoding="utf-8") as handle:
        snapshot = json.load(handle)
    rows = snapshot["measurements"]["decode_ops"]
    assert all(r["status"] == "ok" and r["origin"] == decode_ops.ORIGIN for r in rows)
    llama = [r for r in rows if r["model"] == "llama-3.1-8b"]
    assert len(llama) == 5 * 9 and {r["m"] for r in llama} == {1, 2, 4, 8, 16, 32, 64, 128, 256}
    assert all(r["us_min"] <= r["us"] <= r["us_max"] for r in rows)
    validate_snapshot(snapshot, "the H100 run")  # raises on a row outside the schema
