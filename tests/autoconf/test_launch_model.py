"""The launch model: memory fit (SGLang's own mem_fraction_static), cost per allreduce path, TP/DP,
the field report's configurations in their measured order, and the band every prediction carries."""

from __future__ import annotations

import dataclasses
import json

import pytest

from topoctl.autoconf import launch_model, memory, models, step_model
from topoctl.autoconf.gpu_specs import target_gpu
from topoctl.cli.app import main
from topoctl.snapshot.catalogue import system_snapshot

EAGLE3 = {
    "speculative_algorithm": "eagle3",
    "speculative_num_steps": 3,
    "speculative_eagle_topk": 1,
    "speculative_num_draft_tokens": 4,
}


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def predict(system, name, tp, path, spec, version="0.5.12", snapshot=None):
    snap = snapshot or system_snapshot(system)
    gpu = target_gpu(snap)
    model = models.profile(name)
    fit = memory.fit(memory.FitCase(model, gpu["memory_bytes"], tp, version, spec))
    launch = dict({"tp_size": tp}, **(EAGLE3 if spec else {}))
    return launch_model.estimate(
        launch_model.EstimateCase(model, launch, path, gpu, launch_model.Latencies(snap), fit)
    )


# ------------------------------------------------------------------------------------- calibration
# The fitted terms are checked source by source on the public corpus by
# benchmarks/launch_model_checks.py (docs/launch-model.md section 4); these tests hold what the
# model must do whatever the fit.

FIELD = [("nccl", False, 89.5), ("nccl", True, 54.1), ("custom", True, 38.0)]


@pytest.mark.xfail(
    strict=True,
    reason=(
        "known wrong since the fitted per-step overhead (costs.yaml step_overhead, 828 us): "
        "EAGLE-3 over NCCL comes out 88.1 tok/s against plain NCCL 86.3 (measured 54.1 and "
        "89.5); it was 92.1 against 93.0 before, the verify pass's NCCL priced from the op table "
        "(~27 us a call) where the field report measured 200 us at 42 KB on this box"
    ),
)
def test_the_field_report_configurations_come_out_in_the_measured_order():
    predicted = [
        predict("rtx-pro-6000-8x-pcie", "kimi-k2.5", 8, path, spec).tokens_per_s
        for path, spec, _ in FIELD
    ]
    assert predicted == sorted(predicted, reverse=True)  # 89.5 > 54.1 > 38, as measured


def test_every_prediction_carries_the_band_of_its_basis():
    # a GPU with op tables: the composed step's band (step_model.Step.band); without: the fitted
    # group's band
    plain = predict("h100-8x-nvswitch", "llama-3.1-8b", 1, "nccl", False)
    assert (
        plain.step_ops
        and plain.band >= step_model.BASE_BAND
        and plain.band_source.startswith("AISimulate")
    )
    fallback = predict("rtx-4090-2x-pcie-no-p2p", "llama-3.1-8b", 1, "nccl", False)
    eagle = predict("rtx-4090-2x-pcie-no-p2p", "llama-3.1-8b", 1, "nccl", True)
    fit = launch_model.fitted_terms()[1]["bands"]
    assert (
        not fallback.step_ops
        and fallback.band == fit["plain-dense"]
        and eagle.band == fit["speculative"]
    )
    assert (
        plain.to_dict()["band"]["low_tok_s"]
        < plain.tokens_per_s
        < plain.to_dict()["band"]["high_tok_s"]
    )


def test_custom_allreduce_beats_nccl_on_nvswitch_and_loses_on_pcie():
    h200 = {
        path: predict("h200-4x-nvswitch-vm", "qwen3-235b-a22b", 4, path, False).tokens_per_s
        for path in ("custom", "nccl")
    }
    assert h200["custom"] > h200["nccl"]
    pcie = {
        path: predict("rtx-pro-6000-8x-pcie", "kimi-k2.5", 8, path, True).tokens_per_s
        for path in ("custom", "nccl")
    }
    assert pcie["custom"] < pcie["nccl"]


# ------------------------------------------------------------------------------------------ memory


def test_mem_fraction_static_is_sglang_0_5_12s_rule():
    # H200 (150754820096 bytes = 143770 MiB), TP 4, GQA, no speculation: chunked 8192, graphs 512
    # (tp >= 4); reserved = 512 + 8192*1.5 + 512*2 + 4/8*1024 + 58 piecewise sizes x 8 = 14800 MiB
    fraction, graph_bs, source = memory.static_fraction(
        150754820096, 4, "0.5.12", mla=False, speculative=False, cuda_graph_max_bs=None
    )
    assert graph_bs == 512 and fraction == round((143770 - 14800) / 143770, 3)
    assert (
        source.startswith("SGLang 0.5.12;")
        and "0.5.10rc0..0.5.13.post1 (0.5.10rc0 server_args.py:1260-1308)" in source
    )
    # 0.5.5 has no piecewise reserve and 2 GB for EAGLE (server_args.py:785-823)
    old, _, _ = memory.static_fraction(
        150754820096, 4, "0.5.5", mla=False, speculative=True, cuda_graph_max_bs=None
    )
    assert old == round((143770 - (14800 - 58 * 8 + 2048)) / 143770, 3)


def test_mla_keeps_one_latent_per_layer_on_every_gpu_and_gqa_splits_heads():
    ds = models.profile("deepseek-v3")
    assert memory.kv_bytes_per_token(ds, 8) == memory.kv_bytes_per_token(ds, 1) == 61 * 576 * 2
    llama = models.profile("llama-3.1-70b")
    assert memory.kv_bytes_per_token(llama, 8) == 80 * 2 * 1 * 128 * 2
    assert memory.kv_bytes_per_token(llama, 16) == memory.kv_bytes_per_token(
        llama, 8
    )  # at least one head


def test_smaller_cuda_graphs_leave_more_kv_cache():
    """The field report's +9% from --cuda-graph-max-bs 128: memory moved from graphs to the KV
    cache."""
    kimi = models.profile("kimi-k2.5")
    gpu = target_gpu(system_snapshot("rtx-pro-6000-8x-pcie"))["memory_bytes"]
    big = memory.fit(memory.FitCase(kimi, gpu, 8, "0.5.12", False, 512))
    small = memory.fit(memory.FitCase(kimi, gpu, 8, "0.5.12", False, 128))
    assert small.kv_tokens > big.kv_tokens > 0


# ----------------------------------------------------------------------------------- the examples


def test_deepseek_v3_on_4x_h200_exits_1_saying_what_would_fit(capsys):
    code, out, err = run(
        capsys, ["recommend", "--system", "h200-4x-nvswitch-vm", "--model", "deepseek-v3"]
    )
    assert code == 1 and out == ""
    assert "deepseek-v3 does not fit" in err and "GB of weights per GPU" in err
    assert "what would fit: 8 GPUs like these" in err and "int4 checkpoint" in err


def test_kimi_on_2x_rtx_4090_exits_1_saying_what_would_fit(capsys):
    code, _, err = run(
        capsys, ["recommend", "--system", "rtx-4090-2x-pcie-no-p2p", "--model", "kimi-k2.5"]
    )
    assert code == 1 and "kimi-k2.5 does not fit" in err and "what would fit" in err


def test_a_context_longer_than_the_kv_cache_does_not_fit(capsys):
    code, _, err = run(
        capsys,
        [
            "recommend",
            "--system",
            "rtx-pro-6000-8x-pcie",
            "--model",
            "kimi-k2.5",
            "--context-length",
            "10000000",
        ],
    )
    assert (
        code == 1
        and "does not fit at this context" in err
        and "--context-length 10000000 asked" in err
    )
    assert "--context-length" in err.split("hint")[1]


def test_h200_predictions_differ_per_allreduce_path(capsys):
    # A dense model: on SM90 SGLang turns FlashInfer fusion on for MoE models whatever the allreduce
    # path (rules/knowledge/sglang_fusion_auto_on.yaml), so there every path is priced as the fusion
    # that runs.
    code, out, err = run(
        capsys,
        [
            "recommend",
            "--system",
            "h200-4x-nvswitch-vm",
            "--model",
            "llama-3.1-70b",
            "--format",
            "json",
        ],
    )
    assert code == 0, err
    doc = json.loads(out)
    same_tp = [
        alt
        for alt in [doc["chosen"], *doc["alternatives"]]
        if alt["tp_size"] == doc["chosen"]["tp_size"]
    ]
    by_path = {alt["allreduce_path"]: alt["estimate"]["tokens_per_s"] for alt in same_tp}
    assert by_path["custom"] != by_path["nccl"] and doc["chosen"]["allreduce_path"] == "custom"
    est = doc["chosen"]["estimate"]
    assert all(item["source"] for item in est["inputs"])
    assert doc["chosen"]["fit"]["fits"] and doc["chosen"]["fit"]["kv_cache_tokens"] > 0


def test_field_report_system_keeps_its_launch_on_0_5_12(capsys):
    code, out, err = run(
        capsys,
        [
            "recommend",
            "--system",
            "rtx-pro-6000-8x-pcie",
            "--model",
            "kimi-k2.5",
            "--speculative",
            "eagle3",
            "--draft-model",
            "/d",
            "--sglang-version",
            "0.5.12",
            "--format",
            "args",
        ],
    )
    assert code == 0, err
    assert out.split() == [
        "--tp-size",
        "8",
        "--disable-custom-all-reduce",
        "--cuda-graph-max-bs",
        "128",
    ]


def test_tp_divides_the_attention_heads_and_dp_fills_the_gpus(capsys):
    code, out, err = run(
        capsys,
        [
            "recommend",
            "--system",
            "h100-8x-nvswitch",
            "--model",
            "llama-3.1-8b",
            "--format",
            "json",
        ],
    )
    assert code == 0, err
    doc = json.loads(out)
    for cand in [doc["chosen"], *doc["alternatives"]]:
        assert 32 % cand["tp_size"] == 0 and cand["tp_size"] * cand["dp_size"] == 8


def test_expert_parallelism_is_for_moe_models_only(capsys):
    code, _, err = run(
        capsys,
        [
            "recommend",
            "--system",
            "h100-8x-nvswitch",
            "--model",
            "llama-3.1-8b",
            "--tp-size",
            "8",
            "--ep-size",
            "2",
        ],
    )
    assert code == 2 and "dense model" in err


def test_throughput_objective_counts_every_replica(capsys):
    lat = json.loads(
        run(
            capsys,
            [
                "recommend",
                "--system",
                "h100-8x-nvswitch",
                "--model",
                "llama-3.1-8b",
                "--format",
                "json",
            ],
        )[1]
    )
    thr = json.loads(
        run(
            capsys,
            [
                "recommend",
                "--system",
                "h100-8x-nvswitch",
                "--model",
                "llama-3.1-8b",
                "--objective",
                "throughput",
                "--format",
                "json",
            ],
        )[1]
    )
    assert thr["objective"] == "throughput" and thr["chosen"]["estimate"]["batch"] > 1
    assert thr["chosen"]["estimate"]["tokens_per_s"] > lat["chosen"]["estimate"]["tokens_per_s"]


def _fast_nccl_snapshot(tmp_path) -> str:
    """The 4x H200 system with bench rows that make NCCL faster than every other path (synthetic
    rows)."""
    snapshot = system_snapshot("h200-4x-nvswitch-vm")
    snapshot["measurements"] = {
        "method": "topoctl bench",
        "allreduce": [
            {
                "path": "nccl",
                "world_size": 4,
                "bytes": 8192,
                "latency_us": {"median": 1.0},
                "status": "ok",
            },
            {
                "path": "nccl",
                "world_size": 4,
                "bytes": 65536,
                "latency_us": {"median": 1.5},
                "status": "ok",
            },
        ],
    }
    path = tmp_path / "machine.json"
    path.write_text(json.dumps(snapshot))
    return str(path)


def test_snapshot_measurements_come_first(capsys, tmp_path):
    path = _fast_nccl_snapshot(tmp_path)
    code, out, err = run(
        capsys,
        ["recommend", "--topology", str(path), "--model", "qwen3-235b-a22b", "--format", "json"],
    )
    assert code == 0, err
    doc = json.loads(out)
    assert (
        doc["chosen"]["allreduce_path"] == "nccl"
    )  # measured faster than the custom kernel's published latency
    sources = [item["source"] for item in doc["chosen"]["estimate"]["inputs"]]
    assert any("snapshot measurements (topoctl bench)" in source for source in sources)


def test_accept_length_is_an_input(capsys):
    argv = [
        "recommend",
        "--system",
        "h200-4x-nvswitch-vm",
        "--model",
        "qwen3-235b-a22b",
        "--speculative",
        "eagle3",
        "--draft-model",
        "/d",
        "--format",
        "json",
        "--force-speculative",
    ]
    low = json.loads(run(capsys, [*argv, "--accept-length", "1.5"])[1])["chosen"]["estimate"]
    high = json.loads(run(capsys, [*argv, "--accept-length", "4"])[1])["chosen"]["estimate"]
    assert high["tokens_per_s"] > low["tokens_per_s"]
    assert any(item["source"] == "--accept-length" for item in high["inputs"])


def test_snapshot_measurements_rank_paths_without_a_model(capsys, tmp_path):
    # without --model, the per-call ranking reads the snapshot's bench rows the way the launch model
    # does (autoconf/cost.py measured_latency): measured before the rules' numbers and the reference
    # table
    argv = ["recommend", "--format", "json"]
    plain = json.loads(run(capsys, [*argv, "--system", "h200-4x-nvswitch-vm"])[1])
    assert (
        plain["chosen"]["allreduce_path"] != "nccl"
    )  # the reference table puts custom allreduce first here
    path = _fast_nccl_snapshot(tmp_path)
    code, out, err = run(capsys, [*argv, "--topology", str(path)])
    assert code == 0, err
    chosen = json.loads(out)["chosen"]
    assert chosen["allreduce_path"] == "nccl"
    assert (
        chosen["modelled_allreduce_ms_per_forward"] == 0.001
    )  # 1.0 us at the smallest size measured
    assert any(
        "snapshot measurements (topoctl bench)" in text and "smallest size measured" in text
        for text in chosen["evidence"]
    )


def test_eagle3_inside_the_gain_band_is_not_kept_and_says_what_settles_it(capsys):
    # Qwen3-30B-A3B at TP 4 on H100: EAGLE-3 was measured 12-22% slower for four draft shapes
    # (benchmarks/data/public-decode.yaml, angelslim-163); the model's predicted gain is inside its
    # band
    argv = [
        "recommend",
        "--system",
        "h100-8x-nvswitch",
        "--model",
        "qwen3-30b-a3b",
        "--tp-size",
        "4",
        "--speculative",
        "eagle3",
        "--draft-model",
        "/d",
        "--format",
        "json",
    ]
    code, out, _ = run(capsys, argv)
    assert code == 0
    doc = json.loads(out)
    assert doc["speculative"]["emitted"] == "without"
    # a gain inside the band is "uncertain", never "slower" (that needs a loss beyond the band)
    assert doc["speculative"]["verdict"] == "uncertain"
    assert "inside the launch model's band" in doc["speculative"]["message"]
    assert "bench_one_batch_server" in doc["speculative"]["message"]
    assert "op-table band" in doc["chosen"]["basis"]  # H100 has op tables (autoconf/step_model.py)
    assert doc["chosen"]["estimate"]["band"]["factor"] > 1.0


def test_an_estimate_and_its_inputs_cannot_be_changed_once_made():
    """Every renderer and the ranking read the one Estimate a candidate carries
    (autoconf/launch_model.py): freezing the Estimate alone left its inputs a list of mutable
    Inputs, which any reader could append to or rewrite, changing what the others print."""
    plain = predict("h200-4x-nvswitch-vm", "llama-3.1-70b", 4, "custom", False)
    spec = predict("h200-4x-nvswitch-vm", "llama-3.1-70b", 4, "custom", True)
    assert isinstance(plain.inputs, tuple) and isinstance(spec.inputs, tuple)
    assert len(spec.inputs) > len(
        plain.inputs
    )  # the speculative terms come on top of the forward pass's
    with pytest.raises(dataclasses.FrozenInstanceError):
        plain.inputs[0].value = 0.0  # type: ignore[misc]


def _context_inputs(estimate):
    return {item["name"]: item for item in estimate["inputs"]}


def test_decode_context_is_an_input_with_its_origin(capsys):
    argv = [
        "recommend",
        "--system",
        "h200-4x-nvswitch-vm",
        "--model",
        "llama-3.1-70b",
        "--format",
        "json",
    ]
    default = json.loads(run(capsys, argv)[1])["chosen"]["estimate"]
    long = json.loads(run(capsys, [*argv, "--decode-context", "32000"])[1])["chosen"]["estimate"]
    capped = json.loads(
        run(capsys, [*argv, "--decode-context", "32000", "--context-length", "4096"])[1]
    )
    name = launch_model.DECODE_CONTEXT_INPUT
    assert (
        _context_inputs(default)[name]["value"] == 1000
        and _context_inputs(default)[name]["origin"] == "assumed"
    )
    assert (
        _context_inputs(long)[name]["value"] == 32000
        and _context_inputs(long)[name]["origin"] == "--decode-context"
    )
    # H200 has op tables: the decode attention row at KV 32000 against 1000 (a kernel's time, not
    # bytes / rate)
    assert long["kv_read_ms"] > default["kv_read_ms"]
    assert long["tokens_per_s"] < default["tokens_per_s"]
    item = _context_inputs(capped["chosen"]["estimate"])[name]
    assert item["value"] == 4096 and "capped by the context length 4096" in item["source"]


def _throughput_estimate(model_name: str, decode: int | None, context_length: int | None = None):
    snap = system_snapshot("h200-4x-nvswitch-vm")
    gpu = target_gpu(snap)
    model = models.profile(model_name)
    fit = memory.fit(
        memory.FitCase(
            model, gpu["memory_bytes"], 4, "0.5.12", False, context_length=context_length
        )
    )
    est = launch_model.estimate(
        launch_model.EstimateCase(
            model,
            {"tp_size": 4},
            "custom",
            gpu,
            launch_model.Latencies(snap),
            fit,
            "throughput",
            context_tokens=context_length,
            decode_context=decode,
        )
    )
    assert est is not None
    return est, fit


def test_the_throughput_objective_takes_decode_context_for_its_batch_and_kv_reads():
    name = launch_model.DECODE_CONTEXT_INPUT
    default, fit = _throughput_estimate("llama-3.1-70b", None)
    assert name not in {
        item.name for item in default.inputs
    }  # without it: the context of costs.yaml, as before
    assert default.batch == min(fit.cuda_graph_max_bs, fit.kv_tokens // 4096)
    results = {}
    for tokens in (500, 2048, 32000):
        est, _ = _throughput_estimate("llama-3.1-70b", tokens)
        inputs = {item.name: item for item in est.inputs}
        assert inputs[name].value == tokens and inputs[name].origin == "--decode-context"
        assert est.batch == max(1, min(fit.cuda_graph_max_bs, fit.kv_tokens // tokens))
        assert f"/ decode context {tokens})" in inputs["streams per replica"].source
        results[tokens] = est
    # a stream holding 2048 tokens where the default holds 4096 (reading 2048): the batch doubles
    assert results[2048].batch == min(fit.cuda_graph_max_bs, 2 * default.batch)
    assert results[32000].batch < default.batch < results[2048].batch
    assert results[32000].tokens_per_s < default.tokens_per_s < results[2048].tokens_per_s
    # the KV a step reads follows streams x decode context, priced at the KV read rate, not as
    # weights
    read = {t: results[t].batch * t for t in results}
    assert sorted(results, key=lambda t: results[t].kv_us) == sorted(results, key=read.__getitem__)
    assert default.kv_us < results[2048].kv_us  # 297 x 2048 tokens against 512 x 2048
    expected = {
        **{id(results[t]): read[t] for t in results},
        id(default): default.batch * 4096 // 2,
    }
    for est in (default, *results.values()):
        inputs = {item.name: item for item in est.inputs}
        assert inputs[launch_model.KV_READ_INPUT].value == expected[id(est)]
        # the fitted model: the weights a step streams do not grow with the streams' KV (read once);
        # the composed step's GEMMs are table rows at the batch's m, which may grow with it
        if not est.step_ops:
            assert est.weights_us == pytest.approx(default.weights_us, rel=1e-9)


def test_the_throughput_objectives_decode_context_is_capped_by_the_context_length(capsys):
    argv = [
        "recommend",
        "--system",
        "h200-4x-nvswitch-vm",
        "--model",
        "llama-3.1-70b",
        "--tp-size",
        "4",
        "--objective",
        "throughput",
        "--format",
        "json",
    ]
    plain = json.loads(run(capsys, argv)[1])["chosen"]["estimate"]
    given = json.loads(run(capsys, [*argv, "--decode-context", "32000"])[1])["chosen"]["estimate"]
    capped = json.loads(
        run(capsys, [*argv, "--decode-context", "32000", "--context-length", "8192"])[1]
    )
    assert launch_model.DECODE_CONTEXT_INPUT not in _context_inputs(plain)
    item = _context_inputs(given)[launch_model.DECODE_CONTEXT_INPUT]
    assert item["value"] == 32000 and item["origin"] == "--decode-context"
    assert given["tokens_per_s"] < plain["tokens_per_s"] and given["batch"] < plain["batch"]
    item = _context_inputs(capped["chosen"]["estimate"])[launch_model.DECODE_CONTEXT_INPUT]
    assert item["value"] == 8192 and "capped by the context length 8192" in item["source"]
    assert (
        "/ decode context 8192)"
        in _context_inputs(capped["chosen"]["estimate"])["streams per replica"]["source"]
    )


# ------------------------------------------------------------------ the fused allreduce + RMSNorm
# path


def test_the_fused_allreduce_is_priced_as_the_custom_allreduce_it_replaces_with_its_citation():
    lat = launch_model.Latencies(system_snapshot("h200-4x-nvswitch-vm"))
    for world, message in ((2, 16 * 1024), (4, 16 * 1024), (8, 512 * 1024)):
        fused, custom = (
            lat.lookup("flashinfer_fusion", message, world),
            lat.lookup("custom", message, world),
        )
        assert fused.us == custom.us and fused.origin == custom.origin == launch_model.CITED
        assert fused.level == "upstream-reported"
    source = lat.lookup("flashinfer_fusion", 16 * 1024, 4).source
    assert source.startswith(
        "flashinfer_fusion on nvswitch: priced as custom: measured upstream: vLLM PR #22086 "
        "(2x H100, 512 KiB"
    )
    assert "SGLang PR #7621 (B200 TP 8" in source[:300]  # inside what --explain prints of a source
    assert "Assumed from them: one trtllm_allreduce_fusion call" in source
    assert source.endswith(
        custom.source.split(": ", 1)[1]
    )  # then the custom row it takes its numbers from


def test_the_fused_allreduce_follows_the_custom_allreduce_this_machine_measured(tmp_path):
    snapshot = system_snapshot("h200-4x-nvswitch-vm")
    snapshot["measurements"] = {
        "method": "topoctl bench",
        "allreduce": [
            {
                "path": "custom",
                "world_size": 4,
                "bytes": 16384,
                "latency_us": {"median": 9.0},
                "status": "ok",
                "cuda_graph": True,
            }
        ],
    }
    lat = launch_model.Latencies(snapshot)
    fused = lat.lookup("flashinfer_fusion", 16384, 4)
    assert fused.us == 9.0 and fused.origin.startswith(launch_model.MEASURED)
    assert (
        "priced as custom" in fused.source
        and "snapshot measurements (topoctl bench)" in fused.source
    )


def test_pcie_keeps_the_no_faster_than_fallback_and_says_no_fused_allreduce_was_measured_there():
    lat = launch_model.Latencies(system_snapshot("rtx-pro-6000-8x-pcie"))
    fused = lat.lookup("flashinfer_fusion", 14 * 1024, 8)
    slowest = max(lat.lookup(path, 14 * 1024, 8).us for path in ("nccl", "custom"))
    assert fused.us == slowest and fused.origin == launch_model.ASSUMED
    assert fused.source.startswith("no data for flashinfer_fusion on pcie: assumed no faster than")
    assert "over PCIe was found (none on SM120 either)" in fused.source


def _alternatives(cli, *argv):
    code, out, err = cli(["recommend", *argv, "--format", "json"])
    assert code == 0, err
    doc = json.loads(out)
    return {alt["allreduce_path"]: alt for alt in reversed([doc["chosen"], *doc["alternatives"]])}


def test_without_a_model_the_fused_path_is_priced_by_the_relation_the_launch_model_uses(cli):
    # the per-call ranking (no --model) prices flashinfer_fusion as it prices custom, with the
    # relation's citation the launch model prints for the fused path's tok/s, and says the norm
    # saving needs a model
    from topoctl.autoconf import cost

    relation = launch_model.table_relations("nvswitch")["flashinfer_fusion"]
    plain = _alternatives(cli, "--system", "h200-4x-nvswitch-vm")
    fused, custom = plain["flashinfer_fusion"], plain["custom"]
    assert fused["modelled_allreduce_ms_per_forward"] == custom["modelled_allreduce_ms_per_forward"]
    basis = fused["evidence"][0]
    assert basis == (
        f"priced as custom: {relation.source}; custom: {custom['evidence'][0]}; "
        f"{cost.NO_MODEL_SAVING}"
    )
    assert "assumed no faster than" not in basis
    modelled = _alternatives(cli, "--system", "h200-4x-nvswitch-vm", "--model", "qwen3-235b-a22b")[
        "flashinfer_fusion"
    ]
    call = next(
        item
        for item in modelled["estimate"]["inputs"]
        if item["name"] == "allreduce latency per call (decode)"
    )
    assert f"priced as custom: {relation.source}; custom: " in call["source"]


def test_the_pcie_box_lists_no_fused_path_its_wheels_lack(cli):
    # SM120 has no FlashInfer fusion kernel at the default release (rules/sglang/generated/kernel-
    # matrix.json), so recommend leaves the fused path out; its PCIe fallback text stays defined
    assert "flashinfer_fusion" not in _alternatives(cli, "--system", "rtx-pro-6000-8x-pcie")
    assert launch_model.table_unmeasured("pcie")["flashinfer_fusion"]


def test_a_related_path_takes_the_lower_level_and_the_relation_before_its_own_source():
    relation = launch_model.Relation("custom", "upstream-reported", "the cited relation")
    assert relation.price("measured", "bench rows") == (
        "upstream-reported",
        "priced as custom: the cited relation; custom: bench rows",
    )
    assert relation.price("modelled", "a rule")[0] == "modelled"


def _by_path(capsys, system, model, *extra):
    code, out, err = run(
        capsys, ["recommend", "--system", system, "--model", model, "--format", "json", *extra]
    )
    assert code == 0, err
    doc = json.loads(out)
    same_tp = [
        alt
        for alt in [doc["chosen"], *doc["alternatives"]]
        if alt["tp_size"] == doc["chosen"]["tp_size"]
    ]
    return doc, {alt["allreduce_path"]: alt for alt in reversed(same_tp)}


def test_the_fused_path_ties_custom_on_h200_llama_as_the_h100_measurement_has_it(capsys):
    # Llama runs no LayerCommunicator, so the launch keeps its RMSNorm kernels: fused and unfused
    # cost the same, as vLLM PR #22086 measured at 512 KiB on 2x H100; the tie goes to custom
    # (SGLang's default)
    doc, by_path = _by_path(capsys, "h200-4x-nvswitch-vm", "llama-3.1-70b")
    fused, custom, nccl = (
        by_path[p]["estimate"]["tokens_per_s"] for p in ("flashinfer_fusion", "custom", "nccl")
    )
    assert fused == custom > nccl
    assert doc["chosen"]["allreduce_path"] == "custom"


def _saved(alternative):
    return next(
        item
        for item in alternative["estimate"]["inputs"]
        if item["name"] == launch_model.SAVED_INPUT
    )


def test_the_fusion_flag_saves_a_norm_kernel_a_layer_on_dense_qwen3_where_sglang_fuses_it(capsys):
    # no entry turns the fusion on for Qwen3ForCausalLM; the flag does (0.5.12 qwen3.py:133,
    # communicator.py:155): the attention output's allreduce of each layer, priced as the custom
    # allreduce, its norm kernel saved
    _, by_path = _by_path(capsys, "h200-4x-nvswitch-vm", "qwen3-32b", "--sglang-version", "0.5.12")
    fused, custom = by_path["flashinfer_fusion"], by_path["custom"]
    saved = _saved(fused)
    # H200 has op tables: a saved norm kernel costs the composed step's small-kernel time
    kernel = next(
        op for op in fused["estimate"]["step_ops"] if op["op"].startswith("small kernels a layer")
    )
    assert saved["value"] == pytest.approx(64 * kernel["us_each"], abs=1e-2)  # 64 layers
    assert "the attention output's allreduce of every layer" in saved["source"]
    assert fused["estimate"]["allreduce_ms"] == custom["estimate"]["allreduce_ms"]
    step = fused["estimate"]["step_ms"]
    assert step == pytest.approx(custom["estimate"]["step_ms"] - saved["value"] / 1000, abs=2e-4)
    assert not any(
        item["name"] == launch_model.SAVED_INPUT for item in custom["estimate"]["inputs"]
    )
    # from 0.5.21 the layer boundary was not read for it: the flag's saving is not counted, and
    # --explain says so
    _, late = _by_path(capsys, "h200-4x-nvswitch-vm", "qwen3-32b", "--sglang-version", "0.5.21")
    assert _saved(late["flashinfer_fusion"])["value"] == 0.0
    assert (
        late["flashinfer_fusion"]["estimate"]["tokens_per_s"]
        == late["custom"]["estimate"]["tokens_per_s"]
    )


def test_explain_says_the_fusion_flag_changes_no_kernel_of_llama(capsys):
    code, out, err = run(
        capsys,
        [
            "recommend",
            "--system",
            "h200-4x-nvswitch-vm",
            "--model",
            "llama-3.1-70b",
            "--sglang-version",
            "0.5.12",
            "--explain",
            "--format",
            "json",
        ],
    )
    assert code == 0, err
    _, by_path = _by_path(
        capsys, "h200-4x-nvswitch-vm", "llama-3.1-70b", "--sglang-version", "0.5.12"
    )
    saved = _saved(by_path["flashinfer_fusion"])
    assert saved["value"] == 0.0 and saved["origin"] == launch_model.SGLANG_SOURCE
    assert saved["source"].startswith(
        "no norm kernel saved: the launch sets the fusion flag, but it changes no "
        "kernel of LlamaForCausalLM in SGLang 0.5.12: sglang srt/models/llama.py"
    )


def test_deepseek_on_b200_pays_the_custom_allreduce_on_the_fused_path(capsys):
    _, by_path = _by_path(capsys, "b200-8x-nvswitch", "deepseek-v3")
    fused, nccl = by_path["flashinfer_fusion"]["estimate"], by_path["nccl"]["estimate"]
    assert fused["tokens_per_s"] > nccl["tokens_per_s"]
    latency = next(
        item for item in fused["inputs"] if item["name"] == "allreduce latency per call (decode)"
    )
    # the b200_sxm op table's custom allreduce row at 8 GPUs and 14 KiB (SGLang 0.5.14 collection)
    row = step_model.op_tables.load_system("b200_sxm").query(
        "custom_allreduce", backend="sglang_graph", num_gpus=8, message_bytes=14336
    )
    assert latency["value"] == pytest.approx(row.latency_us, abs=1e-3)
