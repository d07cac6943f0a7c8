"""`topoctl check` judges the launch's own GPU group: CUDA_VISIBLE_DEVICES (launch.env or the environment
before the command), else the first tp x dp GPUs; never every pair of the machine."""
from __future__ import annotations

import json

import pytest

from topoctl.cli import main

LAUNCH = ["python", "-m", "sglang.launch_server", "--model-path", "X"]


def check(capsys, system, *command, env_file=None, fmt="json"):
    argv = ["check", "--system", system, "--format", fmt]
    argv += [str(env_file)] if env_file else ["--", *command]
    code = main(argv)
    out, err = capsys.readouterr()
    return code, (json.loads(out) if fmt == "json" else out), err


def ids(doc):
    return {item["id"] for result in doc["results"] for item in result["findings"]}


def test_visible_pair_with_p2p_is_not_blocked(capsys):
    # the example: GPU0-GPU1 of the L40S box have P2P, the cross-socket pairs do not
    code, doc, _ = check(capsys, "l40s-4x-pcie-2numa", "CUDA_VISIBLE_DEVICES=0,1", *LAUNCH, "--tp", "2")
    assert code == 0, doc
    assert "custom-allreduce-without-p2p" not in ids(doc)
    messages = [item["message"] for item in doc["results"][0]["findings"]]
    assert any("judged on GPUs 0,1 of 4 (CUDA_VISIBLE_DEVICES=0,1)" in message for message in messages)


def test_visible_pair_across_sockets_is_blocked(capsys):
    code, doc, _ = check(capsys, "l40s-4x-pcie-2numa", "CUDA_VISIBLE_DEVICES=1,2", *LAUNCH, "--tp", "2")
    assert code == 1 and "custom-allreduce-without-p2p" in ids(doc)


def test_without_visible_devices_the_first_tp_gpus_count(capsys):
    code, doc, _ = check(capsys, "l40s-4x-pcie-2numa", *LAUNCH, "--tp", "2")
    assert code == 0 and "custom-allreduce-without-p2p" not in ids(doc)
    # TP4 over PCIe only: SGLang's own gate turns custom allreduce off before any P2P test, so it runs
    code, doc, _ = check(capsys, "l40s-4x-pcie-2numa", *LAUNCH, "--tp", "4")
    assert code == 0 and "custom-allreduce-without-p2p" not in ids(doc)


def test_launch_env_visible_devices_count(tmp_path, capsys):
    env = tmp_path / "launch.env"
    env.write_text("CUDA_DEVICE_ORDER='PCI_BUS_ID'\nCUDA_VISIBLE_DEVICES='2,3'\nSGLANG_ARGS='--tp-size 2'\n")
    code, doc, _ = check(capsys, "l40s-4x-pcie-2numa", env_file=env)
    assert code == 0 and "custom-allreduce-without-p2p" not in ids(doc)
    env.write_text("CUDA_DEVICE_ORDER='PCI_BUS_ID'\nCUDA_VISIBLE_DEVICES='0,3'\nSGLANG_ARGS='--tp-size 2'\n")
    code, doc, _ = check(capsys, "l40s-4x-pcie-2numa", env_file=env)
    assert code == 1 and "custom-allreduce-without-p2p" in ids(doc)


def test_more_tp_than_visible_gpus_blocks(capsys):
    code, doc, _ = check(capsys, "l40s-4x-pcie-2numa", "CUDA_VISIBLE_DEVICES=0,1", *LAUNCH, "--tp", "4")
    assert code == 1 and "topoctl-tp-exceeds-visible-gpus" in ids(doc)
    code, doc, _ = check(capsys, "l40s-4x-pcie-2numa", "CUDA_VISIBLE_DEVICES=0,1", *LAUNCH, "--tp", "8")
    assert "topoctl-tp-exceeds-visible-gpus" not in ids(doc) and "topoctl-tp-exceeds-gpus" in ids(doc)


def test_the_first_tp_of_more_visible_gpus(capsys):
    # CUDA enumerates in the list's order: TP 2 runs on the first two entries (GPUs 1 and 0)
    code, doc, _ = check(capsys, "l40s-4x-pcie-2numa", "CUDA_VISIBLE_DEVICES=1,0,2", *LAUNCH, "--tp", "2")
    assert code == 0 and "custom-allreduce-without-p2p" not in ids(doc)


@pytest.mark.parametrize("value", ["MIG-GPU-0000/1/0", "GPU-nosuchuuid"])
def test_unmappable_visible_devices_warn_and_judge_every_gpu(value, capsys):
    code, doc, _ = check(capsys, "l40s-4x-pcie-2numa", f"CUDA_VISIBLE_DEVICES={value}", *LAUNCH, "--tp", "2")
    assert "topoctl-gpu-group-unknown" in ids(doc)
    assert code == 1 and "custom-allreduce-without-p2p" in ids(doc)  # every pair, as without a group


def test_uuids_name_gpus(capsys):
    from topoctl.catalogue import system_snapshot

    uuids = [gpu["uuid"] for gpu in system_snapshot("l40s-4x-pcie-2numa")["gpus"]]
    code, doc, _ = check(capsys, "l40s-4x-pcie-2numa", f"CUDA_VISIBLE_DEVICES={uuids[2]},{uuids[3][:12]}",
                         *LAUNCH, "--tp", "2")
    assert code == 0 and "custom-allreduce-without-p2p" not in ids(doc)


def test_an_unknown_pair_outside_the_group_does_not_block(tmp_path, capsys):
    from topoctl.catalogue import system_snapshot

    snapshot = system_snapshot("rtx-pro-6000-8x-pcie")
    for entry in snapshot["pairs"]:
        if {entry["src"], entry["dst"]} == {6, 7}:
            entry["p2p"]["read"] = "unknown"
    snapshot["summary"]["all_pairs_p2p"] = None
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snapshot))
    argv = ["check", "--topology", str(path), "--format", "json", "--"]
    assert main([*argv, "CUDA_VISIBLE_DEVICES=0,1,2,3", *LAUNCH, "--tp", "4", "--disable-custom-all-reduce"]) == 0
    doc = json.loads(capsys.readouterr()[0])
    assert "p2p-status-unverified" not in ids(doc)
    # a TP2 group holding the unknown pair: SGLang's gate lets custom allreduce through on two PCIe GPUs
    assert main([*argv, "CUDA_VISIBLE_DEVICES=6,7", *LAUNCH, "--tp", "2"]) == 1
    assert "custom-allreduce-without-p2p" in ids(json.loads(capsys.readouterr()[0]))
