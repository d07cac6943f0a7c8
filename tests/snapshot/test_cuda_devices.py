"""topoctl/snapshot/cuda_devices.py: CUDA_VISIBLE_DEVICES read and written as CUDA reads it (PCI bus
order ids)."""

from __future__ import annotations

import json
import os

from conftest import ROOT
from hypothesis import given
from hypothesis import strategies as st

from topoctl.probe.visible import cuda_visible
from topoctl.snapshot.catalogue import system_snapshot
from topoctl.snapshot.cuda_devices import (
    first_gpus,
    indices_match_pci_order,
    parse_visible_devices,
    pci_order,
    resolve_visible,
    visible_devices_value,
)


def _mixed():
    """Synthetic: NVML index order differs from PCI bus order, two GPU models."""
    return {
        "gpus": [
            {"index": 0, "pci_bus_id": "00000000:81:00.0", "uuid": "GPU-aaaa1111", "name": "A"},
            {"index": 1, "pci_bus_id": "00000000:05:00.0", "uuid": "GPU-bbbb2222", "name": "B"},
            {"index": 2, "pci_bus_id": "0000:41:00.0", "uuid": "GPU-bbbb3333", "name": "B"},
        ]
    }


def test_pci_order_sorts_by_bus_id_in_both_spellings():
    assert pci_order(_mixed()) == [1, 2, 0]
    assert not indices_match_pci_order(_mixed())
    for name in ("rtx-pro-6000-8x-pcie", "l40s-4x-pcie-2numa", "h200-2x-nvswitch-vm"):
        assert indices_match_pci_order(system_snapshot(name))


def test_written_ids_are_pci_positions():
    assert visible_devices_value((0, 2), _mixed()) == "2,1"
    assert (
        visible_devices_value((3, 1), system_snapshot("l40s-4x-pcie-2numa")) == "3,1"
    )  # rank order kept


def test_integer_ids_need_pci_bus_order_on_mixed_gpus():
    assert parse_visible_devices("0,2", _mixed(), "PCI_BUS_ID").gpus == (1, 0)
    unknown = parse_visible_devices("0,2", _mixed(), None)
    assert unknown.gpus is None and "CUDA_DEVICE_ORDER=PCI_BUS_ID" in unknown.reason


def test_integer_ids_under_the_default_order_are_unknown_even_on_identical_gpus():
    # FASTEST_FIRST leaves the order past the fastest GPU unspecified; no NVIDIA text gives a
    # tie-break
    group = parse_visible_devices("2,3", system_snapshot("l40s-4x-pcie-2numa"), None)
    assert group.gpus is None and group.order_unknown and group.count == 2
    assert "FASTEST_FIRST" in group.reason and "CUDA_DEVICE_ORDER=PCI_BUS_ID" in group.reason
    assert parse_visible_devices(
        "2,3", system_snapshot("l40s-4x-pcie-2numa"), "PCI_BUS_ID"
    ).gpus == (2, 3)
    # the count is known where the ids end: "2,9" leaves one device, which one is not known
    assert parse_visible_devices("2,9", system_snapshot("l40s-4x-pcie-2numa"), None).count == 1
    # a single device has nothing to be ordered against
    assert parse_visible_devices("0", {"gpus": [_mixed()["gpus"][0]]}, None).gpus == (0,)


def test_uuids_prefixes_mig_and_invalid_entries():
    assert parse_visible_devices("GPU-bbbb3", _mixed(), None).gpus == (2,)
    assert parse_visible_devices("gpu-BBBB3", _mixed(), None).gpus == (2,)
    assert parse_visible_devices("GPU-bbbb", _mixed(), None).gpus is None  # ambiguous prefix
    assert (
        parse_visible_devices("GPU-cccc", _mixed(), None).gpus is None
    )  # not a GPU of the snapshot
    assert parse_visible_devices("MIG-GPU-aaaa1111/1/0", _mixed(), None).gpus is None
    # an invalid entry hides itself and everything after it (CUDA Programming Guide: 0,2,-1,1 gives
    # 0 and 2)
    group = parse_visible_devices("0,-1,1", _mixed(), "PCI_BUS_ID")
    assert group.gpus == (1,) and group.notes and group.ended_at == "-1"
    assert parse_visible_devices("GPU-bbbb3,x,0", _mixed(), None).gpus == (2,)
    assert parse_visible_devices("", _mixed(), "PCI_BUS_ID").gpus == ()
    assert (
        parse_visible_devices("1,1", _mixed(), "PCI_BUS_ID").gpus is None
    )  # a repeat: undocumented


def test_the_probe_record_and_check_read_the_value_alike():
    snapshot = _mixed()
    for value, order in (
        ("0,2", "PCI_BUS_ID"),
        ("2,x,0", "PCI_BUS_ID"),
        ("GPU-aaaa", None),
        ("0,1", None),
    ):
        record = cuda_visible(value, snapshot["gpus"], order)
        group = parse_visible_devices(value, snapshot, order)
        gpus = [device["gpu"] for device in record["cuda_devices"]]
        assert gpus == (list(group.gpus) if group.gpus is not None else [None] * group.count)
        assert (record["unknown"] is None) == (group.gpus is not None)


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


@st.composite
def _machine(draw):
    """Synthetic: 1-6 GPUs on random distinct PCI buses, NVML indices in a random order, distinct
    UUIDs."""
    count = draw(st.integers(1, 6))
    buses = draw(st.lists(st.integers(1, 0xFE), min_size=count, max_size=count, unique=True))
    indices = draw(st.permutations(range(count)))
    uuids = draw(
        st.lists(
            st.text("0123456789abcdef", min_size=8, max_size=8),
            min_size=count,
            max_size=count,
            unique=True,
        )
    )
    return {
        "gpus": [
            {
                "index": index,
                "pci_bus_id": f"00000000:{bus:02x}:00.0",
                "uuid": f"GPU-{uuid}",
                "name": "G",
            }
            for index, bus, uuid in zip(indices, buses, uuids, strict=True)
        ]
    }


def _bus_rank(snapshot):
    return pci_order(snapshot)  # position -> snapshot index, ascending bus id


@given(_machine(), st.data())
def test_integer_ids_name_gpus_by_pci_bus_position_never_by_nvml_index(snapshot, data):
    order = _bus_rank(snapshot)
    positions = data.draw(
        st.lists(st.integers(0, len(order) - 1), unique=True, max_size=len(order))
    )
    value = ",".join(str(position) for position in positions)
    assert parse_visible_devices(value, snapshot, "PCI_BUS_ID").gpus == tuple(
        order[p] for p in positions
    )
    # the same GPUs by UUID prefix, under either order
    by_index = {gpu["index"]: gpu for gpu in snapshot["gpus"]}
    uuids = ",".join(
        by_index[order[p]]["uuid"][: 8 + data.draw(st.integers(0, 4))] for p in positions
    )
    for device_order in ("PCI_BUS_ID", None, "FASTEST_FIRST"):
        group = parse_visible_devices(uuids, snapshot, device_order)
        assert group.gpus is None or group.gpus == tuple(
            order[p] for p in positions
        )  # None: a prefix shared
    if len(order) > 1 and positions:
        unknown = parse_visible_devices(value, snapshot, None)
        assert unknown.gpus is None and unknown.order_unknown and unknown.count == len(positions)


@given(_machine(), st.data())
def test_an_invalid_entry_ends_the_list_there(snapshot, data):
    order = _bus_rank(snapshot)
    head = data.draw(st.lists(st.integers(0, len(order) - 1), unique=True, max_size=len(order)))
    invalid = data.draw(
        st.sampled_from(["-1", str(len(order)), str(len(order) + 7), "x", "GPU", "0x1", "1.0"])
    )
    tail = data.draw(st.lists(st.integers(0, len(order) - 1), max_size=4))
    value = ",".join([*map(str, head), invalid, *map(str, tail)])
    group = parse_visible_devices(value, snapshot, "PCI_BUS_ID")
    assert (
        group.gpus == parse_visible_devices(",".join(map(str, head)), snapshot, "PCI_BUS_ID").gpus
    )
    assert group.ended_at == invalid.strip() and group.notes


def _measured_cases():
    """The CUDA runtime's own answers on a real 1x H200 (scripts/real_visible_devices_check.py,
    committed in docs/real-hardware/h200-1x-vm-visible/visible-devices.json): what a fresh CUDA
    program enumerated under each value."""
    path = os.path.join(ROOT, "docs", "real-hardware", "h200-1x-vm-visible", "visible-devices.json")
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def test_every_answer_topoctl_gives_is_what_cuda_enumerated_on_a_real_h200():
    """Replayed against the measured answers, the resolver never names a GPU CUDA did not show (or
    misses one it did, or reorders them); where it says it cannot know, the measurement is on record
    for a later rule."""
    measured = _measured_cases()
    gpus = [{"index": index, "uuid": uuid} for index, uuid in enumerate(measured["gpus"])]
    known = 0
    for case in measured["cases"]:
        group = resolve_visible(case["value"], case["order"], gpus)
        if group.gpus is None:
            continue
        known += 1
        assert [gpus[index]["uuid"] for index in group.gpus] == case["cuda"]["uuids"], case["value"]
    assert known == sum(1 for case in measured["cases"] if case["verdict"] == "agree") >= 22
