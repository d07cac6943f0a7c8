"""`topoctl check` judges the launch's own GPU group: CUDA_VISIBLE_DEVICES (launch.env or the
environment before the command), else the first tp x dp GPUs; never every pair of the machine."""

from __future__ import annotations

import json

import pytest

from topoctl.cli.app import main

# integer ids in PCI bus order (topoctl/snapshot/cuda_devices.py resolve_visible)
ORDER = "CUDA_DEVICE_ORDER=PCI_BUS_ID"
# SGLang 0.5.12 serves custom allreduce over PCIe only with its first kernel: the launch asks for
# it, so that the group logic below meets a custom allreduce SGLang really runs
# (rules/knowledge/allreduce.yaml).
V1 = "SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2=0"
LAUNCH = [V1, "python", "-m", "sglang.launch_server", "--model-path", "X"]


def check(capsys, system, *command, env_file=None, fmt="json"):
    argv = ["check", "--system", system, "--format", fmt]
    argv += [str(env_file)] if env_file else ["--", *command]
    code = main(argv)
    out, err = capsys.readouterr()
    return code, (json.loads(out) if fmt == "json" else out), err


def ids(doc):
    return {item["id"] for result in doc["results"] for item in result["findings"]}


def test_visible_pair_with_p2p_is_not_blocked(capsys):
    # GPU0-GPU1 of the L40S box have P2P, the cross-socket pairs do not; ids in PCI bus order
    code, doc, _ = check(
        capsys, "l40s-4x-pcie-2numa", ORDER, "CUDA_VISIBLE_DEVICES=0,1", *LAUNCH, "--tp", "2"
    )
    assert code == 0, doc
    assert "custom-allreduce-without-p2p" not in ids(doc)
    messages = [item["message"] for item in doc["results"][0]["findings"]]
    assert any(
        "judged on GPUs 0,1 of 4 (CUDA_VISIBLE_DEVICES=0,1)" in message for message in messages
    )


@pytest.mark.parametrize("value", ["0,1", "1,2"])
def test_integer_ids_under_the_default_order_warn_never_block(capsys, value):
    # Without CUDA_DEVICE_ORDER, CUDA's default FASTEST_FIRST order leaves which GPUs the ids name
    # unspecified (topoctl/snapshot/cuda_devices.py resolve_visible): every pair of 2 GPUs is
    # possible, some fail, none is shown to
    code, doc, _ = check(
        capsys, "l40s-4x-pcie-2numa", f"CUDA_VISIBLE_DEVICES={value}", *LAUNCH, "--tp", "2"
    )
    findings = {item["id"]: item for item in doc["results"][0]["findings"]}
    assert code == 0, doc
    # the unknown order itself is a note: a launch whose every possible set is clean does not warn
    assert findings["topoctl-gpu-group-unknown"]["severity"] == "info"
    assert "FASTEST_FIRST" in findings["topoctl-gpu-group-unknown"]["message"]
    assert (
        findings["custom-allreduce-without-p2p"]["severity"] == "warn"
    )  # blocks on some pairs only: said
    assert (
        "set CUDA_DEVICE_ORDER=PCI_BUS_ID"
        in findings["custom-allreduce-without-p2p"]["remediation"]
    )


def test_integer_ids_under_the_default_order_on_a_clean_machine_do_not_warn(capsys):
    code, doc, _ = check(
        capsys, "h100-8x-nvswitch", "CUDA_VISIBLE_DEVICES=0,1", *LAUNCH, "--tp", "2"
    )
    assert code == 0 and "topoctl-gpu-group-unknown" in ids(doc)
    assert not [
        item for item in doc["results"][0]["findings"] if item["severity"] in ("warn", "block")
    ]


def test_visible_pair_across_sockets_is_blocked(capsys):
    code, doc, _ = check(
        capsys, "l40s-4x-pcie-2numa", ORDER, "CUDA_VISIBLE_DEVICES=1,2", *LAUNCH, "--tp", "2"
    )
    assert code == 1 and "custom-allreduce-without-p2p" in ids(doc)


def test_without_visible_devices_the_first_tp_gpus_count(capsys):
    code, doc, _ = check(capsys, "l40s-4x-pcie-2numa", *LAUNCH, "--tp", "2")
    assert code == 0 and "custom-allreduce-without-p2p" not in ids(doc)
    # TP4 over PCIe only: SGLang's own gate turns custom allreduce off before any P2P test, so it
    # runs
    code, doc, _ = check(capsys, "l40s-4x-pcie-2numa", *LAUNCH, "--tp", "4")
    assert code == 0 and "custom-allreduce-without-p2p" not in ids(doc)


def test_launch_env_visible_devices_count(tmp_path, capsys):
    env = tmp_path / "launch.env"
    env.write_text(
        "CUDA_DEVICE_ORDER='PCI_BUS_ID'\nCUDA_VISIBLE_DEVICES='2,3'\nSGLANG_ARGS='--tp-size 2'\n"
    )
    code, doc, _ = check(capsys, "l40s-4x-pcie-2numa", env_file=env)
    assert code == 0 and "custom-allreduce-without-p2p" not in ids(doc)
    env.write_text(
        f"{V1}\nCUDA_DEVICE_ORDER='PCI_BUS_ID'\nCUDA_VISIBLE_DEVICES='0,3'\nSGLANG_ARGS='--tp-size "
        "2'\n"
    )
    code, doc, _ = check(capsys, "l40s-4x-pcie-2numa", env_file=env)
    assert code == 1 and "custom-allreduce-without-p2p" in ids(doc)


def test_more_tp_than_visible_gpus_blocks(capsys):
    code, doc, _ = check(
        capsys, "l40s-4x-pcie-2numa", ORDER, "CUDA_VISIBLE_DEVICES=0,1", *LAUNCH, "--tp", "4"
    )
    assert code == 1 and "topoctl-tp-exceeds-visible-gpus" in ids(doc)
    code, doc, _ = check(
        capsys, "l40s-4x-pcie-2numa", ORDER, "CUDA_VISIBLE_DEVICES=0,1", *LAUNCH, "--tp", "8"
    )
    assert "topoctl-tp-exceeds-visible-gpus" not in ids(doc) and "topoctl-tp-exceeds-gpus" in ids(
        doc
    )


def test_the_first_tp_of_more_visible_gpus(capsys):
    # CUDA enumerates in the list's order: TP 2 runs on the first two entries (GPUs 1 and 0)
    code, doc, _ = check(
        capsys, "l40s-4x-pcie-2numa", ORDER, "CUDA_VISIBLE_DEVICES=1,0,2", *LAUNCH, "--tp", "2"
    )
    assert code == 0 and "custom-allreduce-without-p2p" not in ids(doc)


@pytest.mark.parametrize("value", ["MIG-GPU-0000/1/0", "GPU-nosuchuuid"])
def test_unmappable_visible_devices_warn_and_judge_every_gpu(value, capsys):
    code, doc, _ = check(
        capsys, "l40s-4x-pcie-2numa", ORDER, f"CUDA_VISIBLE_DEVICES={value}", *LAUNCH, "--tp", "2"
    )
    assert "topoctl-gpu-group-unknown" in ids(doc)
    assert code == 1 and "custom-allreduce-without-p2p" in ids(
        doc
    )  # every pair, as without a group


def test_uuids_name_gpus(capsys):
    from topoctl.snapshot.catalogue import system_snapshot

    uuids = [gpu["uuid"] for gpu in system_snapshot("l40s-4x-pcie-2numa")["gpus"]]
    code, doc, _ = check(
        capsys,
        "l40s-4x-pcie-2numa",
        f"CUDA_VISIBLE_DEVICES={uuids[2]},{uuids[3][:12]}",
        *LAUNCH,
        "--tp",
        "2",
    )
    assert code == 0 and "custom-allreduce-without-p2p" not in ids(doc)


def test_an_unknown_pair_outside_the_group_does_not_block(tmp_path, capsys):
    from topoctl.snapshot.catalogue import system_snapshot

    snapshot = system_snapshot("rtx-pro-6000-8x-pcie")
    for entry in snapshot["pairs"]:
        if {entry["src"], entry["dst"]} == {6, 7}:
            entry["p2p"]["read"] = "unknown"
    snapshot["summary"]["all_pairs_p2p"] = None
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snapshot))
    argv = ["check", "--topology", str(path), "--format", "json", "--"]
    assert (
        main(
            [
                *argv,
                ORDER,
                "CUDA_VISIBLE_DEVICES=0,1,2,3",
                *LAUNCH,
                "--tp",
                "4",
                "--disable-custom-all-reduce",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr()[0])
    assert "p2p-status-unverified" not in ids(doc)
    # a TP2 group holding the unknown pair: SGLang's gate lets custom allreduce through on two PCIe
    # GPUs
    assert main([*argv, ORDER, "CUDA_VISIBLE_DEVICES=6,7", *LAUNCH, "--tp", "2"]) == 1
    assert "custom-allreduce-without-p2p" in ids(json.loads(capsys.readouterr()[0]))


def test_base_gpu_id_and_gpu_id_step_move_the_group(capsys):
    # SGLang 0.5.12 (srt/entrypoints/engine.py): gpu_id = base_gpu_id + tp_rank * gpu_id_step
    code, doc, _ = check(capsys, "l40s-4x-pcie-2numa", *LAUNCH, "--tp", "2", "--base-gpu-id", "2")
    assert code == 0 and "custom-allreduce-without-p2p" not in ids(doc)
    code, doc, _ = check(capsys, "l40s-4x-pcie-2numa", *LAUNCH, "--tp", "2", "--gpu-id-step", "2")
    assert code == 1 and "custom-allreduce-without-p2p" in ids(doc)  # GPUs 0 and 2: across sockets
    code, doc, _ = check(capsys, "l40s-4x-pcie-2numa", *LAUNCH, "--tp", "2", "--base-gpu-id", "3")
    assert code == 1 and "topoctl-tp-exceeds-visible-gpus" in ids(doc)
    # the ids index the visible list
    code, doc, _ = check(
        capsys,
        "l40s-4x-pcie-2numa",
        ORDER,
        "CUDA_VISIBLE_DEVICES=3,2,1,0",
        *LAUNCH,
        "--tp",
        "2",
        "--base-gpu-id",
        "2",
    )
    assert code == 0 and "custom-allreduce-without-p2p" not in ids(doc)


def test_tp_beyond_the_machine_is_one_finding(capsys):
    code, doc, _ = check(capsys, "l40s-4x-pcie-2numa", *LAUNCH, "--tp", "8", "--base-gpu-id", "1")
    assert code == 1 and "topoctl-tp-exceeds-gpus" in ids(doc)
    assert "topoctl-tp-exceeds-visible-gpus" not in ids(doc)


def test_data_parallel_replicas_are_judged_apart(capsys):
    # --dp-size 2 --tp-size 2 on four GPUs: replicas on 0,1 and 2,3; neither allreduces across the
    # sockets
    code, doc, _ = check(capsys, "l40s-4x-pcie-2numa", *LAUNCH, "--tp", "2", "--dp-size", "2")
    assert code == 0 and "custom-allreduce-without-p2p" not in ids(doc)
    code, doc, _ = check(
        capsys,
        "l40s-4x-pcie-2numa",
        ORDER,
        "CUDA_VISIBLE_DEVICES=0,2,1,3",
        *LAUNCH,
        "--tp",
        "2",
        "--dp-size",
        "2",
    )
    assert code == 1 and "custom-allreduce-without-p2p" in ids(doc)
    code, doc, _ = check(capsys, "l40s-4x-pcie-2numa", *LAUNCH, "--tp", "2", "--dp-size", "4")
    assert code == 1 and "topoctl-tp-exceeds-visible-gpus" in ids(doc)
    # DP attention runs inside the one TP group: two GPUs, not four
    code, doc, _ = check(
        capsys,
        "l40s-4x-pcie-2numa",
        *LAUNCH,
        "--tp",
        "2",
        "--dp-size",
        "2",
        "--enable-dp-attention",
    )
    assert "topoctl-tp-exceeds-visible-gpus" not in ids(doc)


def test_tp_size_hint_counts_the_visible_gpus(capsys):
    code, doc, _ = check(
        capsys, "rtx-pro-6000-8x-pcie", ORDER, "CUDA_VISIBLE_DEVICES=0,1,2,3", *LAUNCH
    )
    item = next(
        item for item in doc["results"][0]["findings"] if item["id"] == "topoctl-tp-size-not-given"
    )
    assert (
        "using 1 of the 4 visible GPUs" in item["message"] and "--tp-size 4" in item["remediation"]
    )
    code, doc, _ = check(capsys, "rtx-pro-6000-8x-pcie", ORDER, "CUDA_VISIBLE_DEVICES=0", *LAUNCH)
    assert "topoctl-tp-size-not-given" not in ids(doc)


DOCKER = [
    "docker",
    "run",
    "-e",
    V1,
    "lmsysorg/sglang:v0.5.12",
    "python3",
    "-m",
    "sglang.launch_server",
    "--model-path",
    "X",
]


def test_docker_gpus_devices_are_the_group(capsys):
    # NVIDIA Container Toolkit: device=2,3 gives the container host GPUs 2 and 3 (nvidia-smi
    # indices)
    code, doc, _ = check(
        capsys,
        "l40s-4x-pcie-2numa",
        *DOCKER[:2],
        "--gpus",
        '"device=2,3"',
        *DOCKER[2:],
        "--tp",
        "2",
    )
    assert code == 0 and "custom-allreduce-without-p2p" not in ids(doc)
    code, doc, _ = check(
        capsys,
        "l40s-4x-pcie-2numa",
        *DOCKER[:2],
        "--gpus",
        '"device=1,2"',
        *DOCKER[2:],
        "--tp",
        "2",
    )
    assert code == 1 and "custom-allreduce-without-p2p" in ids(doc)
    # inside, CUDA sees host GPUs 0,2,3 (PCI bus order); CUDA_VISIBLE_DEVICES=1,2 counts those: host
    # GPUs 2 and 3
    code, doc, _ = check(
        capsys,
        "l40s-4x-pcie-2numa",
        *DOCKER[:2],
        "--gpus",
        '"device=0,3,2"',
        "-e",
        "CUDA_DEVICE_ORDER=PCI_BUS_ID",
        "-e",
        "CUDA_VISIBLE_DEVICES=1,2",
        *DOCKER[2:],
        "--tp",
        "2",
    )
    assert code == 0 and "custom-allreduce-without-p2p" not in ids(doc)


def test_docker_gpu_count_is_the_first_gpus_the_engine_gives(capsys):
    # Docker Engine turns --gpus N into NVIDIA_VISIBLE_DEVICES=0,...,N-1 (moby
    # daemon/nvidia_linux.go): on the L40S box GPUs 0 and 1 share a socket and have P2P, so --tp 2
    # is clean there (it used to be judged on every pair of the machine and blocked)
    code, doc, _ = check(
        capsys, "l40s-4x-pcie-2numa", *DOCKER[:2], "--gpus", "2", *DOCKER[2:], "--tp", "2"
    )
    messages = [
        item["message"]
        for item in doc["results"][0]["findings"]
        if item["id"] == "topoctl-gpu-group"
    ]
    assert any(
        "judged on GPUs 0,1 of 4" in message and "countToDevices" in message for message in messages
    )
    assert code == 0 and "custom-allreduce-without-p2p" not in ids(doc)
    # three GPUs are 0,1,2; the ranks on devices 1 and 2 (--base-gpu-id 1) cross the sockets:
    # blocked
    code, doc, _ = check(
        capsys,
        "l40s-4x-pcie-2numa",
        *DOCKER[:2],
        "--gpus",
        "3",
        *DOCKER[2:],
        "--tp",
        "2",
        "--base-gpu-id",
        "1",
    )
    assert code == 1 and "custom-allreduce-without-p2p" in ids(doc)


PODMAN = [
    "podman",
    "run",
    "-e",
    V1,
    "lmsysorg/sglang:v0.5.12",
    "python3",
    "-m",
    "sglang.launch_server",
    "--model-path",
    "X",
]


def test_a_gpu_count_the_scheduler_places_is_judged_on_every_set_it_may_get(capsys):
    # podman --gpus 2: which two is not defined here, so any two of the four. Two of the six sets
    # (0,1 and 2,3) have P2P: the block becomes a warning naming the pairs without it, with a hint
    # to pin the GPUs
    code, doc, _ = check(
        capsys, "l40s-4x-pcie-2numa", *PODMAN[:2], "--gpus", "2", *PODMAN[2:], "--tp", "2"
    )
    assert code == 0, doc
    findings = doc["results"][0]["findings"]
    info = next(item for item in findings if item["id"] == "topoctl-gpu-group")
    assert "judged on every set of 2 of the target's 4 GPUs (6 sets)" in info["message"]
    warning = next(item for item in findings if item["id"] == "custom-allreduce-without-p2p")
    assert warning["severity"] == "warn"
    assert "blocks on 4 of the 6 sets" in warning["message"]
    assert "GPU0-GPU2, GPU0-GPU3, GPU1-GPU2, GPU1-GPU3" in warning["message"]
    assert "pin the GPUs" in warning["remediation"] and "device=0,1" in warning["remediation"]
    assert not [item for item in findings if item["severity"] == "block"]


def test_a_gpu_count_blocks_when_every_set_it_may_get_is_broken(capsys):
    # two of the 4090 box's two GPUs: the only set there is has no P2P, and custom allreduce is on
    # by default
    code, doc, _ = check(
        capsys, "rtx-4090-2x-pcie-no-p2p", *PODMAN[:2], "--gpus", "2", *PODMAN[2:], "--tp", "2"
    )
    assert code == 1
    blocks = [item for item in doc["results"][0]["findings"] if item["severity"] == "block"]
    assert "custom-allreduce-without-p2p" in {item["id"] for item in blocks}
    assert not any("blocks on" in item["message"] for item in blocks)
