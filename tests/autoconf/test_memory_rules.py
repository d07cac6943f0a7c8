"""SGLang's default mem_fraction_static, per rule variant (autoconf/data/sglang-memory.yaml).

Every expected number below is worked out by hand from the released source, named with its
file:line; the test then checks that the data plus the evaluator (autoconf/memory.py) give the same.
GPU memory is in MiB as SGLang reads it (nvidia-smi memory.total): H200 143770 (the built-in h200
systems' 150754820096 bytes), L40S 46068, RTX 4090 24564, RTX PRO 6000 97887. "H200 TP4 GQA"
throughout: chunked prefill 8192 and graphs up to 512 (buckets, 0.5.5 server_args.py:750-758), so
the base reserve is 512 + 8192 x 1.5 + 512 x 2 + 4/8 x 1024 = 14336 MiB (0.5.5
server_args.py:787-796)."""

from __future__ import annotations

import pytest
from packaging.version import Version

from topoctl.autoconf import memory, models
from topoctl.rules.sglang import flags, releases

MIB = 1024 * 1024
H200, L40S, RTX4090, RTX_PRO_6000 = 143770 * MIB, 46068 * MIB, 24564 * MIB, 97887 * MIB
GQA = {
    "attention": "gqa",
    "architecture": "LlamaForCausalLM",
    "architectures": ["LlamaForCausalLM"],
}
MLA = {
    "attention": "mla",
    "architecture": "DeepseekV3ForCausalLM",
    "architectures": ["DeepseekV3ForCausalLM"],
}
EAGLE3 = {"speculative_algorithm": "EAGLE3"}


def frac(reserved: float, gpu_mib: int) -> float:
    return round((gpu_mib - reserved) / gpu_mib, 3)


def reserve(gpu, tp, version, model=GQA, launch=None, graph_bs=None, context=None, running=None):
    return memory.sglang_reserve(gpu, tp, version, model, launch or {}, graph_bs, context, running)


# ------------------------------------------------------------------------------------------ reserve


def test_reserve_0_5_5_has_no_prefill_graph_term_and_2_gib_for_eagle():
    # 0.5.5 server_args.py:785-823: 14336, floor 10240 (not binding), EAGLE "draft models and cuda
    # graphs" +2048
    assert reserve(H200, 4, "0.5.5").reserved_mib == 14336
    got = reserve(H200, 4, "0.5.5", launch=EAGLE3)
    assert got.reserved_mib == 14336 + 2048 and got.fraction == frac(16384, 143770) == 0.886


def test_reserve_0_5_5_post1_adds_max_tokens_over_4_only_when_piecewise_is_asked_for():
    # 0.5.5.post1 server_args.py:495-497 (off by default, max tokens 4096), :822-824 (+ max_tokens
    # // 4)
    assert reserve(L40S, 2, "0.5.5.post1").reserved_mib == 6976  # 512 + 4096*1.5 + 32*2 + 2/8*1024
    on = reserve(L40S, 2, "0.5.5.post1", launch={"enable_piecewise_cuda_graph": True})
    assert on.reserved_mib == 6976 + 1024 and on.fraction == frac(8000, 46068) == 0.826


def test_reserve_0_5_7_adds_max_tokens_over_8_with_max_tokens_the_chunked_prefill():
    # 0.5.7 server_args.py:898-902 (max tokens = chunked prefill 4096), :943-945 (+ 4096 // 8 = 512)
    on = reserve(L40S, 2, "0.5.7", launch={"enable_piecewise_cuda_graph": True})
    assert on.reserved_mib == 6976 + 512 and on.fraction == 0.837


def test_prefill_graph_sizes_per_release():
    # 0.5.8 server_args.py:1069-1087: 8 (4..32/4) + 14 (48..256/16) + 8 (288..512/32) + 7
    # (640..1024/64)
    #   + 12 (1280..4096/256) = 49 sizes up to 4096; 0.5.9 server_args.py:1109-1127 starts the fourth range at
    #   576: 50; up to 8192, + 8 (4608..8192/512) = 58. 0.5.5 server_args.py:861-878: 8 + 14 + 8 + 28 (640..4096/128)
    #   = 58 up to 4096.
    assert memory.piecewise_token_count(4096, "0.5.8") == 49
    assert memory.piecewise_token_count(4096, "0.5.9") == 50
    assert memory.piecewise_token_count(8192, "0.5.12") == 58
    assert memory.piecewise_token_count(4096, "0.5.5") == 58
    assert memory.piecewise_token_count(8192, "0.5.23") == 58


def test_reserve_0_5_8_counts_8_mib_per_captured_size_when_asked_for():
    # 0.5.8 server_args.py:1011-1014: 49 sizes x 8 = 392 MiB
    on = reserve(L40S, 2, "0.5.8", launch={"enable_piecewise_cuda_graph": True})
    assert on.reserved_mib == 6976 + 392 and on.prefill_graph_sizes == 49
    assert (
        reserve(L40S, 2, "0.5.9").reserved_mib == 6976
    )  # still off by default (server_args.py:604)


def test_reserve_0_5_10rc0_piecewise_on_by_default_off_for_eagle_which_takes_4_gib():
    # 0.5.10rc0 server_args.py:632 (on by default), :1071-1072 (speculative turns it off),
    # :1284-1290 (58 x 8), :1295-1301 (EAGLE +4096)
    assert reserve(H200, 4, "0.5.10rc0").reserved_mib == 14336 + 464
    got = reserve(H200, 4, "0.5.10rc0", launch=EAGLE3)
    assert not got.prefill_graph and got.reserved_mib == 14336 + 4096 and got.fraction == 0.872


def test_reserve_0_5_11_keeps_piecewise_with_eagle_and_mla_takes_1536():
    # 0.5.11 server_args.py:1194-1261 (no speculative rule), :1458-1464 (MLA 1.5 GiB), :1469-1475
    # (EAGLE +4096)
    got = reserve(H200, 4, "0.5.11", launch=EAGLE3)
    assert got.prefill_graph and got.reserved_mib == 14336 + 464 + 4096 and got.fraction == 0.869
    mla = reserve(H200, 4, "0.5.12", model=MLA)
    assert mla.reserved_mib == 14336 + 1536 and mla.fraction == 0.89


def test_reserve_0_5_13_caps_the_graph_sizes_at_the_context_length():
    # 0.5.13 server_args.py:1582-1585: max tokens min(8192, 2048): 8 + 14 + 8 + 8 + 4
    # (1280..2048/256) = 42 x 8
    assert reserve(H200, 4, "0.5.13", context=2048).reserved_mib == 14336 + 336
    assert (
        reserve(H200, 4, "0.5.12", context=2048).reserved_mib == 14336 + 464
    )  # no cap before 0.5.13
    assert (
        reserve(H200, 4, "0.5.17", context=2048).reserved_mib == 14336 + 464
    )  # the cap is gone in 0.5.17


def test_reserve_0_5_14_drops_the_speculative_reserve_and_symm_mem_turns_piecewise_off():
    # 0.5.14 server_args.py:3276-3315 (no speculative term), :3042 (symmetric memory rule)
    assert reserve(H200, 4, "0.5.14", launch=EAGLE3).reserved_mib == 14336 + 464
    assert reserve(H200, 4, "0.5.14", launch={"nccl_symm_mem": True}).reserved_mib == 14336


def test_breakable_graph_off_for_mla_in_0_5_15_to_0_5_17_and_on_from_0_5_18():
    # 0.5.15 server_args.py:3352 ("MLA attention"), 0.5.17 server_args.py:4452-4522 (non-DSA MLA),
    # removed in 0.5.18 (server_args.py:4666-4717); symmetric memory does not turn breakable graphs
    # off
    for version in ("0.5.15", "0.5.16", "0.5.17"):
        assert reserve(H200, 4, version, model=MLA).reserved_mib == 14336, version
    assert reserve(H200, 4, "0.5.18", model=MLA).reserved_mib == 14336 + 1536
    assert reserve(H200, 4, "0.5.15", launch={"nccl_symm_mem": True}).reserved_mib == 14336 + 464


def test_disabled_cuda_graph_drops_the_decode_term_from_0_5_15():
    # 0.5.15 server_args.py:3638-3643 (decode graphs counted only when the decode graph is not
    # disabled)
    assert (
        reserve(H200, 4, "0.5.15", launch={"disable_cuda_graph": True}).terms.get(
            "decode_cuda_graphs"
        )
        == 0
    )
    assert (
        reserve(H200, 4, "0.5.14", launch={"disable_cuda_graph": True}).terms["decode_cuda_graphs"]
        == 1024
    )


# ------------------------------------------------------------------------------------------ buckets


def test_buckets_of_a_24_gib_gpu_change_in_0_5_20():
    # 0.5.19 memory_hook.py:74-86: 2048 / 24 at TP 2: 512 + 3072 + 48 + 256 + 42 sizes (up to 2048)
    # x 8 = 4224
    old = reserve(RTX4090, 2, "0.5.19")
    assert (old.chunked_prefill_size, old.graph_bs, old.reserved_mib) == (
        2048,
        24,
        4224,
    ) and old.fraction == 0.828
    # 0.5.20 memory_hook.py:100-117: 4096 / 48: 512 + 6144 + 96 + 256 + 50 sizes x 8 = 7408
    new = reserve(RTX4090, 2, "0.5.20")
    assert (new.chunked_prefill_size, new.graph_bs, new.reserved_mib) == (
        4096,
        48,
        7408,
    ) and new.fraction == 0.698


def test_graph_max_bs_is_cut_to_max_running_requests_from_0_5_22():
    # 0.5.22 memory_hook.py:182-188 (only a default max batch); 0.5.21 keeps 512
    assert reserve(H200, 4, "0.5.22", running=64).graph_bs == 64
    assert reserve(H200, 4, "0.5.21", running=64).graph_bs == 512
    assert reserve(H200, 4, "0.5.22", running=64, graph_bs=128).graph_bs == 128


def test_bucket_edges():
    # strict "gpu_mem < N * 1024" (0.5.5 server_args.py:690-758); the 160 GiB and larger bucket
    # takes 16384 / 512
    assert memory.graph_and_prefill_defaults(60 * 1024 - 1, 8, "0.5.12") == (4096, 160)
    assert memory.graph_and_prefill_defaults(60 * 1024, 8, "0.5.12") == (8192, 512)
    assert memory.graph_and_prefill_defaults(180 * 1024, 1, "0.5.12") == (16384, 512)


# --------------------------------------------------------------------------------------- multimodal


def test_kimi_k25_is_multimodal_from_0_5_9_and_gets_the_vit_factor():
    # multimodal_model_archs gains KimiK25ForConditionalGeneration in 0.5.9
    # (configs/model_config.py:1211); RTX PRO 6000 TP8, --cuda-graph-max-bs 128: 512 + 12288 + 256 +
    # 1024 = 14080, round(83807/97887, 3) = 0.856; ViT 27 layers x 1152^2 / (24 x 1024^2) =
    # 1.423828125, factor 0.95 x (1 - 0.0423828125) = 0.909736328125 (server_args.py:7595-7631 in
    # 0.5.12; piecewise off for multimodal models, :1335-1337)
    kimi = models.profile("kimi-k2.5")
    assert reserve(RTX_PRO_6000, 8, "0.5.8", model=kimi, graph_bs=128).fraction == 0.856
    got = reserve(RTX_PRO_6000, 8, "0.5.12", model=kimi, graph_bs=128)
    assert got.multimodal and not got.prefill_graph and got.reserved_mib == 14080
    assert got.fraction == pytest.approx(0.856 * 0.909736328125, abs=1e-12)
    # 0.5.18 lists it in multimodal_breakable_cuda_graph_supported_model_archs and MLA no longer
    # turns breakable graphs off: + 1536
    assert reserve(RTX_PRO_6000, 8, "0.5.18", model=kimi, graph_bs=128).reserved_mib == 14080 + 1536


def test_a_text_config_makes_a_model_multimodal_from_0_5_10():
    # 0.5.10 configs/model_config.py:183-191 / 0.5.11 :218-229: hf_config is not hf_text_config
    vlm = dict(
        GQA,
        architecture="FooForConditionalGeneration",
        architectures=["FooForConditionalGeneration"],
        has_text_config=True,
    )
    assert not memory.is_multimodal(vlm, "0.5.10rc0") and memory.is_multimodal(vlm, "0.5.11")
    got = reserve(H200, 4, "0.5.11", model=vlm)
    assert (
        got.reserved_mib == 14336 and got.vit_factor is None
    )  # piecewise off; no vision_config: unchanged
    # Llama4ForConditionalGeneration is in mm_disabled_models (configs/model_config.py:136-140 in
    # 0.5.5)
    llama4 = dict(vlm, architectures=["Llama4ForConditionalGeneration"])
    assert not memory.is_multimodal(llama4, "0.5.12")


# ------------------------------------------------------------------------------------ the data's
# shape


def known_releases() -> list[str]:
    return sorted(set(releases.release_versions()) | set(flags.known_versions()), key=Version)


@pytest.mark.parametrize("section", memory.SECTIONS)
def test_each_section_covers_every_known_release_once_without_gaps(section):
    entries = memory.rules()[section]
    known = known_releases()
    assert (
        str(entries[0]["versions"][0]) == known[0] and str(entries[-1]["versions"][1]) == known[-1]
    )
    for before, after in zip(entries, entries[1:], strict=False):
        last, first = str(before["versions"][1]), str(after["versions"][0])
        assert known.index(first) == known.index(last) + 1, (
            f"{section}: gap or overlap between {last} and {first}"
        )
    for entry in entries:
        assert Version(str(entry["versions"][0])) <= Version(str(entry["versions"][1])), entry["id"]
        assert str(entry["versions"][0]) in known and str(entry["versions"][1]) in known, entry[
            "id"
        ]
        assert entry["cite"].startswith(str(entry["versions"][0]) + " "), entry["id"]


@pytest.mark.parametrize("release", known_releases())
def test_every_known_release_maps_to_a_variant_whose_range_holds_it(release):
    for section in memory.SECTIONS:
        held = [e for e in memory.rules()[section] if memory.in_range(e["versions"], release)]
        assert len(held) == 1, (section, release)
        assert memory.variant(section, release) is held[0]
    for name, entries in memory.model_lists().items():
        assert sum(memory.in_range(e["versions"], release) for e in entries) == 1, (name, release)
    source = memory.static_fraction(
        H200, 4, release, mla=False, speculative=True, cuda_graph_max_bs=None
    )[2]
    assert source.startswith(f"SGLang {release};") and "not read" not in source
    held = memory.variant("reserve", release)
    assert f"{held['versions'][0]}..{held['versions'][1]}" in source


def test_a_release_newer_than_every_known_one_takes_the_newest_rules_and_says_so():
    newest = flags.newest_version()
    got = reserve(H200, 4, "9.9.9")
    assert got.release == newest and "newer than every release topoctl knows" in got.source
    assert got.fraction == reserve(H200, 4, newest).fraction
    assert reserve(H200, 4, None).release == newest
    assert reserve(H200, 4, "0.5.12rc1").release == "0.5.12"


def test_the_model_list_extractor_reads_lists_and_ranges(tmp_path):
    """Synthetic wheels (two releases, invented architecture names) through
    scripts/extract_sglang_model_lists.py."""
    import importlib.util
    import os

    for release, archs in (
        ("0.1.0", '["A", "B"]'),
        ("0.1.1", '["A", "B"]'),
        ("0.2.0", '["A", *EXTRA]'),
    ):
        folder = tmp_path / release / "sglang" / "srt" / "configs"
        folder.mkdir(parents=True)
        (folder / "model_config.py").write_text(
            f'EXTRA = ["C"]\nmultimodal_model_archs = {archs}\n'
            'def f():\n    mm_disabled_models = ["D"]\n'
        )
    path = os.path.join(
        os.path.dirname(__file__), os.pardir, os.pardir, "scripts", "extract_sglang_model_lists.py"
    )
    spec = importlib.util.spec_from_file_location("extract_sglang_model_lists", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    got = module.extract(str(tmp_path))
    assert got["multimodal_model_archs"] == [
        {
            "versions": ["0.1.0", "0.1.1"],
            "items": ["A", "B"],
            "source": "sglang/srt/configs/model_config.py:2",
        },
        {
            "versions": ["0.2.0", "0.2.0"],
            "items": ["A", "C"],
            "source": "sglang/srt/configs/model_config.py:2",
        },
    ]
    assert got["mm_disabled_models"][0]["items"] == ["D"]
    assert got["piecewise_cuda_graph_disabled_model_archs"][0]["items"] == []


def test_the_draft_comes_out_of_the_reserve_up_to_0_5_13_and_out_of_the_kv_cache_from_0_5_14():
    # 0.5.12 speculative/eagle_worker.py:116 (the draft is built on the target's memory pool, after
    # the target sized its KV cache), 0.5.14 model_runner_kv_cache_mixin.py:96-117 ("draft weights
    # are now counted"). Synthetic draft: 2 GiB per GPU at TP 4, below 0.5.12's 4096 MiB speculative
    # reserve.
    llama = models.profile("llama-3.1-70b")
    draft = {"weight_bytes": 4 * 2 * 1024**3, "source": "synthetic, 2 GiB per GPU"}
    for version, kv_loses in (("0.5.12", 0), ("0.5.14", 2 * 1024**3)):
        with_draft = memory.fit(memory.FitCase(llama, H200, 4, version, True, draft=draft))
        expected = H200 * with_draft.mem_fraction_static - with_draft.weights_bytes - kv_loses
        assert with_draft.kv_cache_bytes == pytest.approx(expected), version
        assert (
            with_draft.draft_bytes == 2 * 1024**3
        )  # the cost model still reads the draft's weights


def test_a_launch_measured_running_here_is_not_dropped_by_the_memory_model(cli):
    """Kimi-K2.5 + EAGLE-3 on the field report's box, 0.5.12: SGLang's default reserve with the ViT
    factor (0.814 x 0.9097 = 0.7405 of 102.6 GB = 76.0 GB) is below the 76.2 GB of computed weights,
    yet the field report measured it running (54.1 tok/s): the measurement is taken, and the fit
    says why."""
    import json

    code, out, err = cli(
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
            "json",
        ]
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["speculative"]["message"].startswith("EAGLE-3 is slower here: 54.1 tok/s")
    eagle = next(a for a in [doc["chosen"], *doc["alternatives"]] if a.get("speculative"))
    assert eagle["fit"]["fits"] and "measured running here" in eagle["fit"]["notes"][-1]
    # where nothing was measured the memory model decides: Llama-3.1-405B in bf16 on 4x H200 does
    # not load
    code, _, err = cli(
        ["recommend", "--system", "h200-4x-nvswitch-vm", "--model", "llama-3.1-405b"]
    )
    assert code == 1 and "does not fit" in err


def test_sglangs_own_rule_as_recorded_gives_the_same_fractions_as_the_data():
    """SGLang's _handle_gpu_memory_settings of every release up to 0.5.13.post1, run from its own
    source by scripts/check_memory_rules.py and recorded in
    tests/data/real_parsers/sglang-memory.json.xz (scripts/dump_real_parsers.py): the evaluator over
    the data gives every recorded fraction."""
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
    from check_memory_rules import LAUNCH_CASES, topoctl_fraction
    from dump_real_parsers import read_dump

    recorded = read_dump("sglang-memory")
    releases = {case["release"] for case in recorded["cases"]}
    assert set(recorded["wheels"]) == releases and len(releases) >= 15  # 0.5.5 .. 0.5.13.post1
    assert len(recorded["cases"]) >= len(releases) * len(LAUNCH_CASES) // 2
    differences = [
        case for case in recorded["cases"] if abs(topoctl_fraction(case) - case["fraction"]) > 1e-12
    ]
    assert differences == []


SRC_ROOT = __import__("os").environ.get("TOPOCTL_SGLANG_SRC", "")


@pytest.mark.skipif(
    not SRC_ROOT, reason="TOPOCTL_SGLANG_SRC names no folder of unpacked SGLang wheels"
)
def test_sglangs_own_rule_gives_the_same_fractions_as_the_data():
    """SGLang's _handle_gpu_memory_settings of every release up to 0.5.13.post1, run from its own
    source (scripts/check_memory_rules.py), against the evaluator: TOPOCTL_SGLANG_SRC=DIR with
    DIR/<version>/sglang/."""
    import subprocess
    import sys

    script = __import__("os").path.join(
        __import__("os").path.dirname(__file__), "..", "..", "scripts", "check_memory_rules.py"
    )
    done = subprocess.run(
        [sys.executable, script, SRC_ROOT], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert " 0 differences" in done.stdout
