"""What a P2P status means, for every layer: the probe, the snapshot loader, `show`, the rules and
`check`.

NVML answers nvmlDeviceGetP2PStatus with one of seven codes per capability; nvidia-smi prints the
same codes (`nvidia-smi topo -p2p r|w|n|a|p`). A snapshot stores them as these short strings, or
"unknown" when the probe could not ask. NVML's own `U` ("unknown") says no more about a pair than
"unknown" does, so both mean the same thing everywhere in topoctl: P2P that nobody verified, which
is not a working P2P.

Plain data and small functions, no imports: every layer may import it, including the start-up path
of `show`, `recommend` and `check`.

Layer: core types and data (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Sequence, TypedDict

PairHealth = dict[
    tuple[int, int], tuple[bool, object]
]  # (src, dst) -> (healthy, reason) as bench measured

# NVML capability index per capability name (nvmlP2PCapsIndex_t; checked against nvidia-ml-py in
# tests/probe/test_probe_nvml_constants.py). The order is the order of a snapshot's pair["p2p"]
# keys.
P2P_CAPABILITY_INDEX = {"read": 0, "write": 1, "nvlink": 2, "atomics": 3, "pci": 4}
P2P_CAPABILITIES = tuple(P2P_CAPABILITY_INDEX)

# NVML status code -> the text nvidia-smi prints (nvmlGpuP2PStatus_t).
P2P_STATUS_BY_CODE = {0: "OK", 1: "CNS", 2: "GNS", 3: "TNS", 4: "DR", 5: "NS", 6: "U"}
P2P_OK = "OK"
P2P_NVML_UNKNOWN = (
    "U"  # NVML's NVML_P2P_STATUS_UNKNOWN; also what the probe writes for a code it does not know
)
P2P_NOT_READ = "unknown"  # the probe could not ask (reason under snapshot["unknown"])
P2P_CODES = frozenset(P2P_STATUS_BY_CODE.values())  # what NVML and nvidia-smi can say
P2P_STATUSES = P2P_CODES | {P2P_NOT_READ}  # what a snapshot may hold
UNKNOWN_P2P_STATUSES = frozenset(
    {P2P_NOT_READ, P2P_NVML_UNKNOWN}
)  # statuses that say nothing either way


if (
    TYPE_CHECKING
):  # read by type checking only, as topoctl/snapshot/shape.py (no class made at start-up)

    class PairVerdicts(TypedDict):
        """The summary's keys pair_verdicts derives (snapshot summary: all_pairs_p2p ...
        nvlink_all_pairs)."""

        all_pairs_p2p: bool | None
        p2p_pairs_ok: int
        p2p_pairs_total: int
        nvlink_all_pairs: bool | None


def p2p_status_known(status: object) -> bool:
    """True for a status that says whether P2P works (OK, or one of the reasons it does not)."""
    return isinstance(status, str) and status not in UNKNOWN_P2P_STATUSES


def pair_p2p_ok(p2p: object) -> bool | None:
    """Whether NCCL can use its P2P transport for this pair: read and write both OK.

    False as soon as read or write names a reason P2P does not work (CNS, GNS, TNS, DR, NS); None
    when neither fails but one is unknown ("unknown", NVML's "U", missing, or not a string): an
    unknown is not a working P2P, and not a failing one either.
    """
    statuses = (p2p.get("read"), p2p.get("write")) if isinstance(p2p, dict) else (None, None)
    if any(p2p_status_known(status) and status != P2P_OK for status in statuses):
        return False
    if not all(p2p_status_known(status) for status in statuses):
        return None
    return True


def all_pairs_p2p(verdicts: "list[bool | None]") -> bool | None:
    """Three-valued AND of per-pair verdicts: False if any pair fails, None if any is unknown, else
    True.

    An empty list is None: with no pairs there is nothing that says P2P works.
    """
    if not verdicts:
        return None
    if False in verdicts:
        return False
    return None if None in verdicts else True


def nvlink_all_pairs(nvlinks: "Sequence[object]") -> bool | None:
    """Whether every pair has NVLink, from the pairs' `nvlinks` counts: False if any pair has 0,
    True if all have at least one, None when there are no pairs or a count is unknown."""
    if not nvlinks:
        return None
    if any(value == 0 and not isinstance(value, bool) for value in nvlinks):
        return False
    if all(
        isinstance(value, int) and not isinstance(value, bool) and value > 0 for value in nvlinks
    ):
        return True
    return None


def pair_verdicts(
    pairs: "Sequence[Mapping[str, object]]", health: PairHealth | None = None
) -> PairVerdicts:
    """The summary's verdicts about the pairs, derived from the pairs alone: the probe writes them,
    and the snapshot loader re-derives them (a hand-edited summary must not claim what the pairs
    deny). `health` (measured_health): a pair that failed `topoctl bench`'s check counts as one
    without P2P."""
    health = health or {}
    oks = [
        False
        if health.get((pair.get("src"), pair.get("dst")), (True, None))[0] is False  # type: ignore[arg-type]
        else pair_p2p_ok(pair["p2p"])
        for pair in pairs
    ]
    return {
        "all_pairs_p2p": all_pairs_p2p(oks),
        "p2p_pairs_ok": sum(1 for ok in oks if ok),
        "p2p_pairs_total": len(pairs),
        "nvlink_all_pairs": nvlink_all_pairs([pair.get("nvlinks") for pair in pairs]),
    }


def measured_health(snapshot: object) -> PairHealth:
    """(src, dst) -> (healthy, reason) for every pair `topoctl bench` checked
    (snapshot["measurements"]["p2p"]).

    A pair that failed the check (hung, corrupted or crawled) is treated everywhere as a pair
    without working P2P, whatever NVML said: the measurement is what was seen. Pairs bench did not
    check are absent, and so is every pair of a `--backend gloo` run: a copy between CPU processes
    says nothing about the GPUs' P2P."""
    measurements = snapshot.get("measurements") if isinstance(snapshot, dict) else None
    if not isinstance(measurements, dict) or measurements.get("backend") == "gloo":
        return {}
    rows = measurements.get("p2p")
    out: PairHealth = {}
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict) or not isinstance(row.get("healthy"), bool):
            continue
        src, dst = row.get("src"), row.get("dst")
        if (
            isinstance(src, int)
            and isinstance(dst, int)
            and not isinstance(src, bool)
            and not isinstance(dst, bool)
        ):
            out[(src, dst)] = (row["healthy"], row.get("reason"))
    return out
