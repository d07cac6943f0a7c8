"""The network rules (rules/knowledge/network.yaml) on the three synthetic NIC boxes, and recommend
--nnodes: the per-node SGLang flags and NCCL settings it writes from the probed NICs."""

from __future__ import annotations

import copy
import json
import os
import subprocess

import pytest

from topoctl.rules.engine import evaluate, load_rules
from topoctl.rules.engine.evaluation import evaluate_rule
from topoctl.snapshot.catalogue import system_snapshot

RULES = {rule.id: rule for rule in load_rules().rules}


def _verdict(rule_id: str, snapshot: dict, nnodes: int = 2) -> bool | None:
    return evaluate_rule(RULES[rule_id], snapshot, {"nnodes": nnodes})[0]


def _socket_one_down(snapshot: dict) -> dict:
    """The DGX H100 box with the NICs of socket 1 (GPUs 4-7) down: what a node with bad cables looks
    like."""
    odd = copy.deepcopy(snapshot)
    for nic in odd["network"]["rdma"]:
        if nic["numa_node"] == 1:
            for port in nic["ports"]:
                port["state"], port["phys_state"] = "DOWN", "Polling"
    return odd


# l40s-4x-pcie-2numa: one dual-port NIC on socket 1, so GPUs 0, 1 reach it only across the sockets
# (SYS) and GPUs 2, 3 through the host bridges of their own socket (NODE), as in the public dump its
# README names.
@pytest.mark.parametrize(
    "rule_id, h100, a100, l40s",
    [
        ("net-no-rdma-nic-multinode", False, False, False),
        ("net-gpu-nearest-nic-sys", False, False, True),
        ("net-gpu-nearest-nic-beyond-pxb", False, False, True),
        ("net-no-peermem", False, True, True),  # nvidia_peermem on the DGX only
        ("net-ib-hca-exact-gpu-order", True, True, True),
        (
            "net-socket-ifname-virtual-interfaces",
            False,
            True,
            False,
        ),  # a Calico interface on the A100 box
    ],
)
def test_network_rules_on_the_nic_fixtures(rule_id, h100, a100, l40s):
    assert _verdict(rule_id, system_snapshot("h100-8x-8nic-ib")) is h100
    assert _verdict(rule_id, system_snapshot("a100-8x-4nic-roce")) is a100
    assert _verdict(rule_id, system_snapshot("l40s-4x-pcie-2numa")) is l40s
    for name in ("a100-8x-4nic-roce", "l40s-4x-pcie-2numa"):
        assert _verdict(rule_id, system_snapshot(name), nnodes=1) is False  # one node: no network


def test_sys_warning_names_the_gpus_across_the_socket(cli):
    code, out, _ = cli(
        ["recommend", "--system", "l40s-4x-pcie-2numa", "--model", "llama-3.1-8b", "--nnodes", "2"]
    )
    assert code == 0
    assert "# GPU 0, 1: nearest NIC is SYS away (rule net-gpu-nearest-nic-sys)" in out
    assert "NCCL_IB_HCA='=mlx5_0:1,mlx5_1:1'" in out


def test_sys_warning_fires_when_one_socket_loses_its_nics():
    odd = _socket_one_down(system_snapshot("h100-8x-8nic-ib"))
    assert _verdict("net-gpu-nearest-nic-sys", odd) is True
    report = evaluate(load_rules(), odd, {"nnodes": 2})
    assert "net-gpu-nearest-nic-sys" in {f.rule_id for f in report.findings if f.status == "fired"}


def test_old_snapshots_leave_the_network_rules_unknown():
    snapshot = system_snapshot("h200-2x-nvswitch-vm")
    assert _verdict("net-no-rdma-nic-multinode", snapshot) is None
    assert _verdict("net-gpu-nearest-nic-sys", snapshot) is None


def _recommend(cli, system: str, *extra: str) -> tuple[int, str, str]:
    return cli(["recommend", "--system", system, "--model", "deepseek-v3", *extra])


def test_deepseek_needs_two_dgx_nodes_and_gets_per_node_settings(cli):
    code, _, err = _recommend(cli, "h100-8x-8nic-ib")
    assert code == 1 and "16 GPUs like these" in err
    code, out, _ = _recommend(cli, "h100-8x-8nic-ib", "--nnodes", "2")
    assert code == 0
    assert "SGLANG_ARGS='--tp-size 16" in out
    assert (
        "SGLANG_NODE_ARGS='--nnodes 2 --node-rank ${NODE_RANK} --dist-init-addr ${DIST_INIT_ADDR}'"
        in out
    )
    # GPU order, which is not the NICs' name order on a DGX H100
    assert (
        "NCCL_IB_HCA='=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1'"
        in out
    )
    assert "NCCL_SOCKET_IFNAME='=eth0'" in out


def test_four_nic_box_lists_each_shared_nic_once_and_warns_of_peermem(cli):
    code, out, _ = _recommend(cli, "a100-8x-4nic-roce", "--nnodes", "2")
    assert code == 0
    assert "NCCL_IB_HCA='=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1'" in out
    assert "NCCL_SOCKET_IFNAME='=eno1'" in out  # the node's own NIC, not the Calico interface
    assert "# warn net-no-peermem:" in out


def test_node_flags_expand_on_each_node(cli, tmp_path):
    """The launch.env, sourced as its header says, gives each node its own rank and node 0's
    address."""
    code, out, _ = _recommend(cli, "h100-8x-8nic-ib", "--nnodes", "2")
    assert code == 0
    env = tmp_path / "launch.env"
    env.write_text(out)
    script = (
        f'set -a; . {env}; set +a; eval "set -- $SGLANG_ARGS $SGLANG_NODE_ARGS"; printf '
        '"%s\\n" "$@"'
    )
    done = subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "NODE_RANK": "1", "DIST_INIT_ADDR": "10.0.0.1:5000"},
    )
    args = done.stdout.split()
    assert args[args.index("--node-rank") + 1] == "1"
    assert args[args.index("--dist-init-addr") + 1] == "10.0.0.1:5000"
    assert args[args.index("--tp-size") + 1] == "16"


def test_nnodes_in_json_and_on_a_snapshot_without_nics(cli):
    code, out, _ = _recommend(cli, "h100-8x-8nic-ib", "--nnodes", "2", "--format", "json")
    assert code == 0
    nodes = json.loads(out)["nodes"]
    assert nodes["nnodes"] == 2 and nodes["env"]["NCCL_SOCKET_IFNAME"] == "=eth0"
    code, out, _ = cli(
        [
            "recommend",
            "--system",
            "h200-2x-nvswitch-vm",
            "--model",
            "llama-3.1-70b",
            "--nnodes",
            "2",
        ]
    )
    assert code == 0
    assert "NCCL_IB_HCA" not in out and "before topoctl probed NICs" in out


def test_the_node_split_is_a_new_result_and_leaves_the_search_s_as_it_was():
    """The search's Result is frozen: --nnodes makes a new one at TP over every node (its winner
    first of the ranked list too), and the result the search returned keeps its own TP and launch.
    """
    import dataclasses

    from topoctl.autoconf.search import search
    from topoctl.cli.commands._options import flag_set_for, target_version
    from topoctl.cli.commands.recommend import _nodes
    from topoctl.snapshot.view import SnapshotView

    view = SnapshotView(system_snapshot("h100-8x-8nic-ib"))
    version = target_version(view, None)
    ruleset = load_rules()
    result = search(view, None, flag_set_for(version), version, ruleset=ruleset)
    tp_size, launch = result.tp_size, dict(result.winner.launch)
    split, _ = _nodes(result, view, 2, ruleset)
    assert (result.tp_size, result.winner.launch, result.ranked[0]) == (
        tp_size,
        launch,
        result.winner,
    )
    assert split.tp_size == split.winner.launch["tp_size"] == 2 * tp_size
    assert split.ranked[0] is split.winner and split.ranked[1:] == result.ranked[1:]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.tp_size = 1  # type: ignore[misc]
