"""check runs recommend's memory fit (autoconf/memory.py) on the launch's model and settings
(topoctl/check/judge_memory.py): a launch that cannot load blocks, a KV cache below one request of
its context warns."""

from __future__ import annotations

import json

from topoctl.autoconf.models import builtin_models

H100 = ["check", "--system", "h100-8x-nvswitch", "--sglang-version", "0.5.21", "--format", "json"]
CMD = ["--", "python3", "-m", "sglang.launch_server"]


def findings(out: str) -> dict[str, str]:
    (result,) = json.loads(out)["results"]
    return {
        item["id"]: item["message"]
        for item in result["findings"]
        if item["severity"] in ("block", "warn")
    }


def test_deepseek_v3_tp8_on_8x_h100_cannot_load_and_blocks(cli):
    code, out, _ = cli([*H100, *CMD, "--model-path", "deepseek-ai/DeepSeek-V3", "--tp", "8"])
    assert (
        code == 1
        and "no room is left for the KV cache" in findings(out)["topoctl-model-does-not-fit"]
    )
    code, out, _ = cli(
        [*H100, *CMD, "--model-path", "deepseek-ai/DeepSeek-V3", "--tp", "16", "--nnodes", "2"]
    )
    assert code == 0 and findings(out) == {}  # weights split over 16 GPUs of two nodes


def test_the_launchs_mem_fraction_static_replaces_sglangs_default(cli):
    base = [*H100, *CMD, "--model-path", "meta-llama/Llama-3.1-70B-Instruct", "--tp", "2"]
    assert cli(base)[0] == 0
    code, out, _ = cli([*base, "--mem-fraction-static", "0.6"])
    assert (
        code == 1
        and "--mem-fraction-static 0.6 of 85.5 GB" in findings(out)["topoctl-model-does-not-fit"]
    )


def test_a_kv_cache_below_one_request_of_the_launchs_context_warns(cli):
    code, out, _ = cli(
        [
            *H100,
            *CMD,
            "--model-path",
            "meta-llama/Llama-3.1-70B-Instruct",
            "--tp",
            "2",
            "--context-length",
            "131072",
        ]
    )
    assert (
        code == 0
        and "less than one request of the full context (131072)"
        in findings(out)["topoctl-kv-below-one-request"]
    )
    code, out, _ = cli(
        [
            *H100,
            *CMD,
            "--model-path",
            "meta-llama/Llama-3.1-70B-Instruct",
            "--tp",
            "8",
            "--context-length",
            "131072",
        ]
    )
    assert code == 0 and findings(out) == {}


def test_the_model_folder_of_the_launch_is_read(cli, tmp_path):
    folder = tmp_path / "llama-70b"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(builtin_models()["llama-3.1-70b"]["config"]))
    code, out, _ = cli([*H100, *CMD, "--model-path", str(folder), "--tp", "1"])
    assert (
        code == 1
        and f"({folder}/config.json) at TP 1" in findings(out)["topoctl-model-does-not-fit"]
    )


def test_a_model_topoctl_has_no_profile_of_is_not_judged_for_memory(cli):
    code, out, _ = cli([*H100, *CMD, "--model-path", "someone/unknown-model", "--tp", "1"])
    assert code == 0 and findings(out) == {}


def test_a_launch_measured_running_here_is_not_blocked_by_the_estimate(cli, tmp_path):
    """Kimi-K2.5 with EAGLE-3 on 8x RTX PRO 6000: the memory model leaves no KV cache, the field
    report measured it running (54 tok/s, a rule's evidence); the run wins, as in recommend."""
    env = tmp_path / "launch.env"
    target = ["--system", "rtx-pro-6000-8x-pcie", "--model", "kimi-k2.5"]
    assert (
        cli(
            [
                "recommend",
                *target,
                "--speculative",
                "eagle3",
                "--draft-model",
                "/d",
                "--force-speculative",
                "-o",
                str(env),
            ]
        )[0]
        == 0
    )
    code, out, _ = cli(["check", str(env), *target])
    assert code == 0 and "topoctl-model-does-not-fit" not in out
