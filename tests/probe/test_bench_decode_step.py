"""`topoctl bench --decode-step` (probe/bench/decode_step.py): shapes, memory, merging, and the CLI
on CPU.

On CPU (--backend gloo) the pass runs without a CUDA graph, so its rows carry `cuda_graph: false`
and no graph figures: the launch model never takes them for a GPU's bandwidth. These tests assert on
what was measured and how it is reported, never on timings.
"""

from __future__ import annotations

import json
import os

import pytest
from conftest import FIXTURES

from topoctl.autoconf import models
from topoctl.probe.bench import decode_step

TINY_MOE = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "model_type": "qwen3_moe",
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "num_hidden_layers": 3,
    "intermediate_size": 128,
    "moe_intermediate_size": 32,
    "num_experts": 16,
    "num_experts_per_tok": 2,
    "vocab_size": 1000,
    "max_position_embeddings": 4096,
    "torch_dtype": "bfloat16",
}


def _shapes(name: str, tp: int = 1) -> decode_step.Shapes:
    config = dict(models.builtin_models()[name]["config"])
    return decode_step.sharded(
        decode_step.shapes_from_config(name, dict(config.get("text_config") or config)), tp
    )


def test_a_dense_layer_is_its_checkpoints_matrices():
    # Llama-3.1-8B (config.json): 32 heads of 128, 8 KV heads, MLP 14336: q,k,v,o and gate,up,down
    # per layer
    s = _shapes("llama-3.1-8b")
    dense, _ = decode_step.layer_bytes(s, 2, 0)
    assert dense == 2 * (4096 * (4096 + 2 * 1024) + 4096 * 4096 + 3 * 4096 * 14336)
    shard, _ = decode_step.layer_bytes(_shapes("llama-3.1-8b", 8), 2, 0)
    assert shard == dense // 8


def test_mla_keeps_its_down_projections_whole_under_tp():
    # Kimi-K2.5 (DeepSeek-V3 layout): q_lora 1536, kv_lora 512 + rope 64 are not split by TP
    one, eight = _shapes("kimi-k2.5"), _shapes("kimi-k2.5", 8)
    assert one.qkv_fixed == eight.qkv_fixed == 1536 + 512 + 64
    assert eight.qkv_out - eight.qkv_fixed == pytest.approx(
        (one.qkv_out - one.qkv_fixed) / 8, abs=16
    )
    assert eight.shared == 1 and eight.experts == 384 and eight.moe_inter == 256


def test_experts_held_cover_the_most_tokens_and_the_shared_expert():
    s = _shapes("kimi-k2.5", 8)
    assert decode_step.expected_distinct(s, 1) == 8 + 1
    assert decode_step.expected_distinct(s, 16) == 128 + 1
    assert (
        decode_step.expected_distinct(_shapes("qwen3-30b-a3b"), 64) == 128
    )  # never more than the model has


def test_only_the_layers_that_fit_are_allocated():
    s = _shapes("llama-3.1-70b")  # one GPU would need 80 x 1.71 GB
    dense, _ = decode_step.layer_bytes(s, 2, 0)
    assert decode_step.layers_that_fit(s, 2, 0, 100 * dense) == 80
    assert decode_step.layers_that_fit(s, 2, 0, 10 * dense) == 8  # 80% of ten layers' room
    assert decode_step.layers_that_fit(s, 2, 0, dense) == 0
    first = decode_step.first_layers(_shapes("deepseek-r1", 8), 5)
    assert (first.layers, first.dense_layers, first.moe_layers) == (5, 3, 2)


def test_rows_of_the_same_model_dtype_and_tp_are_replaced():
    old = [
        {"model": "m", "dtype": "bf16", "tp": 1, "tokens": 1},
        {"model": "m", "dtype": "bf16", "tp": 8, "tokens": 1},
        {"model": "m", "dtype": "fp8", "tp": 1, "tokens": 1},
    ]
    new = [{"model": "m", "dtype": "bf16", "tp": 1, "tokens": 4}]
    merged = decode_step.merge_rows(old, new)
    assert [(r["dtype"], r["tp"], r["tokens"]) for r in merged] == [
        ("bf16", 8, 1),
        ("fp8", 1, 1),
        ("bf16", 1, 4),
    ]


def test_cli_times_a_config_on_cpu_and_keeps_the_snapshots_measurements(tmp_path, cli):
    pytest.importorskip("torch")
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(TINY_MOE))
    snapshot = os.path.join(FIXTURES, "h200-1x-vm", "snapshot.json")
    before = json.load(open(snapshot, encoding="utf-8"))["measurements"]
    out = tmp_path / "machine.json"
    code, _, err = cli(
        [
            "bench",
            "--topology",
            snapshot,
            "--decode-step",
            "--model-path",
            str(folder),
            "--tp",
            "1,2",
            "--tokens",
            "1,4",
            "--backend",
            "gloo",
            "--format",
            "json",
            "-o",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0, err
    measurements = json.load(open(out, encoding="utf-8"))["measurements"]
    assert (
        measurements["allreduce"] == before["allreduce"]
    )  # the interconnect rows are kept as they were
    rows = measurements["decode_step"]
    assert [(r["tp"], r["tokens"]) for r in rows] == [(1, 1), (1, 4), (2, 1), (2, 4)]
    assert all(
        r["status"] == "ok" and r["cuda_graph"] is False and r["graph_bandwidth_gb_s"] is None
        for r in rows
    )
    assert all(r["origin"] == "measured on this machine" and r["device"] == "cpu" for r in rows)
    one, four = rows[0], rows[1]
    assert (
        one["distinct_experts_per_moe_layer"] == 2
        and 2 < four["distinct_experts_per_moe_layer"] <= 8
    )
    assert four["bytes_per_layer"] > one["bytes_per_layer"]  # four tokens read more experts
    assert rows[2]["bytes_per_layer"] < one["bytes_per_layer"]  # a TP-2 shard reads about half


def test_cli_asks_for_a_model_and_refuses_4_bit_weights_before_starting(cli):
    snapshot = os.path.join(FIXTURES, "h200-1x-vm", "snapshot.json")
    code, _, err = cli(["bench", "--topology", snapshot, "--decode-step", "--backend", "gloo"])
    assert code == 2 and "--decode-step needs the model" in err and "--model" in err
    code, _, err = cli(
        [
            "bench",
            "--topology",
            snapshot,
            "--decode-step",
            "--model",
            "kimi-k2.5",
            "--backend",
            "gloo",
        ]
    )
    assert code == 2 and "int4" in err and "--dtype fp8" in err
    code, _, err = cli(
        ["bench", "--topology", snapshot, "--decode-step", "--model", "llama-3.1-8b", "--tp", "0"]
    )
    assert code == 2 and "--tp: 0 is outside" in err
    assert "Traceback" not in err


# ------------------------------------------------------------- the committed H200 run
# (benchmarks/data/)

RUN = os.path.join(os.path.dirname(FIXTURES), "benchmarks", "data", "h200-decode-step-bench")


def _run(name: str = "snapshot.json") -> dict:
    return json.load(open(os.path.join(RUN, name), encoding="utf-8"))


def _rows(name: str = "snapshot.json") -> dict[tuple, dict]:
    return {
        (r["model"], r["dtype"], r["tp"], r["tokens"]): r
        for r in _run(name)["measurements"]["decode_step"]
    }


def _line(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least squares: (slope, intercept) of time per layer against bytes per layer."""
    n = len(points)
    mx, my = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
    slope = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)
    return slope, my - slope * mx


def test_every_row_of_the_h200_run_was_measured_in_a_cuda_graph():
    rows = _rows()
    assert len(rows) == 42 and {r["device"] for r in rows.values()} == {"NVIDIA H200"}
    assert all(
        r["status"] == "ok" and r["cuda_graph"] and r["origin"] == "measured on this machine"
        for r in rows.values()
    )
    assert all(r["layers"] == r["model_layers"] for r in rows.values())  # every shard fitted whole


def test_the_independent_plain_torch_pass_streams_at_the_same_bandwidth():
    """The bench's pass and the independent one (Hugging Face layout, nn.Linear, torch.cuda.graph,
    timed by torch.utils.benchmark) share no code; their time per layer against bytes per layer is
    one line each. The slopes (the bandwidth the weights stream at) agree; the intercepts differ by
    the kernels each launches per layer (4 products against 7 products and 2 elementwise kernels).
    """
    check = _run("independent.json")
    assert check["gpu"] == "NVIDIA H200" and len(check["rows"]) == 15
    assert all(
        row["bytes_agree"] == 0 for row in check["rows"]
    )  # the same bytes, counted from the tensors
    ones = [row for row in check["rows"] if row["tokens"] == 1]
    bench_slope, bench_fixed = _line(
        [(r["bytes_read"] / r["layers"], r["bench_graph_us_per_layer"]) for r in ones]
    )
    plain_slope, plain_fixed = _line(
        [(r["bytes_read"] / r["layers"], r["graphed_us_per_layer"]) for r in ones]
    )
    assert bench_slope == pytest.approx(plain_slope, rel=0.10)
    stream = min(r["read_bandwidth_gb_s"] for r in check["rows"]) * 1e3  # bytes per us
    assert (
        1 / bench_slope < stream * 1.05 and 1 / plain_slope < stream * 1.05
    )  # no faster than a pure read
    assert bench_fixed < plain_fixed


def test_two_fresh_machines_give_the_same_rows_within_3_percent():
    first, second = _rows("first-machine-snapshot.json"), _rows()
    shared = [key for key in first if key in second]
    assert len(shared) == 39
    for key in shared:
        assert second[key]["graph_us_per_layer"] == pytest.approx(
            first[key]["graph_us_per_layer"], rel=0.03
        ), key


def test_moe_rows_read_the_experts_their_tokens_are_routed_to():
    from topoctl.autoconf.decode_terms import Features

    rows = _rows()
    one, four, sixteen = (rows[("qwen3-30b-a3b", "bf16", 1, t)] for t in (1, 4, 16))
    uniform = Features(
        layers=48,
        moe_layers=48,
        mla=False,
        experts=128,
        active_experts=8,
        base_bytes=0,
        expert_bytes=0,
        bandwidth=0,
        family="hopper",
    )
    assert four["distinct_experts_per_moe_layer"] == pytest.approx(
        uniform.distinct_experts(4, 1.0), rel=0.05
    )
    assert sixteen["distinct_experts_per_moe_layer"] == pytest.approx(
        uniform.distinct_experts(16, 1.0), rel=0.05
    )
    assert four["graph_us_per_layer"] > 1.8 * one["graph_us_per_layer"]  # ~29 experts' reads, not 8
    dense_one, dense_four = (
        rows[("llama-3.1-8b", "bf16", 1, 1)],
        rows[("llama-3.1-8b", "bf16", 1, 4)],
    )
    assert (
        dense_four["graph_us_per_layer"] < 1.15 * dense_one["graph_us_per_layer"]
    )  # a dense layer: same bytes


def test_fp8_rows_read_half_the_bytes_at_a_lower_bandwidth():
    rows = _rows()
    bf16, fp8 = rows[("llama-3.1-70b", "bf16", 8, 1)], rows[("llama-3.1-70b", "fp8", 8, 1)]
    assert fp8["bytes_per_layer"] == pytest.approx(bf16["bytes_per_layer"] / 2, rel=0.001)
    assert fp8["graph_us_per_layer"] < bf16["graph_us_per_layer"]
    from topoctl.autoconf.gpu_specs import decode_step_bandwidth

    curve, _ = decode_step_bandwidth(_run())  # type: ignore[misc]
    at = fp8["bytes_per_layer"]
    assert curve.for_dtype("fp8")(at) == pytest.approx(fp8["graph_bandwidth_gb_s"] * 1e9, rel=0.01)
    assert curve.for_dtype("bf16")(at) > 1.2 * curve.for_dtype("fp8")(at)


def test_the_launch_model_reads_the_rows_of_the_models_weight_format():
    from topoctl.autoconf.launch_model import weight_format

    assert weight_format(models.profile("llama-3.1-70b")) == "bf16"
    assert weight_format(models.profile("deepseek-r1")) == "fp8"
    assert weight_format(models.profile("kimi-k2.5")) == "fp8"  # int4: the narrowest rows measured


# ------------------------------------------------------------- the committed verify-width run
# (benchmarks/data/)

VERIFY = os.path.join(os.path.dirname(FIXTURES), "benchmarks", "data", "h200-verify-tokens-bench")


def _verify(name: str = "snapshot.json") -> dict:
    return json.load(open(os.path.join(VERIFY, name), encoding="utf-8"))


def test_the_verify_width_run_measured_every_shard_at_every_token_count_on_an_h200():
    rows = _verify()["measurements"]["decode_step"]
    assert len(rows) == 32 and {r["device"] for r in rows} == {"NVIDIA H200"}
    assert all(
        r["status"] == "ok" and r["cuda_graph"] and r["layers"] == r["model_layers"] for r in rows
    )
    assert {r["tokens"] for r in rows} == {1, 16, 32, 64}


def test_a_wider_dense_pass_takes_longer_in_both_harnesses_by_less_than_a_fifth():
    """docs/launch-model.md, "Verify-width passes": the bench's pass and the independent nn.Linear
    pass both take longer at 64 tokens than at one, and by under 20%: a step from vector to matrix
    products, far from the 64x of the tokens, which is why the model's per-token cost is
    microseconds a layer."""
    rows = {(r["model"], r["tp"], r["tokens"]): r for r in _verify()["measurements"]["decode_step"]}
    check = {(r["model"], r["tp"], r["tokens"]): r for r in _verify("independent.json")["rows"]}
    assert len(check) == 20 and all(r["bytes_agree"] == 0 for r in check.values())
    for model, tp in {(m, t) for m, t, _ in check}:
        bench = (
            rows[(model, tp, 64)]["graph_us_per_layer"] / rows[(model, tp, 1)]["graph_us_per_layer"]
        )
        plain = (
            check[(model, tp, 64)]["graphed_us_per_layer"]
            / check[(model, tp, 1)]["graphed_us_per_layer"]
        )
        assert 1.0 < bench < 1.2 and 0.99 < plain < 1.2, (model, tp)


def test_an_moe_verify_pass_reads_the_distinct_experts_of_independent_routing():
    rows = {
        (r["tp"], r["tokens"]): r
        for r in _verify()["measurements"]["decode_step"]
        if r["model"] == "qwen3-30b-a3b"
    }
    for tokens, expected in ((16, 82), (32, 111), (64, 126)):  # 128 x (1 - (1 - 8/128) ** T)
        assert rows[(1, tokens)]["distinct_experts_per_moe_layer"] == pytest.approx(expected, abs=2)
    assert rows[(1, 64)]["graph_us_per_layer"] > 4 * rows[(1, 1)]["graph_us_per_layer"]
