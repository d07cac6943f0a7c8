"""How long one evaluation of 1,000 rules takes against an 8-GPU snapshot.

autoconf evaluates the rules once per candidate launch, so evaluation must stay cheap as a site's
knowledge grows. The 1,000 rules are copies of the shipped ones under new ids (same conditions, so
the mix of matchers, version specifiers and pair quantifiers is the real one); the snapshot is the
built-in 8x RTX PRO 6000 PCIe system (56 ordered pairs) when installed, else a synthetic one of the
same shape.

    python benchmarks/rules_bench.py [--rules 1000] [--runs 50]
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import statistics
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from topoctl.snapshot.shape import Snapshot


def eight_gpu_snapshot() -> Snapshot | dict[str, Any]:
    try:
        from topoctl.snapshot.catalogue import system_snapshot

        return system_snapshot("rtx-pro-6000-8x-pcie")
    except Exception:  # the reference system is not installed: build the same shape
        gpus = [{"index": index, "sm": 120, "compute_capability": "12.0"} for index in range(8)]
        pairs = [
            {
                "src": src,
                "dst": dst,
                "p2p": {"read": "OK", "write": "OK"},
                "link": "PXB",
                "nvlinks": 0,
                "pcie_ancestor": "PXB",
            }
            for src in range(8)
            for dst in range(8)
            if src != dst
        ]
        return {
            "schema_version": 1,
            "gpus": gpus,
            "pairs": pairs,
            "nvlink": {"present": False, "nvswitch": False},
            "software": {"sglang": "0.5.12", "nccl": "2.27.3"},
            "summary": {
                "gpu_count": 8,
                "interconnect": "pcie",
                "all_pairs_p2p": True,
                "virtualized": False,
            },
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()

    from topoctl.rules.engine import RuleSet, evaluate, load_rules, violations

    started = time.perf_counter()
    shipped = load_rules().rules
    load_ms = (time.perf_counter() - started) * 1000
    rules = [
        dataclasses.replace(
            shipped[index % len(shipped)],
            id=f"bench-{index:04d}-{shipped[index % len(shipped)].id}",
        )
        for index in range(args.rules)
    ]
    ruleset = RuleSet(rules)
    snapshot = eight_gpu_snapshot()
    request: dict[str, Any] = {
        "model": {"name": "kimi-k2.5", "moe": True, "layers": 61},
        "speculative": "eagle3",
        "tp_size": 8,
        "sglang_version": "0.5.12",
        "launch": {"tp_size": 8, "env:NCCL_ALGO": "Ring"},
    }

    evaluate(ruleset, snapshot, request)  # warm caches (version parsing, imports)
    timings, violation_timings = [], []
    for _ in range(args.runs):
        started = time.perf_counter()
        report = evaluate(ruleset, snapshot, request)
        timings.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        violations(report, request["launch"])
        violation_timings.append((time.perf_counter() - started) * 1000)

    print(
        f"machine: {platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}, snapshot: {len(snapshot['gpus'])} GPUs / "
        f"{len(snapshot['pairs'])} pairs"
    )
    print(f"{'measure':<42} {'median ms':>10} {'p90 ms':>8} {'max ms':>8}")
    for label, values in (
        (f"evaluate {len(rules)} rules", timings),
        (f"violations of one launch ({len(report.findings)} findings)", violation_timings),
    ):
        ordered = sorted(values)
        p90 = ordered[int(0.9 * (len(ordered) - 1))]
        print(f"{label:<42} {statistics.median(values):>10.2f} {p90:>8.2f} {max(values):>8.2f}")
    print(f"{'load built-in rules (' + str(len(shipped)) + ', once)':<42} {load_ms:>10.2f}")
    verdict = "ok" if statistics.median(timings) < 100 else "SLOWER THAN THE 100 ms GOAL"
    print(f"goal: median evaluate < 100 ms -> {verdict}")
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    raise SystemExit(main())
