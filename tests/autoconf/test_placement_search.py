"""autoconf/placement.py's search: the pair matrix and the greedy search give what scoring every
group gives.

The reference here is the search as it was before the matrix: every group of the size scored in full
with placement._score and sorted (the exact search), and the greedy search that grew a group from
every GPU by scoring each grown group in full. Snapshots are generated (synthetic: random links, P2P
answers, NUMA nodes and down-trained links over the tiers nvidia-smi topo -m names).
"""

from __future__ import annotations

import itertools

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from topoctl.autoconf import placement as placement_module
from topoctl.autoconf.placement import choose_gpus, choose_replicas, pair_views
from topoctl.snapshot.catalogue import system_snapshot
from topoctl.snapshot.cuda_devices import pci_order

LINKS = [
    ("NV18", 18),
    ("NV4", 4),
    ("NV2", 2),
    ("PIX", 0),
    ("PXB", 0),
    ("PHB", 0),
    ("NODE", 0),
    ("SYS", 0),
    (None, 0),
]
P2P = ["OK", "OK", "OK", "NS", "unknown"]


@st.composite
def snapshots(draw, low=2, high=8):
    """A synthetic snapshot of `low`..`high` GPUs: each unordered pair a random link and P2P answer
    per side."""
    count = draw(st.integers(low, high))
    gpus = [
        {
            "index": i,
            "pci_bus_id": f"00000000:{i + 16:02x}:00.0",
            "numa_node": draw(st.sampled_from([0, 1, None])),
            "pcie": {"downtrained": draw(st.booleans())},
        }
        for i in range(count)
    ]
    pairs = []
    for a, b in itertools.combinations(range(count), 2):
        link, nvlinks = draw(st.sampled_from(LINKS))
        for src, dst in ((a, b), (b, a)):
            pairs.append(
                {
                    "src": src,
                    "dst": dst,
                    "link": link,
                    "nvlinks": nvlinks,
                    "p2p": {"read": draw(st.sampled_from(P2P)), "write": "OK"},
                }
            )
    return {"gpus": gpus, "pairs": pairs}


def _old_ranked(snapshot, candidates, size):
    """Every group scored in full, best first: the exact search before the matrix."""
    order = pci_order(snapshot)
    position = {index: place for place, index in enumerate(order)}
    views, gpus = pair_views(snapshot), placement_module._gpu_facts(snapshot)
    return sorted(
        (placement_module._score(group, views, gpus, position), group)
        for group in itertools.combinations(candidates, size)
    )


def _old_greedy(snapshot, candidates, size, seeds=None):
    """The greedy search before the matrix: from every GPU (or `seeds`), add the GPU whose grown
    group scores best; the distinct groups found, best first."""
    order = pci_order(snapshot)
    position = {index: place for place, index in enumerate(order)}
    views, gpus = pair_views(snapshot), placement_module._gpu_facts(snapshot)

    def score(group):
        return placement_module._score(group, views, gpus, position)

    found = set()
    for seed in candidates if seeds is None else seeds:
        group = (seed,)
        while len(group) < size:
            group = min(
                (tuple(sorted(group + (other,))) for other in candidates if other not in group),
                key=score,
            )
        found.add((score(group), group))
    return sorted(found)


@settings(max_examples=examples(150), deadline=None)
@given(snapshots(), st.integers(1, 8))
def test_up_to_8_gpus_the_search_gives_what_scoring_every_group_gives(snapshot, size):
    order = pci_order(snapshot)
    size = min(size, len(order))
    placement = choose_gpus(snapshot, size)
    if size == len(order):
        assert placement.gpus == tuple(order)
        return
    ranked = _old_ranked(snapshot, order, size)
    assert placement.gpus == ranked[0][1]
    runner = ",".join(str(index) for index in ranked[1][1])
    assert any(reason.startswith(f"next best: GPUs {runner} (") for reason in placement.reasons)


@settings(max_examples=examples(60), deadline=None)
@given(snapshots(4, 8), st.integers(1, 4))
def test_replicas_up_to_8_gpus_are_the_best_group_of_the_gpus_left(snapshot, tp):
    order = pci_order(snapshot)
    dp = max(1, len(order) // tp)
    if tp * dp > len(order) or dp == 1:
        return
    left, expected = list(order), []
    for _ in range(dp):
        group = _old_ranked(snapshot, left, tp)[0][1]
        expected.append(group)
        left = [index for index in left if index not in group]
    assert choose_replicas(snapshot, tp, dp).replicas == tuple(expected)


@settings(max_examples=examples(40), deadline=None)
@given(snapshots(17, 20), st.integers(2, 6))
def test_the_greedy_step_on_the_matrix_is_the_full_scores_step(snapshot, size):
    """Past EXACT_GPUS: grown from the same start, the matrix's greedy step picks what full scoring
    picks."""
    order = pci_order(snapshot)
    views, gpus = pair_views(snapshot), placement_module._gpu_facts(snapshot)
    matrix = placement_module._build_matrix(order, views, gpus)
    for seed in range(len(order)):
        grown = placement_module._grow(matrix, seed, list(range(len(order))), size)
        assert (
            tuple(sorted(matrix.gpus[a] for a in grown))
            == _old_greedy(snapshot, order, size, [order[seed]])[0][1]
        )


def test_alike_gpus_share_one_start_and_the_greedy_keeps_its_group(large_snapshot):
    snapshot = large_snapshot(32)  # four copies of the 8-GPU PCIe system: 8 sockets of 4 alike GPUs
    order = pci_order(snapshot)
    matrix = placement_module._build_matrix(
        order, pair_views(snapshot), placement_module._gpu_facts(snapshot)
    )
    assert len(matrix.seeds) == 1  # every GPU: 3 PXB pairs, the rest SYS
    placement = choose_gpus(snapshot, 4)
    assert (
        placement.gpus == (0, 1, 2, 3)
        and placement.worst_link == "PXB"
        and placement.p2p_ok is True
    )
    assert _old_greedy(snapshot, order, 4)[0][1] == placement.gpus
    assert choose_replicas(snapshot, 4, 8).replicas == tuple(
        tuple(range(n, n + 4)) for n in range(0, 32, 4)
    )


def test_starts_are_bounded():
    snapshot = system_snapshot("rtx-pro-6000-8x-pcie")
    order = pci_order(snapshot)
    matrix = placement_module._build_matrix(
        order, pair_views(snapshot), placement_module._gpu_facts(snapshot)
    )
    crowded = placement_module._Matrix(
        matrix.gpus,
        matrix.weights,
        matrix.numa,
        matrix.downtrained,
        tuple((a,) for a in range(len(order))),
    )
    assert len(placement_module._starts(crowded, list(range(8)), 2)) == min(
        8, placement_module.MAX_STARTS
    )
    few = placement_module.MAX_STARTS
    try:
        placement_module.MAX_STARTS = 3
        assert len(placement_module._starts(crowded, list(range(8)), 2)) == 3
    finally:
        placement_module.MAX_STARTS = few


@pytest.mark.parametrize(
    "name", ["rtx-pro-6000-8x-pcie", "l40s-4x-pcie-2numa", "h100-8x-nvswitch", "b200-8x-nvswitch"]
)
def test_reference_systems_every_size_matches_scoring_every_group(name):
    snapshot = system_snapshot(name)
    order = pci_order(snapshot)
    for size in range(1, len(order)):
        assert choose_gpus(snapshot, size).gpus == _old_ranked(snapshot, order, size)[0][1]
