"""check judges the launch's interface and RDMA NIC names against the probed node
(topoctl/check/judge_network.py).

The node is fixtures/h100-8x-8nic-ib (synthetic, see its README: eth0 and eight IPoIB interfaces up,
docker0 down, lo; RDMA devices mlx5_0, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_9, mlx5_10, mlx5_11,
port 1 ACTIVE on each). Where a case needs a port or an interface that is down, the test writes a
copy of that snapshot with the one change it names.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from topoctl.check.judge_network import parse_name_list

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "h100-8x-8nic-ib" / "snapshot.json"
NICS = ["--system", "h100-8x-8nic-ib", "--sglang-version", "0.5.9", "--format", "json"]
NO_NICS = ["--system", "h100-8x-nvswitch", "--sglang-version", "0.5.9", "--format", "json"]
SERVER = ["python3", "-m", "sglang.launch_server", "--model-path", "m", "--tp", "8"]


def findings(
    cli: Any, target: list[str], env: list[str], *extra: str
) -> tuple[int, dict[str, list[str]]]:
    code, out, err = cli(["check", *target, "--", "env", *env, *SERVER, *extra])
    assert code in (0, 1), err
    (result,) = json.loads(out)["results"]
    found: dict[str, list[str]] = {}
    for item in result["findings"]:
        if item["id"].startswith("topoctl-net-"):
            found.setdefault(item["id"], []).append(f"{item['severity']}: {item['message']}")
    return code, found


def severities(found: dict[str, list[str]]) -> dict[str, str]:
    return {key: messages[0].split(":", 1)[0] for key, messages in found.items()}


def edited(tmp_path: Path, change: Any) -> list[str]:
    """The h100-8x-8nic-ib snapshot with one change applied, as --topology arguments."""
    snapshot = json.loads(FIXTURE.read_text())
    change(snapshot["network"])
    path = tmp_path / "node.json"
    path.write_text(json.dumps(snapshot))
    return ["--topology", str(path), "--sglang-version", "0.5.9", "--format", "json"]


# ------------------------------------------------------------------------------------------- NCCL's
# list syntax


def test_nccl_list_reading_follows_parse_string_list():
    names = parse_name_list("^=mlx5_0:1,mlx5_1,:2,mlx5_2::3")
    assert names.exclude and names.exact
    assert [(e.name, e.port) for e in names.entries] == [
        ("mlx5_0", 1),
        ("mlx5_1", None),
        ("mlx5_2", None),
    ]
    assert (
        not names.matches("mlx5_0", 1)
        and names.matches("mlx5_0", 2)
        and names.matches("mlx5_10", 1)
    )


def test_prefix_and_exact_match():
    assert parse_name_list("eth").matches("eth0") and not parse_name_list("=eth").matches("eth0")
    assert parse_name_list("mlx5_1").matches("mlx5_10") and not parse_name_list("=mlx5_1").matches(
        "mlx5_10"
    )
    assert parse_name_list("=mlx5_0:1").matches("mlx5_0", 1) and not parse_name_list(
        "=mlx5_0:1"
    ).matches("mlx5_0", 2)


# -----------------------------------------------------------------------------------------------
# the case


def test_names_the_node_lacks_block_where_nccl_and_gloo_fail_at_init(cli):
    code, found = findings(
        cli, NICS, ["NCCL_SOCKET_IFNAME=eth9", "GLOO_SOCKET_IFNAME=eth9", "NCCL_IB_HCA=mlx5_99"]
    )
    assert code == 1
    assert severities(found) == {
        "topoctl-net-socket-ifname-none": "block",
        "topoctl-net-gloo-ifname-missing": "block",
        "topoctl-net-ib-hca-none": "warn",
    }
    assert "no socket interface found" in found["topoctl-net-socket-ifname-none"][0]
    assert "Unable to find address for: eth9" in found["topoctl-net-gloo-ifname-missing"][0]
    assert "over TCP sockets" in found["topoctl-net-ib-hca-none"][0]


def test_a_snapshot_without_nics_says_not_checked(cli):
    code, found = findings(cli, NO_NICS, ["NCCL_SOCKET_IFNAME=eth9", "NCCL_IB_HCA=mlx5_99"])
    assert code == 0 and severities(found) == {"topoctl-net-not-checked": "info"}
    assert "not checked: the snapshot has no NICs" in found["topoctl-net-not-checked"][0]


def test_names_the_node_has_give_no_network_finding(cli):
    code, found = findings(
        cli,
        NICS,
        [
            "NCCL_SOCKET_IFNAME==eth0",
            "GLOO_SOCKET_IFNAME=eth0",
            "NCCL_IB_HCA==mlx5_0:1,mlx5_3:1,mlx5_10:1",
        ],
    )
    assert code == 0 and found == {}


# ---------------------------------------------------------------------------------------------
# NCCL_SOCKET_IFNAME


def test_prefix_matches_and_exact_does_not(cli):
    assert findings(cli, NICS, ["NCCL_SOCKET_IFNAME=eth"])[1] == {}
    code, found = findings(cli, NICS, ["NCCL_SOCKET_IFNAME==eth"])
    assert code == 1 and severities(found) == {"topoctl-net-socket-ifname-none": "block"}


def test_an_exclusion_that_leaves_nothing_blocks(cli):
    code, found = findings(cli, NICS, ["NCCL_SOCKET_IFNAME=^eth,ib,docker,lo"])
    assert code == 1 and "leaves out every interface" in found["topoctl-net-socket-ifname-none"][0]


def test_an_exclusion_of_one_name_passes(cli):
    assert findings(cli, NICS, ["NCCL_SOCKET_IFNAME=^=eth0"])[1] == {}


def test_an_exclusion_that_leaves_lo_in_warns_over_several_nodes(cli):
    env = ["NCCL_SOCKET_IFNAME=^docker"]
    assert findings(cli, NICS, env)[1] == {}  # one node: NCCL's bootstrap on lo is fine
    code, found = findings(
        cli, NICS, env, "--nnodes", "2", "--node-rank", "0", "--dist-init-addr", "10.0.0.1:5000"
    )
    assert severities(found) == {"topoctl-net-socket-ifname-loopback": "warn"}


def test_one_missing_name_beside_a_present_one_warns(cli):
    code, found = findings(cli, NICS, ["NCCL_SOCKET_IFNAME==eth0,eth9"])
    assert code == 0 and severities(found) == {"topoctl-net-socket-ifname-unmatched": "warn"}
    assert "=eth9 matches no interface" in found["topoctl-net-socket-ifname-unmatched"][0]


def test_an_interface_that_is_down_is_not_selected(cli, tmp_path):
    def eth0_down(network: dict[str, Any]) -> None:
        next(i for i in network["interfaces"] if i["name"] == "eth0")["operstate"] = "down"

    target = edited(tmp_path, eth0_down)
    code, found = findings(cli, target, ["NCCL_SOCKET_IFNAME==eth0", "GLOO_SOCKET_IFNAME=eth0"])
    assert code == 1
    assert severities(found) == {
        "topoctl-net-socket-ifname-none": "block",
        "topoctl-net-gloo-ifname-down": "warn",
    }
    assert "selects only eth0, which is not up" in found["topoctl-net-socket-ifname-none"][0]


# ---------------------------------------------------------------------------------------------
# GLOO_SOCKET_IFNAME


@pytest.mark.parametrize("value", ["^lo", "=eth0", "eth"])
def test_gloo_takes_exact_names_only(cli, value):
    code, found = findings(cli, NICS, [f"GLOO_SOCKET_IFNAME={value}"])
    assert code == 1 and severities(found) == {"topoctl-net-gloo-ifname-missing": "block"}


# ----------------------------------------------------------------------------------------------------
# NCCL_IB_HCA


def test_a_prefix_that_selects_other_devices_warns(cli):
    code, found = findings(cli, NICS, ["NCCL_IB_HCA=mlx5_1"])
    assert code == 0 and severities(found) == {"topoctl-net-ib-hca-prefix": "warn"}
    assert "also selects mlx5_10, mlx5_11" in found["topoctl-net-ib-hca-prefix"][0]


def test_the_exact_name_the_node_lacks_selects_nothing(cli):
    code, found = findings(cli, NICS, ["NCCL_IB_HCA==mlx5_1"])
    assert code == 0 and severities(found) == {"topoctl-net-ib-hca-none": "warn"}


def test_no_ib_port_blocks_when_nccl_net_allows_only_ib(cli):
    code, found = findings(cli, NICS, ["NCCL_IB_HCA==mlx5_1", "NCCL_NET=IB"])
    assert (
        code == 1 and "Failed to initialize any NET plugin" in found["topoctl-net-ib-hca-none"][0]
    )


def test_a_port_that_does_not_exist_warns(cli):
    code, found = findings(cli, NICS, ["NCCL_IB_HCA==mlx5_0:1,mlx5_3:2"])
    assert code == 0 and severities(found) == {"topoctl-net-ib-hca-port": "warn"}
    assert "mlx5_3 has no port 2 (ports: 1)" in found["topoctl-net-ib-hca-port"][0]


def test_a_port_that_is_down_warns(cli, tmp_path):
    def mlx5_3_down(network: dict[str, Any]) -> None:
        next(n for n in network["rdma"] if n["name"] == "mlx5_3")["ports"][0]["state"] = "DOWN"

    code, found = findings(cli, edited(tmp_path, mlx5_3_down), ["NCCL_IB_HCA==mlx5_0:1,mlx5_3:1"])
    assert code == 0 and severities(found) == {"topoctl-net-ib-hca-port-down": "warn"}
    assert "mlx5_3:1 DOWN" in found["topoctl-net-ib-hca-port-down"][0]


def test_an_exclusion_list_of_absent_names_is_harmless(cli):
    assert findings(cli, NICS, ["NCCL_IB_HCA=^=mlx5_99"])[1] == {}


# ------------------------------------------------------------------------- GID index,
# disaggregation, expansions


def test_gid_index_is_said_not_checked(cli):
    code, found = findings(cli, NICS, ["NCCL_IB_GID_INDEX=3"])
    assert code == 0 and severities(found) == {"topoctl-net-gid-index-not-checked": "info"}


def test_a_disaggregation_device_the_node_lacks_warns(cli):
    code, found = findings(
        cli,
        NICS,
        [],
        "--disaggregation-mode",
        "prefill",
        "--disaggregation-ib-device",
        "mlx5_0,mlx5_99",
    )
    assert severities(found) == {"topoctl-net-disagg-ib-device-missing": "warn"}
    assert "mlx5_99 is not an RDMA device" in found["topoctl-net-disagg-ib-device-missing"][0]


def test_an_unresolved_value_is_not_guessed(cli):
    code, found = findings(cli, NICS, ["NCCL_SOCKET_IFNAME=$IFNAME"])
    assert code == 0 and severities(found) == {"topoctl-net-not-checked": "info"}


# ---------------------------------------------------------------------------------------- agrees
# with recommend


def test_what_recommend_writes_for_two_nodes_passes(cli, tmp_path):
    env = tmp_path / "two-nodes.env"
    code, _, err = cli(
        [
            "recommend",
            "--system",
            "h100-8x-8nic-ib",
            "--sglang-version",
            "0.5.9",
            "--nnodes",
            "2",
            "-o",
            str(env),
        ]
    )
    assert code == 0, err
    assert "NCCL_SOCKET_IFNAME=" in env.read_text() and "NCCL_IB_HCA=" in env.read_text()
    code, out, err = cli(["check", str(env), *NICS])
    (result,) = json.loads(out)["results"]
    assert [f["id"] for f in result["findings"] if f["id"].startswith("topoctl-net-")] == [], out
