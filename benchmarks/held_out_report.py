"""The launch model against the held-out public measurements: a table and its summary, nothing fitted.

    .venv/bin/python benchmarks/held_out_report.py                  # the table and the summary
    .venv/bin/python benchmarks/held_out_report.py --aic AIC.json   # with a column of aiconfigurator's estimates

The rows are benchmarks/data/held-out-public.yaml (issue 41). Each is predicted the way
benchmarks/launch_model_checks.py predicts a corpus row (its profile, the 8x H100 NVSwitch fixture
for NVLink GPUs with custom allreduce, the 8x RTX PRO 6000 PCIe fixture with NCCL otherwise, the
kernel path of the stated release), but with the stored fit (autoconf/data/decode-fit.yaml) as
recommend uses it, never a refit. At concurrency C the step is one forward over C tokens that reads
the KV cache of C streams, each at its mean context (input + output / 2), as the throughput
objective prices it. Every figure is compared per stream (TPOT as 1000 / ms; a total over C streams
divided by C), so the ratio is the same as for totals. A row whose checkpoint has no profile, or
whose GPU has no gpus.yaml entry, is listed with the reason.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from dataclasses import dataclass
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import launch_model_checks as checks  # noqa: E402

from topoctl.autoconf import decode_terms, launch_model, step_model, step_network  # noqa: E402
from topoctl.autoconf.data_files import read_yaml  # noqa: E402
from topoctl.snapshot.catalogue import system_snapshot  # noqa: E402

HELD_OUT = os.path.join(HERE, "data", "held-out-public.yaml")


@dataclass(frozen=True)
class Scored:
    """One row and what the model says of it; predicted is None with `reason` when it cannot
    predict."""

    row: dict[str, Any]
    measured: float  # output tokens/s of one stream
    predicted: (
        float | None
    )  # the same, with the accept length from the draft shape (what recommend uses)
    predicted_published: (
        float | None
    )  # with the accept length the source printed, where it printed one
    band: float
    reason: str = ""
    moe: bool = False

    @property
    def ratio(self) -> float | None:
        if self.predicted is None:
            return None
        return max(self.predicted / self.measured, self.measured / self.predicted)

    @property
    def inside(self) -> bool | None:
        return None if self.ratio is None else self.ratio <= self.band


def measured_per_stream(row: dict[str, Any]) -> float:
    """Output tokens/s of one stream from the row's figure."""
    metric, figure, conc = row["metric"], float(row["figure"]), int(row["concurrency"])
    if metric == "tpot_ms":
        return 1000.0 / figure
    if metric == "total_tok_s":
        return figure / conc
    if metric == "stream_tok_s":
        return figure
    raise ValueError(f"{row['id']}: unknown metric {metric!r}")


def stream_context(row: dict[str, Any]) -> float:
    """Mean tokens in one stream's KV cache while it decodes: input + output / 2 where the source
    gives them."""
    given = [row.get("input_tokens"), row.get("output_tokens")]
    if given[0] is None and given[1] is None:
        return float(decode_terms.DEFAULT_DECODE_CONTEXT)
    return float(given[0] or 0) + float(given[1] or 0) / 2


def _release(row: dict[str, Any]) -> str | None:
    text = str(row.get("sglang") or "")
    return text if text[:1].isdigit() else None


def cannot_predict(row: dict[str, Any]) -> str:
    """Why the model cannot predict the row, or '' when it can."""
    if not row.get("profile"):
        return f"no profile: {row.get('profile_note') or 'none given'}"
    try:
        checks._gpu(str(row["gpu"]))
    except StopIteration:
        return f"unknown GPU {row['gpu']!r} (no topoctl/data/gpus.yaml entry)"
    return ""


def predict(
    row: dict[str, Any], terms: Any, corpus_models: dict[str, Any]
) -> tuple[float, float | None, float, bool]:
    """(tokens/s of one stream with the shape's accept length, with the published one or None, band
    factor, whether the model is MoE)."""
    profile = checks._profile(str(row["profile"]), corpus_models)
    gpu = checks._gpu(str(row["gpu"]))
    nvlink = row["gpu"] in checks.NVLINK_GPUS
    conc, tp = int(row["concurrency"]), int(row["tp"])
    spec = row.get("spec")
    draft = None
    if spec:
        draft = launch_model.draft_shape(
            profile,
            tp,
            int(spec["steps"]),
            int(spec["topk"]),
            int(spec["draft_tokens"]),
            str(spec.get("algorithm") or "EAGLE3"),
        )
    counts = (
        (conc,)
        if draft is None
        else (conc, conc * draft.topk, conc * draft.draft_tokens, conc * draft.extend_tokens)
    )
    feat = launch_model.decode_features(
        profile,
        tp,
        "custom" if nvlink else "nccl",
        gpu,
        checks._latencies(nvlink),
        bool(row.get("cuda_graph", True)),
        counts,
    )
    feat.context = conc * stream_context(row)  # the step reads every stream's cache once
    feat.kernel = checks._kernel_path({"sglang": _release(row), "gpu": row["gpu"]}, profile)
    band, _ = launch_model.band_of(launch_model.band_group(profile, draft is not None))
    moe = bool(feat.experts)
    composed = _composed(row, profile, gpu, feat, nvlink)
    if composed is not None:
        band = composed(conc).band
    if draft is None:
        step = composed(conc).total_us if composed else decode_terms.forward_us(feat, terms, conc)
        return 1e6 / step, None, band, moe
    cycle = decode_terms.cycle_us(feat, terms, draft, conc)
    if composed is not None:  # the verify pass composed, as launch_model.estimate does
        tokens = conc * draft.draft_tokens
        cycle += composed(tokens, conc).total_us - decode_terms.forward_us(feat, terms, tokens)
    own = decode_terms.accept_length(terms, draft) * 1e6 / cycle
    published = float(row["accept"]) * 1e6 / cycle if row.get("accept") else None
    return own, published, band, moe


def _composed(
    row: dict[str, Any], profile: dict[str, Any], gpu: dict[str, Any], feat: Any, nvlink: bool
) -> Any:
    """A function of the tokens in a pass giving the step composed from the op tables
    (autoconf/step_model.py), as recommend composes it; None where the GPU has no tables or the row
    decodes eagerly (the fitted model)."""
    system = step_model.table_system(step_model.gpu_key(gpu))
    if system is None or not row.get("cuda_graph", True):
        return None
    tp, context = int(row["tp"]), stream_context(row)
    lat = checks._latencies(nvlink)
    nodes = int(row.get("nodes") or 1)
    net = (
        step_network.fabric(nodes, ib_nics())
        if "infiniband" in str(row.get("interconnect")).lower()
        else None
    )

    def at(tokens: int, streams: int = 0) -> step_model.Step:
        return step_model.compose(
            step_model.StepCase(
                profile,
                tp,
                tokens,
                context,
                "custom" if nvlink else "nccl",
                float(gpu["bandwidth"]),
                "nvswitch" if nvlink else "pcie",
                lat,
                True,
                decode_terms.fused_allreduces(feat, tokens),
                nodes,
                net,
                streams=streams,
            ),
            system,
        )

    return at


def ib_nics() -> tuple[float, str] | None:
    """The NICs of a node of a row joined over InfiniBand: the h100-8x-8nic-ib fixture's (a DGX
    H100's eight 400 Gb/s ConnectX-7, fixtures/h100-8x-8nic-ib/README.md), as recommend reads a
    snapshot's."""
    return step_network.node_nics(system_snapshot("h100-8x-8nic-ib"))


def score(path: str = HELD_OUT) -> list[Scored]:
    doc = read_yaml(path)
    corpus_models = (
        read_yaml(checks.CORPUS).get("models") or {}
    )  # checkpoints the built-in profiles lack
    terms, _ = launch_model.fitted_terms()
    out = []
    for row in doc["cases"]:
        measured = measured_per_stream(row)
        reason = cannot_predict(row)
        if reason:
            out.append(Scored(row, measured, None, None, 1.0, reason))
            continue
        own, published, band, moe = predict(row, terms, corpus_models)
        out.append(Scored(row, measured, own, published, band, moe=moe))
    return out


# ----------------------------------------------------------------------------------------- the
# summary


def ratio_stats(values: list[float]) -> str:
    if not values:
        return "no rows"
    return f"{len(values)} rows, median {statistics.median(values):.3f}x, worst {max(values):.3f}x"


def keep_drop(scored: list[Scored]) -> list[tuple[str, str, str, float, float]]:
    """(row, predicted, measured, predicted gain, measured gain) for each speculative row whose
    plain baseline is a row of the file; predicted is keep, drop or uncertain (the gain within the
    band)."""
    by_id = {s.row["id"]: s for s in scored}
    out = []
    for s in scored:
        base = by_id.get(str(s.row.get("baseline") or ""))
        if base is None or s.predicted is None or base.predicted is None:
            continue
        gain_m, gain_p = s.measured / base.measured, s.predicted / base.predicted
        band, _ = launch_model.band_of("gain-moe" if s.moe else "gain-dense")
        predicted = "keep" if gain_p > band else "drop" if gain_p < 1.0 / band else "uncertain"
        out.append(
            (str(s.row["id"]), predicted, "keep" if gain_m > 1.0 else "drop", gain_p, gain_m)
        )
    return out


def aic_ratio(row_id: str, measured: float, aic: dict[str, float]) -> str:
    value = aic.get(row_id)
    if value is None:
        return "-"
    return f"{value:.1f} ({max(value / measured, measured / value):.2f}x)"


def print_table(scored: list[Scored], aic: dict[str, float]) -> None:
    print(
        "| row | GPU x n | conc | spec | measured tok/s/stream | predicted | ratio | band | "
        "inside | aiconfigurator |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for s in scored:
        row = s.row
        spec = row.get("spec")
        shape = (
            f"{spec['algorithm']} {spec['steps']}/{spec['topk']}/{spec['draft_tokens']}"
            if spec
            else "-"
        )
        where = f"{row['gpu']} x{row['gpus']}" + (
            f" ({row['nodes']} nodes)" if int(row.get("nodes") or 1) > 1 else ""
        )
        if s.predicted is None:
            print(
                f"| {row['id']} | {where} | {row['concurrency']} | {shape} | {s.measured:.1f} | "
                f"not predicted: {s.reason} | - | - | - | "
                f"{aic_ratio(row['id'], s.measured, aic)} |"
            )
            continue
        pub = (
            f" ({s.predicted_published:.1f} with accept {row['accept']})"
            if s.predicted_published
            else ""
        )
        print(
            f"| {row['id']} | {where} | {row['concurrency']} | {shape} | {s.measured:.1f} | "
            f"{s.predicted:.1f}{pub} | {s.ratio:.3f} | x/{s.band:.2f} | "
            f"{'yes' if s.inside else 'no'} | {aic_ratio(row['id'], s.measured, aic)} |"
        )


def print_summary(scored: list[Scored]) -> dict[str, Any]:
    done = [s for s in scored if s.ratio is not None]
    batch1 = [s.ratio for s in done if int(s.row["concurrency"]) == 1 and s.ratio is not None]
    conc = [s.ratio for s in done if int(s.row["concurrency"]) > 1 and s.ratio is not None]
    inside = sum(1 for s in done if s.inside)
    optimistic = sum(1 for s in done if s.predicted is not None and s.predicted > s.measured)
    print(
        f"\nHeld-out rows: {len(scored)}; predicted {len(done)}; not predicted "
        f"{len(scored) - len(done)}"
    )
    print(f"- batch 1: {ratio_stats(batch1)}")
    print(f"- concurrency 4-100: {ratio_stats(conc)}")
    print(
        f"- all predicted: {ratio_stats([s.ratio for s in done if s.ratio is not None])}; "
        f"predicted above the measurement on {optimistic} of {len(done)}"
    )
    print(
        f"- measurement inside the printed band: {inside} of {len(done)} "
        f"({inside / max(len(done), 1):.0%})"
    )
    decisions = keep_drop(scored)
    wrong = [d for d in decisions if d[1] not in (d[2], "uncertain")]
    unsure = [d for d in decisions if d[1] == "uncertain"]
    for row_id, predicted, measured, gain_p, gain_m in decisions:
        print(
            f"- EAGLE-3 {row_id}: predicted {predicted} (gain {gain_p:.2f}x), measured "
            f"{measured} (gain {gain_m:.2f}x)"
        )
    right = len(decisions) - len(wrong) - len(unsure)
    print(
        f"- EAGLE-3 keep/drop: {len(decisions)} pairs, {right} right, {len(unsure)} uncertain "
        f"(gain inside the band), {len(wrong)} wrong"
    )
    for s in scored:
        if s.predicted is None:
            print(f"- not predicted: {s.row['id']}: {s.reason}")
    return {
        "batch1": batch1,
        "concurrency": conc,
        "inside": inside,
        "predicted": len(done),
        "decisions": decisions,
        "wrong": wrong,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", default=HELD_OUT, help="the held-out file (default: %(default)s)")
    parser.add_argument(
        "--aic", metavar="JSON", help="aiconfigurator estimates: {row id: tokens/s of one stream}"
    )
    args = parser.parse_args(argv)
    aic: dict[str, float] = {}
    if args.aic:
        with open(args.aic, encoding="utf-8") as handle:
            aic = {str(k): float(v) for k, v in json.load(handle).items() if v}
    scored = score(args.file)
    print_table(scored, aic)
    print_summary(scored)
    return 0


if __name__ == "__main__":
    sys.exit(main())
