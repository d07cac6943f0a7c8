"""`topoctl recommend`: the expected answers on the reference systems, every format, determinism,
errors."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import target
from rules_helpers import SITE_RULE

from topoctl.cli.app import cli as cli_group
from topoctl.rules.sglang.flags import known_versions
from topoctl.snapshot.catalogue import list_systems


def recommend_json(argv, cli) -> dict:
    code, out, err = cli(["recommend", "--format", "json", *argv])
    assert code == 0, err
    return json.loads(out)


EAGLE = ["--model", "kimi-k2.5", "--speculative", "eagle3", "--draft-model", "/models/eagle3"]
SPEC_FLAGS = (
    "--speculative-algorithm",
    "--speculative-draft-model-path",
    "--speculative-num-steps",
    "--speculative-eagle-topk",
    "--speculative-num-draft-tokens",
)


def _assert_issue_4_answer(doc: dict, graph_flag: str, eagle3_measured: bool = True) -> None:
    """The expected answer on 8x RTX PRO 6000 over PCIe, Kimi-K2.5 with EAGLE-3 asked.
    `eagle3_measured`: the best EAGLE-3 launch is the one the field report measured (NCCL
    allreduce); where SGLang has the PCIe IPC allreduce (0.5.21 and later) the best EAGLE-3 launch
    uses it, which nobody measured: the launch model's."""
    args, settings = doc["args"], doc["settings"]
    # no FlashInfer fusion, no torch symmetric memory
    assert not any("flashinfer" in a for a in args)
    assert settings.get("flashinfer_allreduce_fusion") in (None, False)
    assert "--enable-torch-symm-mem" not in args and settings.get("torch_symm_mem") in (None, False)
    # custom allreduce explicitly off (the NCCL and the PCIe IPC path both turn it off)
    assert settings["custom_all_reduce"] is False and "--disable-custom-all-reduce" in args
    # no NCCL Tree (nor any NCCL algorithm forced)
    assert "NCCL_ALGO" not in doc["env"]
    # CUDA graph max batch size 128, in the version's own flag name
    assert settings["cuda_graph_max_bs"] == 128
    assert args[args.index(graph_flag) + 1] == "128"
    other = {"--cuda-graph-max-bs", "--cuda-graph-max-bs-decode"} - {graph_flag}
    assert not other & set(args)
    # EAGLE-3 measured slower: both numbers, the launch without it
    spec = doc["speculative"]
    assert spec["verdict"] == "slower" and spec["emitted"] == "without"
    assert spec["without"]["throughput_tok_s"] == pytest.approx(89.5)
    assert spec["without"]["level"] == "measured"
    if eagle3_measured:
        assert spec["with"]["throughput_tok_s"] == pytest.approx(54.1)
        assert spec["with"]["level"] == "measured"
        assert "54.1 tok/s with it vs 89.5 tok/s without" in spec["message"]
    else:
        assert (
            spec["with"]["level"] == "modelled" and "allreduce=pcie_ipc" in spec["with"]["config"]
        )
        assert "modelled vs measured" in spec["message"]
    assert not set(SPEC_FLAGS) & set(args)
    # the +9% of CUDA graph max batch size 128 multiplies the 89.5 tok/s measurement
    chosen = doc["chosen"]
    assert chosen["level"] == "measured"
    assert (
        "89.5 tok/s measured" in chosen["estimate_formula"]
        and "x 1.09" in chosen["estimate_formula"]
    )
    assert "cuda_graph_max_bs=128 instead of 512" in chosen["estimate_formula"]
    if eagle3_measured:
        assert chosen["estimated_tok_s"] == pytest.approx(89.5 * 1.09)
        assert "= 97.6 tok/s" in chosen["estimate_formula"]
    # the measured NCCL launch anchors the PCIe IPC one, times the launch model's ratio
    # (autoconf/anchor.py)
    else:
        assert chosen["estimated_tok_s"] > 89.5 * 1.09
        assert "allreduce=pcie_ipc instead of nccl" in chosen["estimate_formula"]


def test_rtx_pro_6000_sglang_0_5_12(cli):
    doc = recommend_json(
        target("rtx-pro-6000-8x-pcie") + EAGLE + ["--sglang-version", "0.5.12"], cli
    )
    _assert_issue_4_answer(doc, "--cuda-graph-max-bs")
    assert doc["offers"] == []  # no PCIe IPC allreduce before 0.5.23


def test_rtx_pro_6000_sglang_0_5_23_writes_pcie_ipc(cli):
    doc = recommend_json(
        target("rtx-pro-6000-8x-pcie") + EAGLE + ["--sglang-version", "0.5.23"], cli
    )
    assert doc["sglang"]["flags_version"] == "0.5.23"
    _assert_issue_4_answer(doc, "--cuda-graph-max-bs-decode", eagle3_measured=False)
    # written: the measured NCCL launch anchors it (89.5 x 1.09 x the launch model's pcie_ipc/nccl
    # ratio)
    assert (
        doc["settings"]["pcie_ipc_allreduce"] is True
        and doc["chosen"]["allreduce_path"] == "pcie_ipc"
    )
    assert doc["env"]["SGLANG_ENABLE_PCIE_IPC_ALLREDUCE"] == "1" and doc["offers"] == []
    code, out, _ = cli(
        ["recommend", *target("rtx-pro-6000-8x-pcie"), *EAGLE, "--sglang-version", "0.5.23"]
    )
    assert code == 0
    assert "\nSGLANG_ENABLE_PCIE_IPC_ALLREDUCE='1'\n" in out and "Offered, not chosen" not in out
    assert "x launch model path ratio" in out


def test_rtx_pro_6000_explain_says_how_the_estimate_was_made(cli):
    code, out, err = cli(
        [
            "recommend",
            *target("rtx-pro-6000-8x-pcie"),
            *EAGLE,
            "--sglang-version",
            "0.5.12",
            "--explain",
        ]
    )
    assert code == 0
    assert "chosen: allreduce=nccl, speculative=off, cuda_graph_max_bs=128" in err
    assert "97.6 tok/s expected" in err
    assert (
        "estimate: 89.5 tok/s measured (rule custom-allreduce-forced-pcie) x 1.09 (+9% with "
        "cuda_graph_max_bs=128 instead of 512, measured, rule cuda-graph-max-bs-128-sm120-kimi) "
        "= 97.6 tok/s"
    ) in err
    assert "--cuda-graph-max-bs 128  <- cuda-graph-max-bs-128-sm120-kimi" in err
    assert "# Expected: 89.5 tok/s measured" in out and "= 97.6 tok/s" in out


def test_force_speculative_keeps_eagle3(cli):
    doc = recommend_json(
        target("rtx-pro-6000-8x-pcie")
        + EAGLE
        + ["--sglang-version", "0.5.12", "--force-speculative"],
        cli,
    )
    args = doc["args"]
    assert args[args.index("--speculative-algorithm") + 1] == "EAGLE3"
    for flag in (
        "--speculative-num-steps",
        "--speculative-eagle-topk",
        "--speculative-num-draft-tokens",
    ):
        assert flag in args
    assert args[args.index("--speculative-draft-model-path") + 1] == "/models/eagle3"


def test_h200_custom_allreduce_on_and_eagle3_allowed(cli):
    """No rule blocks EAGLE-3 on H200: the launch model alone decides, and for this MoE model its
    gain sits inside the band, so the choice is uncertain and --force-speculative keeps it."""
    plain = recommend_json(
        target("h200-4x-nvswitch-vm") + ["--model", "qwen3-235b-a22b"] + EAGLE[2:], cli
    )
    assert (
        plain["speculative"]["verdict"] == "uncertain"
        and plain["speculative"]["emitted"] == "without"
    )
    doc = recommend_json(
        target("h200-4x-nvswitch-vm")
        + ["--model", "qwen3-235b-a22b"]
        + EAGLE[2:]
        + ["--force-speculative"],
        cli,
    )
    assert doc["settings"]["custom_all_reduce"] is True
    assert "--disable-custom-all-reduce" not in doc["args"]
    assert doc["settings"]["speculative_algorithm"] == "eagle3"
    assert doc["speculative"]["emitted"] == "with"
    args = doc["args"]
    assert all(flag in args for flag in SPEC_FLAGS)
    assert args[args.index("--speculative-algorithm") + 1] == "EAGLE3"
    assert (
        "cuda_graph_max_bs" not in doc["settings"]
    )  # the RTX PRO 6000 finding does not reach H200


def test_rtx_4090_no_p2p(cli):
    doc = recommend_json(
        target("rtx-4090-2x-pcie-no-p2p")
        + ["--model", "llama-3.1-8b", "--tp-size", "2", "--context-length", "2048"],
        cli,
    )
    assert (
        doc["settings"]["custom_all_reduce"] is False
        and "--disable-custom-all-reduce" in doc["args"]
    )
    assert doc["env"]["NCCL_P2P_DISABLE"] == "1"
    # nothing measured another allreduce path here: no unmeasured path is chosen on modelled grounds
    assert doc["chosen"]["allreduce_path"] == "nccl"
    assert "--enable-symm-mem" not in doc["args"] and "--enable-torch-symm-mem" not in doc["args"]


def test_flag_names_follow_version(cli):
    seen = {}
    for version in known_versions():
        doc = recommend_json(
            target("h200-4x-nvswitch-vm") + ["--sglang-version", version, "--tp-size", "4"], cli
        )
        seen[version] = doc["args"]
    assert seen["0.5.12"][0] in ("--tp-size", "--tensor-parallel-size")


def test_unknown_version_uses_nearest_older(cli):
    code, out, err = cli(
        [
            "recommend",
            *target("h200-4x-nvswitch-vm"),
            "--sglang-version",
            "0.5.9.post1",
            "--explain",
        ]
    )
    assert code == 0
    assert "0.5.9" in out and "nearest older" in out  # comment in the env file
    assert "nearest older" in err and err.startswith("topoctl: warning: ")
    code, out, err = cli(
        ["recommend", *target("h200-4x-nvswitch-vm"), "--sglang-version", "0.5.20"]
    )
    assert code == 0 and err == "" and "nearest older" not in out  # every release has its own data


@pytest.mark.parametrize("fmt", ["env", "args", "json", "yaml"])
def test_formats_are_byte_identical_across_runs(fmt, tmp_path, cli):
    argv = ["recommend", *target("rtx-pro-6000-8x-pcie"), *EAGLE, "--format", fmt]
    first = cli(argv)
    second = cli(argv)
    assert first[0] == 0 and first[1] == second[1] and first[1]
    if fmt == "yaml":
        import yaml

        assert yaml.safe_load(first[1])["target"]["gpu_count"] == 8
    if fmt == "args":
        assert first[1].count("\n") == 1 and shlex.split(first[1])[0].startswith("--")


def test_output_file_atomic_and_explain(tmp_path, cli):
    out_file = tmp_path / "launch.env"
    code, out, err = cli(
        ["recommend", *target("rtx-pro-6000-8x-pcie"), *EAGLE, "--explain", "-o", str(out_file)]
    )
    assert code == 0 and out == ""
    assert "SGLANG_ARGS=" in out_file.read_text()
    assert "blocked alternatives" in err and "torch_symm_mem" in err
    # NCCL leaves a forced NVLS off over PCIe: NCCL symmetric memory is a warned alternative, not a
    # blocked one
    assert "allreduce=nccl_symm_mem" in err.split("other candidates", 1)[1]


def test_list_systems(cli):
    code, out, _ = cli(["recommend", "--list-systems"])
    assert code == 0
    for name in list_systems():
        assert name in out


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--system", "no-such-box"], "unknown system"),
        (["--model", "gpt-9"], "unknown model"),
        (["--speculative", "eagle3"], "--draft-model"),
        (["--model", "kimi-k2.5", "--model-config", "x.json"], "not both"),
        (["--format", "toml"], "toml"),
    ],
)
def test_bad_input_exits_2(argv, needle, tmp_path, cli):
    base = [] if "--system" in argv else target("h200-4x-nvswitch-vm")
    code, _, err = cli(["recommend", *base, *argv])
    assert code == 2 and needle in err


def test_model_config(tmp_path, cli):
    good = tmp_path / "config.json"
    good.write_text(
        json.dumps({"num_hidden_layers": 61, "hidden_size": 7168, "n_routed_experts": 256})
    )
    doc = recommend_json(target("h200-4x-nvswitch-vm") + ["--model-config", str(good)], cli)
    assert (
        doc["model"]["allreduces_per_forward"] == 122
        and doc["model"]["allreduce_bytes_per_token"] == 14336
    )
    assert doc["model"]["moe"] is True
    for text in ("{not json", json.dumps({"hidden_size": 1}), "[]"):
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        code, _, err = cli(
            ["recommend", *target("h200-4x-nvswitch-vm"), "--model-config", str(bad)]
        )
        assert code == 2 and err.count("\n") <= 2 and "topoctl: error:" in err


def test_cli_runner(tmp_path):
    result = CliRunner().invoke(
        cli_group, ["recommend", *target("h200-4x-nvswitch-vm"), "--format", "args"]
    )
    assert result.exit_code == 0 and result.output.startswith("--tp-size")


def test_subprocess_python_m_topoctl(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "topoctl",
            "recommend",
            *target("h200-4x-nvswitch-vm"),
            "--model",
            "qwen3-235b-a22b",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["model"]["name"] == "qwen3-235b-a22b"


def test_site_rules_and_disable_with_reason(tmp_path, cli):
    site = tmp_path / "site"
    site.mkdir()
    (site / "fleet.yaml").write_text(SITE_RULE)
    doc = recommend_json(
        target("h200-4x-nvswitch-vm")
        + ["--model", "qwen3-235b-a22b"]
        + EAGLE[2:]
        + ["--rules", str(site)],
        cli,
    )
    assert (
        doc["speculative"]["verdict"] == "blocked"
        and "site-no-eagle3-on-h200" in doc["speculative"]["message"]
    )
    reason = "validated on our fabric (ticket 1234)"
    argv = (
        target("rtx-pro-6000-8x-pcie")
        + EAGLE
        + ["--disable", f"cuda-graph-max-bs-128-sm120-kimi={reason}"]
    )
    doc = recommend_json(argv, cli)
    assert doc["disabled"] == [{"rule_id": "cuda-graph-max-bs-128-sm120-kimi", "reason": reason}]
    assert "cuda_graph_max_bs" not in doc["settings"]
    code, out, _ = cli(["recommend", *argv])
    assert code == 0 and f"# Rule cuda-graph-max-bs-128-sm120-kimi disabled: {reason}" in out
    code, out, _ = cli(["recommend", *argv, "--format", "yaml"])
    import yaml

    assert yaml.safe_load(out)["disabled"][0]["reason"] == reason
    code, _, err = cli(["recommend", *argv, "--explain"])
    assert f"disabled: rule cuda-graph-max-bs-128-sm120-kimi: {reason}" in err


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--disable", "cuda-graph-max-bs-128-sm120-kimi"], "ID=REASON"),
        (["--disable", "cuda-graph-max-bs-128-sm120-kimi="], "ID=REASON"),
        (["--disable", "no-such-rule=because"], "no rule has this id"),
        (["--disable-rule", "x=y"], "No such option"),
        (["--rules-dir", "site"], "No such option"),
    ],
)
def test_rules_options_usage_errors(argv, needle, cli):
    code, _, err = cli(["recommend", *target("h200-4x-nvswitch-vm"), *argv])
    assert code == 2 and needle in err
    if "ID=REASON" in needle:
        assert "hint:" in err and "reason is shown in every report" in err


QWEN3_FUSION = target("h200-4x-nvswitch-vm") + [
    "--model",
    "qwen3-32b",
    "--sglang-version",
    "0.5.12",
]


def test_the_fusion_flags_gain_inside_the_band_keeps_sglangs_default_path(cli):
    """Qwen3-32B at TP 4 on H200, SGLang 0.5.12: the fusion flag is predicted 1.05x (one RMSNorm
    kernel a layer saved, no Hopper measurement of the fused call), inside the x/1.28 band:
    launch.env keeps the custom allreduce, SGLang's default, and --explain and json say the choice
    is uncertain and what settles it."""
    code, env, err = cli(["recommend", *QWEN3_FUSION])
    assert code == 0, err
    assert "SGLANG_ARGS='--tp-size 4'" in env.splitlines()
    assert "--enable-flashinfer-allreduce-fusion" not in env
    assert "# Chosen: allreduce=custom, speculative=off" in env
    doc = recommend_json(QWEN3_FUSION, cli)
    assert (
        doc["chosen"]["allreduce_path"] == "custom"
        and "--enable-flashinfer-allreduce-fusion" not in doc["args"]
    )
    fused = next(
        alt
        for alt in doc["alternatives"]
        if alt["tp_size"] == 4 and alt["allreduce_path"] == "flashinfer_fusion"
    )
    gain = fused["estimate"]["tokens_per_s"] / doc["chosen"]["estimate"]["tokens_per_s"]
    assert (
        1.0 < gain < doc["chosen"]["estimate"]["band"]["factor"]
    )  # faster as predicted, inside the band
    note = next(n for n in doc["notes"] if n.startswith("allreduce=flashinfer_fusion is predicted"))
    assert f"{gain:.2f}x SGLang's default path (custom)" in note and "uncertain" in note
    assert note.endswith(
        "`python -m sglang.bench_one_batch_server --batch-size 1` on a server with and without "
        "--enable-flashinfer-allreduce-fusion"
    )
    code, out, err = cli(["recommend", *QWEN3_FUSION, "--explain"])
    assert code == 0, err
    assert (
        "SGLANG_ARGS='--tp-size 4'" in out.splitlines()
    )  # --explain goes to stderr, launch.env to stdout
    assert (
        "chosen: allreduce=custom, speculative=off" in err and f"note: {note}" in err.splitlines()
    )
