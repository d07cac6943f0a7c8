"""autoconf/placement.py: which GPUs a launch on fewer GPUs than the machine runs on, and why."""

from __future__ import annotations

import copy
import itertools

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from topoctl.autoconf.placement import EXACT_GPUS, EXACT_LIMIT, choose_gpus, pair_views
from topoctl.snapshot.catalogue import system_snapshot


def _set_pair(snapshot, a, b, **fields):
    for entry in snapshot["pairs"]:
        if {entry["src"], entry["dst"]} == {a, b}:
            for key, value in fields.items():
                if key == "p2p":
                    entry["p2p"].update(value)
                else:
                    entry[key] = value


def test_tp4_on_rtx_pro_6000_gets_one_numa_node_with_p2p():
    snapshot = system_snapshot("rtx-pro-6000-8x-pcie")
    placement = choose_gpus(snapshot, 4)
    assert placement.gpus == (0, 1, 2, 3)
    assert placement.p2p_ok is True
    assert placement.numa_nodes == (0,)
    assert placement.worst_link == "PXB"
    assert any(
        "next best: GPUs 4,5,6,7 (as good, but higher GPU indices" in reason
        for reason in placement.reasons
    )


def test_tp2_on_l40s_gets_the_same_socket_pair_with_p2p_and_no_downtrained_gpu():
    snapshot = system_snapshot("l40s-4x-pcie-2numa")
    placement = choose_gpus(snapshot, 2)
    assert placement.gpus == (0, 1)
    assert placement.p2p_ok is True and placement.numa_nodes == (0,)
    # GPUs 2 and 3 have the same links; GPU 2 runs PCIe x8 of x16, which the reasons name
    assert "next best: GPUs 2,3 (more down-trained PCIe links)" in placement.reasons


def test_p2p_outranks_the_lowest_indices():
    snapshot = system_snapshot("rtx-pro-6000-8x-pcie")
    _set_pair(snapshot, 0, 1, p2p={"read": "NS", "write": "NS"})
    placement = choose_gpus(snapshot, 4)
    assert set(placement.gpus) & {0, 1} != {0, 1}  # never the pair without P2P
    assert placement.p2p_ok is True and placement.numa_nodes in ((0,), (1,))
    assert placement.gpus == (4, 5, 6, 7)


def test_an_unknown_pair_is_not_a_working_one():
    snapshot = system_snapshot("rtx-pro-6000-8x-pcie")
    _set_pair(snapshot, 2, 3, p2p={"read": "unknown"})
    placement = choose_gpus(snapshot, 2)
    assert placement.gpus == (0, 1)
    placement = choose_gpus(snapshot, 4)
    assert placement.gpus == (4, 5, 6, 7)
    # the first socket's group of four holds the unknown pair; every other group of four crosses the
    # sockets
    assert "next best: GPUs 0,1,2,4 (a slower worst link)" in placement.reasons


def test_a_better_link_wins_within_a_socket():
    snapshot = system_snapshot("rtx-pro-6000-8x-pcie")
    _set_pair(snapshot, 5, 6, link="PIX", pcie_ancestor="PIX")
    assert choose_gpus(snapshot, 2).gpus == (5, 6)
    assert (
        "slowest link inside the group: one PCIe switch (PIX)" in choose_gpus(snapshot, 2).reasons
    )


def test_nvlink_beats_pcie():
    snapshot = system_snapshot("rtx-pro-6000-8x-pcie")
    _set_pair(snapshot, 3, 7, link="NV4", nvlinks=4)
    placement = choose_gpus(snapshot, 2)
    assert placement.gpus == (3, 7) and placement.worst_link == "NV4"


def test_no_group_with_p2p_says_so():
    snapshot = system_snapshot("l40s-4x-pcie-2numa")
    placement = choose_gpus(snapshot, 3)
    assert placement.p2p_ok is False
    assert any("no group of this size has working P2P" in reason for reason in placement.reasons)


def test_whole_machine_and_bad_sizes():
    snapshot = system_snapshot("h200-2x-nvswitch-vm")
    placement = choose_gpus(snapshot, 2)
    assert placement.whole_machine and placement.gpus == (0, 1)
    assert choose_gpus(snapshot, 5).gpus == (0, 1)
    with pytest.raises(ValueError):
        choose_gpus(snapshot, 0)


def test_deterministic_and_independent_of_pair_order():
    snapshot = system_snapshot("rtx-pro-6000-8x-pcie")
    shuffled = copy.deepcopy(snapshot)
    shuffled["pairs"].reverse()
    shuffled["gpus"].reverse()
    for size in range(1, 9):
        assert choose_gpus(snapshot, size).as_dict() == choose_gpus(shuffled, size).as_dict()


def test_one_direction_failing_fails_the_pair():
    snapshot = system_snapshot("h200-2x-nvswitch-vm")
    for entry in snapshot["pairs"]:
        if entry["src"] == 1:
            entry["p2p"]["write"] = "NS"
    assert pair_views(snapshot)[(0, 1)].p2p_ok is False


def _synthetic(count, broken):
    """Synthetic: `count` GPUs on PCIe (PXB, P2P OK) except the pairs in `broken` (no P2P)."""
    gpus = [
        {"index": i, "pci_bus_id": f"00000000:{i + 16:02x}:00.0", "numa_node": 0}
        for i in range(count)
    ]
    pairs = [
        {
            "src": a,
            "dst": b,
            "link": "PXB",
            "nvlinks": 0,
            "p2p": {"read": "NS" if {a, b} in broken else "OK", "write": "OK"},
        }
        for a in range(count)
        for b in range(count)
        if a != b
    ]
    return {"gpus": gpus, "pairs": pairs}


@settings(max_examples=examples(40), deadline=None)
@given(
    st.integers(2, 7),
    st.sets(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=6),
    st.integers(1, 7),
)
def test_exact_search_finds_a_p2p_group_whenever_one_exists(count, broken_raw, size):
    size = min(size, count)
    broken = [set(pair) for pair in broken_raw if pair[0] != pair[1] and max(pair) < count]
    snapshot = _synthetic(count, broken)
    exists = any(
        all({a, b} not in broken for a, b in itertools.combinations(group, 2))
        for group in itertools.combinations(range(count), size)
    )
    placement = choose_gpus(snapshot, size)
    assert len(placement.gpus) == size
    if size > 1:
        assert (placement.p2p_ok is True) == exists


def test_large_machines_use_the_greedy_search():
    snapshot = _synthetic(24, [])
    placement = choose_gpus(snapshot, 12)  # C(24, 12) is far beyond EXACT_LIMIT
    assert len(placement.gpus) == 12 and placement.p2p_ok is True
    assert any(
        f"greedy search (more than {EXACT_GPUS} GPUs or {EXACT_LIMIT} groups" in reason
        for reason in placement.reasons
    )


def test_replicas_each_get_a_group_with_p2p():
    from topoctl.autoconf.placement import choose_replicas

    snapshot = system_snapshot("l40s-4x-pcie-2numa")
    placement = choose_replicas(snapshot, 2, 2)
    assert placement.replicas == ((0, 1), (2, 3)) and placement.gpus == (0, 1, 2, 3)
    assert (
        placement.p2p_ok is True
    )  # inside each replica; the cross-socket pairs are not allreduced over
    assert placement.in_bus_order(snapshot)
    snapshot = system_snapshot("rtx-pro-6000-8x-pcie")
    _set_pair(snapshot, 1, 2, link="PIX")
    _set_pair(snapshot, 0, 3, link="PIX")
    placement = choose_replicas(snapshot, 2, 4)
    assert placement.replicas[:2] == ((0, 3), (1, 2)) and not placement.in_bus_order(snapshot)
    assert len(set(placement.gpus)) == 8
    with pytest.raises(ValueError):
        choose_replicas(snapshot, 4, 3)
    assert choose_replicas(snapshot, 4, 1).gpus == choose_gpus(snapshot, 4).gpus
