"""check's rules see the model the launch serves (topoctl/check/judge.py): --model, else the
launch's --model-path (a folder with a config.json, or a built-in profile's Hugging Face id), as the
memory fit reads it. SGLang decides some settings from that checkpoint: from 0.5.19 an MXFP8
checkpoint on SM100 makes the MoE runner flashinfer_trtllm itself, so --moe-a2a-backend flashinfer
with the runner at auto starts (moe-a2a-flashinfer-needs-cutlass-runner)."""

from __future__ import annotations

import json

from topoctl.autoconf.models import builtin_models

B200 = ["check", "--system", "b200-8x-nvswitch", "--sglang-version", "0.5.23", "--format", "json"]
A2A = [
    "--",
    "python3",
    "-m",
    "sglang.launch_server",
    "--tp",
    "8",
    "--enable-dp-attention",
    "--dp-size",
    "8",
    "--moe-a2a-backend",
    "flashinfer",
    "--ep-size",
    "8",
]
RULE = "moe-a2a-flashinfer-needs-cutlass-runner"


def found(out: str) -> set[str]:
    (result,) = json.loads(out)["results"]
    return {item["id"] for item in result["findings"] if item["severity"] == "block"}


def _folder(tmp_path, quant_method: str, model: str = "deepseek-v3"):
    """A checkpoint folder: the built-in profile's config.json of `model` with this quant_method."""
    config = dict(builtin_models()[model]["config"])
    config["quantization_config"] = {"quant_method": quant_method}
    folder = tmp_path / f"{model}-{quant_method}"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return str(folder)


def test_an_mxfp8_checkpoint_folder_on_b200_is_not_blocked_for_the_runner(cli, tmp_path):
    _, out, _ = cli([*B200, *A2A, "--model-path", _folder(tmp_path, "mxfp8")])
    assert RULE not in found(out), out


FP8_RULE = "moe-a2a-flashinfer-fp8-runner"
CUTLASS_FP8 = "moe-runner-flashinfer-cutlass-fp8"


def findings(out: str) -> dict[str, dict]:
    (result,) = json.loads(out)["results"]
    return {item["id"]: item for item in result["findings"] if item["severity"] == "block"}


def test_an_fp8_checkpoint_folder_and_the_fp8_built_in_still_block(cli, tmp_path):
    """With the runner at auto SGLang asserts a FlashInfer runner (moe_hook.py:531 in 0.5.23); an
    FP8 checkpoint that SGLang takes as fp8 on SM100 is judged by the FP8 rule, whose fix names a
    runner that takes FP8."""
    code, out, _ = cli([*B200, *A2A, "--model-path", _folder(tmp_path, "fp8")])
    assert code == 1 and FP8_RULE in found(out) and RULE not in found(out)
    code, out, _ = cli([*B200, *A2A, "--model-path", "deepseek-ai/DeepSeek-V3"])
    assert code == 1 and FP8_RULE in found(out)
    fix = findings(out)[FP8_RULE]["remediation"]
    assert "flashinfer_trtllm" in fix and "flashinfer_cutlass" not in fix


def test_the_cutlass_runner_the_old_fix_named_is_blocked_for_the_fp8_checkpoint_on_b200(cli):
    """SGLang refuses it: "Invalid quantization 'fp8'" (arg_groups/moe_hook.py:81 in 0.5.23)."""
    code, out, _ = cli(
        [
            *B200,
            *A2A,
            "--moe-runner-backend",
            "flashinfer_cutlass",
            "--model-path",
            "deepseek-ai/DeepSeek-V3",
        ]
    )
    assert code == 1 and CUTLASS_FP8 in found(out), out
    code, out, _ = cli(
        [
            *B200,
            "--",
            "python3",
            "-m",
            "sglang.launch_server",
            "--tp",
            "8",
            "--moe-runner-backend",
            "flashinfer_cutlass",
            "--model-path",
            "deepseek-ai/DeepSeek-V3",
        ]
    )
    assert code == 1 and found(out) == {CUTLASS_FP8}, out


def test_the_runners_that_take_fp8_pass_on_b200(cli):
    for runner in ("flashinfer_trtllm", "flashinfer_trtllm_routed", "deep_gemm"):
        code, out, _ = cli(
            [*B200, *A2A, "--moe-runner-backend", runner, "--model-path", "deepseek-ai/DeepSeek-V3"]
        )
        assert code == 0 and not found(out), (runner, out)


def test_the_fp8_checkpoint_with_the_cutlass_runner_on_h200_is_not_blocked(cli):
    """Off SM100 SGLang takes no quantization from the checkpoint before its check: the launch
    starts."""
    code, out, _ = cli(
        [
            "check",
            "--system",
            "h200-4x-nvswitch-vm",
            "--sglang-version",
            "0.5.23",
            "--format",
            "json",
            "--",
            "python3",
            "-m",
            "sglang.launch_server",
            "--tp",
            "4",
            "--moe-runner-backend",
            "flashinfer_cutlass",
            "--model-path",
            "deepseek-ai/DeepSeek-V3",
        ]
    )
    assert CUTLASS_FP8 not in found(out), out


def test_nvfp4_online_blocks_off_sm100_only(cli):
    """ValueError at arg_groups/overrides.py:1458 in 0.5.23 off SM100; on B200 SGLang starts
    (flashinfer_trtllm)."""
    launch = [
        "--",
        "python3",
        "-m",
        "sglang.launch_server",
        "--tp",
        "4",
        "--quantization",
        "nvfp4_online",
        "--model-path",
        "Qwen/Qwen3-30B-A3B",
    ]
    code, out, _ = cli(
        [
            "check",
            "--system",
            "h200-4x-nvswitch-vm",
            "--sglang-version",
            "0.5.23",
            "--format",
            "json",
            *launch,
        ]
    )
    assert code == 1 and "quantization-nvfp4-online-needs-sm100" in found(out), out
    code, out, _ = cli([*B200, *launch])
    assert "quantization-nvfp4-online-needs-sm100" not in found(out), out


def test_the_same_mxfp8_folder_on_h200_blocks(cli, tmp_path):
    code, out, _ = cli(
        [
            *B200[:2],
            "h200-4x-nvswitch-vm",
            *B200[3:],
            "--",
            "python3",
            "-m",
            "sglang.launch_server",
            "--tp",
            "4",
            "--enable-dp-attention",
            "--dp-size",
            "4",
            "--moe-a2a-backend",
            "flashinfer",
            "--ep-size",
            "4",
            "--model-path",
            _folder(tmp_path, "mxfp8"),
        ]
    )
    assert code == 1 and RULE in found(out)


def test_the_mxfp8_folder_on_b200_passes_check_as_a_whole(cli, tmp_path):
    """The launch SGLang starts passes: the memory fit counts MXFP8 at 1 + 1/32 bytes a weight
    (tests/autoconf/test_models.py), not at the 2 bytes that refused it as not fitting 8x B200."""
    code, out, _ = cli([*B200, *A2A, "--model-path", _folder(tmp_path, "mxfp8")])
    assert code == 0 and not found(out), out


def _qwen3_moe(*flags: str) -> list[str]:
    return [
        "--",
        "python3",
        "-m",
        "sglang.launch_server",
        "--tp",
        "4",
        *flags,
        "--model-path",
        "Qwen/Qwen3-30B-A3B",
    ]


def _h200(version: str) -> list[str]:
    return [
        "check",
        "--system",
        "h200-4x-nvswitch-vm",
        "--sglang-version",
        version,
        "--format",
        "json",
    ]


def test_the_trtllm_runner_blocks_an_unquantized_checkpoint_before_0_5_7(cli):
    """AssertionError at server_args.py:1525 in 0.5.6; 0.5.7 takes bfloat16 (None), and fp8 is
    always taken."""
    rule = "moe-runner-flashinfer-trtllm-needs-quantization"
    code, out, _ = cli([*_h200("0.5.6"), *_qwen3_moe("--moe-runner-backend", "flashinfer_trtllm")])
    assert code == 1 and rule in found(out), out
    code, out, _ = cli([*_h200("0.5.7"), *_qwen3_moe("--moe-runner-backend", "flashinfer_trtllm")])
    assert rule not in found(out), out
    code, out, _ = cli(
        [
            *_h200("0.5.6"),
            *_qwen3_moe("--moe-runner-backend", "flashinfer_trtllm", "--quantization", "fp8"),
        ]
    )
    assert rule not in found(out), out


def test_the_cutedsl_runner_blocks_without_nvfp4_from_0_5_11(cli, tmp_path):
    """AssertionError at arg_groups/moe_hook.py:98 in 0.5.23; modelopt_fp4 is taken, 0.5.10.post1
    has no check, and a checkpoint quantized otherwise (here ModelOpt) is not judged."""
    rule = "moe-runner-flashinfer-cutedsl-needs-nvfp4"
    code, out, _ = cli(
        [*_h200("0.5.23"), *_qwen3_moe("--moe-runner-backend", "flashinfer_cutedsl")]
    )
    assert code == 1 and rule in found(out), out
    code, out, _ = cli(
        [
            *_h200("0.5.23"),
            *_qwen3_moe(
                "--moe-runner-backend", "flashinfer_cutedsl", "--quantization", "modelopt_fp4"
            ),
        ]
    )
    assert rule not in found(out), out
    code, out, _ = cli(
        [*_h200("0.5.10.post1"), *_qwen3_moe("--moe-runner-backend", "flashinfer_cutedsl")]
    )
    assert rule not in found(out), out
    launch = [
        "--",
        "python3",
        "-m",
        "sglang.launch_server",
        "--tp",
        "8",
        "--moe-runner-backend",
        "flashinfer_cutedsl",
        "--model-path",
        _folder(tmp_path, "modelopt"),
    ]
    code, out, _ = cli([*B200, *launch])
    assert rule not in found(out), out


def test_the_trtllm_runner_blocks_weight_only_int4_quantizations_from_0_5_7(cli):
    """AssertionError "Invalid quantization 'awq'" at arg_groups/moe_hook.py:124 in 0.5.23 and
    server_args.py:1832 in 0.5.7; the older rule keeps 0.5.6.post2, and --quantization awq without
    the runner starts."""
    rule = "moe-runner-flashinfer-trtllm-weight-only-int4"
    older = "moe-runner-flashinfer-trtllm-needs-quantization"
    for version in ("0.5.7", "0.5.23"):
        for quantization in ("awq", "gptq_marlin"):
            code, out, _ = cli(
                [
                    *_h200(version),
                    *_qwen3_moe(
                        "--moe-runner-backend", "flashinfer_trtllm", "--quantization", quantization
                    ),
                ]
            )
            assert code == 1 and rule in found(out), out
    code, out, _ = cli(
        [
            *_h200("0.5.6.post2"),
            *_qwen3_moe("--moe-runner-backend", "flashinfer_trtllm", "--quantization", "gptq"),
        ]
    )
    assert code == 1 and found(out) & {rule, older} == {older}, out
    code, out, _ = cli([*_h200("0.5.23"), *_qwen3_moe("--quantization", "awq")])
    assert rule not in found(out), out
    code, out, _ = cli(
        [
            *_h200("0.5.23"),
            *_qwen3_moe("--moe-runner-backend", "flashinfer_trtllm", "--quantization", "fp8"),
        ]
    )
    assert rule not in found(out), out


def test_an_awq_checkpoint_folder_blocks_the_trtllm_runner_where_sglang_takes_its_quantization(
    cli, tmp_path
):
    """On SM100 SGLang takes the Qwen3 MoE checkpoint's quant_method
    (model_overrides/qwen3_moe.py:49 in 0.5.23) and asserts on 'awq'; on H200 it sees no
    quantization and starts (ServerArgs; the load is not judged)."""
    rule = "moe-runner-flashinfer-trtllm-weight-only-int4"
    launch = [
        "--",
        "python3",
        "-m",
        "sglang.launch_server",
        "--tp",
        "8",
        "--moe-runner-backend",
        "flashinfer_trtllm",
        "--model-path",
        _folder(tmp_path, "awq", "qwen3-30b-a3b"),
    ]
    code, out, _ = cli([*B200, *launch])
    assert code == 1 and rule in found(out), out
    launch[5] = "4"
    code, out, _ = cli([*_h200("0.5.23"), *launch])
    assert rule not in found(out), out
    code, out, _ = cli([*_h200("0.5.6"), *launch])
    assert code == 1 and rule in found(out), out


def test_an_fp8_qwen3_moe_checkpoint_folder_gets_the_fp8_runners_for_the_all_to_all_backend(
    cli, tmp_path
):
    """SGLang takes the FP8 Qwen3 MoE checkpoint as fp8 on SM100 (model_overrides/qwen3_moe.py:49 in
    0.5.23), so flashinfer_cutlass, the old fix, ends in "Invalid quantization 'fp8'"; the fix names
    the runners that start."""
    folder = _folder(tmp_path, "fp8", "qwen3-30b-a3b")
    code, out, _ = cli([*B200, *A2A, "--model-path", folder])
    assert code == 1 and FP8_RULE in found(out) and RULE not in found(out), out
    fix = findings(out)[FP8_RULE]["remediation"]
    assert "flashinfer_trtllm" in fix and "flashinfer_cutlass" not in fix
    code, out, _ = cli(
        [*B200, *A2A, "--moe-runner-backend", "flashinfer_cutlass", "--model-path", folder]
    )
    assert code == 1 and {FP8_RULE, CUTLASS_FP8} <= found(out), out
    code, out, _ = cli(
        [*B200, *A2A, "--moe-runner-backend", "flashinfer_trtllm", "--model-path", folder]
    )
    assert not found(out) & {FP8_RULE, CUTLASS_FP8, RULE}, out
    b200_0_5_12 = [*B200[:4], "0.5.12", *B200[5:]]
    code, out, _ = cli([*b200_0_5_12, *A2A, "--model-path", folder])
    assert (
        code == 1 and "moe-a2a-flashinfer-fp8-no-runner" in found(out) and RULE not in found(out)
    ), out


BELOW_SM100 = "moe-a2a-flashinfer-fp8-runner-below-sm100"


def _fp8_a2a(tp: int, *flags: str) -> list[str]:
    return [
        "--",
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "Qwen/Qwen3-30B-A3B",
        "--quantization",
        "fp8",
        "--tp-size",
        str(tp),
        "--ep-size",
        str(tp),
        "--enable-dp-attention",
        "--dp-size",
        str(tp),
        "--moe-a2a-backend",
        "flashinfer",
        *flags,
    ]


def test_the_fp8_all_to_all_fix_on_h200_names_no_trtllm_gen_runner(cli):
    """SGLang's ServerArgs refuse the runner at auto on H200 as on B200 (the block stays), but
    flashinfer_trtllm_routed and flashinfer_trtllm run FlashInfer's TRT-LLM-gen MoE module, built
    only for SM 10/12 (flashinfer jit/fused_moe.py:284 in 0.6.12, the pin of 0.5.15): the fix on
    SM90 leaves the all-to-all backend at none, and names deep_gemm only for 0.5.19 on."""
    for version in ("0.5.16", "0.5.19", "0.5.23"):
        code, out, _ = cli([*_h200(version), *_fp8_a2a(4)])
        assert code == 1 and found(out) == {BELOW_SM100}, (version, out)
        fix = findings(out)[BELOW_SM100]["remediation"]
        assert fix.startswith("Leave --moe-a2a-backend at none"), fix
        assert "Add --moe-runner-backend" not in fix and "deep_gemm is accepted" in fix, fix
    code, out, _ = cli([*_h200("0.5.16"), *_fp8_a2a(4)[:-2]])
    assert code == 0 and not found(out), out
    code, out, _ = cli([*_h200("0.5.19"), *_fp8_a2a(4, "--moe-runner-backend", "deep_gemm")])
    assert code == 0 and not found(out), out


def test_the_fp8_all_to_all_fix_on_b200_keeps_the_trtllm_gen_runners(cli):
    """On SM100 the same launch keeps moe-a2a-flashinfer-fp8-runner and its fix:
    flashinfer_trtllm_routed from 0.5.15 (FlashInfer builds the module for SM 10), and the runner it
    names passes."""
    b200 = [*B200[:4], "0.5.16", *B200[5:]]
    code, out, _ = cli([*b200, *_fp8_a2a(8)])
    assert code == 1 and found(out) == {FP8_RULE}, out
    fix = findings(out)[FP8_RULE]["remediation"]
    assert fix.startswith("Add --moe-runner-backend flashinfer_trtllm_routed"), fix
    code, out, _ = cli([*b200, *_fp8_a2a(8, "--moe-runner-backend", "flashinfer_trtllm_routed")])
    assert code == 0 and not found(out), out
