"""The decode-step terms (autoconf/decode_terms.py): the arithmetic the fit works on, checked
against the numbers the terms stand for (distinct experts of a verify pass, accept length by draft
shape) and against the public corpus and the H200 decode-step rows (benchmarks/data/)."""

from __future__ import annotations

import json
import os

import pytest
import yaml
from conftest import ROOT

from topoctl.autoconf import decode_terms, launch_model, models
from topoctl.autoconf.gpu_specs import target_gpu
from topoctl.snapshot.catalogue import system_snapshot

CORPUS = os.path.join(ROOT, "benchmarks", "data", "public-decode.yaml")
DECODE_STEP = os.path.join(ROOT, "benchmarks", "data", "h200-decode-step.json")
BENCH_RUN = os.path.join(ROOT, "benchmarks", "data", "h200-decode-step-bench", "snapshot.json")


def features(name: str, tp: int = 1, system: str = "h200-1x-vm", path: str = "custom"):
    snap = system_snapshot(system)
    return launch_model.decode_features(
        models.profile(name),
        tp,
        path,
        target_gpu(snap),
        launch_model.Latencies(snap),
        True,
        (1, 4, 16),
    )


def test_tokens_of_a_verify_pass_read_more_distinct_experts():
    # 128 experts, top-8, tokens routed independently: 4 tokens touch about 29 experts, 16 about 82,
    # not 8
    feat = features("qwen3-30b-a3b")
    assert feat.distinct_experts(1, 1.0) == pytest.approx(8)
    assert feat.distinct_experts(4, 1.0) == pytest.approx(29.3, abs=0.2)
    assert feat.distinct_experts(16, 1.0) == pytest.approx(82.4, abs=0.5)
    assert feat.distinct_experts(16, 0.0) == pytest.approx(
        8
    )  # fully correlated routing: one token's experts


def test_a_multi_token_pass_costs_more_on_moe_than_on_a_dense_model():
    terms = decode_terms.Terms()
    moe, dense = features("qwen3-30b-a3b"), features("llama-3.1-8b")
    moe_growth = decode_terms.forward_us(moe, terms, 4) / decode_terms.forward_us(moe, terms, 1)
    dense_growth = decode_terms.forward_us(dense, terms, 4) / decode_terms.forward_us(
        dense, terms, 1
    )
    assert moe_growth > 1.3 > dense_growth


def test_accept_length_grows_with_the_draft_shape():
    terms = launch_model.fitted_terms()[0]
    chain = decode_terms.Draft(3, 1, 4, 1e8)
    tree = decode_terms.Draft(7, 4, 16, 1e8)
    assert (
        1.0
        < decode_terms.accept_length(terms, chain)
        < decode_terms.accept_length(terms, tree)
        < 8.0
    )


def test_the_corpus_names_a_source_and_a_place_for_every_row():
    doc = yaml.safe_load(open(CORPUS, encoding="utf-8"))
    cases = doc["cases"]
    public_sglang = [
        c
        for c in cases
        if c.get("engine", "sglang") == "sglang" and c.get("kind") != "field-report"
    ]
    assert len(public_sglang) >= 40
    for case in cases:
        assert case["source"] in doc["sources"], case["id"]
        assert case["place"], case["id"]
        assert case.get("tok_s") or case.get("speedup"), case["id"]
    public = {k for k, v in doc["sources"].items() if v["url"]}
    assert all(doc["sources"][k]["url"].startswith("https://") for k in public)
    assert {c.get("engine", "sglang") for c in cases} == {"sglang", "vllm"}


def test_the_stored_fit_is_the_fit_of_the_corpus_as_it_is():
    doc = yaml.safe_load(open(CORPUS, encoding="utf-8"))
    fitted = [
        c
        for c in doc["cases"]
        if c.get("engine", "sglang") == "sglang"
        and not str(c.get("sglang") or "").startswith("0.4")
    ]
    record = launch_model.fitted_terms()[1]
    assert record["cases_fitted"] == len(
        fitted
    )  # regenerate: benchmarks/launch_model_checks.py --write
    assert set(record["bands"]) >= {
        "plain-dense",
        "plain-moe",
        "speculative",
        "gain-dense",
        "gain-moe",
    }


def test_the_stream_terms_are_the_h200_measurement_not_fitted():
    # eta and the fixed time reproduce the line through the committed H200 rows: s / (datasheet x
    # eta) + t
    terms, record = launch_model.fitted_terms()
    measured = record["measured"]
    assert terms.eta_hopper == terms.eta_blackwell == pytest.approx(measured["eta"], abs=1e-4)
    assert terms.stream_fixed_us == pytest.approx(measured["fixed_us_per_layer"], abs=0.01)
    for row in (
        r
        for r in _bench_rows()
        if r["dtype"] == "bf16" and r["tokens"] == 1 and not r.get("moe_experts")
    ):
        layer_us = row["bytes_per_layer"] / (4800e3 * terms.eta_hopper) + terms.stream_fixed_us
        assert layer_us == pytest.approx(row["graph_us_per_layer"], rel=0.25), row["model"]


def test_the_fixed_time_of_a_layer_does_not_scale_with_the_datasheet():
    # the intercept is the launch and drain of a layer's kernels: the same microseconds on a faster
    # memory
    terms = decode_terms.Terms(eta_hopper=1.0, eta_blackwell=1.0, stream_fixed_us=20.0)
    slow, fast = features("llama-3.1-8b"), features("llama-3.1-8b")
    fast.bandwidth = 2 * slow.bandwidth
    size = 100e6
    slow_us, fast_us = (
        size / decode_terms.achieved_bandwidth(f, terms, size) * 1e6 for f in (slow, fast)
    )
    assert slow_us - 20.0 == pytest.approx(2 * (fast_us - 20.0))


def test_a_moe_verify_pass_costs_the_bytes_of_its_distinct_experts():
    # SGLang's fused MoE kernels run every routed expert in one launch, each block streaming its
    # expert's tiles once: a wider pass costs the extra experts' bytes, with no fixed cost per
    # expert on top
    terms = decode_terms.Terms(rho=1.0)
    moe = features("qwen3-30b-a3b")
    assert "experts" not in decode_terms.forward_parts(moe, terms, 4)
    # and each layer still pays its stream's fixed time once: the extra bytes stream at the line's
    # slope (datasheet x eta), as the decode-step rows of an MoE layer at 4 and 16 tokens measured
    # them
    slope = moe.bandwidth * terms.eta(moe.family)
    extra = moe.moe_layers * moe.expert_bytes * (moe.distinct_experts(4, 1.0) - 8) / slope * 1e6
    one, four = (decode_terms.forward_parts(moe, terms, t)["weights"] for t in (1, 4))
    assert four - one == pytest.approx(extra)
    assert one == pytest.approx(
        moe.read_bytes(1, 1.0) / slope * 1e6 + moe.layers * terms.stream_fixed_us
    )


def _draft(steps: int, topk: int, tokens: int, tp: int = 1):
    return launch_model.draft_shape(
        models.profile("qwen3-30b-a3b"), tp, steps, topk, tokens, "EAGLE3"
    )


def _tp_features(tp: int):
    snap = system_snapshot("h100-8x-nvswitch")
    return launch_model.decode_features(
        models.profile("qwen3-30b-a3b"),
        tp,
        "custom",
        target_gpu(snap),
        launch_model.Latencies(snap),
        True,
        (1, 2, 3, 4, 8),
    )


def test_a_cycle_runs_steps_minus_one_draft_decodes_and_one_extend():
    # eagle_worker.py (0.5.5 :587-597, 0.5.1.post3 :663-672): the draft loop breaks before the last
    # step's forward; the extend after verify feeds steps + 1 tokens a request (:916)
    terms, feat = decode_terms.Terms(), features("qwen3-30b-a3b")
    draft = _draft(3, 2, 8)
    assert (draft.decode_forwards, draft.extend_tokens) == (2, 4)
    decode = decode_terms.draft_forward_us(feat, terms, draft, 2)
    extend = decode_terms.draft_forward_us(feat, terms, draft, 4, extend=True)
    assert decode_terms.draft_us(feat, terms, draft) == pytest.approx(2 * decode + extend)
    one_step = _draft(1, 1, 2)
    assert decode_terms.draft_us(feat, terms, one_step) == pytest.approx(
        decode_terms.draft_forward_us(feat, terms, one_step, 2, extend=True)
    )


def test_only_the_extend_reads_the_replicated_fc():
    # llama_eagle3.py: the fc is a plain torch.nn.Linear (not split by TP) applied to the target's
    # hidden states
    model = models.profile("qwen3-30b-a3b")
    one, four = _draft(3, 1, 4, tp=1), _draft(3, 1, 4, tp=4)
    assert one.fc_bytes == four.fc_bytes == 3 * model["hidden_size"] ** 2 * 2
    assert four.bytes_per_gpu == pytest.approx(one.bytes_per_gpu / 4)
    terms, feat = decode_terms.Terms(), features("qwen3-30b-a3b")
    plain = decode_terms.draft_forward_us(feat, terms, one, 4)
    extend = decode_terms.draft_forward_us(feat, terms, one, 4, extend=True)
    assert extend > plain
    eagle = launch_model.draft_shape(
        model, 1, 3, 1, 4, "EAGLE"
    )  # an EAGLE draft runs its fc every forward
    assert eagle.fc_bytes == 0.0 and eagle.bytes_per_gpu == pytest.approx(
        one.bytes_per_gpu + 2 * model["hidden_size"] ** 2 * 2
    )


def test_a_draft_forward_under_tp_pays_its_allreduces_and_the_gather_of_its_logits():
    terms, feat = decode_terms.Terms(), _tp_features(2)
    draft = _draft(3, 1, 4, tp=2)
    assert feat.gather_us[1] > 0.0 and feat.allreduce_us[1] > 0.0
    alone = features("qwen3-30b-a3b")  # one GPU: no collectives
    alone.bandwidth = feat.bandwidth
    single = decode_terms.draft_forward_us(alone, terms, draft, 1)
    parallel = decode_terms.draft_forward_us(feat, terms, draft, 1)
    assert parallel - single == pytest.approx(
        decode_terms.DRAFT_ALLREDUCES * feat.allreduce_us[1] + feat.gather_us[1]
    )
    assert features("qwen3-30b-a3b").gather_us[1] == 0.0


def test_the_tp_overhead_of_speculation_is_paid_once_a_cycle():
    # host work between the graphs runs in series (no overlap scheduler with EAGLE): once a cycle,
    # however many draft steps the cycle runs
    terms = decode_terms.Terms(cycle_us=100.0, cycle_tp_us=700.0)
    assert decode_terms.cycle_overhead_us(_tp_features(2), terms) == pytest.approx(800.0)
    assert decode_terms.cycle_overhead_us(features("qwen3-30b-a3b"), terms) == pytest.approx(100.0)
    feat = _tp_features(2)
    short, deep = _draft(3, 1, 4, tp=2), _draft(7, 1, 8, tp=2)
    for draft in (short, deep):
        body = decode_terms.forward_us(feat, terms, draft.draft_tokens) + decode_terms.draft_us(
            feat, terms, draft
        )
        assert decode_terms.cycle_us(feat, terms, draft) - body == pytest.approx(800.0)


def _rows():
    return json.load(open(DECODE_STEP, encoding="utf-8"))


def _bench_rows():
    return json.load(open(BENCH_RUN, encoding="utf-8"))["measurements"]["decode_step"]


def test_h200_decode_step_rows_agree_with_the_plain_torch_check():
    doc = _rows()
    assert doc["gpu"] == "NVIDIA H200"
    dense = [r for r in doc["rows"] if r["model"] == "llama-3.1-8b"]
    for row in dense:
        # the graph, the plain-torch pass and a device copy of the same bytes agree within 15%
        assert row["plain_bandwidth_gb_s"] == pytest.approx(row["graph_bandwidth_gb_s"], rel=0.15)
        assert row["graph_bandwidth_gb_s"] < row["copy_bandwidth_gb_s"] < 4800
    shard = next(
        r for r in doc["rows"] if r["model"] == "llama-3.1-70b (TP 8 shard)" and r["tokens"] == 1
    )
    assert (
        shard["graph_bandwidth_gb_s"] < dense[0]["graph_bandwidth_gb_s"]
    )  # smaller matrices stream slower


def test_measured_decode_step_rows_come_first(tmp_path):
    snap = system_snapshot("h200-1x-vm")
    snap.setdefault("measurements", {})["decode_step"] = _rows()["rows"]
    gpu = target_gpu(snap)
    model = models.profile("llama-3.1-8b")
    from topoctl.autoconf import memory

    fit = memory.fit(memory.FitCase(model, gpu["memory_bytes"], 1, "0.5.12", False))
    est = launch_model.estimate(
        launch_model.EstimateCase(
            model, {"tp_size": 1}, "nccl", gpu, launch_model.Latencies(snap), fit
        )
    )
    item = next(i for i in est.inputs if i.name == "achieved bandwidth at this layer size")
    assert item.origin == launch_model.MEASURED_HERE
    assert item.value == pytest.approx(
        3728, rel=0.02
    )  # the one-token graph row of this model's layer size


def test_the_kv_read_grows_with_the_decode_context():
    terms = decode_terms.Terms()
    feat = features("llama-3.1-8b")
    times = []
    for context in (0, 1000, 8000):
        feat.context = context
        times.append(
            (decode_terms.forward_parts(feat, terms, 1)["kv"], decode_terms.forward_us(feat, terms))
        )
    assert (
        times[0][0] == 0.0 < times[1][0] < times[2][0] == pytest.approx(8 * times[1][0])
    )  # linear in the context
    assert times[0][1] < times[1][1] < times[2][1]
    # 1000 tokens x 128 KB (8 KV heads x 128 x K and V x 2 bytes x 32 layers) at the H200's
    # weight-stream rate
    assert times[1][0] == pytest.approx(1000 * feat.kv_bytes / (4.8e12 * terms.eta_hopper) * 1e6)
    assert feat.kv_bytes == 8 * 128 * 2 * 2 * 32
    # a verify pass over 16 tokens attends to the same context: it reads the cache once
    assert decode_terms.forward_parts(feat, terms, 16)["kv"] == times[2][0]


def test_the_kv_bytes_are_the_mla_latent_on_every_gpu_and_a_share_of_the_gqa_heads():
    mla = {tp: features("deepseek-v3", tp, "h100-8x-nvswitch").kv_bytes for tp in (1, 8)}
    assert mla[1] == mla[8] == 61 * 576 * 2  # the latent is replicated, TP does not split it
    gqa = {tp: features("llama-3.1-70b", tp, "h100-8x-nvswitch").kv_bytes for tp in (1, 4, 8)}
    assert gqa == {1: 80 * 2 * 8 * 128 * 2, 4: 80 * 2 * 2 * 128 * 2, 8: 80 * 2 * 1 * 128 * 2}
    # the attention kinds stream at their own fitted fraction of the weight stream's rate
    terms = decode_terms.Terms(kv_mla=0.5, kv_gqa=1.0)
    feat = features("deepseek-v3", 8, "h100-8x-nvswitch")
    feat.context = 1000
    assert decode_terms.kv_read_us(feat, terms) == pytest.approx(
        2 * decode_terms.kv_read_us(feat, decode_terms.Terms(kv_mla=1.0))
    )


def _checks():
    """benchmarks/launch_model_checks.py as a module (benchmarks/ is not a package)."""
    import sys

    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import launch_model_checks

    return launch_model_checks


def test_corpus_rows_decode_at_their_stated_workload_or_the_assumed_context():
    launch_model_checks = _checks()
    stated = {
        "workload": {"input_tokens": 610.1, "output_tokens": 4446.2, "basis": "totals / requests"}
    }
    assert launch_model_checks.decode_context(stated) == (
        pytest.approx(610.1 + 4446.2 / 2),
        "stated",
    )
    assert launch_model_checks.decode_context({}) == (
        decode_terms.DEFAULT_DECODE_CONTEXT,
        "assumed",
    )


def test_rows_without_a_release_are_fitted_and_rows_before_0_5_are_not():
    launch_model_checks = _checks()

    def fitted(**row: object) -> bool:
        return launch_model_checks.Case(dict(row), None, None).fitted

    assert (
        fitted(sglang=None)
        and fitted()
        and fitted(sglang="0.5.6.post2")
        and fitted(sglang="0.5.1.post3")
    )
    assert not fitted(sglang="0.4.3.post4") and not fitted(engine="vllm", sglang=None)
    # the Kimi-K2.5 H200 rows name no release (their page's 0.5.6.post2 cannot load the model) and
    # are fitted
    doc = yaml.safe_load(open(CORPUS, encoding="utf-8"))
    kimi = [c for c in doc["cases"] if c["source"] == "sglang-cookbook-kimi-k25"]
    assert len(kimi) == 3 and all(c["sglang"] is None and "0.5.9" in c["note"] for c in kimi)
    assert all(launch_model_checks.Case(c, None, None).fitted for c in kimi)


def test_sglang_picks_the_trtllm_gen_path_for_gpt_oss_and_deepseek_on_b200_only():
    from topoctl.autoconf.gpu_specs import kernel_path

    gpt_oss, deepseek = models.profile("gpt-oss-120b"), models.profile("deepseek-r1")
    b200 = kernel_path("0.5.1.post3", "10.0", gpt_oss)
    assert (b200.moe_runner, b200.decode_attention, b200.allreduce_fusion) == (
        "flashinfer_mxfp4",
        "trtllm_mha",
        True,
    )
    assert b200.trtllm_moe and ":2247-2251 (fusion)" in b200.source
    hopper = kernel_path("0.5.1.post3", "9.0", gpt_oss)
    assert (hopper.moe_runner, hopper.allreduce_fusion, hopper.trtllm_moe) == (
        "triton_kernel",
        False,
        False,
    )
    r1 = kernel_path("0.5.6.post1", "10.0", deepseek)
    assert (r1.moe_runner, r1.decode_attention, r1.allreduce_fusion) == (
        "flashinfer_trtllm",
        "trtllm_mla",
        True,
    )
    # no release, a release outside the entries read, another architecture, a launch that sets its
    # own backend
    generic = decode_terms.KernelPath()
    assert kernel_path(None, "10.0", deepseek) == generic
    assert kernel_path("0.5.5", "10.0", deepseek) == generic  # before the first release read for it
    assert kernel_path("0.5.6", "10.0", models.profile("qwen3-235b-a22b")) == generic
    assert kernel_path("0.5.6.post1", "10.0", deepseek, {"enable_dp_attention": True}) == generic
    # DP attention as a candidate or a launch check read carries it: the setting name
    # (spelling.yaml)
    assert kernel_path("0.5.6.post1", "10.0", deepseek, {"dp_attention": True}) == generic
    assert kernel_path("0.5.6.post1", "10.0", deepseek, {"dp_attention": False}) == kernel_path(
        "0.5.6.post1", "10.0", deepseek
    )
    # a MoE all-to-all backend: SGLang's fusion gate and runner picks need moe_a2a_backend "none"
    assert kernel_path("0.5.12", "10.0", deepseek, {"moe_a2a_backend": "deepep"}) == generic
    assert kernel_path("0.5.12", "10.0", deepseek, {"moe_a2a_backend": "none"}) == kernel_path(
        "0.5.12", "10.0", deepseek
    )


def test_releases_from_0_5_7_fuse_on_hopper_and_run_bf16_qwen3_moe_on_trtllm_gen():
    from topoctl.autoconf.gpu_specs import kernel_path

    qwen3, gpt_oss, deepseek = (
        models.profile(n) for n in ("qwen3-235b-a22b", "gpt-oss-120b", "deepseek-v3")
    )
    assert kernel_path("0.5.6.post2", "9.0", gpt_oss).allreduce_fusion is False
    for release in ("0.5.7", "0.5.14", "0.5.23"):
        assert kernel_path(release, "9.0", gpt_oss).allreduce_fusion, release
        assert kernel_path(release, "9.0", qwen3).allreduce_fusion, release
        assert kernel_path(release, "10.0", deepseek).trtllm_moe, release
    assert not kernel_path(
        "0.5.7", "10.0", qwen3
    ).trtllm_moe  # 0.5.7: flashinfer_trtllm for fp8 checkpoints only
    b200 = kernel_path("0.5.8", "10.0", qwen3)
    assert (b200.moe_runner, b200.trtllm_moe, b200.allreduce_fusion) == (
        "flashinfer_trtllm",
        True,
        True,
    )
    kimi = models.profile(
        "kimi-k2.5"
    )  # its int4 recipe (4-bit int, group 32) takes flashinfer_trtllm from 0.5.10
    assert (
        kernel_path("0.5.9", "10.0", kimi).trtllm_moe,
        kernel_path("0.5.10", "10.0", kimi).trtllm_moe,
    ) == (False, True)
    # newer than read_through: not read yet, the generic path (a real new release moves
    # read_through)
    unread = "99.0"
    assert kernel_path(unread, "10.0", qwen3) == decode_terms.KernelPath()
    assert (
        kernel_path("0.5.23", "10.0", models.profile("llama-3.1-70b")) == decode_terms.KernelPath()
    )


def test_the_fused_allreduce_saves_a_norm_kernel_on_every_allreduce_but_the_last():
    terms = decode_terms.Terms(stream_fixed_us=20.0)
    feat = features("qwen3-30b-a3b", tp=4, system="h100-8x-nvswitch")
    plain = decode_terms.forward_parts(feat, terms, 1)
    feat.kernel = decode_terms.KernelPath(allreduce_fusion=True, fusion_max_tokens=2048)
    fused = decode_terms.forward_parts(feat, terms, 1)
    assert decode_terms.fused_allreduces(feat, 1) == feat.allreduces - 1 == 2 * feat.layers - 1
    assert (
        fused["allreduce"] == plain["allreduce"]
    )  # the fused call is priced at the allreduce it replaces
    assert fused["fusion"] == pytest.approx(-(2 * feat.layers - 1) * 20.0 / 4)
    assert decode_terms.fused_allreduces(feat, 4096) == 0  # beyond the fusion's 2048 tokens
    feat.kernel = decode_terms.KernelPath(moe_family="trtllm-gen")
    assert decode_terms.overhead_us(
        feat, decode_terms.Terms(moe_trtllm_us=1.0, moe_us=9.0)
    ) == pytest.approx(
        decode_terms.overhead_us(feat, decode_terms.Terms(moe_trtllm_us=1.0, moe_us=1.0))
    )


FUSION = {"flashinfer_allreduce_fusion": True}


def test_a_launch_that_sets_the_fusion_flag_fuses_where_sglang_honours_it():
    from topoctl.autoconf.gpu_specs import kernel_path

    qwen3, deepseek, qwen3_moe = (
        models.profile(n) for n in ("qwen3-32b", "deepseek-v3", "qwen3-235b-a22b")
    )
    assert (
        kernel_path("0.5.12", "9.0", qwen3) == decode_terms.KernelPath()
    )  # no entry: SGLang leaves it off
    dense = kernel_path(
        "0.5.12", "9.0", qwen3, FUSION
    )  # the communicator fuses the attention output only
    assert (dense.allreduce_fusion, dense.fused, dense.fusion_max_tokens) == (
        True,
        decode_terms.ATTENTION_ONLY,
        2048,
    )
    assert "qwen3.py:133 (o_proj leaves its allreduce to the communicator)" in dense.source
    assert "communicator.py:155 (2048 tokens)" in dense.source and not dense.fusion_note
    for release in ("0.5.7", "0.5.20"):
        assert kernel_path(release, "10.0", qwen3, FUSION).allreduce_fusion, release
    # a launch that sets its own MoE runner leaves the entries' path, but SGLang's fusion gate does
    # not read it
    own = kernel_path("0.5.12", "10.0", deepseek, dict(FUSION, moe_runner_backend="triton"))
    assert (own.moe_runner, own.allreduce_fusion, own.fused) == (
        "auto",
        True,
        decode_terms.ALL_BUT_LAST,
    )
    assert (
        kernel_path("0.5.12", "10.0", deepseek, {"moe_runner_backend": "triton"}).allreduce_fusion
        is False
    )


def test_where_sglang_runs_no_fused_call_for_the_flag_the_path_says_why():
    from topoctl.autoconf.gpu_specs import kernel_path

    llama, qwen3, qwen3_moe = "llama-3.1-70b", "qwen3-32b", "qwen3-235b-a22b"
    cases = {
        (
            "0.5.12",
            "9.0",
            llama,
            (),
        ): "changes no kernel of LlamaForCausalLM in SGLang 0.5.12: sglang srt/models/llama.py",
        (
            "0.5.23",
            "9.0",
            llama,
            (),
        ): "what it does for LlamaForCausalLM in SGLang 0.5.23 was not read",
        (
            "0.5.21",
            "9.0",
            qwen3,
            (),
        ): "what it does for Qwen3ForCausalLM in SGLang 0.5.21 was not read",
        (
            "0.5.6",
            "9.0",
            qwen3_moe,
            (),
        ): "what it does for Qwen3MoeForCausalLM in SGLang 0.5.6 was not read",
        (
            "0.5.12",
            "8.0",
            qwen3,
            (),
        ): "SGLang 0.5.12 runs the fused call on SM90/SM100 only, not SM80",
        ("0.5.14", "8.0", qwen3, ()): "SGLang 0.5.14 raises at start-up above TP 1 on SM80",
        ("0.5.7", "8.0", qwen3, ()): "what SGLang 0.5.7 does with it on SM80 was not read",
        ("0.5.12", "9.0", qwen3, (("dp_attention", True),)): "skips the fusion under DP attention",
        ("0.5.12", "9.0", qwen3, (("moe_a2a_backend", "deepep"),)): "MoE all-to-all backend",
    }
    for (release, capability, model, extra), why in cases.items():
        path = kernel_path(release, capability, models.profile(model), dict(FUSION, **dict(extra)))
        assert not path.allreduce_fusion and path.fusion_note.startswith(
            "no norm kernel saved: the launch sets"
        ), why
        assert why in path.fusion_note, path.fusion_note
    assert (
        "flashinfer_comm_fusion.py:49-51"
        in kernel_path("0.5.14", "8.0", models.profile(qwen3), FUSION).fusion_note
    )


def test_sglang_turns_a_fused_path_off_with_deterministic_inference_and_the_launch_s_switch():
    from topoctl.autoconf.gpu_specs import kernel_path

    deepseek = models.profile("deepseek-v3")
    assert kernel_path("0.5.12", "10.0", deepseek).allreduce_fusion  # the entry: fused by default
    off = kernel_path("0.5.12", "10.0", deepseek, {"deterministic_inference": True})
    assert not off.allreduce_fusion
    assert (
        "--enable-deterministic-inference (sglang srt/server_args.py:4318-4322)" in off.fusion_note
    )
    assert kernel_path(
        "0.5.11", "10.0", deepseek, {"deterministic_inference": True}
    ).allreduce_fusion  # from 0.5.12
    late = kernel_path(
        "0.5.23",
        "9.0",
        models.profile("qwen3-235b-a22b"),
        dict(FUSION, deterministic_inference=True),
    )
    assert not late.allreduce_fusion and "arg_groups/overrides.py:1063-1070" in late.fusion_note
    disabled = kernel_path("0.5.12", "10.0", deepseek, {"flashinfer_allreduce_fusion": False})
    assert (
        not disabled.allreduce_fusion
        and "--enforce-disable-flashinfer-allreduce-fusion" in disabled.fusion_note
    )
    assert (
        kernel_path(
            "0.5.23", "10.0", deepseek, {"flashinfer_allreduce_fusion": "false"}
        ).allreduce_fusion
        is False
    )


def test_a_path_that_fuses_the_attention_output_only_saves_one_norm_kernel_a_layer():
    terms = decode_terms.Terms(stream_fixed_us=20.0)
    feat = features("qwen3-32b", tp=4, system="h200-4x-nvswitch-vm")
    feat.kernel = decode_terms.KernelPath(
        allreduce_fusion=True, fusion_max_tokens=2048, fused=decode_terms.ATTENTION_ONLY
    )
    assert decode_terms.fused_allreduces(feat, 1) == feat.layers == feat.allreduces // 2
    assert decode_terms.forward_parts(feat, terms, 1)["fusion"] == pytest.approx(
        -feat.layers * 20.0 / 4
    )
    assert decode_terms.fused_allreduces(feat, 4096) == 0


MLA_ARCHITECTURES = ("DeepseekV3ForCausalLM", "KimiK25ForConditionalGeneration")


def test_the_kernel_table_is_what_each_release_s_own_server_args_picks():
    # tests/data/oracle/kernel-paths.json: scripts/sglang_oracle/kernel_paths.py ran each release's
    # ServerArgs
    from topoctl.core.pep440 import parse

    oracle = json.load(
        open(os.path.join(ROOT, "tests", "data", "oracle", "kernel-paths.json"), encoding="utf-8")
    )
    table = yaml.safe_load(
        open(os.path.join(ROOT, "autoconf", "data", "sglang-kernels.yaml"), encoding="utf-8")
    )
    compared = 0
    for outcome in oracle["outcomes"]:
        assert outcome["kind"] == "ok", outcome
        entries = [
            e
            for e in table["paths"]
            if e["architecture"] == outcome["architecture"]
            and e["sm"] == outcome["sm"]
            and e["quantization"] in ("any", outcome["quantization"])
            and parse(str(e["first"])) <= parse(outcome["release"]) <= parse(str(e["through"]))
        ]
        # the stand-in config is no MLA model: an MLA model's Hopper attention backend says nothing
        mla_on_hopper = outcome["architecture"] in MLA_ARCHITECTURES and outcome["sm"] != "sm100"
        if not entries:  # the generic path: SGLang keeps the default MoE runner and no fusion
            assert (outcome["moe_runner_backend"], outcome["allreduce_fusion"]) == (
                "auto",
                False,
            ), outcome
            continue
        (entry,) = entries
        attention = entry["decode_attention"] if mla_on_hopper else outcome["attention_backend"]
        assert (outcome["moe_runner_backend"], attention, outcome["allreduce_fusion"]) == (
            entry["moe_runner"],
            entry["decode_attention"],
            entry["allreduce_fusion"],
        ), outcome
        compared += 1
    assert compared >= 250
    assert {o["release"] for o in oracle["outcomes"]} >= {"0.5.7", "0.5.14", "0.5.23"}


def test_the_fusion_switch_the_oracle_reads_is_the_one_the_communicator_reads():
    # 0.5.14 on: flashinfer_allreduce_fusion_backend decides (communicator.py:172); the old flag
    # reads False
    oracle = json.load(
        open(os.path.join(ROOT, "tests", "data", "oracle", "kernel-paths.json"), encoding="utf-8")
    )
    late = [
        o
        for o in oracle["outcomes"]
        if o["release"] == "0.5.23" and o["architecture"] == "Qwen3MoeForCausalLM"
    ]
    assert late and all(
        o["allreduce_fusion"]
        and o["flashinfer_allreduce_fusion_backend"] == "auto"
        and o["enable_flashinfer_allreduce_fusion"] is False
        for o in late
    )
    early = [
        o
        for o in oracle["outcomes"]
        if o["release"] == "0.5.7" and o["architecture"] == "Qwen3MoeForCausalLM"
    ]
    assert early and all(
        o["allreduce_fusion"] and o["enable_flashinfer_allreduce_fusion"] for o in early
    )


def test_a_held_out_ratio_that_moves_is_listed_row_by_row(tmp_path, capsys):
    # a variant whose group worst holds still can still make one row worse: the run lists it
    checks = _checks()
    stored = {"a": 1.00, "b": 0.80, "c": 1.20, "gone": 0.9}
    current = {"a": 1.05, "b": 0.81, "c": 1.10, "new": 1.0}
    moves = {m.case: m for m in checks.moved_rows(current, stored)}
    assert set(moves) == {"a", "c", "gone", "new"}  # b moved 1.25%, under the 3% threshold
    assert moves["a"].worse is True and moves["c"].worse is False
    assert (
        moves["gone"].after is None and moves["new"].before is None and moves["new"].worse is None
    )
    path = tmp_path / "held-out.json"
    checks.write_held_out(str(path), stored)
    checks.print_moves(current, str(path))
    lines = [
        line
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("| ") and "---" not in line
    ]
    assert lines[0].startswith("| case |")
    assert [line.split(" | ")[-1] for line in lines[1:]] == [
        "worse |",
        "removed |",
        "added |",
        "better |",
    ]
    assert lines[1].startswith("| a | 1.000 | 1.050 |")


def test_the_stored_held_out_ratios_cover_the_corpus_case_by_case():
    # benchmarks/data/launch-model-held-out.json is what the last --write scored: every scored row,
    # no other
    doc = yaml.safe_load(open(CORPUS, encoding="utf-8"))
    scored = {c["id"] for c in doc["cases"] if c.get("tok_s") or c.get("speedup")}
    stored = json.load(open(_checks().HELD_OUT_FILE, encoding="utf-8"))["ratios"]
    assert set(stored) == scored  # regenerate: benchmarks/launch_model_checks.py --write
    assert all(0.1 < ratio < 10 for ratio in stored.values())
