"""The memory fit of a launch against SGLang's own rules (autoconf/memory.py,
autoconf/data/sglang-memory.yaml): a launch fits only with KV room for one request of the context;
the launch's own --disable-cuda-graph, --mem-fraction-static, --chunked-prefill-size, DP attention
and DeepEP change what SGLang reserves. The numbers are worked by hand from the lines of each
release's wheel named in the tests."""

from __future__ import annotations

import json

import pytest
from rules_helpers import site_policy_rule, write_rules

from topoctl.autoconf import memory, models

H200_MIB = 143771  # nvidia-smi memory.total of an H200 (fixtures/h200-1x-vm)
H200 = H200_MIB * memory.MIB


def reserve(release, tp=1, launch=None, model="llama-3.1-8b"):
    return memory.sglang_reserve(H200, tp, release, models.profile(model), launch or {})


def test_disable_cuda_graph_drops_the_decode_graph_term_from_0_5_15():
    # 0.5.19 arg_groups/memory_hook.py reserve_for_graph_mb: the decode graph term only when the
    # decode CUDA graph backend is not DISABLED; a candidate carries --disable-cuda-graph as
    # cuda_graph=False
    on = reserve("0.5.19")
    off = reserve("0.5.19", launch={"cuda_graph": False})
    assert on.terms["decode_cuda_graphs"] > 0 and off.terms["decode_cuda_graphs"] == 0
    assert memory.decode_graph_off({"disable_cuda_graph": True}) and memory.decode_graph_off(
        {"cuda_graph": False}
    )
    # before 0.5.15 the term is added whatever the launch (0.5.12 server_args.py, reserved_mem +=
    # max_bs * 2)
    assert reserve("0.5.12", launch={"cuda_graph": False}).terms["decode_cuda_graphs"] > 0


def test_dp_attention_pads_the_reserve_by_graph_batch_times_dp():
    # 0.5.12 server_args.py:1554-1562: enable_dp_attention adds max_bs x dp x 3, and x 1.5 more
    # above 300 MiB
    launch = {"enable_dp_attention": True, "dp_size": 8}
    res = reserve("0.5.12", tp=8, launch=launch)
    assert res.graph_bs == 512  # 60-160 GiB bucket at TP >= 4
    assert res.terms["dp_attention"] == 512 * 8 * 3 + 512 * 8 * 1.5
    plain = reserve("0.5.12", tp=8)
    assert "dp_attention" not in plain.terms
    # both are above the 10 GiB floor: the fraction moves by the term exactly
    assert res.reserved_mib - plain.reserved_mib == pytest.approx(512 * 8 * 4.5)


def test_dp_attention_under_its_setting_name_pads_the_reserve_the_same():
    # a recommend candidate and a launch check read carry the setting name
    # (rules/sglang/data/spelling.yaml dp_attention: --enable-dp-attention), not SGLang's dest: both
    # are the same launch to SGLang
    by_dest = reserve("0.5.12", tp=8, launch={"enable_dp_attention": True, "dp_size": 8})
    by_setting = reserve("0.5.12", tp=8, launch={"dp_attention": True, "dp_size": 8})
    assert by_setting.terms == by_dest.terms and by_setting.fraction == by_dest.fraction
    assert by_setting.terms["dp_attention"] == 512 * 8 * 4.5
    assert (
        "dp_attention"
        not in reserve("0.5.12", tp=8, launch={"dp_attention": False, "dp_size": 8}).terms
    )
    assert (
        "dp_attention"
        not in reserve("0.5.12", tp=8, launch={"dp_attention": "false", "dp_size": 8}).terms
    )


def test_a_switch_is_read_under_its_setting_name_or_its_flag_s_dest():
    from topoctl.rules.sglang.spelling import switch

    assert switch({"dp_attention": True}, "dp_attention") is True
    assert switch({"enable_dp_attention": True}, "dp_attention") is True
    assert switch({"dp_attention": "0"}, "dp_attention") is False
    assert switch({}, "dp_attention") is None
    assert switch({"cuda_graph": False}, "cuda_graph") is False
    assert switch({"disable_cuda_graph": True}, "cuda_graph") is False
    assert switch({"disable_cuda_graph": False}, "cuda_graph") is None
    # the setting name wins over a dest: it is what the launch was read as
    assert switch({"cuda_graph": True, "disable_cuda_graph": True}, "cuda_graph") is True


B200_BYTES = 192199786496  # memory_total_bytes of fixtures/b200-8x-nvswitch: 183296 MiB
DSV3 = [
    "--",
    "python3",
    "-m",
    "sglang.launch_server",
    "--model-path",
    "deepseek-ai/DeepSeek-V3",
    "--tp",
    "8",
]


def _spy_fit(monkeypatch):
    """The launch dicts the memory fit is handed, as the command builds them."""
    seen = []
    real = memory.fit

    def spy(case):
        seen.append(dict(case.launch or {}))
        return real(case)

    monkeypatch.setattr(memory, "fit", spy)
    return seen


def test_check_of_a_dp_attention_launch_counts_the_padding_reserve(cli, monkeypatch):
    # SGLang 0.5.12 server_args.py:1540-1562 at --cuda-graph-max-bs 2048 on a B200 (183296 MiB), TP
    # 8: 512 base + 16384 x 1.5 activation + 2048 x 2 decode graphs + 1024 TP + 1536 prefill graphs
    # = 31744 MiB, and with --enable-dp-attention --dp-size 8 another 2048 x 8 x (3 + 1.5) = 73728
    # MiB: 105472 MiB, mem_fraction_static (183296 - 105472) / 183296 = 0.425, below DeepSeek-V3's
    # 85.1 GB of weights per GPU
    seen = _spy_fit(monkeypatch)
    target = [
        "check",
        "--system",
        "b200-8x-nvswitch",
        "--sglang-version",
        "0.5.12",
        "--format",
        "json",
    ]
    code, out, err = cli(
        [*target, *DSV3, "--cuda-graph-max-bs", "2048", "--enable-dp-attention", "--dp-size", "8"]
    )
    assert code == 1, err
    found = {f["id"]: f for r in json.loads(out)["results"] for f in r["findings"]}
    assert found["topoctl-model-does-not-fit"]["severity"] == "block"
    assert "SGLang's default 0.425 of 192.2 GB" in found["topoctl-model-does-not-fit"]["message"]
    # check hands the fit the setting names, as recommend does
    assert seen[-1]["dp_attention"] is True and "enable_dp_attention" not in seen[-1]
    # the same launch without DP attention: 0.827 of the GPU, it loads
    code, out, err = cli([*target, *DSV3, "--cuda-graph-max-bs", "2048"])
    assert code == 0, err
    assert "topoctl-model-does-not-fit" not in out
    code, out, err = cli([*target, *DSV3, "--disable-cuda-graph"])
    assert code == 0, err
    assert seen[-1]["cuda_graph"] is False and "disable_cuda_graph" not in seen[-1]


SITE_DP_ATTENTION = site_policy_rule(
    "site-dp-attention", "dp_attention", "--enable-dp-attention", "DP attention"
)


def test_recommend_s_dp_attention_candidate_counts_the_padding_reserve(cli, monkeypatch, tmp_path):
    # a site rule requiring DP attention puts the setting name in recommend's candidates
    # (cand.effective). SGLang 0.5.12 sizes the reserve (_handle_gpu_memory_settings,
    # server_args.py:1554-1562) before _handle_data_parallelism turns DP attention off at --dp-size
    # 1 (:3062-3064), so the term holds at DP 1: 512 x 1 x (3 + 1.5) = 2304 MiB on the 28672 MiB of
    # the plain launch: (183296 - 30976) / 183296 = 0.831

    write_rules(tmp_path / "rules", SITE_DP_ATTENTION)
    base = [
        "recommend",
        "--system",
        "b200-8x-nvswitch",
        "--model",
        "deepseek-v3",
        "--sglang-version",
        "0.5.12",
        "--tp-size",
        "8",
        "--format",
        "json",
    ]
    code, out, err = cli(base)
    assert code == 0, err
    plain = json.loads(out)["chosen"]["fit"]
    seen = _spy_fit(monkeypatch)
    code, out, err = cli([*base, "--rules", str(tmp_path / "rules")])
    assert code == 0, err
    doc = json.loads(out)
    assert doc["settings"]["dp_attention"] is True and "--enable-dp-attention" in doc["args"]
    fit = doc["chosen"]["fit"]
    assert fit["sglang_reserve"]["terms_mib"]["dp_attention"] == 2304
    assert (
        fit["sglang_reserve"]["reserved_mib"]
        == plain["sglang_reserve"]["reserved_mib"] + 2304
        == 30976
    )
    assert plain["mem_fraction_static"] == 0.844 and fit["mem_fraction_static"] == 0.831
    assert fit["kv_cache_tokens"] < plain["kv_cache_tokens"]
    assert any(launch.get("dp_attention") is True for launch in seen)
    assert not any("enable_dp_attention" in launch for launch in seen)


def test_deepep_reserves_2_gib_on_top_of_the_floor_from_0_5_16():
    # 0.5.16 server_args.py:4082-4083 and reserve_for_deepep_a2a_mb (:4198-4210): 2 * 1024 with
    # moe_a2a_backend deepep and a decode CUDA graph; absent from 0.5.15 (no reserve_for_deepep in
    # its wheel)
    launch = {"moe_a2a_backend": "deepep"}
    assert reserve("0.5.16", tp=8, launch=launch, model="deepseek-v3").terms["deepep_a2a"] == 2048
    assert reserve("0.5.23", tp=8, launch=launch, model="deepseek-v3").terms["deepep_a2a"] == 2048
    assert "deepep_a2a" not in reserve("0.5.15", tp=8, launch=launch, model="deepseek-v3").terms
    off = dict(launch, cuda_graph=False)
    assert "deepep_a2a" not in reserve("0.5.19", tp=8, launch=off, model="deepseek-v3").terms


def test_a_launch_s_own_mem_fraction_static_and_chunked_prefill_size_are_used():
    model = models.profile("llama-3.1-8b")
    own = memory.fit(
        memory.FitCase(model, H200, 1, "0.5.12", False, launch={"mem_fraction_static": 0.7})
    )
    assert own.mem_fraction_static == 0.7 and "--mem-fraction-static 0.7" in own.mem_fraction_source
    # activation term: max(chunked_prefill_size, 2048) x 1.5 (0.5.5 server_args.py:785-823)
    assert (
        reserve("0.5.12", launch={"chunked_prefill_size": 4096}).terms["activation"] == 4096 * 1.5
    )
    assert reserve("0.5.12").terms["activation"] == 8192 * 1.5  # the 60-160 GiB bucket's default


def test_fits_only_with_room_for_one_request_of_the_context():
    # Kimi-K2.5 (262144-token context) on 8x RTX PRO 6000: it loads, but one request of its own
    # context does not fit in the KV cache; the fit says so and names the context that would
    model = models.profile("kimi-k2.5")
    gpu = 97887 * memory.MIB
    full = memory.fit(memory.FitCase(model, gpu, 8, "0.5.12", False))
    assert full.context_only and full.context_length == model["max_context"]
    assert (
        full.fits
    )  # the model's own context, not asked for: said in the notes, not held against the launch
    assert any(f"--context-length {full.kv_tokens} would fit" in note for note in full.notes)
    assert not full.to_dict()["fits_at_this_context"]
    asked = memory.fit(memory.FitCase(model, gpu, 8, "0.5.12", False, context_length=200000))
    assert not asked.fits and "does not fit at this context" in asked.why
    short = memory.fit(memory.FitCase(model, gpu, 8, "0.5.12", False, context_length=32768))
    assert short.fits and short.context_length == 32768 and not short.context_only
    # what the user asks is capped by the model's own context
    assert (
        memory.fit(
            memory.FitCase(model, gpu, 8, "0.5.12", False, context_length=10**7)
        ).context_length
        == model["max_context"]
    )


def test_a_1t_fp8_model_does_not_fit_8x_h200_at_128k_and_does_on_16(cli):
    # Moonshot's deploy guidance: "The smallest deployment unit for Kimi-K2 FP8 weights with 128k
    # seqlen on mainstream H200 or H20 platform is a cluster with 16 GPUs" (Kimi-K2-Instruct
    # docs/deploy_guidance.md)
    config = dict(models.builtin_models()["kimi-k2.5"]["config"]["text_config"])
    config.update(
        architectures=["DeepseekV3ForCausalLM"],
        model_type="kimi_k2",
        max_position_embeddings=131072,
        quantization_config={"quant_method": "fp8", "weight_block_size": [128, 128]},
    )
    model = models.from_config(config, "kimi-k2-fp8", "Kimi-K2 FP8 (test)")
    fit8 = memory.fit(memory.FitCase(model, H200, 8, "0.5.12", False, context_length=131072))
    assert not fit8.fits and "does not fit at this context" in fit8.why
    assert memory.fit(memory.FitCase(model, H200, 16, "0.5.12", False, context_length=131072)).fits


def test_the_hint_keeps_a_fixed_tp_size(cli):
    code, _, err = cli(
        ["recommend", "--system", "h200-4x-nvswitch-vm", "--model", "deepseek-v3", "--tp-size", "2"]
    )
    assert code == 1
    hint = err.split("hint")[1]
    assert "--tp-size 8 (instead of 2)" in hint or "--tp-size 4 (instead of 2)" in hint
    assert "these 4 GPUs" not in hint


def test_a_fit_cannot_be_changed_after_it_is_judged():
    """Fit is frozen: the search and every report read the answer fit() gave; a later stage that
    wants another makes a new one (dataclasses.replace)."""
    import dataclasses

    from topoctl.autoconf.memory import Fit

    judged = Fit(True, 80 * 10**9, 0.8, "test", 8, {"layers": 1.0}, 0.0, 1.0, 1.0, 1, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        judged.fits = False  # type: ignore[misc]
    assert dataclasses.replace(judged, fits=False).fits is False and judged.fits is True
