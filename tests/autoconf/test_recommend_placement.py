"""recommend: the GPUs of a launch on fewer GPUs than the machine has (CUDA_VISIBLE_DEVICES with
CUDA_DEVICE_ORDER=PCI_BUS_ID), --format args as SGLang's arguments alone (its environment on
stderr), and schema_version in json/yaml."""

from __future__ import annotations

import json
import shlex

import pytest
import yaml

from topoctl.cli.app import main
from topoctl.deploy.sglang_launch import parse_env_text
from topoctl.snapshot.catalogue import list_systems, system_snapshot


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def env_of(text):
    return {name: value for _, name, value in parse_env_text(text, "launch.env")}


def test_tp2_on_l40s_runs_on_one_socket_with_p2p(capsys):
    code, out, _ = run(capsys, "recommend", "--system", "l40s-4x-pcie-2numa", "--tp-size", "2")
    assert code == 0
    env = env_of(out)
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1" and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert (
        "NCCL_P2P_DISABLE" not in env
    )  # the group's only pair has P2P; the cross-socket pairs are not its business
    assert "next best: GPUs 2,3 (more down-trained PCIe links)" in out


def test_tp4_on_rtx_pro_6000_runs_on_one_numa_node(capsys):
    code, out, _ = run(
        capsys,
        "recommend",
        "--system",
        "rtx-pro-6000-8x-pcie",
        "--tp-size",
        "4",
        "--format",
        "json",
    )
    doc = json.loads(out)
    assert doc["placement"]["gpus"] == [0, 1, 2, 3] and doc["placement"]["numa_nodes"] == [0]
    assert doc["placement"]["p2p_ok"] is True and not doc["placement"]["whole_machine"]
    assert doc["env"]["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"
    assert doc["schema_version"] == 1


def test_every_gpu_writes_no_visible_devices(capsys):
    code, out, _ = run(capsys, "recommend", "--system", "rtx-pro-6000-8x-pcie")
    assert "CUDA_VISIBLE_DEVICES" not in env_of(out)


def test_recommended_group_passes_check(tmp_path, capsys):
    for system, tp in (
        ("l40s-4x-pcie-2numa", "2"),
        ("rtx-pro-6000-8x-pcie", "4"),
        ("h100-8x-nvswitch", "2"),
    ):
        code, out, _ = run(capsys, "recommend", "--system", system, "--tp-size", tp)
        path = tmp_path / f"{system}.env"
        path.write_text(out)
        code, report, _ = run(capsys, "check", str(path), "--system", system, "--format", "json")
        doc = json.loads(report)
        assert code == 0 and doc["schema_version"] == 1
        assert not [
            item for item in doc["results"][0]["findings"] if item["severity"] in ("block", "warn")
        ], doc


def test_an_unknown_pair_outside_the_group_keeps_nccl_p2p_on(tmp_path, capsys):
    snapshot = system_snapshot("rtx-pro-6000-8x-pcie")
    for entry in snapshot["pairs"]:
        if {entry["src"], entry["dst"]} == {6, 7}:
            entry["p2p"]["read"] = "unknown"
    snapshot["summary"]["all_pairs_p2p"] = None
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(snapshot))
    code, out, _ = run(capsys, "recommend", "--topology", str(path), "--tp-size", "4")
    env = env_of(out)
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1,2,3" and "NCCL_P2P_DISABLE" not in env
    assert "--enable-p2p-check" not in shlex.split(
        env["SGLANG_ARGS"]
    )  # p2p-status-unverified: not its group
    code, out, _ = run(
        capsys, "recommend", "--topology", str(path)
    )  # every GPU: the unknown pair is in it
    env = env_of(out)
    # p2p-status-unverified judges the group that holds the pair: SGLang is made to test P2P itself
    assert "--enable-p2p-check" in shlex.split(env["SGLANG_ARGS"])
    # eight PCIe-only GPUs: SGLang's own gate turns custom allreduce off
    # (custom-allreduce-pcie-gate), so custom-allreduce-without-p2p does not block and its remedy
    # NCCL_P2P_DISABLE=1 is not asked for
    assert "NCCL_P2P_DISABLE" not in env


NOTE = "topoctl: note: the launch also needs this environment, which flags cannot carry: "
ARGS_CASES = [
    [],
    ["--model", "llama-3.1-8b"],
    ["--tp-size", "1"],
    ["--model", "deepseek-v3", "--nnodes", "2"],
]


def noted_environment(err):
    """The NAME=VALUE words of recommend --format args' stderr note ({} when there is none)."""
    lines = [line for line in err.splitlines() if line.startswith(NOTE)]
    if not lines:
        return {}
    words = shlex.split(lines[0][len(NOTE) :].rsplit(" (--format env", 1)[0])
    return dict(word.split("=", 1) for word in words)


@pytest.mark.parametrize("system", list_systems())
@pytest.mark.parametrize("given", ARGS_CASES, ids=" ".join)
def test_args_are_sglang_arguments_alone_on_every_system(capsys, system, given):
    """--format args is SGLang's argument list on every reference system, no-P2P box included; the
    environment launch.env carries beside SGLANG_ARGS is named on stderr, and the two together are
    the launch check passes."""
    code, env_text, _ = run(capsys, "recommend", "--system", system, *given)
    code_args, out, err = run(capsys, "recommend", "--system", system, *given, "--format", "args")
    assert code_args == code
    if code != 0:
        return
    env = env_of(env_text)
    words = shlex.split(out)
    assert out.count("\n") == 1 and words[0].startswith("--"), out
    assert words == shlex.split(env["SGLANG_ARGS"]) + shlex.split(env.get("SGLANG_NODE_ARGS", ""))
    needed = {
        name: value
        for name, value in env.items()
        if not name.startswith("TOPOCTL_") and name not in ("SGLANG_ARGS", "SGLANG_NODE_ARGS")
    }
    assert noted_environment(err) == needed
    if "--nnodes" in given:
        return  # the node flags hold variables each node's launcher fills
    line = [
        "env",
        *(f"{name}={value}" for name, value in needed.items()),
        "python",
        "-m",
        "sglang.launch_server",
        *words,
        "--model-path",
        "M",
    ]
    check_code, report, _ = run(
        capsys, "check", "--system", system, "--format", "json", "--", *line
    )
    assert check_code == 0, report


def test_args_on_the_no_p2p_box_name_nccl_p2p_disable_on_stderr(capsys):
    code, out, err = run(
        capsys, "recommend", "--system", "rtx-4090-2x-pcie-no-p2p", "--format", "args"
    )
    assert code == 0 and out == "--tp-size 2 --disable-custom-all-reduce\n"
    assert noted_environment(err) == {"NCCL_P2P_DISABLE": "1"}
    code, out, err = run(capsys, "recommend", "--system", "h100-8x-nvswitch", "--format", "args")
    assert code == 0 and shlex.split(out)[0] == "--tp-size" and err == ""


def test_yaml_carries_schema_version(capsys):
    code, out, _ = run(capsys, "recommend", "--system", "h200-2x-nvswitch-vm", "--format", "yaml")
    assert yaml.safe_load(out)["schema_version"] == 1


def test_a_measurement_is_not_carried_onto_a_launch_with_nccl_p2p_off(tmp_path, capsys):
    # a pair inside the launch's group (every GPU) failed topoctl bench's P2P health check (a
    # synthetic `measurements` block in bench's format): p2p-failed-health-check requires
    # NCCL_P2P_DISABLE=1, and the field report's numbers, measured without it, are not claimed for
    # the launch
    snapshot = system_snapshot("rtx-pro-6000-8x-pcie")
    snapshot["measurements"] = {
        "method": "synthetic (tests/autoconf/test_recommend_placement.py)",
        "backend": "nccl",
        "gpus": list(range(8)),
        "allreduce": [],
        "coalescing": [],
        "p2p": [
            {
                "src": 6,
                "dst": 7,
                "healthy": False,
                "reason": "timeout after 30 s",
                "bandwidth_gbps": None,
                "latency_us": None,
            }
        ],
    }
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(snapshot))
    code, out, _ = run(
        capsys, "recommend", "--topology", str(path), "--model", "kimi-k2.5", "--format", "json"
    )
    chosen = json.loads(out)["chosen"]
    assert code == 0 and "env:NCCL_P2P_DISABLE=1" in chosen["config"]
    assert chosen["estimated_tok_s"] is None and chosen["level"] == "modelled"
    assert (
        chosen["predicted_tok_s"] is not None
    )  # the launch model still ranks it, with its inputs shown
    assert any(
        "this launch sets env:NCCL_P2P_DISABLE=1, which the measurement did not" in text
        for text in chosen["estimate_withheld"]
    )
    # the field report's own machine still gets its measured launch
    code, out, _ = run(
        capsys,
        "recommend",
        "--system",
        "rtx-pro-6000-8x-pcie",
        "--model",
        "kimi-k2.5",
        "--format",
        "json",
    )
    chosen = json.loads(out)["chosen"]
    assert chosen["estimated_tok_s"] == 97.555 and "NCCL_P2P_DISABLE" not in chosen["config"]
