"""The launch model against public single-stream decode measurements: fit, leave-one-source-out check, table.

    .venv/bin/python benchmarks/launch_model_checks.py            # print the corpus table and LOSO statistics
    .venv/bin/python benchmarks/launch_model_checks.py --write    # also write autoconf/data/decode-fit.yaml and
                                                                  # benchmarks/data/launch-model-held-out.json
    .venv/bin/python benchmarks/launch_model_checks.py --corpus /tmp/draft.yaml   # score a draft of the corpus

The corpus is benchmarks/data/public-decode.yaml (every row with its source and the place in it).
The parameters of autoconf/decode_terms.py are fitted on the SGLang rows (vLLM rows are printed,
never fitted); the error quoted is leave-one-source-out: each source's rows are predicted by a fit
made without them. The uncertainty band of a prediction is the 80th percentile of those held-out
errors among cases of its group (plain dense, plain MoE, plain MLA, speculative tokens/s,
speculative gain on dense and on MoE models), and is what `recommend` prints. Each run also lists
the cases whose held-out ratio moved by more than 3% against the ratios the last --write stored
(benchmarks/data/launch-model-held-out.json), worse ones first: a variant is judged row by row, not
only by each group's worst case.

The fit is a Nelder-Mead search on the logarithms of the parameters (squared log error of tokens/s,
of published speedups and of published accept lengths, plus a weak pull towards the defaults so that
a parameter the corpus says little about stays where it started). It is written here in plain
Python: the problem has 14 fitted parameters and ~50 rows, and a numerical library would be a new
dependency for that alone.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from dataclasses import dataclass
from typing import Any

from topoctl.autoconf import decode_terms as terms_mod
from topoctl.autoconf import gpu_specs, launch_model, models
from topoctl.autoconf.data_files import read_yaml
from topoctl.snapshot.catalogue import system_snapshot

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "data", "public-decode.yaml")
# another corpus file to fit and score (an experiment; --write refuses it)
CORPUS_ENV = "TOPOCTL_DECODE_CORPUS"
FIT_FILE = os.path.join(HERE, os.pardir, "autoconf", "data", "decode-fit.yaml")
# Each case's held-out ratio as the last --write left it: a change to the model or the corpus is
# read row by row against it, so a row that gets worse inside a group whose worst case holds still
# is seen.
HELD_OUT_FILE = os.path.join(HERE, "data", "launch-model-held-out.json")
MOVE_THRESHOLD = 0.03  # a held-out ratio that moves by more than 3% is listed
DECODE_STEP = os.path.join(HERE, "data", "h200-decode-step-bench", "snapshot.json")
FITTED = [
    "attention_us",
    "mla_us",
    "moe_us",
    "step_us",
    "rho",
    "token_us",
    "draft_us",
    "cycle_us",
    "cycle_tp_us",
    "accept_a",
    "accept_tree",
    "kv_mla",
    "kv_gqa",
    "moe_trtllm_us",
]
# Not fitted: the bandwidth a decode step streams at and the fixed time of streaming a layer are
# measured (measured_stream below, the H200 decode-step rows); the fitted per-layer overheads are
# what SGLang's step adds beyond streaming the matrices.
MEASURED_TERMS = ("eta_hopper", "eta_blackwell", "eta_other", "stream_fixed_us")
STREAM_DTYPE = "bf16"
PRIOR_WEIGHT = 0.02
BAND_QUANTILE = 0.8
MIN_BAND_CASES = 3
NVLINK_GPUS = ("h100-sxm", "h200-sxm", "b200", "a100-sxm4-80gb", "a100-sxm4-40gb")


@dataclass
class Case:
    row: dict[str, Any]
    feat: Any
    draft: Any  # decode_terms.Draft or None

    @property
    def id(self) -> str:
        return str(self.row["id"])

    @property
    def source(self) -> str:
        return str(self.row["source"])

    @property
    def fitted(self) -> bool:
        """SGLang rows of the releases the model is for; vLLM rows and releases before 0.5 are shown
        only."""
        if self.row.get("engine", "sglang") != "sglang":
            return False
        release = str(self.row.get("sglang") or "")
        return not release or not release.startswith("0.4")

    @property
    def group(self) -> str:
        if self.draft is not None:
            return "speculative"
        if self.feat.mla:
            return "plain-mla"
        return "plain-moe" if self.feat.experts else "plain-dense"


# ----------------------------------------------------------------------------------------- the
# measured stream


@dataclass(frozen=True)
class Stream:
    """The H200 decode-step rows as a line: time per layer = fixed_us + bytes per layer / bandwidth."""

    bandwidth: float  # bytes/s, the slope
    fixed_us: float  # us per layer at zero bytes, the intercept
    datasheet: float  # bytes/s, the H200's datasheet figure
    rows: int

    @property
    def eta(self) -> float:
        return self.bandwidth / self.datasheet


def measured_stream(path: str = DECODE_STEP) -> Stream:
    """Least squares over the bf16 CUDA-graph rows of the committed 42-row H200 decode-step run
    (`topoctl bench --decode-step` on the lent 1x H200, benchmarks/data/h200-decode-step-bench/;
    dense layers and MoE layers read as one batched product, at 1, 4 and 16 tokens). Its slope is
    the bandwidth a layer's weights stream at, its intercept the fixed time of a layer; the launch
    model takes slope / datasheet as the achieved fraction of every GPU family and the intercept as
    every GPU's fixed time until `topoctl bench` measures the box itself. The fp8 rows are left out
    of the line: they stream slower (the activation's conversion and the scaled product), and
    SGLang's fp8 and 4-bit kernels are not the plain-torch products the bench times."""
    doc = json.load(open(path, encoding="utf-8"))
    rows = doc["measurements"]["decode_step"] if "measurements" in doc else doc["rows"]
    points = [
        (float(r["bytes_per_layer"]), float(r["graph_us_per_layer"]))
        for r in rows
        if r.get("status") == "ok"
        and r.get("cuda_graph")
        and r.get("graph_us_per_layer")
        and r.get("dtype") == STREAM_DTYPE
        and r.get("moe_experts") != "one product per expert"
    ]
    line = gpu_specs.stream_line([(x, x / us * 1e6) for x, us in points], STREAM_DTYPE)
    if line is None:
        raise SystemExit(
            f"{path}: no line through its {STREAM_DTYPE} CUDA-graph rows (fewer than two layer "
            "sizes)"
        )
    return Stream(
        bandwidth=line.bandwidth,
        fixed_us=line.fixed_us,
        datasheet=_gpu("h200-sxm")["bandwidth"],
        rows=line.rows,
    )


def base_terms() -> Any:
    """The terms the fit starts from: the measured stream for every GPU family. A layer of s bytes
    takes s / (datasheet x eta) + fixed time: the measured line when eta = slope / datasheet and the
    fixed time is its intercept."""
    stream = measured_stream()
    eta = min(stream.eta, 1.0)
    return terms_mod.Terms(
        eta_hopper=eta, eta_blackwell=eta, eta_other=eta, stream_fixed_us=stream.fixed_us
    )


BASE: Any = None


def _base() -> Any:
    global BASE
    if BASE is None:
        BASE = base_terms()
    return BASE


# ----------------------------------------------------------------------------------------- the
# corpus


def _profile(name: str, corpus_models: dict[str, Any]) -> dict[str, Any]:
    entry = corpus_models.get(name)
    if entry is None:
        return models.profile(name)
    if "builtin" in entry:
        config = dict(models.builtin_models()[entry["builtin"]]["config"])
        for key in entry.get("drop") or ():
            config.pop(key, None)
        config.update(entry.get("set") or {})
        return models.from_config(config, name, str(entry["source"]))
    return models.from_config(dict(entry["config"]), name, str(entry["source"]))


def _gpu(key: str) -> dict[str, Any]:
    from topoctl.core import gpus

    found = next(m for m in gpus.models() if m.key == key)
    return {
        "name": found.key,
        "family": found.architecture,
        "bandwidth": float(found.memory_bandwidth_gb_s or 0) * 1e9,
        "memory_bytes": found.memory_bytes,
        "compute_capability": found.compute_capability,
    }


LATENCIES: dict[str, Any] = {}


def _latencies(nvlink: bool) -> Any:
    system = "h100-8x-nvswitch" if nvlink else "rtx-pro-6000-8x-pcie"
    if system not in LATENCIES:
        LATENCIES[system] = launch_model.Latencies(system_snapshot(system))
    return LATENCIES[system]


def _draft(row: dict[str, Any], profile: dict[str, Any]) -> Any:
    spec = row.get("spec")
    if not spec:
        return None
    return launch_model.draft_shape(
        profile,
        int(row["tp"]),
        int(spec["steps"]),
        int(spec["topk"]),
        int(spec["draft_tokens"]),
        str(spec.get("algorithm") or "EAGLE3"),
    )


def decode_context(row: dict[str, Any]) -> tuple[float, str]:
    """(mean tokens in the KV cache while a request of the row decodes, its origin). A row whose
    source states its workload (`workload`: mean input and output tokens per request) decodes, on
    the mean over its requests, at input + output / 2: bench_serving's mean TPOT is a mean over
    requests of each one's time per output token, and a request's context grows from its input to
    input + output. Every other row takes decode_terms.DEFAULT_DECODE_CONTEXT, the figure recommend
    assumes without --decode-context."""
    work = row.get("workload")
    if work:
        return float(work["input_tokens"]) + float(work["output_tokens"]) / 2, "stated"
    return float(terms_mod.DEFAULT_DECODE_CONTEXT), "assumed"


def _kernel_path(row: dict[str, Any], profile: dict[str, Any]) -> Any:
    """The decode kernel path SGLang picks for the row's launch (autoconf/data/sglang-kernels.yaml):
    its stated `sglang` release on its GPU; a row with no release (or a vLLM row) takes the generic
    path."""
    release = row.get("sglang") if row.get("engine", "sglang") == "sglang" else None
    return gpu_specs.kernel_path(
        str(release) if release else None, _gpu(row["gpu"])["compute_capability"], profile
    )


def load_cases(path: str = CORPUS) -> tuple[dict[str, Any], list[Case]]:
    doc = read_yaml(path)
    cases = []
    for row in doc["cases"]:
        profile = _profile(str(row["model"]), doc.get("models") or {})
        nvlink = row["gpu"] in NVLINK_GPUS
        draft = _draft(row, profile)
        counts = (1,) if draft is None else (1, draft.topk, draft.draft_tokens, draft.extend_tokens)
        feat = launch_model.decode_features(
            profile,
            int(row["tp"]),
            "custom" if nvlink else "nccl",
            _gpu(row["gpu"]),
            _latencies(nvlink),
            bool(row.get("cuda_graph", True)),
            counts,
        )
        feat.context = decode_context(row)[0]
        feat.kernel = _kernel_path(row, profile)
        cases.append(Case(row, feat, draft))
    return doc, cases


# -----------------------------------------------------------------------------------------
# predictions


def _baseline(case: Case, by_id: dict[str, Case]) -> Case | None:
    return by_id.get(str(case.row.get("baseline") or ""))


def predict(case: Case, terms: Any, published_accept: bool = True) -> float:
    accept = case.row.get("accept") if published_accept else None
    return terms_mod.tokens_per_s(case.feat, terms, case.draft, accept)


def predicted_speedup(case: Case, terms: Any, published_accept: bool = True) -> float:
    plain = terms_mod.tokens_per_s(case.feat, terms)
    return predict(case, terms, published_accept) / plain


def _loss_terms(case: Case, terms: Any) -> list[float]:
    out = []
    if case.row.get("tok_s"):
        out.append(terms_mod.log_ratio(predict(case, terms), float(case.row["tok_s"])))
    if case.row.get("speedup"):
        out.append(math.log(predicted_speedup(case, terms) / float(case.row["speedup"])))
    if case.draft is not None and case.row.get("accept"):
        out.append(math.log(terms_mod.accept_length(terms, case.draft) / float(case.row["accept"])))
    return out


def loss(vector: list[float], cases: list[Case]) -> float:
    terms = terms_mod.Terms.from_vector(FITTED, [math.exp(v) for v in vector], _base())
    total = sum(e * e for case in cases for e in _loss_terms(case, terms))
    for name, value in zip(FITTED, vector, strict=True):
        total += PRIOR_WEIGHT * (value - math.log(terms_mod.PARAMETERS[name][0])) ** 2
    return total


# ----------------------------------------------------------------------------------------- the fit


def _simplex(start: list[float], scale: float = 0.4) -> list[list[float]]:
    points = [list(start)]
    for i in range(len(start)):
        point = list(start)
        point[i] += scale
        points.append(point)
    return points


def nelder_mead(
    func: Any, start: list[float], iterations: int = 3000, tol: float = 1e-9
) -> list[float]:
    """Minimise `func` from `start` (Nelder and Mead's simplex search, standard coefficients)."""
    points = _simplex(start)
    values = [func(p) for p in points]
    for _ in range(iterations):
        order = sorted(range(len(points)), key=values.__getitem__)
        points, values = [points[i] for i in order], [values[i] for i in order]
        if values[-1] - values[0] < tol:
            break
        centroid = [sum(c) / (len(points) - 1) for c in zip(*points[:-1], strict=True)]
        worst = points[-1]
        reflected = [c + (c - w) for c, w in zip(centroid, worst, strict=True)]
        value = func(reflected)
        if value < values[0]:
            expanded = [c + 2 * (c - w) for c, w in zip(centroid, worst, strict=True)]
            exp_value = func(expanded)
            points[-1], values[-1] = (
                (expanded, exp_value) if exp_value < value else (reflected, value)
            )
        elif value < values[-2]:
            points[-1], values[-1] = reflected, value
        else:
            _contract_or_shrink(func, points, values, centroid)
    return points[min(range(len(points)), key=values.__getitem__)]


def _contract_or_shrink(
    func: Any, points: list[list[float]], values: list[float], centroid: list[float]
) -> None:
    worst = points[-1]
    contracted = [c + 0.5 * (w - c) for c, w in zip(centroid, worst, strict=True)]
    value = func(contracted)
    if value < values[-1]:
        points[-1], values[-1] = contracted, value
        return
    best = points[0]
    for i in range(1, len(points)):
        points[i] = [b + 0.5 * (p - b) for b, p in zip(best, points[i], strict=True)]
        values[i] = func(points[i])


def fit(cases: list[Case], restarts: int = 2) -> Any:
    train = [c for c in cases if c.fitted]
    vector = [math.log(terms_mod.PARAMETERS[name][0]) for name in FITTED]
    for _ in range(
        restarts
    ):  # restarting from the last optimum lets the simplex leave a collapsed shape
        vector = nelder_mead(lambda v: loss(v, train), vector)
    return terms_mod.Terms.from_vector(FITTED, [math.exp(v) for v in vector], _base())


# ----------------------------------------------------------------------------------------- LOSO


@dataclass
class Held:
    case: Case
    predicted: float | None  # tok/s, published accept length where the source gives one
    predicted_own: float | None  # tok/s, the accept length from the draft shape
    speedup: float | None  # predicted speedup over the plain launch (accept from the shape)
    measured_speedup: float | None


def _measured_speedup(case: Case, by_id: dict[str, Case]) -> float | None:
    if case.row.get("speedup"):
        return float(case.row["speedup"])
    base = _baseline(case, by_id)
    if base is not None and case.row.get("tok_s") and base.row.get("tok_s"):
        return float(case.row["tok_s"]) / float(base.row["tok_s"])
    return None


def leave_one_source_out(cases: list[Case]) -> list[Held]:
    by_id = {c.id: c for c in cases}
    out = []
    for source in sorted({c.source for c in cases}):
        terms = fit([c for c in cases if c.source != source])
        for case in (c for c in cases if c.source == source):
            tok = case.row.get("tok_s")
            spec = case.draft is not None
            out.append(
                Held(
                    case,
                    predict(case, terms) if tok else None,
                    predict(case, terms, False) if tok else None,
                    predicted_speedup(case, terms, False) if spec else None,
                    _measured_speedup(case, by_id) if spec else None,
                )
            )
    return out


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    index = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return ordered[index]


def gain_group(case: Case) -> str:
    """Speculative gains are judged against cases of the same kind: MoE (expert reads grow with the
    verify pass) or dense."""
    return "gain-moe" if case.feat.experts else "gain-dense"


def bands(held: list[Held]) -> dict[str, float]:
    """The band of each group: the 80th percentile of |ln(predicted / measured)| over held-out
    SGLang cases."""
    errors: dict[str, list[float]] = {}
    for h in held:
        if not h.case.fitted:
            continue
        if h.predicted_own is not None:
            errors.setdefault(h.case.group, []).append(
                abs(math.log(h.predicted_own / float(h.case.row["tok_s"])))
            )
        if h.speedup is not None and h.measured_speedup is not None:
            errors.setdefault(gain_group(h.case), []).append(
                abs(math.log(h.speedup / h.measured_speedup))
            )
    plain = [e for group, v in errors.items() if group.startswith("plain") for e in v]
    out = {}
    for group, values in sorted(errors.items()):
        # a group of fewer than MIN_BAND_CASES held-out cases says too little: it takes all plain
        # cases' band
        pool = values if len(values) >= MIN_BAND_CASES or not group.startswith("plain") else plain
        out[group] = round(math.exp(quantile(pool, BAND_QUANTILE)), 3)
    return out


# ----------------------------------------------------------------------------------------- report


def _ratio_stats(ratios: list[float]) -> str:
    if not ratios:
        return "no cases"
    worst = max(ratios, key=lambda r: abs(math.log(r)))
    median_abs = math.exp(statistics.median(abs(math.log(r)) for r in ratios))
    return (
        f"{len(ratios)} cases, median |error| {median_abs:.3f}x, worst {worst:.3f} "
        f"(median ratio {statistics.median(ratios):.3f})"
    )


def group_worst(held: list[Held]) -> dict[str, float]:
    """The largest held-out |error| (as a factor) of each group's tok/s cases (accept length from
    the shape)."""
    out: dict[str, float] = {}
    for h in held:
        error = math.exp(abs(math.log((h.predicted_own or 1.0) / float(h.case.row["tok_s"]))))
        out[h.case.group] = round(max(out.get(h.case.group, 1.0), error), 3)
    return dict(sorted(out.items()))


def keep_drop(h: Held, band: float) -> tuple[str, str]:
    """(predicted decision, measured decision) for a case with a measured gain."""
    measured = "keep" if (h.measured_speedup or 0) > 1.0 else "drop"
    gain = h.speedup or 0.0
    predicted = "keep" if gain > band else "drop" if gain < 1.0 / band else "uncertain"
    return predicted, measured


def print_table(held: list[Held], band: dict[str, float]) -> None:
    print(
        "| case | source | engine | GPU x TP | speculative | context | measured | predicted "
        "(published accept) | predicted (accept from shape) | band | ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for h in held:
        row = h.case.row
        spec = row.get("spec")
        shape = (
            f"{spec['algorithm']} {spec['steps']}/{spec['topk']}/{spec['draft_tokens']}"
            if spec
            else "-"
        )
        b = band.get(h.case.group, 1.0)
        if row.get("tok_s"):
            measured, ratio = (
                f"{row['tok_s']:g} tok/s",
                (h.predicted_own or 0) / float(row["tok_s"]),
            )
            pub = f"{h.predicted:.1f}" if row.get("accept") else "-"
            own = f"{h.predicted_own:.1f}"
        else:
            b = band.get(gain_group(h.case), 1.0)
            measured, ratio = f"{row['speedup']:g}x", (h.speedup or 0) / float(row["speedup"])
            pub, own = "-", f"{h.speedup:.2f}x"
        context, origin = decode_context(row)
        print(
            f"| {h.case.id} | {h.case.source} | {row.get('engine', 'sglang')} | {row['gpu']} "
            f"x{row['tp']} | {shape} | {context:.0f}{'' if origin == 'stated' else ' (assumed)'} "
            f"| {measured} | {pub} | {own} | x/{b:.2f} | {ratio:.3f} |"
        )


def print_stats(held: list[Held], band: dict[str, float]) -> dict[str, Any]:
    fitted = [h for h in held if h.case.fitted and h.predicted_own is not None]
    plain = [h.predicted_own / float(h.case.row["tok_s"]) for h in fitted if h.case.draft is None]  # type: ignore[operator]
    spec_own = [
        h.predicted_own / float(h.case.row["tok_s"])  # type: ignore[operator]
        for h in fitted
        if h.case.draft is not None
    ]
    spec_pub = [
        h.predicted / float(h.case.row["tok_s"])  # type: ignore[operator]
        for h in fitted
        if h.case.draft is not None and h.case.row.get("accept")
    ]
    print()
    print("Leave-one-source-out, SGLang rows (each source predicted by a fit without it):")
    print(f"- without speculation: {_ratio_stats(plain)}")
    print(f"- with speculation, accept length from the draft shape: {_ratio_stats(spec_own)}")
    print(f"- with speculation, the published accept length: {_ratio_stats(spec_pub)}")
    decisions = [
        (h, *keep_drop(h, band.get(gain_group(h.case), 1.0)))
        for h in held
        if h.case.fitted and h.measured_speedup is not None
    ]
    right = sum(1 for _, p, m in decisions if p == m)
    wrong = [h.case.id for h, p, m in decisions if p not in (m, "uncertain")]
    unsure = [h.case.id for h, p, _ in decisions if p == "uncertain"]
    print(
        f"- keep/drop of speculation on {len(decisions)} cases with a measured gain: {right} "
        f"right, {len(wrong)} wrong ({', '.join(wrong) or 'none'}), {len(unsure)} uncertain "
        f"({', '.join(unsure) or 'none'})"
    )
    print(f"- bands (80th percentile of held-out |error|, as a factor): {band}")
    print(f"- held-out worst |error| by group: {group_worst(fitted)}")
    return {
        "plain": plain,
        "spec_own": spec_own,
        "spec_pub": spec_pub,
        "right": right,
        "wrong": wrong,
        "uncertain": unsure,
        "decisions": len(decisions),
    }


def _launch_key(case: Case) -> tuple[str, ...]:
    row = case.row
    return (case.source, str(row["model"]), str(row["gpu"]), str(row["tp"]), str(row.get("dtype")))


def print_context_pairs(held: list[Held]) -> None:
    """The same plain launch of one source at several stated workloads: how much its time per token
    grows with the decode context, measured and predicted held out (the KV-read term is the only
    part of the step that differs between them)."""
    rows = [
        h
        for h in held
        if h.case.fitted
        and h.case.draft is None
        and h.case.row.get("workload")
        and h.case.row.get("tok_s")
        and h.predicted_own
    ]
    groups: dict[tuple[str, ...], list[Held]] = {}
    for h in rows:
        groups.setdefault(_launch_key(h.case), []).append(h)
    pairs = [sorted(g, key=lambda h: h.case.feat.context) for g in groups.values() if len(g) > 1]
    if not pairs:
        return
    print("\nThe same launch at a longer workload (TPOT in ms = 1000 / tok/s; predicted held out):")
    print(
        "| case | context | measured TPOT | predicted TPOT | measured growth | predicted growth |"
    )
    print("|---|---|---|---|---|---|")
    for group in sorted(pairs, key=lambda g: g[0].case.id):
        first = group[0]
        base_m, base_p = (
            1000 / float(first.case.row["tok_s"]),
            1000 / float(first.predicted_own or 1),
        )
        for h in group:
            m, p = 1000 / float(h.case.row["tok_s"]), 1000 / float(h.predicted_own or 1)
            growth = "- | -" if h is first else f"{m - base_m:+.2f} ms | {p - base_p:+.2f} ms"
            print(f"| {h.case.id} | {h.case.feat.context:.0f} | {m:.2f} | {p:.2f} | {growth} |")


def held_out_ratios(held: list[Held]) -> dict[str, float]:
    """Each case's held-out ratio, predicted / measured: tokens/s with the accept length from the
    draft shape, or the speedup for a case the source gives as a speedup only (the table's `ratio`
    column)."""
    out = {}
    for h in held:
        if h.case.row.get("tok_s") and h.predicted_own:
            out[h.case.id] = round(h.predicted_own / float(h.case.row["tok_s"]), 4)
        elif h.case.row.get("speedup") and h.speedup:
            out[h.case.id] = round(h.speedup / float(h.case.row["speedup"]), 4)
    return out


@dataclass(frozen=True)
class Move:
    """One case whose held-out ratio differs from the stored run's: before or after is None for a
    case the stored run or this one does not have."""

    case: str
    before: float | None
    after: float | None

    @property
    def worse(self) -> bool | None:
        """Whether the error grew (|ln ratio| larger); None for an added or a removed case."""
        if self.before is None or self.after is None:
            return None
        return abs(math.log(self.after)) > abs(math.log(self.before))


def moved_rows(
    current: dict[str, float], stored: dict[str, float], threshold: float = MOVE_THRESHOLD
) -> list[Move]:
    """The cases whose held-out ratio moved by more than `threshold` (a fraction of the stored
    ratio), and the cases only one of the two runs has, in case order."""
    moves = []
    for case in sorted(set(current) | set(stored)):
        before, after = stored.get(case), current.get(case)
        if (
            before is None
            or after is None
            or abs(math.log(after / before)) > math.log(1 + threshold)
        ):
            moves.append(Move(case, before, after))
    return moves


def _ratio_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def print_moves(current: dict[str, float], path: str = HELD_OUT_FILE) -> None:
    """The rows whose held-out ratio moved since the stored run, worse ones first."""
    if not os.path.exists(path):
        print(f"\nNo stored held-out ratios ({os.path.relpath(path)}): --write stores them.")
        return
    with open(path, encoding="utf-8") as handle:
        stored = json.load(handle)["ratios"]
    moves = moved_rows(current, stored)
    print(
        f"\nHeld-out ratios that moved by more than {MOVE_THRESHOLD:.0%} against "
        f"{os.path.relpath(path)} (the last --write): {len(moves)} of "
        f"{len(set(current) | set(stored))} cases"
    )
    if not moves:
        return
    print("| case | stored | now | error |")
    print("|---|---|---|---|")
    order = {True: 0, None: 1, False: 2}
    for move in sorted(moves, key=lambda m: order[m.worse]):
        verdict = {
            True: "worse",
            False: "better",
            None: "added" if move.before is None else "removed",
        }[move.worse]
        print(
            f"| {move.case} | {_ratio_text(move.before)} | {_ratio_text(move.after)} | {verdict} |"
        )


def write_held_out(path: str, ratios: dict[str, float]) -> None:
    doc = {
        "generated_by": "benchmarks/launch_model_checks.py --write (do not edit by hand)",
        "what": "each corpus case's leave-one-source-out ratio, predicted / measured (the "
        "table's ratio column)",
        "ratios": dict(sorted(ratios.items())),
    }
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(doc, handle, indent=1)
        handle.write("\n")


def _measured_record() -> dict[str, Any]:
    stream = measured_stream()
    return {
        "terms": list(MEASURED_TERMS),
        "source": f"{os.path.relpath(DECODE_STEP, os.path.join(HERE, os.pardir))}: least squares "
        f"over {stream.rows} {STREAM_DTYPE} CUDA-graph rows (time per layer against "
        "bytes per layer)",
        "stream_gb_s": round(stream.bandwidth / 1e9, 1),
        "fixed_us_per_layer": round(stream.fixed_us, 2),
        "eta": round(stream.eta, 4),
    }


def write_fit(path: str, terms: Any, band: dict[str, float], cases: list[Case]) -> None:
    import yaml

    fitted = [c for c in cases if c.fitted]
    doc = {
        "generated_by": "benchmarks/launch_model_checks.py --write (do not edit by hand)",
        "corpus": "benchmarks/data/public-decode.yaml",
        "cases_fitted": len(fitted),
        "sources_fitted": len({c.source for c in fitted}),
        "terms": {k: round(v, 5) for k, v in terms.as_dict().items()},
        "measured": _measured_record(),
        "bands": band,
        "band_rule": f"{int(BAND_QUANTILE * 100)}th percentile of leave-one-source-out "
        "|ln(predicted/measured)|",
    }
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(
            "# Fitted terms of the launch model (autoconf/decode_terms.py) and the uncertainty "
            "bands of its\n# predictions, from the public decode corpus. Regenerate with the "
            "command in generated_by.\n"
        )
        yaml.safe_dump(doc, handle, sort_keys=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--write",
        action="store_true",
        help="write autoconf/data/decode-fit.yaml and benchmarks/data/launch-model-held-out.json",
    )
    parser.add_argument(
        "--corpus",
        metavar="YAML",
        help=f"score another corpus file (default: ${CORPUS_ENV}, else "
        "benchmarks/data/public-decode.yaml)",
    )
    args = parser.parse_args(argv)
    corpus = args.corpus or os.environ.get(CORPUS_ENV) or CORPUS
    if args.write and os.path.abspath(corpus) != os.path.abspath(CORPUS):
        parser.error(
            f"--write fits {os.path.relpath(CORPUS)} only (the stored fit names it); drop "
            f"--corpus/{CORPUS_ENV}"
        )
    _, cases = load_cases(corpus)
    held = leave_one_source_out(cases)
    band = bands(held)
    print_table(held, band)
    print_stats(held, band)
    print_context_pairs(held)
    ratios = held_out_ratios(held)
    if os.path.abspath(corpus) == os.path.abspath(
        CORPUS
    ):  # another corpus has other rows: nothing to compare
        print_moves(ratios)
    full = fit(cases)
    print(
        f"\nFitted on all {sum(c.fitted for c in cases)} SGLang rows: "
        + ", ".join(f"{k} {v:.4g}" for k, v in full.as_dict().items())
    )
    if args.write:
        write_fit(FIT_FILE, full, band, cases)
        write_held_out(HELD_OUT_FILE, ratios)
        print(f"wrote {os.path.relpath(FIT_FILE)} and {os.path.relpath(HELD_OUT_FILE)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
