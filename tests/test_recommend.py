"""`topoctl recommend`: the expected answers on the reference systems, every format, determinism, errors."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest
from click.testing import CliRunner

from topoctl.cli import cli, main
from topoctl.snapshot import list_systems
from test_autoconf_snapshots import make_snapshot

SYNTHETIC = {  # used until the built-in system lands in fixtures/
    "rtx-pro-6000-8x-pcie": dict(count=8),
    "rtx-4090-2x-pcie-no-p2p": dict(count=2, p2p="NS", gpu_name="NVIDIA GeForce RTX 4090", capability="8.9", link="PHB"),
    "h200-4x-nvswitch-vm": dict(count=4, gpu_name="NVIDIA H200", capability="9.0", interconnect="nvswitch", sglang=None),
}


def target(name: str, tmp_path) -> list[str]:
    """--system NAME when the built-in system exists, else --topology of an equivalent minimal snapshot."""
    if name in list_systems():
        return ["--system", name]
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(make_snapshot(name, **SYNTHETIC[name])))
    return ["--topology", str(path)]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def recommend_json(argv, capsys) -> dict:
    code, out, err = run(["recommend", "--format", "json", *argv], capsys)
    assert code == 0, err
    return json.loads(out)


EAGLE = ["--model", "kimi-k2.5", "--speculative", "eagle3", "--draft-model", "/models/eagle3"]


def test_rtx_pro_6000_sglang_0_5_12(tmp_path, capsys):
    doc = recommend_json(target("rtx-pro-6000-8x-pcie", tmp_path) + EAGLE + ["--sglang-version", "0.5.12"], capsys)
    args = doc["args"]
    assert doc["settings"]["custom_all_reduce"] is False and "--disable-custom-all-reduce" in args
    assert not any("flashinfer" in a for a in args) and "--enable-torch-symm-mem" not in args
    assert "Tree" not in doc["env"].get("NCCL_ALGO", "")
    assert doc["settings"].get("flashinfer_allreduce_fusion") in (None, False)
    assert doc["settings"].get("torch_symm_mem") in (None, False)
    spec = doc["speculative"]
    assert spec["verdict"] == "slower" and spec["emitted"] == "without"
    assert spec["with"]["throughput_tok_s"] == pytest.approx(54.1)
    assert spec["without"]["throughput_tok_s"] == pytest.approx(89.5)
    assert spec["with"]["level"] == "measured"
    assert "--speculative-algorithm" not in args
    if doc["settings"].get("cuda_graph_max_bs") is not None:  # needs the cuda-graph rule (see docs)
        assert doc["settings"]["cuda_graph_max_bs"] == 128
        assert args[args.index("--cuda-graph-max-bs") + 1] == "128"


def test_rtx_pro_6000_sglang_0_5_23_offers_pcie_ipc(tmp_path, capsys):
    doc = recommend_json(target("rtx-pro-6000-8x-pcie", tmp_path) + EAGLE + ["--sglang-version", "0.5.23"], capsys)
    assert doc["sglang"]["flags_version"] == "0.5.23"
    assert "--cuda-graph-max-bs" not in doc["args"]
    offers = {o["allreduce_path"]: o for o in doc["offers"]}
    chosen_ipc = doc["settings"].get("pcie_ipc_allreduce") is True
    assert chosen_ipc or "pcie_ipc" in offers
    if "pcie_ipc" in offers:
        assert offers["pcie_ipc"]["level"] == "upstream-reported"
    code, out, _ = run(["recommend", *target("rtx-pro-6000-8x-pcie", tmp_path), *EAGLE, "--sglang-version", "0.5.23"], capsys)
    assert "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE='1'" in out and "upstream-reported" in out


def test_force_speculative_keeps_eagle3(tmp_path, capsys):
    doc = recommend_json(target("rtx-pro-6000-8x-pcie", tmp_path) + EAGLE + ["--sglang-version", "0.5.12",
                                                                            "--force-speculative"], capsys)
    args = doc["args"]
    assert args[args.index("--speculative-algorithm") + 1] == "EAGLE3"
    for flag in ("--speculative-num-steps", "--speculative-eagle-topk", "--speculative-num-draft-tokens"):
        assert flag in args
    assert args[args.index("--speculative-draft-model-path") + 1] == "/models/eagle3"


def test_h200_custom_allreduce_on_and_eagle3_allowed(tmp_path, capsys):
    doc = recommend_json(target("h200-4x-nvswitch-vm", tmp_path) + EAGLE, capsys)
    assert doc["settings"]["custom_all_reduce"] is True
    assert "--disable-custom-all-reduce" not in doc["args"]
    assert doc["settings"]["speculative_algorithm"] == "eagle3"
    assert doc["speculative"]["verdict"] == "kept"
    present = [f for f in ("--speculative-num-steps", "--speculative-eagle-topk", "--speculative-num-draft-tokens")
               if f in doc["args"]]
    assert len(present) in (0, 3)


def test_rtx_4090_no_p2p(tmp_path, capsys):
    doc = recommend_json(target("rtx-4090-2x-pcie-no-p2p", tmp_path) + ["--model", "llama-3.1-70b"], capsys)
    assert doc["settings"]["custom_all_reduce"] is False and "--disable-custom-all-reduce" in doc["args"]
    assert doc["env"].get("NCCL_P2P_DISABLE") == "1"


def test_flag_names_follow_version(tmp_path, capsys):
    seen = {}
    for version in ("0.5.5", "0.5.12", "0.5.18", "0.5.23"):
        doc = recommend_json(target("h200-4x-nvswitch-vm", tmp_path) + ["--sglang-version", version, "--tp-size", "4"],
                             capsys)
        seen[version] = doc["args"]
    assert seen["0.5.12"][0] in ("--tp-size", "--tensor-parallel-size")


def test_unknown_version_uses_nearest_older(tmp_path, capsys):
    code, out, err = run(["recommend", *target("h200-4x-nvswitch-vm", tmp_path), "--sglang-version", "0.5.20",
                          "--explain"], capsys)
    assert code == 0
    assert "0.5.18" in out and "nearest older" in out  # comment in the env file
    assert "nearest older" in err


@pytest.mark.parametrize("fmt", ["env", "args", "json", "yaml"])
def test_formats_are_byte_identical_across_runs(fmt, tmp_path, capsys):
    argv = ["recommend", *target("rtx-pro-6000-8x-pcie", tmp_path), *EAGLE, "--format", fmt]
    first = run(argv, capsys)
    second = run(argv, capsys)
    assert first[0] == 0 and first[1] == second[1] and first[1]
    if fmt == "yaml":
        import yaml

        assert yaml.safe_load(first[1])["target"]["gpu_count"] == 8
    if fmt == "args":
        assert first[1].count("\n") == 1 and shlex.split(first[1])[0].startswith("--")


def test_output_file_atomic_and_explain(tmp_path, capsys):
    out_file = tmp_path / "launch.env"
    code, out, err = run(["recommend", *target("rtx-pro-6000-8x-pcie", tmp_path), *EAGLE, "--explain",
                          "-o", str(out_file)], capsys)
    assert code == 0 and out == ""
    assert "SGLANG_ARGS=" in out_file.read_text()
    assert "blocked alternatives" in err and "torch_symm_mem" in err and "flashinfer_fusion" in err


def test_list_systems(capsys):
    code, out, _ = run(["recommend", "--list-systems"], capsys)
    assert code == 0
    for name in list_systems():
        assert name in out


@pytest.mark.parametrize("argv,needle", [
    (["--system", "no-such-box"], "unknown system"),
    (["--model", "gpt-9"], "unknown model"),
    (["--speculative", "eagle3"], "--draft-model"),
    (["--model", "kimi-k2.5", "--model-config", "x.json"], "not both"),
    (["--format", "toml"], "toml"),
])
def test_bad_input_exits_2(argv, needle, tmp_path, capsys):
    base = [] if "--system" in argv else target("h200-4x-nvswitch-vm", tmp_path)
    code, _, err = run(["recommend", *base, *argv], capsys)
    assert code == 2 and needle in err


def test_model_config(tmp_path, capsys):
    good = tmp_path / "config.json"
    good.write_text(json.dumps({"num_hidden_layers": 61, "hidden_size": 7168, "n_routed_experts": 256}))
    doc = recommend_json(target("h200-4x-nvswitch-vm", tmp_path) + ["--model-config", str(good)], capsys)
    assert doc["model"]["allreduces_per_forward"] == 122 and doc["model"]["allreduce_bytes_per_token"] == 14336
    assert doc["model"]["moe"] is True
    for text in ("{not json", json.dumps({"hidden_size": 1}), "[]"):
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        code, _, err = run(["recommend", *target("h200-4x-nvswitch-vm", tmp_path), "--model-config", str(bad)], capsys)
        assert code == 2 and err.count("\n") <= 2 and "topoctl: error:" in err


def test_cli_runner(tmp_path):
    result = CliRunner().invoke(cli, ["recommend", *target("h200-4x-nvswitch-vm", tmp_path), "--format", "args"])
    assert result.exit_code == 0 and result.output.startswith("--tp-size")


def test_subprocess_python_m_topoctl(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "topoctl", "recommend", *target("h200-4x-nvswitch-vm", tmp_path),
                           "--model", "deepseek-v3", "--format", "json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["model"]["name"] == "deepseek-v3"
