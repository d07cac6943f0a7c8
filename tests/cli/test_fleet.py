"""`topoctl fleet`: sixteen DGX H100-like nodes, two of them odd (a GPU link down-trained to x8 on
node07; the NICs of socket 1 down on node12). Every node has its own hostname, GPU UUIDs and probe
time, which must not count."""

from __future__ import annotations

import copy
import json
import uuid

import pytest

from topoctl.core.serialize import to_yaml
from topoctl.snapshot.catalogue import system_snapshot


def _node(base: dict, number: int) -> dict:
    node = copy.deepcopy(base)
    name = f"node{number:02d}"
    node["host"]["hostname"] = name
    node["source"] = {"kind": "live", "name": name, "captured_at": None}
    for gpu in node["gpus"]:
        gpu["uuid"] = f"GPU-{uuid.UUID(int=number * 100 + gpu['index'])}"
    return node


def _downtrain(node: dict, gpu: int) -> None:
    pcie = node["gpus"][gpu]["pcie"]
    pcie["current_width"], pcie["downtrained"] = 8, True
    node["summary"]["downtrained_gpus"] = [gpu]


def _socket_nics_down(node: dict, numa: int) -> None:
    for nic in node["network"]["rdma"]:
        if nic["numa_node"] == numa:
            for port in nic["ports"]:
                port["state"], port["phys_state"] = "DOWN", "Polling"


def write_sixteen_nodes(folder) -> None:
    """The sixteen node snapshots into `folder` (a pathlib.Path that exists); the README's fleet
    example too."""
    base = system_snapshot("h100-8x-8nic-ib")
    for number in range(1, 17):
        node = _node(base, number)
        if number == 7:
            _downtrain(node, 3)
        if number == 12:
            _socket_nics_down(node, 1)
        (folder / f"node{number:02d}.yaml").write_text(to_yaml(node))


@pytest.fixture
def fleet_dir(tmp_path):
    folder = tmp_path / "nodes"
    folder.mkdir()
    write_sixteen_nodes(folder)
    return folder


def test_sixteen_nodes_two_odd_ones_named_with_why(cli, fleet_dir):
    code, out, err = cli(["fleet", str(fleet_dir)])
    assert code == 1, err
    assert out.splitlines()[0] == "16 nodes: 14 alike, 2 differ from the majority"
    report_json = cli(["fleet", str(fleet_dir), "--format", "json"])[1]
    odd = json.loads(report_json)["odd"]
    assert sorted(odd) == ["node07", "node12"]
    assert [d["aspect"] for d in odd["node07"]] == ["pcie"]
    assert "GPU3: gen 5 x8/16 DOWN-TRAINED" in odd["node07"][0]["value"]
    assert [d["aspect"] for d in odd["node12"]] == ["nics"]
    why = odd["node12"][0]["value"]
    assert why.startswith("4 of 8 RDMA NICs active")
    assert "no active port: mlx5_6, mlx5_9, mlx5_10, mlx5_11" in why
    assert "GPU4: SYS" in why  # its nearest NIC is now on the other socket
    assert "node07:" in out and "pcie: GPU3: gen 5 x8/16 DOWN-TRAINED" in out


def test_alike_nodes_exit_zero(cli, tmp_path):
    base = system_snapshot("h100-8x-8nic-ib")
    for number in (1, 2, 3):
        (tmp_path / f"n{number}.yaml").write_text(to_yaml(_node(base, number)))
    code, out, _ = cli(["fleet", str(tmp_path)])
    assert code == 0 and out.startswith("3 nodes: 3 alike, 0 differ")


def test_driver_and_versions_are_compared(cli, tmp_path):
    base = system_snapshot("h100-8x-8nic-ib")
    for number in (1, 2, 3):
        node = _node(base, number)
        if number == 3:
            node["software"]["driver"] = "550.54.15"
            node["software"]["nccl"] = "2.21.5"
        (tmp_path / f"n{number}.json").write_text(json.dumps(node))
    odd = json.loads(cli(["fleet", str(tmp_path), "--format", "json"])[1])["odd"]
    assert list(odd) == ["n3"] and [d["aspect"] for d in odd["n3"]] == ["driver", "versions"]


def test_bad_inputs_are_one_line_errors(cli, tmp_path):
    code, _, err = cli(["fleet", str(tmp_path / "missing")])
    assert code == 2 and "no such file or folder" in err
    (tmp_path / "one.yaml").write_text(to_yaml(system_snapshot("h100-8x-8nic-ib")))
    code, _, err = cli(["fleet", str(tmp_path)])
    assert code == 2 and "2 or more" not in err and "two or more snapshots" in err
    (tmp_path / "two.yaml").write_text("schema_version: 1\ngpus: nope\n")
    code, _, err = cli(["fleet", str(tmp_path)])
    assert code == 2 and "two.yaml" in err


def test_launch_is_judged_by_check_on_each_kind_of_node(cli, fleet_dir, tmp_path):
    launch = tmp_path / "launch.env"
    launch.write_text("SGLANG_ARGS='--tp-size 8'\n")
    code, out, err = cli(["fleet", str(fleet_dir), "--launch", str(launch)])
    assert "Launch check (topoctl check, on one node of each kind):" in out, err
    assert out.count(" on node") == 3  # the majority kind, node07's, node12's
    assert "node07" in out.split("Launch check")[1]
