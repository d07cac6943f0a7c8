"""rules/sglang/kernels.py against the committed kernel matrix
(rules/sglang/generated/kernel-matrix.json)."""

from __future__ import annotations

from topoctl.rules.sglang import kernels


def verdict(release: str, sm: int, op: kernels.Op | None) -> str:
    assert op is not None
    return kernels.kernel_for(release, sm, op).verdict


def test_fa3_exists_for_sm80_to_sm90_only_in_every_release():
    for release in ("0.5.5", "0.5.10", "0.5.23"):
        assert verdict(release, 90, kernels.attention("fa3")) == "built"
        assert verdict(release, 86, kernels.attention("fa3")) == "built"
        for sm in (100, 103, 120, 121):
            assert verdict(release, sm, kernels.attention("fa3")) == "missing", (release, sm)


def test_answer_cites_the_wheel_file_and_targets():
    answer = kernels.kernel_for("0.5.9", 120, kernels.attention("fa3"))  # type: ignore[arg-type]
    assert answer.source.startswith("sgl-kernel==0.3.21 ") and "sm_90a" in answer.source
    assert answer.built_for == (80, 86, 89, 90)


def test_trtllm_moe_on_sm120_missing_before_flashinfer_jit_accepts_major_12():
    op = kernels.moe_runner("flashinfer_trtllm", "fp8")
    assert verdict("0.5.9", 120, op) == "missing"
    assert verdict("0.5.10", 120, op) == "jit"  # FlashInfer's JIT adds majors 10 and 12
    assert verdict("0.5.9", 100, op) == "built"
    assert verdict("0.5.9", 90, op) == "missing"


def test_only_a_jit_gate_never_blocks():
    # 0.5.16 pins no flashinfer-cubin: the trtllm-gen cubins are fetched at run time, only the JIT
    # gate speaks
    assert verdict("0.5.16", 90, kernels.moe_runner("flashinfer_trtllm", None)) == "doubt"
    assert verdict("0.5.16", 100, kernels.moe_runner("flashinfer_trtllm", None)) == "built"


def test_fusion_gap_warns_at_most():
    op = kernels.fusion("trtllm")
    assert verdict("0.5.9", 120, op) == "doubt"  # SGLang applies it on SM90/SM100 only
    assert verdict("0.5.18", 120, op) == "built"
    assert verdict("0.5.9", 90, op) == "built"


def test_same_major_gap_is_doubt_not_missing():
    op = kernels.moe_runner("cutlass", "nvfp4")
    assert verdict("0.5.5", 120, op) == "built"
    assert verdict("0.5.5", 121, op) == "doubt"  # SM121: no sgl-kernel code, but SM120 has it
    assert (
        verdict("0.5.10", 120, op) == "missing"
    )  # NVFP4 cutlass MoE lost its SM120 kernels in 0.5.10rc0
    assert verdict("0.5.10", 90, op) == "missing"


def test_unknown_ops_and_releases():
    assert kernels.attention("flashinfer") is None and kernels.attention("triton") is None
    assert (
        kernels.moe_runner("triton", "fp8") is None and kernels.moe_runner("cutlass", None) is None
    )
    assert verdict("0.4.0", 120, kernels.attention("fa3")) == "unknown"


def test_auto_moe_runner_reads_gpt_oss_dispatch():
    assert kernels.auto_moe_runner("0.5.9", 120, "GptOssForCausalLM", "mxfp4", False) == (
        "flashinfer_mxfp4",
        "sglang==0.5.9 sglang/srt/server_args.py:1371",
    )
    assert kernels.auto_moe_runner("0.5.9", 90, "GptOssForCausalLM", "mxfp4", False) is None
    assert kernels.auto_moe_runner("0.5.10", 120, "GptOssForCausalLM", "mxfp4", False) is None
    assert kernels.auto_moe_runner("0.5.9", 120, "GptOssForCausalLM", "mxfp4", True) is None
    assert kernels.auto_moe_runner("0.5.9", 120, "LlamaForCausalLM", "mxfp4", False) is None


def test_launch_missing_reads_recommend_settings():
    moe = {"moe": True, "quantization": {"scheme": "fp8", "method": "fp8"}}
    assert [
        a.op.name for a in kernels.launch_missing("0.5.9", 120, {"attention_backend": "fa3"}, None)
    ] == ["attention backend fa3"]
    assert kernels.launch_missing("0.5.9", 120, {"moe_runner_backend": "flashinfer_trtllm"}, moe)
    assert not kernels.launch_missing(
        "0.5.9", 100, {"moe_runner_backend": "flashinfer_trtllm"}, moe
    )
    assert not kernels.launch_missing(
        "0.5.9", 120, {"attention_backend": "flashinfer", "tp_size": 8}, moe
    )
