"""topoctl/cuda_devices.py: CUDA_VISIBLE_DEVICES read and written as CUDA reads it (PCI bus order ids)."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from topoctl.catalogue import system_snapshot
from topoctl.cuda_devices import (
    first_gpus,
    indices_match_pci_order,
    parse_visible_devices,
    pci_order,
    visible_devices_value,
)


def _mixed():
    """Synthetic: NVML index order differs from PCI bus order, two GPU models."""
    return {"gpus": [{"index": 0, "pci_bus_id": "00000000:81:00.0", "uuid": "GPU-aaaa1111", "name": "A"},
                     {"index": 1, "pci_bus_id": "00000000:05:00.0", "uuid": "GPU-bbbb2222", "name": "B"},
                     {"index": 2, "pci_bus_id": "0000:41:00.0", "uuid": "GPU-bbbb3333", "name": "B"}]}


def test_pci_order_sorts_by_bus_id_in_both_spellings():
    assert pci_order(_mixed()) == [1, 2, 0]
    assert not indices_match_pci_order(_mixed())
    for name in ("rtx-pro-6000-8x-pcie", "l40s-4x-pcie-2numa", "h200-2x-nvswitch-vm"):
        assert indices_match_pci_order(system_snapshot(name))


def test_written_ids_are_pci_positions():
    assert visible_devices_value((0, 2), _mixed()) == "2,1"
    assert visible_devices_value((3, 1), system_snapshot("l40s-4x-pcie-2numa")) == "3,1"  # rank order kept


def test_integer_ids_need_pci_bus_order_on_mixed_gpus():
    assert parse_visible_devices("0,2", _mixed(), "PCI_BUS_ID").gpus == (1, 0)
    unknown = parse_visible_devices("0,2", _mixed(), None)
    assert unknown.gpus is None and "CUDA_DEVICE_ORDER=PCI_BUS_ID" in unknown.reason


def test_identical_gpus_read_in_bus_order_and_say_so():
    group = parse_visible_devices("2,3", system_snapshot("l40s-4x-pcie-2numa"), None)
    assert group.gpus == (2, 3)
    assert any("PCI bus order" in note for note in group.notes)
    assert parse_visible_devices("2,3", system_snapshot("l40s-4x-pcie-2numa"), "PCI_BUS_ID").notes == []


def test_uuids_prefixes_mig_and_invalid_entries():
    assert parse_visible_devices("GPU-bbbb3", _mixed(), None).gpus == (2,)
    assert parse_visible_devices("GPU-bbbb", _mixed(), None).gpus is None  # ambiguous prefix
    assert parse_visible_devices("MIG-GPU-aaaa1111/1/0", _mixed(), None).gpus is None
    # an invalid entry hides itself and everything after it (CUDA Programming Guide)
    group = parse_visible_devices("0,-1,1", _mixed(), "PCI_BUS_ID")
    assert group.gpus == (1,) and group.notes
    assert parse_visible_devices("", _mixed(), "PCI_BUS_ID").gpus == ()
    assert parse_visible_devices("1,1", _mixed(), "PCI_BUS_ID").gpus == (2,)


def test_first_gpus():
    assert first_gpus(_mixed(), 2) == (1, 2)


@given(st.lists(st.integers(0, 7), min_size=1, max_size=8, unique=True))
def test_written_value_reads_back_as_the_same_gpus(gpus):
    snapshot = system_snapshot("rtx-pro-6000-8x-pcie")
    value = visible_devices_value(tuple(gpus), snapshot)
    assert parse_visible_devices(value, snapshot, "PCI_BUS_ID").gpus == tuple(gpus)


@given(st.text(max_size=30))
def test_any_value_parses_without_raising(value):
    parse_visible_devices(value, _mixed(), None)
    parse_visible_devices(value, system_snapshot("h200-2x-nvswitch-vm"), "PCI_BUS_ID")
