"""SGLang's per-step overhead for the composed decode step, fitted on the TRAINING corpus (issue 41,
item 2).

    .venv/bin/python benchmarks/step_overhead_fit.py            # the fit, its leave-one-source-out, per release

One term, fitted: the microseconds a decode iteration takes beyond the sum of its ops
(autoconf/step_model.py), the same for every release. The rows are
benchmarks/data/public-decode.yaml (never the held-out file): SGLang rows at batch 1, without
speculative decoding, with CUDA graphs, on a GPU with op tables. The term minimises the squared log
ratio of (composed step + term) to the measured step (1 / tok/s); leave-one-source-out fits it
without each source and scores that source's rows with it. The result goes to
autoconf/data/costs.yaml `step_overhead` by hand, with the figures this prints.
"""

from __future__ import annotations

import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import launch_model_checks as checks  # noqa: E402

from topoctl.autoconf import decode_terms, step_model  # noqa: E402

UPPER_US = 5000.0  # the search's upper end: 5 ms, above every residual of the corpus


def rows() -> list[tuple[str, str, str, float, float]]:
    """(id, source, release, composed step us without the overhead, measured step us) of each usable
    row."""
    doc, cases = checks.load_cases()
    out = []
    for case in cases:
        row = case.row
        gpu = checks._gpu(str(row["gpu"]))
        system = step_model.table_system(step_model.gpu_key(gpu))
        if not (
            case.fitted
            and case.draft is None
            and row.get("tok_s")
            and row.get("cuda_graph", True)
            and system
        ):
            continue
        profile = checks._profile(str(row["model"]), doc.get("models") or {})
        nvlink = row["gpu"] in checks.NVLINK_GPUS
        step = step_model.compose(
            step_model.StepCase(
                profile,
                int(row["tp"]),
                1,
                checks.decode_context(row)[0],
                "custom" if nvlink else "nccl",
                float(gpu["bandwidth"]),
                "nvswitch" if nvlink else "pcie",
                checks._latencies(nvlink),
                True,
                decode_terms.fused_allreduces(case.feat, 1),
                overhead_us=0.0,
            ),
            system,
        )
        out.append(
            (
                case.id,
                case.source,
                str(row.get("sglang") or "unstated"),
                step.total_us,
                1e6 / float(row["tok_s"]),
            )
        )
    return out


def loss(overhead: float, data: list[tuple[str, str, str, float, float]]) -> float:
    return sum(math.log((step + overhead) / measured) ** 2 for _, _, _, step, measured in data)


def fit(data: list[tuple[str, str, str, float, float]]) -> float:
    """The overhead (us, >= 0) of least loss: a golden-section search on [0, UPPER_US] (the loss is
    convex in it)."""
    lo, hi = 0.0, UPPER_US
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(80):
        a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        if loss(a, data) <= loss(b, data):
            hi = b
        else:
            lo = a
    return (lo + hi) / 2


def ratio(step: float, measured: float) -> float:
    return max(step / measured, measured / step)


def summary(values: list[float]) -> str:
    return (
        f"median {statistics.median(values):.3f}x, worst {max(values):.3f}x"
        if values
        else "no rows"
    )


def main() -> int:
    data = rows()
    term = fit(data)
    print(
        f"rows: {len(data)} (sources {len({d[1] for d in data})}); fitted overhead {term:.1f} us "
        "a step"
    )
    print(f"- in sample, without the term: {summary([ratio(s, m) for *_, s, m in data])}")
    print(f"- in sample, with it: {summary([ratio(s + term, m) for *_, s, m in data])}")
    held: list[float] = []
    bare: list[float] = []
    terms: list[float] = []
    for source in sorted({d[1] for d in data}):
        own = fit([d for d in data if d[1] != source])
        terms.append(own)
        held += [ratio(s + own, m) for _, src, _, s, m in data if src == source]
        bare += [ratio(s, m) for _, src, _, s, m in data if src == source]
    print(
        f"- leave-one-source-out: {summary(held)} (without the term {summary(bare)}); "
        f"the term ranges {min(terms):.1f}-{max(terms):.1f} us over the folds"
    )
    by_release: dict[str, list[float]] = {}
    for _, _, release, step, measured in data:
        by_release.setdefault(release, []).append(measured - step)
    for release, residuals in sorted(by_release.items()):
        print(
            f"- release {release}: {len(residuals)} rows, median residual "
            f"{statistics.median(residuals):.1f} us"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
