"""PCIe checks without a transfer (probe/pcie_checks.py): ACS parsing, pair verdicts, IOMMU mode,
and replay."""

from __future__ import annotations

import os

from fakes.systems import acs_config

from topoctl.probe import pcie_checks as pc
from topoctl.probe.collect import probe_capture


def test_acs_redirect_bits_are_read_from_the_control_register():
    acs = pc.parse_acs(acs_config(control=0x001D))  # SV, RR, CR, UF
    assert acs["readable"] and acs["present"] and acs["redirect"] is True
    assert acs["enabled"]["request_redirect"] and acs["enabled"]["completion_redirect"]
    assert not acs["enabled"]["translation_blocking"] and acs["control"] == "0x001d"
    assert pc.parse_acs(acs_config(control=0x0001))["redirect"] is False  # source validation alone


def test_acs_found_after_other_extended_capabilities():
    data = bytearray(bytes.fromhex(acs_config(control=0x0004)))
    acs_block = bytes(data[0x100:0x108])
    # an AER capability (id 1) at 0x100 pointing at 0x140, where the ACS block now lives
    data[0x100:0x104] = (0x0001 | (1 << 16) | (0x140 << 20)).to_bytes(4, "little")
    data.extend(bytes(0x140 + 8 - len(data)))
    data[0x140:0x148] = acs_block
    assert pc.parse_acs(bytes(data).hex())["redirect"] is True


def test_no_acs_capability_and_unreadable_extended_space():
    assert pc.parse_acs((bytes(0x100) + bytes(8)).hex()) == {
        "readable": True,
        "present": False,
        "redirect": False,
        "reason": None,
    }
    short = pc.parse_acs(bytes(64).hex())  # what a non-root user reads
    assert short["readable"] is False and short["redirect"] is None and "root" in short["reason"]
    looped = bytearray(bytes.fromhex(acs_config()))
    looped[0x100:0x104] = (0x0001 | (0x100 << 20)).to_bytes(4, "little")  # points at itself
    assert pc.parse_acs(bytes(looped).hex())["present"] is False


def test_pair_verdict_uses_the_bridges_between_the_two_gpus():
    acs = {
        "r": {"redirect": False},
        "up": {"redirect": False},
        "d0": {"redirect": True},
        "d1": {"redirect": False},
    }
    assert pc.pair_acs(["r", "up", "d0"], ["r", "up", "d1"], acs) == (True, None)
    acs["d0"] = {"redirect": False}
    assert pc.pair_acs(["r", "up", "d0"], ["r", "up", "d1"], acs) == (False, None)
    acs["d1"] = {"redirect": None, "reason": "needs root"}
    value, reason = pc.pair_acs(["r", "up", "d0"], ["r", "up", "d1"], acs)
    assert value is None and "needs root" in reason
    assert pc.pair_acs([], ["r"], acs)[0] is None


def test_iommu_mode_from_group_types_then_the_command_line():
    assert pc.iommu_mode(True, ["DMA-FQ", "DMA"], {}) == "translated"
    assert pc.iommu_mode(True, ["identity"], {}) == "passthrough"
    assert pc.iommu_mode(True, ["identity", "DMA"], {}) == "mixed"
    assert pc.iommu_mode(False, [None], {}) == "off"
    assert (
        pc.iommu_mode(True, [None], pc.cmdline_iommu("BOOT_IMAGE=/vmlinuz intel_iommu=on iommu=pt"))
        == "passthrough"
    )
    assert pc.iommu_mode(None, [None], {}) is None
    assert pc.cmdline_iommu("quiet amd_iommu=off iommu.strict=1 x=y") == {
        "amd_iommu": "off",
        "iommu.strict": "1",
    }


def test_synthetic_fixture_replays_its_pcie_facts(fixtures_root):
    from topoctl.probe.capture import load_capture

    snapshot = probe_capture(
        load_capture(os.path.join(fixtures_root, "rtx-pro-6000-8x-pcie")), name="x"
    )
    assert all(gpu["bar1"]["covers_memory"] is True for gpu in snapshot["gpus"])
    assert all(pair["pcie_acs_redirect"] is False for pair in snapshot["pairs"])
    assert snapshot["iommu"]["mode"] == "off" and snapshot["summary"]["acs_redirect_pairs"] == []
    assert snapshot["gpus"][0]["pcie_counters"]["replay"] == 0


def test_an_old_capture_says_once_that_it_never_asked(fixtures_root):
    from topoctl.probe.capture import load_capture

    snapshot = probe_capture(
        load_capture(os.path.join(fixtures_root, "h200-4x-nvswitch-vm")), name="x"
    )
    assert snapshot["unknown"].get("pcie_checks", "").startswith("NotRecorded")
    assert not any(".bar1" in key or "acs" in key for key in snapshot["unknown"])
    assert snapshot["gpus"][0]["bar1"] is None and snapshot["summary"]["iommu_mode"] is None
