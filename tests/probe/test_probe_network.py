"""NICs in the probe (probe/network.py): the PCIe relation of each NIC to each GPU, RDMA ports,
interfaces and GPUDirect RDMA readiness, on the two synthetic NIC boxes, the real H200 VM capture
and hand-made sysfs answers."""

from __future__ import annotations

import json
import os

import pytest
from conftest import ROOT

from topoctl.probe.capture import Session, load_capture
from topoctl.probe.collect import probe_capture
from topoctl.probe.files import Files
from topoctl.probe.network import collect_network, nic_link
from topoctl.snapshot.catalogue import system_snapshot
from topoctl.snapshot.document import validate_snapshot
from topoctl.snapshot.view import SnapshotView

REAL_NIC_CAPTURE = os.path.join(ROOT, "docs", "real-hardware", "h200-1x-vm-nics", "capture.json")


def _device(root: str | None, path: list[str], numa: int | None = 0) -> dict:
    return {"root_complex": root, "pcie_path": path, "numa_node": numa}


@pytest.mark.parametrize(
    "gpu, nic, link",
    [
        # one switch: GPU and NIC on two downstream ports of it
        (
            _device("pci0000:15", ["15:01.0", "16:00.0", "17:00.0"]),
            _device("pci0000:15", ["15:01.0", "16:00.0", "17:01.0"]),
            "PIX",
        ),
        # the GPU behind a second switch on another port of the host switch (HGX H100)
        (
            _device("pci0000:15", ["15:01.0", "16:00.0", "17:01.0", "19:00.0", "1a:00.0"]),
            _device("pci0000:15", ["15:01.0", "16:00.0", "17:00.0"]),
            "PXB",
        ),
        (_device("pci0000:15", ["15:01.0"]), _device("pci0000:15", ["15:02.0"]), "PHB"),
        (_device("pci0000:15", ["15:01.0"]), _device("pci0000:3d", ["3d:01.0"]), "NODE"),
        (_device("pci0000:15", ["15:01.0"]), _device("pci0000:97", ["97:01.0"], numa=1), "SYS"),
        (_device("pci0000:15", ["15:01.0"]), _device("pci0000:97", ["97:01.0"], numa=None), None),
        (_device(None, []), _device("pci0000:97", ["97:01.0"]), None),
    ],
)
def test_nic_link_labels_as_nvidia_smi(gpu, nic, link):
    assert nic_link(gpu, nic) == link


def test_dgx_h100_fixture_pairs_each_gpu_with_its_nic():
    """The DGX H100 User Guide's GPU -> RDMA name table, and PXB/NODE/SYS as the published 8-NIC
    dump shows."""
    view = SnapshotView(system_snapshot("h100-8x-8nic-ib")).network
    expected = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
    assert [view.nearest(gpu).nics for gpu in range(8)] == [(name,) for name in expected]
    assert {view.nearest(gpu).link for gpu in range(8)} == {"PXB"}
    assert view.link(0, "mlx5_3") == "NODE" and view.link(0, "mlx5_6") == "SYS"
    assert {nic.transport for nic in view.rdma} == {"ib"} and {
        nic.rate_gbps for nic in view.rdma
    } == {400.0}
    assert view.gpudirect_ready is True


def test_a100_fixture_shares_each_nic_between_two_gpus():
    view = SnapshotView(system_snapshot("a100-8x-4nic-roce")).network
    assert [view.nearest(gpu).nics[0] for gpu in range(8)] == [
        "mlx5_0",
        "mlx5_0",
        "mlx5_1",
        "mlx5_1",
        "mlx5_2",
        "mlx5_2",
        "mlx5_3",
        "mlx5_3",
    ]
    assert {nic.transport for nic in view.rdma} == {"roce"}
    assert view.gpudirect_ready is None  # no peermem module; dma-buf only NCCL can test at run time
    assert "cali1f3a2b4c5d6" not in [i.name for i in view.physical_interfaces]


def test_real_h200_vm_capture_has_no_rdma_nic_and_one_virtio_nic():
    """What the lent H200 VM showed: /sys/class/infiniband empty (mlx5 modules loaded, no device
    passed through), eth0 a virtio NIC on 0000:00:03.0 with no speed, no nvidia_peermem."""
    snapshot = probe_capture(load_capture(REAL_NIC_CAPTURE), REAL_NIC_CAPTURE)
    validate_snapshot(snapshot, "real capture")
    view = SnapshotView(snapshot).network
    assert view.rdma == [] and view.nearest(0) is None
    assert [(i.name, i.pci_bus_id, i.speed_mbps) for i in view.physical_interfaces] == [
        ("eth0", "0000:00:03.0", None)
    ]
    assert view.gpudirect["nvidia_peermem"] is False and view.gpudirect_ready is None
    with open(
        os.path.join(os.path.dirname(REAL_NIC_CAPTURE), "snapshot.json"), encoding="utf-8"
    ) as handle:
        recorded = json.load(handle)
    assert snapshot["network"]["rdma"] == recorded["network"]["rdma"]


def test_a_capture_from_before_nics_has_no_network_section():
    snapshot = system_snapshot("h200-2x-nvswitch-vm")
    assert "network" not in snapshot
    assert SnapshotView(snapshot).network.present is False


class _World(Session):
    """A live-looking session answering file questions from a dict (OSError names as reasons)."""

    def __init__(self, files: dict) -> None:
        super().__init__()
        self.files = files

    def ask(self, section, key, live):
        def answer():
            value = self.files.get(key, FileNotFoundError)
            if isinstance(value, type) and issubclass(value, BaseException):
                from topoctl.probe.capture import ProbeFailure

                raise ProbeFailure(value.__name__)
            return value

        return super().ask(section, key, answer)


def test_unreadable_rdma_class_is_unknown_not_none():
    unknown: dict = {}
    network = collect_network(
        Files(
            _World({"listdir:/sys/class/infiniband": PermissionError, "listdir:/sys/class/net": []})
        ),
        {"kernel": "6.8.0"},
        [],
        unknown,
    )
    assert network["rdma"] is None and unknown["network.rdma"] == "PermissionError"


def test_old_kernel_rules_out_dmabuf_and_without_peermem_gdr():
    network = collect_network(
        Files(_World({"listdir:/sys/class/infiniband": [], "listdir:/sys/class/net": []})),
        {"kernel": "5.4.0-150-generic"},
        [],
        {},
    )
    assert network["gpudirect"]["dmabuf"] is False and network["gpudirect"]["ready"] is False
    assert "5.12" in network["gpudirect"]["reason"]


def test_port_down_is_not_active_and_rate_parses():
    files = {
        "listdir:/sys/class/infiniband": ["mlx5_0"],
        "listdir:/sys/class/net": [],
        "realpath:/sys/class/infiniband/mlx5_0/device": "/sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0",
        "read:/sys/bus/pci/devices/0000:16:00.0/numa_node": "-1\n",
        "listdir:/sys/class/infiniband/mlx5_0/ports": ["1"],
        "read:/sys/class/infiniband/mlx5_0/ports/1/state": "1: DOWN\n",
        "read:/sys/class/infiniband/mlx5_0/ports/1/rate": "200 Gb/sec (4X HDR)\n",
        "read:/sys/class/infiniband/mlx5_0/ports/1/link_layer": "Ethernet\n",
    }
    network = collect_network(Files(_World(files)), {"numa_nodes": 1}, [], {})
    nic = network["rdma"][0]
    assert (
        nic["pci_bus_id"] == "0000:16:00.0" and nic["numa_node"] == 0
    )  # -1 on a one-node host is node 0
    assert nic["ports"][0]["state"] == "DOWN" and nic["ports"][0]["rate_gbps"] == 200.0
    assert nic["transport"] == "roce"
    assert SnapshotView({"network": network}).network.active_rdma == []


def test_show_prints_nic_columns_like_nvidia_smi(cli):
    code, out, _ = cli(["show", "--system", "h100-8x-8nic-ib", "--no-color"])
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[8:16] == [f"NIC{n}" for n in range(8)]
    assert lines[1].split()[9:17] == ["PXB", "NODE", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS"]
    assert "NIC1: mlx5_3 (InfiniBand, 400 Gb/s, port 1 active, NUMA 0, 0000:40:00.0)" in out
    assert "GPUDirect RDMA: ready" in out
