"""Which GPUs a launch that uses fewer GPUs than the machine has should run on.

`choose_gpus(snapshot, n)` looks at every group of n GPUs and keeps the best, compared in this
order:

1. pairs without working P2P (read and write OK in both directions; an unknown status is not
   working): fewest;
2. the worst link in the group (the ring or tree of an allreduce runs at its slowest hop): best,
   from best to worst NVLink (more bonded links first), PIX (one PCIe switch), PXB (several
   switches), PHB (one root complex / host bridge), NODE (one NUMA node), SYS (across sockets),
   unknown;
3. every link of the group, worst first: best (a group with one slow pair beats one with two);
4. NUMA nodes the group spans: fewest; then down-trained PCIe links in the group: fewest;
5. the lowest GPU indices (PCI bus order): deterministic ties.

Pure: a snapshot (plain data) in, a Placement with its reasons out. The search, for n usable GPUs,
groups of k and d replicas (a snapshot holds at most topoctl.snapshot.document.MAX_GPUS = 128 GPUs):

- the pairs are read once (pair_views, O(n^2)) and scored once into a matrix of integers (_Matrix,
  O(n^2));
- exact, on machines of at most EXACT_GPUS (16) GPUs where there are at most EXACT_LIMIT (5,000)
  groups (every case up to 12 GPUs; 16 GPUs in groups of up to 3 or from 13): every group is
  compared on the matrix, O(EXACT_LIMIT x k^2) per group chosen, and gives what scoring every group
  in full gives;
- otherwise greedy: from each start, add the GPU that keeps the grown group's score best, with each
  GPU's sum of pairs to the group updated as it grows: O(k x n) per start. One start per class of
  alike GPUs (the same pairs to the rest, counted), at most MAX_STARTS (32): O(32 x k x n) per
  group, so O(32 x n^2) for d replicas of k (d x k <= n). The reasons say when the greedy search
  chose.

At the ceiling (128 GPUs) every (TP, DP) option is placed in well under a second on a 2-core runner
(docs/performance.md).

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from topoctl.core.p2p import measured_health, pair_p2p_ok
from topoctl.snapshot.cuda_devices import pci_order
from topoctl.snapshot.view import SnapshotLike, view_of

if TYPE_CHECKING:
    from topoctl.snapshot.shape import GpuEntry, PairEntry

EXACT_LIMIT = 5000
EXACT_GPUS = (
    16  # beyond, the greedy search: a replica loop over 100 GPUs would compare C(100, 2) pairs each
)
MAX_STARTS = 32  # greedy starts per group (one per class of alike GPUs, the most promising first)
# Link tiers, best first (nvidia-smi topo -m's names); NVLink is split further by its bonded link
# count.
LINK_TIERS = {"NV": 0, "PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5}
UNKNOWN_TIER = 6
LINK_WORDS = {
    "NV": "NVLink",
    "PIX": "one PCIe switch (PIX)",
    "PXB": "several PCIe switches, one root port (PXB)",
    "PHB": "one root complex / host bridge (PHB)",
    "NODE": "one NUMA node, different root complexes (NODE)",
    "SYS": "across NUMA nodes (SYS)",
    None: "an unknown link",
}


@dataclass(frozen=True)
class PairView:
    p2p_ok: bool | None  # both directions: False if either fails, None if either is unknown
    link: str | None  # nvidia-smi label (NV18, PIX, ...), the worse of the two directions
    tier: int
    nvlinks: int


@dataclass
class Placement:
    gpus: tuple[int, ...]  # snapshot GPU indices, in PCI bus order
    machine_gpus: int
    reasons: list[str] = field(default_factory=list)
    p2p_ok: bool | None = (
        None  # every pair of the group has working P2P (None: some unknown, none failing)
    )
    worst_link: str | None = None
    numa_nodes: tuple[int, ...] = ()
    replicas: tuple[
        tuple[int, ...], ...
    ] = ()  # data-parallel replicas (TP groups) in rank order; () for one

    def in_bus_order(self, snapshot: SnapshotLike) -> bool:
        """Whether the launch runs on every GPU in CUDA's PCI bus order (then no
        CUDA_VISIBLE_DEVICES is needed)."""
        return self.gpus == tuple(pci_order(snapshot))

    @property
    def whole_machine(self) -> bool:
        return len(self.gpus) >= self.machine_gpus

    def as_dict(self) -> dict[str, object]:
        return {
            "gpus": list(self.gpus),
            "whole_machine": self.whole_machine,
            "p2p_ok": self.p2p_ok,
            "worst_link": self.worst_link,
            "numa_nodes": list(self.numa_nodes),
            "reasons": list(self.reasons),
            "replicas": [list(replica) for replica in self.replicas],
        }


def _tier(link: object, nvlinks: int) -> int:
    if nvlinks > 0 or (isinstance(link, str) and link.upper().startswith("NV")):
        return LINK_TIERS["NV"]
    return (
        LINK_TIERS.get(str(link).upper(), UNKNOWN_TIER) if isinstance(link, str) else UNKNOWN_TIER
    )


def _nvlinks(entry: PairEntry) -> int:
    value = entry.get("nvlinks")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def pair_views(snapshot: SnapshotLike) -> dict[tuple[int, int], PairView]:
    """Unordered pairs (low, high) of the snapshot, both directions merged conservatively."""
    directed: dict[tuple[int, int], PairEntry] = {}
    view = view_of(snapshot)
    for entry in view.pairs or []:
        if isinstance(entry.get("src"), int) and isinstance(entry.get("dst"), int):
            directed[(entry["src"], entry["dst"])] = entry
    views: dict[tuple[int, int], PairView] = {}
    health = measured_health(view.data)
    for src, dst in directed:
        key = (min(src, dst), max(src, dst))
        if key in views or src == dst:
            continue
        sides = [directed[pair] for pair in ((src, dst), (dst, src)) if pair in directed]
        # A direction that failed `topoctl bench`'s health check has no working P2P, whatever NVML
        # says.
        verdicts = [
            False
            if health.get((side["src"], side["dst"]), (True, None))[0] is False
            else pair_p2p_ok(side.get("p2p"))
            for side in sides
        ]
        if len(sides) < 2:
            verdicts.append(None)  # the other direction was never asked: not verified
        ok: bool | None = False if False in verdicts else (None if None in verdicts else True)
        worst = max(
            sides, key=lambda side: (_tier(side.get("link"), _nvlinks(side)), -_nvlinks(side))
        )
        nvlinks = min(_nvlinks(side) for side in sides)
        views[key] = PairView(
            ok,
            worst.get("link") if isinstance(worst.get("link"), str) else None,
            _tier(worst.get("link"), nvlinks),
            nvlinks,
        )
    return views


_NO_PAIR = PairView(None, None, UNKNOWN_TIER, 0)


def _gpu_facts(snapshot: SnapshotLike) -> dict[int, GpuEntry]:
    return view_of(snapshot).gpus_by_index


def _score(
    group: tuple[int, ...],
    views: dict[tuple[int, int], PairView],
    gpus: Mapping[int, Mapping[str, Any]],
    position: dict[int, int],
) -> tuple:
    pairs = [views.get((a, b), _NO_PAIR) for a, b in itertools.combinations(sorted(group), 2)]
    not_ok = sum(1 for pair in pairs if pair.p2p_ok is not True)
    failing = sum(1 for pair in pairs if pair.p2p_ok is False)
    links = sorted(((pair.tier, -pair.nvlinks) for pair in pairs), reverse=True)
    worst = links[0] if links else (LINK_TIERS["NV"], 0)
    numa = {gpus.get(index, {}).get("numa_node") for index in group}
    numa_count = len(numa - {None}) + (1 if None in numa else 0)
    downtrained = sum(
        1
        for index in group
        if ((gpus.get(index) or {}).get("pcie") or {}).get("downtrained") is True
    )
    order = tuple(sorted(position.get(index, len(position) + index) for index in group))
    return (not_ok, failing, worst, tuple(links), numa_count, downtrained, order)


@dataclass(frozen=True)
class _Matrix:
    """The usable GPUs' pairs scored once, as small integers, for the greedy search.

    weights[a][b] (a, b positions in `gpus`) packs one pair's part of a group's score into one
    integer, in digits of base n^2 (more than the pairs of any group): P2P not working (most
    significant), P2P failing, then one digit per link rank, the worst rank highest. Summed over a
    set of pairs (a group's, or those one GPU adds to a group), two sums of as many pairs compare
    exactly as the groups' scores do on their first four keys: the worst link and the sorted links
    compare as counts per rank, worst first."""

    gpus: tuple[int, ...]  # snapshot GPU indices, in PCI bus order
    weights: tuple[tuple[int, ...], ...]
    numa: tuple[int, ...]  # one small number per distinct NUMA node value (None included)
    downtrained: tuple[bool, ...]
    seeds: tuple[
        tuple[int, ...], ...
    ]  # classes of alike GPUs (positions, lowest first): one start each


_LAST_MATRIX: list[
    tuple[object, tuple[int, ...], _Matrix]
] = []  # (views, usable, matrix) of the last build


def _matrix(
    usable: list[int], views: dict[tuple[int, int], PairView], gpus: Mapping[int, Mapping[str, Any]]
) -> _Matrix:
    """The matrix of `usable` (see _Matrix), built once for the same pair views (the same object:
    recommend reads them once and places every (TP, DP) option with them)."""
    for seen_views, seen_usable, matrix in _LAST_MATRIX:
        if seen_views is views and seen_usable == tuple(usable):
            return matrix
    matrix = _build_matrix(usable, views, gpus)
    _LAST_MATRIX[:] = [(views, tuple(usable), matrix)]
    return matrix


def _build_matrix(
    usable: list[int], views: dict[tuple[int, int], PairView], gpus: Mapping[int, Mapping[str, Any]]
) -> _Matrix:
    count = len(usable)
    pair_of = [[views.get((a, b) if a < b else (b, a), _NO_PAIR) for b in usable] for a in usable]
    ranks = sorted({(pair.tier, -pair.nvlinks) for row in pair_of for pair in row})
    base = count * count + 1
    failing_digit, not_ok_digit = base ** len(ranks), base ** (len(ranks) + 1)
    weight_of = {
        pair: base ** ranks.index((pair.tier, -pair.nvlinks))
        + (not_ok_digit if pair.p2p_ok is not True else 0)
        + (failing_digit if pair.p2p_ok is False else 0)
        for pair in {pair for row in pair_of for pair in row}
    }
    weights = tuple(
        tuple(0 if a == b else weight_of[pair] for b, pair in enumerate(row))
        for a, row in enumerate(pair_of)
    )
    numa = tuple(gpus.get(index, {}).get("numa_node") for index in usable)
    downtrained = tuple(
        ((gpus.get(index) or {}).get("pcie") or {}).get("downtrained") is True for index in usable
    )
    node_ids: dict[str, int] = {}
    numa_ids = tuple(node_ids.setdefault(repr(node), len(node_ids)) for node in numa)
    return _Matrix(tuple(usable), weights, numa_ids, downtrained, _alike(weights, downtrained))


def _alike(
    weights: tuple[tuple[int, ...], ...], downtrained: tuple[bool, ...]
) -> tuple[tuple[int, ...], ...]:
    """Classes of GPUs whose pairs to the rest are alike: the same links and P2P answers, counted (a
    sorted row of the matrix), and the same PCIe link state. GPUs that swap without changing any
    pair always are (every GPU of a copy of one board, a socket of identical cards), so one greedy
    start serves a class: O(n^2 log n) to build."""
    classes: dict[tuple[tuple[int, ...], bool], list[int]] = {}
    for a, row in enumerate(weights):
        classes.setdefault((tuple(sorted(row)), downtrained[a]), []).append(a)
    return tuple(sorted(tuple(members) for members in classes.values()))


def _grow(matrix: _Matrix, seed: int, pool: list[int], size: int) -> list[int]:
    """The greedy group from `seed`: add, one at a time, the GPU of `pool` that keeps the grown
    group's score best. Each GPU's sum of pairs to the group is kept up to date as the group grows,
    and its key packs (pair sum, new NUMA node, down-trained, position) into one integer: O(size x
    len(pool)) per group."""
    span = 2 * len(matrix.gpus)
    tail = {other: matrix.downtrained[other] * len(matrix.gpus) + other for other in pool}
    numa = matrix.numa
    added = {other: matrix.weights[seed][other] for other in pool if other != seed}
    group, nodes = [seed], {numa[seed]}
    while len(group) < size and added:
        best = min(
            added,
            key=lambda other: (
                ((added[other] << 1) + (numa[other] not in nodes)) * span + tail[other]
            ),
        )
        del added[best]
        group.append(best)
        nodes.add(numa[best])
        row = matrix.weights[best]
        for other in added:
            added[other] += row[other]
    return group


def _starts(matrix: _Matrix, pool: list[int], size: int) -> list[int]:
    """One start per class of alike GPUs still in the pool (the lowest), at most MAX_STARTS of them:
    those whose own best size-1 pairs are best (a group's pairs include the start's)."""
    left = set(pool)
    firsts = [
        next(member for member in members if member in left)
        for members in matrix.seeds
        if any(member in left for member in members)
    ]
    if len(firsts) <= MAX_STARTS:
        return firsts
    return sorted(
        firsts, key=lambda a: (sorted(matrix.weights[a][b] for b in pool if b != a)[: size - 1], a)
    )[:MAX_STARTS]


def _greedy(
    matrix: _Matrix,
    pool: list[int],
    size: int,
    views: dict[tuple[int, int], PairView],
    gpus: Mapping[int, Mapping[str, Any]],
    position: dict[int, int],
) -> list[tuple[tuple, tuple[int, ...]]]:
    """(score, group) of the distinct groups the greedy search grows from each start."""
    found: dict[tuple[int, ...], tuple] = {}
    for seed in _starts(matrix, pool, size):
        group = tuple(sorted(matrix.gpus[a] for a in _grow(matrix, seed, pool, size)))
        if group not in found:
            found[group] = _score(group, views, gpus, position)
    return [(score, group) for group, score in found.items()]


def _exact(
    matrix: _Matrix,
    pool: list[int],
    size: int,
    views: dict[tuple[int, int], PairView],
    gpus: Mapping[int, Mapping[str, Any]],
    position: dict[int, int],
) -> list[tuple[tuple, tuple[int, ...]]]:
    """The best two of every group of `size` in the pool, as _score ranks them: each group keyed by
    its pair sum (the score's first four keys), NUMA nodes, down-trained links and positions, which
    orders groups as _score does; only the two kept are scored in full (their reasons need it)."""
    weights, numa, downtrained = matrix.weights, matrix.numa, matrix.downtrained

    def key(group: tuple[int, ...]) -> tuple:
        total = sum(weights[a][b] for a, b in itertools.combinations(group, 2))
        return (total, len({numa[a] for a in group}), sum(downtrained[a] for a in group), group)

    best = heapq.nsmallest(2, itertools.combinations(pool, size), key=key)
    return [
        (_score(found, views, gpus, position), found)
        for found in (tuple(matrix.gpus[a] for a in group) for group in best)
    ]


def _exact_enough(candidates: int, size: int) -> bool:
    """Whether every group is compared: at most EXACT_LIMIT groups of a machine of at most
    EXACT_GPUS."""
    return candidates <= EXACT_GPUS and math.comb(candidates, size) <= EXACT_LIMIT


def _groups(
    candidates: list[int],
    size: int,
    views: dict[tuple[int, int], PairView],
    gpus: Mapping[int, Mapping[str, Any]],
    position: dict[int, int],
    matrix: _Matrix | None = None,
) -> tuple[list[tuple[tuple, tuple[int, ...]]], bool]:
    """(score, group) of every group considered, and whether the enumeration was exact.

    Exact (every group compared; the best two kept) up to EXACT_LIMIT groups; beyond, the greedy
    search. Both read the pair matrix (`matrix`, built over the candidates when not given)."""
    if matrix is None:
        matrix = _matrix(candidates, views, gpus)
    slot = {index: a for a, index in enumerate(matrix.gpus)}
    pool = [slot[index] for index in candidates]
    if _exact_enough(len(candidates), size):
        return _exact(matrix, pool, size, views, gpus, position), True
    return _greedy(matrix, pool, size, views, gpus, position), False


def _describe_link(score: tuple) -> str:
    tier, minus_nvlinks = score[2]
    if tier == LINK_TIERS["NV"]:
        return (
            f"NVLink (at least {-minus_nvlinks} bonded links per pair)"
            if minus_nvlinks
            else "NVLink"
        )
    name = next((key for key, value in LINK_TIERS.items() if value == tier), None)
    return LINK_WORDS[name]


def _p2p_text(score: tuple, pair_count: int) -> str:
    not_ok, failing = score[0], score[1]
    if not not_ok:
        return (
            f"every pair of the group ({pair_count}) has working P2P (read and write OK both ways)"
        )
    unknown = not_ok - failing
    parts = []
    if failing:
        parts.append(f"{failing} without P2P")
    if unknown:
        parts.append(f"{unknown} with an unknown P2P status")
    return (
        "no group of this size has working P2P on every pair: this one has "
        f"{' and '.join(parts)} of {pair_count} pairs"
    )


def _difference(best: tuple, other: tuple) -> str:
    labels = (
        "more pairs without verified P2P",
        "more pairs without P2P",
        "a slower worst link",
        "more slow links",
        "more NUMA nodes",
        "more down-trained PCIe links",
    )
    for index, label in enumerate(labels):
        if best[index] != other[index]:
            return label
    return "as good, but higher GPU indices: ties go to the lowest"


def _ids(group: tuple[int, ...]) -> str:
    return ",".join(str(index) for index in group)


def _usable(order: list[int], allowed: "tuple[int, ...] | list[int] | None") -> list[int]:
    """The GPUs a launch may use, in PCI bus order: every GPU, or those CUDA sees (`allowed`)."""
    return list(order) if allowed is None else [index for index in order if index in set(allowed)]


def choose_gpus(
    snapshot: SnapshotLike,
    n_gpus: int,
    allowed: "tuple[int, ...] | list[int] | None" = None,
    allowed_text: str = "",
    views: dict[tuple[int, int], PairView] | None = None,
) -> Placement:
    """The best group of `n_gpus` GPUs of the snapshot for one launch (see the module text), with
    reasons.

    `allowed`: the only GPUs the launch may use (those CUDA sees where the snapshot was taken,
    cuda_devices.probe_visible), said first in the reasons as `allowed_text`. n_gpus at or above the
    number of usable GPUs gives every one of them. `views`: pair_views(snapshot), when the caller
    has read them already. Raises ValueError for n_gpus < 1."""
    if n_gpus < 1:
        raise ValueError("a launch needs at least one GPU")
    order = pci_order(snapshot)
    usable = _usable(order, allowed)
    position = {index: place for place, index in enumerate(order)}
    gpus = _gpu_facts(snapshot)
    views = pair_views(snapshot) if views is None else views
    lead = [allowed_text] if allowed is not None and allowed_text else []
    if n_gpus >= len(usable):
        score = _score(tuple(usable), views, gpus, position)
        placement = _placement(tuple(usable), score, len(order), gpus)
        placement.reasons = lead + [
            f"every GPU of the machine ({len(order)})"
            if len(usable) == len(order)
            else f"GPUs {_ids(tuple(usable))} of {len(order)}: every GPU CUDA sees"
        ]
        return placement
    ranked, exact = _groups(usable, n_gpus, views, gpus, position)
    ranked.sort()
    best_score, best = ranked[0]
    best = tuple(sorted(best, key=lambda index: position[index]))
    placement = _placement(best, best_score, len(order), gpus)
    pair_count = n_gpus * (n_gpus - 1) // 2
    reasons = lead + [
        f"GPUs {_ids(best)} of {len(order)}: the best group of {n_gpus}"
        + (f" among the {len(usable)} CUDA sees" if len(usable) < len(order) else "")
        + (
            ""
            if exact
            else f" found by a greedy search (more than {EXACT_GPUS} GPUs or {EXACT_LIMIT} groups "
            "to compare)"
        )
    ]
    if n_gpus > 1:
        reasons.append(_p2p_text(best_score, pair_count))
        reasons.append(f"slowest link inside the group: {_describe_link(best_score)}")
    numa = placement.numa_nodes
    reasons.append(
        f"NUMA node{'s' if len(numa) != 1 else ''} {', '.join(map(str, numa))}"
        if numa
        else "NUMA node unknown"
    )
    downtrained = best_score[5]
    if downtrained:
        reasons.append(
            f"{downtrained} GPU(s) of the group run a down-trained PCIe link (no better group)"
        )
    runner = next(((score, group) for score, group in ranked[1:]), None)
    if runner is not None:
        score, group = runner
        group = tuple(sorted(group, key=lambda index: position[index]))
        reasons.append(f"next best: GPUs {_ids(group)} ({_difference(best_score, score)})")
    placement.reasons = reasons
    return placement


def _placement(
    group: tuple[int, ...], score: tuple, machine: int, gpus: Mapping[int, Mapping[str, Any]]
) -> Placement:
    not_ok, failing = score[0], score[1]
    p2p: bool | None = True if not not_ok else (False if failing else None)
    tier, minus_nvlinks = score[2]
    worst = (
        f"NV{-minus_nvlinks}"
        if tier == LINK_TIERS["NV"] and minus_nvlinks
        else next((key for key, value in LINK_TIERS.items() if value == tier), None)
    )
    numa = sorted(
        {
            gpus[index]["numa_node"]
            for index in group
            if index in gpus and isinstance(gpus[index].get("numa_node"), int)
        }
    )
    return Placement(
        group,
        machine,
        p2p_ok=p2p if len(group) > 1 else None,
        worst_link=worst if len(group) > 1 else None,
        numa_nodes=tuple(numa),
    )


def choose_replicas(
    snapshot: SnapshotLike,
    tp: int,
    dp: int,
    allowed: "tuple[int, ...] | list[int] | None" = None,
    allowed_text: str = "",
    views: dict[tuple[int, int], PairView] | None = None,
) -> Placement:
    """GPUs for `dp` data-parallel replicas of `tp` GPUs each: the best TP group first, then the
    best group of the GPUs left, and so on (greedy, deterministic). Only pairs inside a replica
    matter: replicas do not allreduce together. gpus lists the replicas in rank order (SGLang gives
    replica d the visible devices d*tp ... d*tp+tp-1), which is the order CUDA_VISIBLE_DEVICES must
    name them in.

    Raises ValueError when tp x dp exceeds the machine or a size is below 1."""
    if tp < 1 or dp < 1:
        raise ValueError("tp and dp must be at least 1")
    if dp == 1:
        return choose_gpus(snapshot, tp, allowed, allowed_text, views)
    order = pci_order(snapshot)
    usable = _usable(order, allowed)
    if tp * dp > len(usable):
        raise ValueError(
            f"{dp} replicas of {tp} GPUs need {tp * dp} GPUs; the machine has {len(usable)}"
            + (" that CUDA sees" if len(usable) < len(order) else "")
        )
    position = {index: place for place, index in enumerate(order)}
    gpus = _gpu_facts(snapshot)
    views = pair_views(snapshot) if views is None else views
    matrix = _matrix(usable, views, gpus)
    left = list(usable)
    replicas: list[tuple[int, ...]] = []
    scores = []
    reasons = ([allowed_text] if allowed is not None and allowed_text else []) + [
        f"{dp} replicas of {tp} GPUs, each the best group of the GPUs left (greedy, replica by "
        "replica)"
    ]
    for number in range(dp):
        ranked, _ = _groups(left, tp, views, gpus, position, matrix)
        ranked.sort()
        score, group = ranked[0]
        group = tuple(sorted(group, key=lambda index: position[index]))
        replicas.append(group)
        scores.append(score)
        left = [index for index in left if index not in group]
        text = f"replica {number}: GPUs {_ids(group)}"
        if tp > 1:
            text += (
                f"; {_p2p_text(score, tp * (tp - 1) // 2)}; slowest link {_describe_link(score)}"
            )
        reasons.append(text)
    chosen = tuple(index for replica in replicas for index in replica)
    worst = max(scores)
    placement = _placement(chosen, worst, len(order), gpus)
    if any(score[0] for score in scores):  # p2p over the replicas' own pairs
        placement.p2p_ok = False if any(score[1] for score in scores) else None
    else:
        placement.p2p_ok = True if tp > 1 else None
    placement.replicas = tuple(replicas)
    placement.reasons = reasons
    return placement
