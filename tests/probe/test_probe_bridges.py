"""gpus[].pcie_bridges: the PCIe bridges (root ports, switch ports) between the root complex and
each GPU, read from sysfs once per bridge in a probe, even when GPUs behind one switch are probed
from several threads."""

from __future__ import annotations

import collections
import copy

from fakes.nvml import make_fake_pynvml
from fakes.session import SpecSession, installed
from fakes.systems import SYSTEMS

from topoctl.core.serialize import dump
from topoctl.probe.collect import run_probe


class CountingSession(SpecSession):
    def __init__(self, world, record=False):
        super().__init__(world, record=record)
        self.asked = collections.Counter()

    def ask(self, section, key, live):
        self.asked[(section, key)] += 1
        return super().ask(section, key, live)


def live_probe(name: str):
    spec = copy.deepcopy(SYSTEMS[name]())
    session = CountingSession(spec["world"])
    with installed(make_fake_pynvml(spec["nvml"])):
        snapshot = run_probe(session, with_torch=False)
    return snapshot, session


def test_shared_bridges_are_read_once_per_probe():
    # 8x RTX PRO 6000: per socket, one root port and one switch upstream port above four GPUs
    snapshot, session = live_probe("rtx-pro-6000-8x-pcie")
    reads = {
        key: count
        for (section, key), count in session.asked.items()
        if section == "files" and key.endswith(("/vendor", "/device", "/class"))
    }
    assert reads and set(reads.values()) == {1}, reads
    bridges = [bridge["bdf"] for gpu in snapshot["gpus"] for bridge in gpu["pcie_bridges"]]
    assert (
        len(bridges) == 8 * 3 and len(set(bridges)) == 2 * 2 + 8
    )  # 2 shared per socket, 1 of each GPU's own
    assert len(reads) == 3 * len(set(bridges))


def test_every_gpu_lists_its_own_bridges_in_order():
    snapshot, _ = live_probe("rtx-pro-6000-8x-pcie")
    for gpu in snapshot["gpus"]:
        assert [bridge["bdf"] for bridge in gpu["pcie_bridges"]] == gpu["pcie_path"]
        assert all(
            bridge["class"] == "0x060400" for bridge in gpu["pcie_bridges"]
        )  # PCI-to-PCI bridge
    first, second = snapshot["gpus"][0]["pcie_bridges"][0], snapshot["gpus"][1]["pcie_bridges"][0]
    assert (
        first == second and first is not second
    )  # the same bridge, never one object in two places


def test_yaml_output_has_no_anchors():
    snapshot, _ = live_probe("rtx-pro-6000-8x-pcie")
    text = dump(snapshot, "yaml")
    assert "&id" not in text and "*id" not in text


def test_a_gpu_with_no_pci_bus_id_has_an_empty_bridge_list():
    spec = copy.deepcopy(SYSTEMS["rtx-4090-2x-pcie-no-p2p"]())
    spec["nvml"]["faults"] = [
        {"function": "nvmlDeviceGetPciInfo", "device": 1, "error": "NotSupported"}
    ]
    session = SpecSession(spec["world"])
    with installed(make_fake_pynvml(spec["nvml"])):
        snapshot = run_probe(session)
    assert snapshot["gpus"][1]["pcie_bridges"] == [] and snapshot["gpus"][1]["pcie_path"] == []
    assert len(snapshot["gpus"][0]["pcie_bridges"]) == 1


def test_probe_yaml_of_every_fixture_has_no_anchors():
    """The summary's root-complex groups are copies of pcie.root_complexes[].gpus, not the same
    lists: YAML output shows plain lists, never &id001 / *id001."""
    from click.testing import CliRunner
    from conftest import FIXTURES, fixture_dirs

    from topoctl.cli.app import cli

    for name in fixture_dirs():
        if name == "no-gpu":
            continue
        result = CliRunner().invoke(cli, ["probe", "--from-capture", f"{FIXTURES}/{name}"])
        assert (
            result.exit_code == 0 and "&id" not in result.output and "*id" not in result.output
        ), name
