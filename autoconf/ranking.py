"""Ranking candidate launches, and saying why the winner won.

After fewest warnings and the fewest remedies of blocking rules left out (a `prefer` of a block
rule, e.g. NCCL_P2P_DISABLE=1 where a pair of the group has no or an unverified P2P: a safe launch
is not traded for a number measured on another launch; counted per (TP, DP) option, so an option no
blocking rule asks anything of is not put behind one that honours a remedy it needs):

1. measured > upstream-reported > modelled: a candidate whose expected speed rests on measurements
   outranks one that rests on upstream claims, which outranks the cost model alone;
2. within a level, the faster estimate wins (tok/s from evidence; else the launch model's predicted
   tok/s; without either, the modelled allreduce time of one forward pass); a number is carried only
   onto the launch that was measured (cost.throughput, evidence.unmeasured_settings);
3. then the user's request (EAGLE-3 asked for), the number of rule preferences honoured, the fewest
   departures from SGLang's defaults, and the smaller TP size. Candidates of every (TP, DP) option
   compete, each judged on its own GPUs (placement.py).

Then a choice that departs from SGLang's default on the launch model's prediction alone (speculative
decoding, the allreduce path) is held at the default when its predicted gain is inside the model's
band (hold_within_band).

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from topoctl.autoconf.evidence import LEVEL_NAMES, LEVELS, _fmt
from topoctl.autoconf.request import Launch
from topoctl.autoconf.space import SPEC_GROUP, Candidate, Space, agrees, default_path
from topoctl.core.errors import TopoctlError
from topoctl.rules.sglang import spelling as table

if TYPE_CHECKING:
    from topoctl.rules.sglang.flags import FlagSet


def sort_key(cand: Candidate) -> tuple:
    has_throughput = cand.estimate is not None or cand.predicted is not None
    return (
        -len(cand.warnings),
        -cand.remedies_missed,
        cand.level,
        has_throughput,
        round(cand.score, 6),
        cand.honours_request,
        cand.prefers,
        -cand.departures,
        -cand.tp,
    )


def ties(winner: Candidate, candidates: list[Candidate]) -> list[Candidate]:
    """Candidates whose prediction equals the winner's: a real tie, broken by the request, rule
    preferences and the fewest departures from SGLang's defaults, and reported as a tie."""
    return [
        c
        for c in candidates
        if c is not winner
        and c.level == winner.level
        and c.remedies_missed == winner.remedies_missed
        and round(c.score, 6) == round(winner.score, 6)
        and not c.warnings
    ]


def rank(
    candidates: list[Candidate], blocked: list[Candidate], flags: FlagSet | None = None
) -> None:
    """Order both lists in place: the passing ones best first, the blocked ones stably. `flags`: the
    SGLang flag set launch.env is written for (the held choice's note names its flags; setting names
    without it)."""
    candidates.sort(key=Candidate.canonical)
    candidates.sort(key=sort_key, reverse=True)
    blocked.sort(key=Candidate.canonical)
    hold_within_band(candidates, flags)


def hold_within_band(candidates: list[Candidate], flags: FlagSet | None = None) -> None:
    """A choice that departs from SGLang's default on the launch model's prediction alone is kept
    only when its predicted gain clears the model's band for it; otherwise the launch with SGLang's
    default is put first, and says the choice is uncertain and what one measurement would settle it
    (Candidate.uncertain, by choice). Measured numbers are not second-guessed. Two choices are held,
    in this order:

    - speculative decoding (_hold_speculation): kept only when its gain clears the band for gains of
      its kind, called slower only when its loss clears it (gain below 1 / band);
    - the allreduce path (_hold_path), when it departs from SGLang's default path for the launch:
      kept only when its gain over the default-path launch clears the band of _path_band."""
    if not candidates:
        return
    _hold_speculation(candidates)
    _hold_path(candidates, flags)


def _counterpart(
    winner: Candidate, candidates: list[Candidate], same: Callable[[Candidate], bool]
) -> Candidate | None:
    """The best-ranked other launch of the winner's (TP, DP) option, with no more warnings and
    remedies left out than the winner, for which `same` holds: the launch the winner's choice is
    weighed against. None when that launch is blocked, warned or missing: the winner was then chosen
    for that, and is not held."""
    return next(
        (
            c
            for c in candidates[1:]
            if c.tp == winner.tp
            and c.dp == winner.dp
            and len(c.warnings) <= len(winner.warnings)
            and c.remedies_missed <= winner.remedies_missed
            and same(c)
        ),
        None,
    )


def _modelled_gain(choice: Candidate, default: Candidate) -> float | None:
    """The launch model's predicted tok/s of `choice` over `default`; None when either has a number
    from evidence (measured, or reported upstream: the ranking's levels order those, the band does
    not) or no prediction."""
    if (
        choice.estimate is not None
        or default.estimate is not None
        or choice.predicted is None
        or default.predicted is None
    ):
        return None
    return float(choice.predicted.tokens_per_s / default.predicted.tokens_per_s)


def _put_first(candidates: list[Candidate], default: Candidate, choice: str, note: str) -> None:
    """Put the default launch first, carrying the notes of the launch it replaces and this one."""
    held = {**candidates[0].uncertain, **default.uncertain, choice: note}
    candidates.remove(default)
    candidates.insert(0, replace(default, uncertain=held))


def _gain_band(cand: Candidate) -> tuple[float, str]:
    """The band for gains of the candidate's kind: `gain-moe` for a model with routed experts, else
    `gain-dense` (the held-out error of predicted speedups, autoconf/data/decode-fit.yaml)."""
    from topoctl.autoconf.launch_model import band_of

    moe = bool(cand.fit is not None and getattr(cand.predicted, "moe", False))
    return band_of("gain-moe" if moe else "gain-dense")


def _hold_speculation(candidates: list[Candidate]) -> None:
    """Speculative decoding is kept only when its predicted gain clears the band for gains, and
    called slower only when its predicted loss clears it; in between the launch without it (same
    path) is put first."""
    winner = candidates[0]
    speculative = bool(winner.speculative)
    other = _counterpart(
        winner, candidates, lambda c: bool(c.speculative) != speculative and c.path == winner.path
    )
    if other is None:
        return
    spec, plain = (winner, other) if speculative else (other, winner)
    gain = _modelled_gain(spec, plain)
    if gain is None:
        return
    band, _ = _gain_band(spec)
    if gain >= band or gain < 1.0 / band:
        return  # the gain, or the loss, clears the band: the ranking's order stands
    name = str(spec.speculative).upper().replace("EAGLE3", "EAGLE-3")
    _put_first(
        candidates,
        plain,
        "speculative",
        (
            f"{name} is predicted {gain:.2f}x the launch "
            f"without it, inside the launch model's band for speculative gains (x/{band:.2f}): "
            "the choice "
            "is uncertain and SGLang's default (no speculation) is kept. One measurement settles "
            "it: "
            "`topoctl bench` on this machine, or `python -m sglang.bench_one_batch_server "
            "--batch-size 1` "
            "against a server launched with and without the speculative flags"
        ),
    )


# The allreduce paths `topoctl bench` times (probe/bench/plan.py Plan.paths, docs/bench.md "What it
# measures"): NCCL and torch symmetric memory. SGLang's custom allreduce, pcie_ipc, nccl_symm_mem
# and the fused allreduce + RMSNorm call are not timed (recorded unavailable, or not attempted), so
# bench settles no comparison with them.
BENCH_TIMED_PATHS = ("nccl", "torch_symm_mem")


def _measured_here(cand: Candidate) -> bool:
    """Whether the launch model's per-call allreduce latency of the candidate is this machine's own
    measurement (the snapshot's `topoctl bench` rows, level measured). A path priced as another by a
    relation (the fused call, priced as the custom allreduce) takes the relation's lower level and
    is not one."""
    from topoctl.autoconf.launch_model import MEASURED

    predicted = cand.predicted
    return bool(
        predicted is not None
        and getattr(predicted, "allreduce_level", "") == "measured"
        and str(getattr(predicted, "allreduce_origin", "")).startswith(MEASURED)
    )


def _path_band(cand: Candidate) -> float:
    """The band a path's predicted gain must clear: the wider of the band for gains of the model's
    kind (_gain_band: `gain-dense` or `gain-moe`) and the band of the chosen launch's own tok/s
    (launch_model.band_of of its group, `plain-dense`, `plain-moe`, `plain-mla` or `speculative`,
    carried on its prediction). A path gain is a ratio of two predictions of one model on one
    machine, as a speculative gain is, so the errors the two launches share (the bandwidth, the
    per-layer overheads) cancel in it as they do in the pairs the gain bands are held out on; but
    those pairs differ by speculation (accept length, the draft's cost), none by allreduce path:
    what a path changes (its per-call latency here, the fused call's saved norm kernel) has no
    held-out pair, so the gain band is not a measured error of path gains. The conservative reading
    is the wider band: a path gain the prediction's own tok/s band cannot tell apart is not claimed
    either."""
    gain_band, _ = _gain_band(cand)
    return max(gain_band, float(getattr(cand.predicted, "band", 1.0) or 1.0))


def _path_flags(winner: Candidate, default: Candidate, flags: FlagSet | None) -> str:
    """The flags (setting names without a flag set) by which the winner's path departs from the
    default's."""
    paths = table.table()["allreduce_paths"]
    differs = {
        setting: value
        for setting, value in paths[winner.path].items()
        if not agrees(setting, value, default.launch, default.defaults)
    }
    if flags is None:
        return ", ".join(sorted(differs)) or "its path settings"
    rendered = table.render(differs, flags, decided=set(differs))
    tokens = [" ".join(words) for _, words in rendered.args]
    tokens += [f"{name}={text}" for name, (text, _) in sorted(rendered.env.items())]
    return " ".join(tokens) or "its path settings"


def _hold_path(candidates: list[Candidate], flags: FlagSet | None) -> None:
    """A winner whose allreduce path departs from SGLang's default path for the launch, on the
    launch model's prediction alone, is kept only when its gain over the default-path launch (same
    TP, DP and speculation, no more warnings or remedies left out) clears _path_band; otherwise that
    launch is put first. Untouched: a default path that is blocked, warned or missing (the winner
    was chosen for that), a tie (chosen by the ranking's preferences), a number from evidence, and a
    winner whose per-call allreduce latency was measured on this machine (_measured_here: a measured
    number is not second-guessed)."""
    winner = candidates[0]
    path = default_path(winner.defaults)
    if path is None or winner.path == path:
        return
    default = _counterpart(
        winner, candidates, lambda c: c.path == path and c.speculative == winner.speculative
    )
    if default is None or _measured_here(winner):
        return
    gain = _modelled_gain(winner, default)
    if gain is None or round(winner.score, 6) <= round(default.score, 6):
        return
    band = _path_band(winner)
    if gain >= band:
        return  # the gain clears the band: the ranking's order stands
    bench = (
        " (or `topoctl bench` here)"
        if winner.runs_path in BENCH_TIMED_PATHS and default.runs_path in BENCH_TIMED_PATHS
        else ""
    )
    _put_first(
        candidates,
        default,
        "allreduce path",
        (
            f"allreduce={winner.path} is predicted {gain:.2f}x SGLang's default path ({path}), "
            f"inside the launch model's band x/{band:.2f}: uncertain, so the default is kept. To "
            "settle it, run `python -m sglang.bench_one_batch_server --batch-size 1` on a "
            f"server with and without {_path_flags(winner, default, flags)}{bench}"
        ),
    )


def require_a_launch(
    candidates: list[Candidate], blocked: list[Candidate], unbuilt: Sequence[str] = ()
) -> None:
    """Exit 1, naming the blocking rules and the kernels SGLang's wheels lack for this GPU (the
    launches the search left out for them), when nothing passes."""
    if candidates:
        return
    reasons_text = sorted(
        {
            f"{finding.rule_id}: {finding.message}"
            for cand in blocked
            for finding, _ in cand.blocked_by
        }
    )
    if unbuilt:
        reasons_text.append(
            "topoctl-kernel-not-built: every other launch needs a kernel SGLang's wheels lack "
            f"here ({', '.join(unbuilt[:3])}{' ...' if len(unbuilt) > 3 else ''})"
        )
    raise TopoctlError(
        "no launch passes the rules on this machine: "
        + ("; ".join(reasons_text[:4]) or "no candidate launch was left to judge"),
        hint="run with --explain to see every blocked alternative; docs/kernel-matrix.md says "
        "which kernels each release builds for which GPU",
        exit_code=1,
    )


def winner_reasons(
    winner: Candidate,
    space: Space,
    paths: dict[str, Launch],
    given_tp: bool,
    gpu_count: int,
    machine_gpus: int | None = None,
) -> tuple[dict[str, list[str]], set[str]]:
    """(setting -> rule ids / topoctl reasons behind its value, the settings something decided).
    `gpu_count`: the GPUs the launch may use (those CUDA sees); `machine_gpus`: the machine's, when
    more."""
    reasons = {key: list(value) for key, value in space.reasons.items()}
    decided = set(reasons)
    decided.update(setting for setting, _, _ in space.prefer_pairs)
    decided.add("tp_size")
    for ev in winner.estimate_basis:
        decided.update(ev.config)
    tp, dp = winner.tp, winner.dp
    # the GPUs it runs on, when that is not every GPU (placement.py; render writes
    # CUDA_VISIBLE_DEVICES)
    on_gpus = ""
    if winner.gpus and len(winner.gpus) < (machine_gpus or gpu_count):
        on_gpus = f": GPUs {_ids(winner.gpus)}"
        if dp > 1 and len(winner.gpus) == tp * dp:
            on_gpus += (
                " (replicas "
                + " / ".join(
                    _ids(winner.gpus[start : start + tp]) for start in range(0, tp * dp, tp)
                )
                + ")"
            )
    if given_tp:
        reasons.setdefault("tp_size", []).append(
            f"topoctl: tensor parallel across {_gpus(tp)} (--tp-size){on_gpus}"
        )
    elif winner.predicted is not None or winner.fit is not None:
        objective = winner.predicted.objective if winner.predicted else "fit"
        reasons.setdefault("tp_size", []).append(
            f"launch model: the fastest TP size that fits ({objective}, "
            f"{dp} replica{'s' if dp > 1 else ''} on {gpu_count} GPUs){on_gpus}"
        )
    else:
        reasons.setdefault("tp_size", []).append(
            "topoctl: tensor parallel across "
            + (f"all {gpu_count} GPUs" if tp == gpu_count else f"{_gpus(tp)} (--tp-size){on_gpus}")
        )
    if dp > 1:
        decided.add("dp_size")
        reasons.setdefault("dp_size", []).append(
            f"launch model: {dp} data-parallel replicas fill the {gpu_count} GPUs"
            if tp * dp >= gpu_count
            else f"{dp} data-parallel replicas of {_gpus(tp)} (--dp-size): {tp * dp} of the "
            f"{gpu_count} GPUs"
        )
    for name in ("context_length", "max_running_requests"):
        if name in winner.launch:
            decided.add(name)
            reasons.setdefault(name, []).append(f"requested: --{name.replace('_', '-')}")
    for setting, _, rule_id in space.prefer_pairs:
        reasons.setdefault(setting, []).append(rule_id)
    for name in paths[winner.path]:
        reasons.setdefault(name, []).append(f"ranking: allreduce path {winner.path}")
    if winner.speculative:
        for name in ("speculative_algorithm", "speculative_draft_model_path") + SPEC_GROUP:
            reasons.setdefault(name, []).append("requested: --speculative " + winner.speculative)
    for name in space.options:
        if name not in reasons:
            reasons[name] = ["ranking"]
    return {k: sorted(set(v)) for k, v in reasons.items()}, decided


def _gpus(count: int) -> str:
    return f"{count} GPU" + ("s" if count != 1 else "")


def _ids(gpus: tuple[int, ...]) -> str:
    return ",".join(str(index) for index in gpus)


def faster_paths(
    winner: Candidate, candidates: list[Candidate], paths: dict[str, Launch]
) -> list[Candidate]:
    """Other paths worth offering: clean, backed by at least upstream reports, and modelled faster."""
    offers = []
    for path in paths:
        if path == winner.path:
            continue
        best = next(
            (c for c in candidates if c.path == path and c.speculative == winner.speculative), None
        )
        if (
            best
            and not best.warnings
            and best.allreduce_level >= LEVELS["upstream-reported"]
            and best.allreduce_us < winner.allreduce_us
        ):
            offers.append(best)
    return offers


def _side(cand: Candidate | None) -> dict[str, object] | None:
    if cand is None:
        return None
    basis = cand.estimate_basis[0] if cand.estimate_basis else None
    return {
        "config": cand.label(),
        "throughput_tok_s": round(basis.value, 3) if basis else None,
        "estimated_tok_s": round(cand.estimate, 3) if cand.estimate is not None else None,
        "level": LEVEL_NAMES[cand.level],
        "evidence": [ev.describe() for ev in cand.estimate_basis] or cand.allreduce_basis,
        "modelled_allreduce_ms_per_forward": round(cand.allreduce_us / 1000.0, 3),
        "predicted_tok_s": round(cand.predicted.tokens_per_s, 3)
        if cand.predicted is not None
        else None,
    }


def speculative_comparison(
    candidates: list[Candidate],
    winner: Candidate,
    speculative: str | None,
    forced: bool,
    blocked: list[Candidate],
    unfit: list[Candidate] | None = None,
) -> dict[str, Any] | None:
    """With vs without speculative decoding, when it was asked for: which was emitted and why."""
    if not speculative:
        return None
    with_spec = next((c for c in candidates if c.speculative), None)
    without = next((c for c in candidates if not c.speculative), None)
    out: dict[str, Any] = {
        "asked": speculative,
        "forced": forced,
        "with": _side(with_spec),
        "without": _side(without),
        "emitted": "with" if winner.speculative else "without",
    }
    name = speculative.upper().replace("EAGLE3", "EAGLE-3")
    unfit_spec = max(
        (c for c in unfit or [] if c.speculative and c.fit is not None),
        key=lambda c: c.memory_fit.kv_cache_bytes,
        default=None,
    )
    reasons = sorted({f.rule_id for c in blocked if c.speculative for f, _ in c.blocked_by})
    if with_spec is None and unfit_spec is not None and not reasons:
        out["verdict"] = "does not fit"
        out["message"] = f"{name} does not fit in memory here: it {unfit_spec.memory_fit.why}"
    elif with_spec is None:
        out["verdict"] = "blocked"
        out["message"] = (
            f"{name} is blocked on this machine (rules: {', '.join(reasons) or 'none'})"
        )
    elif without is None:
        out["verdict"] = "forced" if forced else "only"
        out["message"] = (
            f"{name} kept (--force-speculative)" if forced else f"{name} is the only launch left"
        )
    elif winner.uncertain.get("speculative"):
        out["verdict"] = "uncertain"
        out["message"] = winner.uncertain["speculative"] + " (--force-speculative keeps it)"
    elif not winner.speculative:
        a, b = out["with"], out["without"]
        shown_a = (
            a["throughput_tok_s"] if a["throughput_tok_s"] is not None else a["estimated_tok_s"]
        )
        shown_b = (
            b["throughput_tok_s"] if b["throughput_tok_s"] is not None else b["estimated_tok_s"]
        )
        if (
            shown_a is None
            and shown_b is None
            and a.get("predicted_tok_s")
            and b.get("predicted_tok_s")
        ):
            shown_a, shown_b = a["predicted_tok_s"], b["predicted_tok_s"]
        out["verdict"] = "slower"
        if shown_a is not None and shown_b is not None:
            out["message"] = (
                f"{name} is slower here: {_fmt(shown_a)} tok/s with it vs {_fmt(shown_b)} tok/s "
                f"without ({a['level']}); emitting the launch without it "
                "(--force-speculative keeps it)"
            )
        else:
            out["message"] = (
                f"{name} ranks below the launch without it ({a['level']} vs {b['level']} "
                "evidence); "
                "emitting the launch without it (--force-speculative keeps it)"
            )
    elif (
        with_spec.estimate is None
        and with_spec.predicted is not None
        and without.predicted is not None
    ):
        out["verdict"] = "kept"
        out["message"] = (
            f"{name} kept: the launch model predicts {with_spec.predicted.tokens_per_s:.1f} "
            "tok/s with it "
            f"vs {without.predicted.tokens_per_s:.1f} without, a gain that clears its band for "
            "speculative gains (modelled)"
        )
    else:
        out["verdict"] = "kept"
        out["message"] = f"{name} kept: no evidence that it is slower on this machine"
    return out
