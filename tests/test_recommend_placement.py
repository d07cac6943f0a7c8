"""recommend: the GPUs of a launch on fewer GPUs than the machine has (CUDA_VISIBLE_DEVICES with
CUDA_DEVICE_ORDER=PCI_BUS_ID), the environment in --format args, and schema_version in json/yaml."""
from __future__ import annotations

import json
import shlex

import yaml

from topoctl.catalogue import system_snapshot
from topoctl.cli import main
from topoctl.sglang.launch import parse_env_text


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
    assert "NCCL_P2P_DISABLE" not in env  # the group's only pair has P2P; the cross-socket pairs are not its business
    assert "next best: GPUs 2,3 (more down-trained PCIe links)" in out


def test_tp4_on_rtx_pro_6000_runs_on_one_numa_node(capsys):
    code, out, _ = run(capsys, "recommend", "--system", "rtx-pro-6000-8x-pcie", "--tp-size", "4", "--format", "json")
    doc = json.loads(out)
    assert doc["placement"]["gpus"] == [0, 1, 2, 3] and doc["placement"]["numa_nodes"] == [0]
    assert doc["placement"]["p2p_ok"] is True and not doc["placement"]["whole_machine"]
    assert doc["env"]["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"
    assert doc["schema_version"] == 1


def test_every_gpu_writes_no_visible_devices(capsys):
    code, out, _ = run(capsys, "recommend", "--system", "rtx-pro-6000-8x-pcie")
    assert "CUDA_VISIBLE_DEVICES" not in env_of(out)


def test_recommended_group_passes_check(tmp_path, capsys):
    for system, tp in (("l40s-4x-pcie-2numa", "2"), ("rtx-pro-6000-8x-pcie", "4"), ("h100-8x-nvswitch", "2")):
        code, out, _ = run(capsys, "recommend", "--system", system, "--tp-size", tp)
        path = tmp_path / f"{system}.env"
        path.write_text(out)
        code, report, _ = run(capsys, "check", str(path), "--system", system, "--format", "json")
        doc = json.loads(report)
        assert code == 0 and doc["schema_version"] == 1
        assert not [item for item in doc["results"][0]["findings"] if item["severity"] in ("block", "warn")], doc


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
    assert "--enable-p2p-check" not in shlex.split(env["SGLANG_ARGS"])  # p2p-status-unverified: not its group
    code, out, _ = run(capsys, "recommend", "--topology", str(path))  # every GPU: the unknown pair is in it
    env = env_of(out)
    # p2p-status-unverified judges the group that holds the pair: SGLang is made to test P2P itself
    assert "--enable-p2p-check" in shlex.split(env["SGLANG_ARGS"])
    # eight PCIe-only GPUs: SGLang's own gate turns custom allreduce off (custom-allreduce-pcie-gate), so
    # custom-allreduce-without-p2p does not block and its remedy NCCL_P2P_DISABLE=1 is not asked for
    assert "NCCL_P2P_DISABLE" not in env


def test_args_carry_the_environment(capsys):
    code, out, _ = run(capsys, "recommend", "--system", "rtx-4090-2x-pcie-no-p2p", "--format", "args")
    words = shlex.split(out)
    assert code == 0 and words[:2] == ["env", "NCCL_P2P_DISABLE=1"]
    assert words[2:5] == ["python", "-m", "sglang.launch_server"] and "--tp-size" in words
    # the line is a launch command check reads back (the user appends --model-path)
    code, report, _ = run(capsys, "check", "--system", "rtx-4090-2x-pcie-no-p2p", "--format", "json", "--",
                          *words, "--model-path", "M")
    assert code == 0, report
    code, out, _ = run(capsys, "recommend", "--system", "l40s-4x-pcie-2numa", "--tp-size", "2", "--format", "args")
    assert shlex.split(out)[:3] == ["env", "CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=0,1"]


def test_args_without_environment_are_the_flags_alone(capsys):
    code, out, _ = run(capsys, "recommend", "--system", "h100-8x-nvswitch", "--format", "args")
    assert code == 0 and shlex.split(out)[0] == "--tp-size"


def test_yaml_carries_schema_version(capsys):
    code, out, _ = run(capsys, "recommend", "--system", "h200-2x-nvswitch-vm", "--format", "yaml")
    assert yaml.safe_load(out)["schema_version"] == 1


def test_a_measurement_is_not_carried_onto_a_launch_with_nccl_p2p_off(tmp_path, capsys):
    # a pair inside the launch's group (every GPU) failed topoctl bench's P2P health check (a synthetic
    # `measurements` block in bench's format): p2p-failed-health-check requires NCCL_P2P_DISABLE=1, and the field
    # report's numbers, measured without it, are not claimed for the launch
    snapshot = system_snapshot("rtx-pro-6000-8x-pcie")
    snapshot["measurements"] = {"method": "synthetic (tests/test_recommend_placement.py)", "backend": "nccl",
                                "gpus": list(range(8)), "allreduce": [], "coalescing": [],
                                "p2p": [{"src": 6, "dst": 7, "healthy": False, "reason": "timeout after 30 s",
                                         "bandwidth_gbps": None, "latency_us": None}]}
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(snapshot))
    code, out, _ = run(capsys, "recommend", "--topology", str(path), "--model", "kimi-k2.5", "--format", "json")
    chosen = json.loads(out)["chosen"]
    assert code == 0 and "env:NCCL_P2P_DISABLE=1" in chosen["config"]
    assert chosen["estimated_tok_s"] is None and chosen["level"] == "modelled"
    assert chosen["predicted_tok_s"] is not None  # the launch model still ranks it, with its inputs shown
    assert any("this launch sets env:NCCL_P2P_DISABLE=1, which the measurement did not" in text
               for text in chosen["estimate_withheld"])
    # the field report's own machine still gets its measured launch
    code, out, _ = run(capsys, "recommend", "--system", "rtx-pro-6000-8x-pcie", "--model", "kimi-k2.5", "--format", "json")
    chosen = json.loads(out)["chosen"]
    assert chosen["estimated_tok_s"] == 97.555 and "NCCL_P2P_DISABLE" not in chosen["config"]
