"""autoconf/ranking.py: the order of candidate launches. A remedy of a blocking rule (its `prefer`,
e.g. NCCL_P2P_DISABLE=1) left out ranks a launch down before speed; with the same remedies left out
the launch model's predicted tok/s decides, and a tie in prediction is reported only between
candidates that leave out the same number of remedies. Candidates here are built by hand (no rules
run)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from topoctl.autoconf import ranking
from topoctl.autoconf.ranking import rank, ties, winner_reasons
from topoctl.autoconf.space import Candidate, Space
from topoctl.core.errors import TopoctlError


@dataclass
class _Predicted:  # the one field of launch_model.Estimate the ranking reads
    tokens_per_s: float
    objective: str = "latency"


def _cand(
    tp: int,
    tok_s: float,
    remedies: int = 0,
    dp: int = 1,
    gpus: tuple[int, ...] = (),
    asked: int | None = None,
) -> Candidate:
    launch = {"tp_size": tp, **({"dp_size": dp} if dp > 1 else {})}
    return Candidate(
        "nccl",
        launch,
        predicted=_Predicted(tok_s),
        remedies=remedies,
        gpus=gpus,
        remedies_asked=remedies if asked is None else asked,
    )


def test_a_remedy_of_a_blocking_rule_comes_before_a_faster_prediction():
    fast, safe = _cand(2, 120.0, asked=1), _cand(2, 90.0, remedies=1)
    ranked = [fast, safe]
    rank(ranked, [])
    assert ranked == [safe, fast]


def test_an_option_no_blocking_rule_asks_anything_of_competes_on_speed():
    # TP 1 x DP 2 has no pair, so no remedy is asked of it; TP 2 honours the one its group needs
    replicas, remedied, unremedied = (
        _cand(1, 100.0, dp=2),
        _cand(2, 90.0, remedies=1),
        _cand(2, 130.0, asked=1),
    )
    ranked = [remedied, unremedied, replicas]
    rank(ranked, [])
    assert ranked == [replicas, remedied, unremedied]


def test_with_the_same_remedies_the_faster_prediction_wins_and_ties_keep_remedies_apart():
    slow, fast = _cand(4, 80.0, remedies=1), _cand(2, 95.0, remedies=1, dp=2)
    ranked = [slow, fast]
    rank(ranked, [])
    assert ranked == [fast, slow]
    same_speed_missing_remedy = _cand(1, 95.0, dp=4, asked=1)
    same_speed_remedy = _cand(4, 95.0, remedies=1)
    assert ties(fast, [fast, same_speed_missing_remedy, same_speed_remedy]) == [same_speed_remedy]


def test_the_tp_reason_names_the_gpus_of_a_partial_launch():
    space = Space({}, [], {}, {})
    winner = _cand(2, 95.0, gpus=(2, 3))
    reasons, _ = winner_reasons(winner, space, {"nccl": {}}, False, 4)
    assert reasons["tp_size"] == [
        "launch model: the fastest TP size that fits (latency, 1 replica on 4 GPUs): GPUs 2,3"
    ]
    replicas = _cand(2, 95.0, dp=2, gpus=(0, 1, 4, 5))
    reasons, _ = winner_reasons(replicas, space, {"nccl": {}}, True, 8)
    assert reasons["tp_size"] == [
        "topoctl: tensor parallel across 2 GPUs (--tp-size): GPUs 0,1,4,5 (replicas 0,1 / 4,5)"
    ]
    assert reasons["dp_size"] == ["2 data-parallel replicas of 2 GPUs (--dp-size): 4 of the 8 GPUs"]
    whole = _cand(4, 95.0, gpus=(0, 1, 2, 3))
    reasons, _ = winner_reasons(whole, space, {"nccl": {}}, False, 4)
    assert "GPUs 0" not in reasons["tp_size"][0]


# ------------------------------------------------ speculation: kept, uncertain or slower, by the
# band for gains


@dataclass
class _SpecPredicted(_Predicted):
    moe: bool = False


def _verdict(gain: float, moe: bool) -> dict:
    """The speculative comparison recommend prints when the launch model alone predicts EAGLE-3 at
    `gain` x the same launch without it (TP 4, one path, nothing measured)."""
    from topoctl.autoconf.ranking import speculative_comparison

    fit = object() if moe else None
    plain = Candidate("nccl", {"tp_size": 4}, predicted=_SpecPredicted(100.0, moe=moe), fit=fit)
    spec = Candidate(
        "nccl",
        {"tp_size": 4, "speculative_algorithm": "eagle3"},
        predicted=_SpecPredicted(100.0 * gain, moe=moe),
        fit=fit,
    )
    ranked = [plain, spec]
    rank(ranked, [])
    out = speculative_comparison(ranked, ranked[0], "eagle3", False, [])
    assert out is not None
    return out


def test_speculation_is_called_slower_only_when_its_loss_clears_the_band():
    from topoctl.autoconf.launch_model import band_of

    for moe, group in ((True, "gain-moe"), (False, "gain-dense")):
        band, _ = band_of(group)
        assert (
            band > 1.05
        )  # the fitted bands (autoconf/data/decode-fit.yaml) leave room on both sides
        inside_loss = _verdict(
            1.0 / band * 1.01, moe
        )  # below 1 but inside the band: uncertain, not slower
        assert inside_loss["verdict"] == "uncertain" and inside_loss["emitted"] == "without", group
        assert (
            f"inside the launch model's band for speculative gains (x/{band:.2f})"
            in inside_loss["message"]
        )
        assert "bench_one_batch_server --batch-size 1" in inside_loss["message"]
        assert "slower" not in inside_loss["message"]
        assert _verdict(0.99, moe)["verdict"] == "uncertain"
        cleared_loss = _verdict(1.0 / band * 0.99, moe)  # the loss clears the band: slower
        assert cleared_loss["verdict"] == "slower" and cleared_loss["emitted"] == "without", group
        assert cleared_loss["message"].startswith("EAGLE-3 is slower here")
        inside_gain = _verdict(
            band * 0.99, moe
        )  # above 1 but inside the band: uncertain, launched without it
        assert inside_gain["verdict"] == "uncertain" and inside_gain["emitted"] == "without", group
        cleared_gain = _verdict(band * 1.01, moe)  # the gain clears the band: kept
        assert cleared_gain["verdict"] == "kept" and cleared_gain["emitted"] == "with", group


def test_a_measured_number_is_not_second_guessed_by_the_band():
    from topoctl.autoconf.ranking import speculative_comparison

    plain = Candidate(
        "nccl", {"tp_size": 4}, predicted=_SpecPredicted(100.0), estimate=100.0, estimate_level=3
    )
    spec = Candidate(
        "nccl",
        {"tp_size": 4, "speculative_algorithm": "eagle3"},
        predicted=_SpecPredicted(99.0),
        estimate=99.0,
        estimate_level=3,
    )
    ranked = [spec, plain]
    rank(ranked, [])
    out = speculative_comparison(ranked, ranked[0], "eagle3", False, [])
    assert (
        out is not None and out["verdict"] == "slower"
    )  # 0.99x, measured on both sides: no band applies


# ------------------------------------------------ the allreduce path: kept only when its gain
# clears the band


@dataclass
class _PathPredicted(_Predicted):  # the fields of launch_model.Estimate the path hold reads
    band: float = 1.0
    allreduce_level: str = "upstream-reported"
    allreduce_origin: str = "cited reference table"
    moe: bool = False


FUSED = {"custom_all_reduce": True, "flashinfer_allreduce_fusion": True}


def _path_cand(
    path: str, tok_s: float, band: float = 1.0, spec: bool = False, **extra
) -> Candidate:
    settings = {
        "flashinfer_fusion": FUSED,
        "custom": {"custom_all_reduce": True},
        "nccl": {"custom_all_reduce": False},
    }[path]
    launch = {"tp_size": 4, **settings, **({"speculative_algorithm": "eagle3"} if spec else {})}
    level = extra.pop("allreduce_level", "upstream-reported")
    origin = extra.pop("allreduce_origin", "cited reference table")
    return Candidate(
        path,
        launch,
        predicted=_PathPredicted(tok_s, band=band, allreduce_level=level, allreduce_origin=origin),
        **extra,
    )


def _dense_gain_band() -> float:
    from topoctl.autoconf.launch_model import band_of

    band, _ = band_of("gain-dense")
    assert band > 1.05
    return band


def test_a_path_gain_inside_the_band_keeps_sglangs_default_path_and_says_what_settles_it():
    band = _dense_gain_band()
    fused, custom = (
        _path_cand("flashinfer_fusion", 100.0 * band * 0.99),
        _path_cand("custom", 100.0),
    )
    ranked = [custom, fused]
    rank(ranked, [])
    assert ranked[0].path == "custom" and ranked[1] is fused
    note = ranked[0].uncertain["allreduce path"]
    assert note.startswith(
        f"allreduce=flashinfer_fusion is predicted {band * 0.99:.2f}x SGLang's default path "
        f"(custom), inside the launch model's band x/{band:.2f}: uncertain"
    )
    # bench does not time the custom allreduce nor the fused call: only the SGLang run with and
    # without is named
    assert note.endswith(
        "`python -m sglang.bench_one_batch_server --batch-size 1` on a server with and without "
        "flashinfer_allreduce_fusion"
    )
    assert "topoctl bench" not in note
    assert "speculative" not in ranked[0].uncertain


def test_a_path_gain_that_clears_the_band_wins():
    band = _dense_gain_band()
    fused, custom, nccl = (
        _path_cand("flashinfer_fusion", 100.0 * band * 1.01),
        _path_cand("custom", 100.0),
        _path_cand("nccl", 90.0),
    )
    ranked = [nccl, custom, fused]
    rank(ranked, [])
    assert ranked == [fused, custom, nccl] and not ranked[0].uncertain


def test_the_path_band_is_the_wider_of_the_gain_band_and_the_launchs_own_band():
    # a gain of 1.2x clears the dense gain band (x/1.11) but not a prediction whose tok/s band is
    # x/1.28
    fused, custom = (
        _path_cand("flashinfer_fusion", 120.0, band=1.28),
        _path_cand("custom", 100.0, band=1.28),
    )
    ranked = [fused, custom]
    rank(ranked, [])
    assert ranked[0].path == "custom" and "x/1.28" in ranked[0].uncertain["allreduce path"]
    fused, custom = (
        _path_cand("flashinfer_fusion", 130.0, band=1.28),
        _path_cand("custom", 100.0, band=1.28),
    )
    ranked = [custom, fused]
    rank(ranked, [])
    assert ranked[0] is fused


def test_a_path_chosen_because_the_default_path_is_warned_or_blocked_is_not_held():
    fused = _path_cand("flashinfer_fusion", 101.0)
    warned = _path_cand("custom", 100.0, warnings=[(object(), "a warning")])
    ranked = [warned, fused]
    rank(ranked, [])
    assert ranked == [fused, warned] and not fused.uncertain
    missing_remedy = _path_cand("custom", 100.0, remedies_asked=1)
    ranked = [missing_remedy, _path_cand("flashinfer_fusion", 101.0, remedies=1, remedies_asked=1)]
    rank(ranked, [])
    assert ranked[0].path == "flashinfer_fusion" and not ranked[0].uncertain
    nccl = _path_cand(
        "nccl", 101.0
    )  # the default path blocked: not among the passing candidates at all
    ranked = [nccl]
    rank(ranked, [_path_cand("custom", 120.0)])
    assert ranked == [nccl] and not nccl.uncertain


def test_a_path_tie_a_measured_number_and_another_option_are_not_held():
    preferred = _path_cand(
        "flashinfer_fusion", 100.0, prefers=1
    )  # a rule's preference breaks the tie
    tie = [_path_cand("custom", 100.0), preferred]
    rank(tie, [])
    assert (
        tie[0] is preferred and not preferred.uncertain
    )  # no predicted gain behind the choice: not held
    measured = _path_cand(
        "nccl",
        101.0,
        allreduce_level="measured",
        allreduce_origin="measured in the snapshot (nccl CUDA-graph rows)",
    )
    ranked = [_path_cand("custom", 100.0), measured]
    rank(ranked, [])
    assert ranked[0] is measured  # topoctl bench rows on this machine: not second-guessed
    field = _path_cand("nccl", 101.0, allreduce_level="measured", allreduce_origin="field report")
    ranked = [_path_cand("custom", 100.0), field]
    rank(ranked, [])
    assert (
        ranked[0].path == "custom"
    )  # measured on another machine, its gain here is the model's: held
    evidence = _path_cand("nccl", 101.0, estimate=101.0)
    ranked = [_path_cand("custom", 100.0), evidence]
    rank(ranked, [])
    assert ranked[0] is evidence
    other_tp = Candidate(
        "custom", {"tp_size": 2, "custom_all_reduce": True}, predicted=_PathPredicted(100.0)
    )
    ranked = [other_tp, _path_cand("flashinfer_fusion", 101.0)]
    rank(ranked, [])
    assert (
        ranked[0].path == "flashinfer_fusion"
    )  # no default-path launch of its own (TP, DP) option


def test_bench_is_named_only_where_it_times_both_paths():
    nccl = _path_cand("nccl", 101.0)
    ranked = [_path_cand("custom", 100.0), nccl]
    rank(ranked, [])
    assert (
        "topoctl bench" not in ranked[0].uncertain["allreduce path"]
    )  # bench does not time custom allreduce
    # SGLang itself turns custom allreduce off here (deterministic inference): the default runs as
    # NCCL
    off = {"custom_all_reduce": False}
    symm = Candidate(
        "torch_symm_mem",
        {"tp_size": 4, "custom_all_reduce": False, "torch_symm_mem": True},
        predicted=_PathPredicted(101.0),
        defaults=off,
    )
    plain = Candidate(
        "custom",
        {"tp_size": 4, "custom_all_reduce": True},
        predicted=_PathPredicted(100.0),
        defaults=off,
        implied={"custom_all_reduce": (False, "a rule")},
    )
    default_nccl = Candidate(
        "nccl",
        {"tp_size": 4, "custom_all_reduce": False},
        predicted=_PathPredicted(100.0),
        defaults=off,
    )
    ranked = [plain, default_nccl, symm]
    rank(ranked, [])
    assert ranked[0] is not symm and ranked[0].path == "nccl"
    assert (
        ranked[0]
        .uncertain["allreduce path"]
        .endswith("without torch_symm_mem (or `topoctl bench` here)")
    )


def test_speculation_and_the_path_are_held_each_by_its_own_band():
    from topoctl.autoconf.ranking import speculative_comparison

    band = _dense_gain_band()
    # EAGLE-3 on the fused path: the speculative gain clears its band, the path's gain does not
    spec_fused = _path_cand("flashinfer_fusion", 100.0 * band * 1.2 * 1.02, spec=True)
    spec_custom = _path_cand("custom", 100.0 * band * 1.2, spec=True)
    plain_fused, plain_custom = _path_cand("flashinfer_fusion", 102.0), _path_cand("custom", 100.0)
    ranked = [plain_custom, plain_fused, spec_custom, spec_fused]
    rank(ranked, [])
    assert ranked[0].path == "custom" and ranked[0].speculative == "eagle3"
    assert set(ranked[0].uncertain) == {"allreduce path"}
    out = speculative_comparison(ranked, ranked[0], "eagle3", False, [])
    assert out is not None and out["verdict"] == "kept"  # the path's note is not speculation's
    # both inside their bands: the launch without speculation on the default path, with both notes
    spec_fused = _path_cand("flashinfer_fusion", 102.0 * band * 0.99, spec=True)
    ranked = [
        plain_custom,
        plain_fused,
        _path_cand("custom", 100.0 * band * 0.99, spec=True),
        spec_fused,
    ]
    rank(ranked, [])
    assert (
        ranked[0] is not plain_custom and ranked[0].path == "custom" and not ranked[0].speculative
    )
    assert set(ranked[0].uncertain) == {"allreduce path", "speculative"}
    out = speculative_comparison(ranked, ranked[0], "eagle3", False, [])
    assert out is not None and out["verdict"] == "uncertain"


# When no launch is left, the one line says why: the blocking rules, and the kernels SGLang's wheels
# lack that made the search leave launches out (it once ended in an empty reason).
def test_launches_left_out_for_a_missing_kernel_are_named():
    with pytest.raises(TopoctlError) as raised:
        ranking.require_a_launch(
            [], [], ["moe.flashinfer_trtllm: missing for SM120 in SGLang 0.5.14"]
        )
    message = raised.value.message
    assert "topoctl-kernel-not-built" in message and "SM120" in message
    assert raised.value.exit_code == 1 and "kernel-matrix" in raised.value.hint


def test_nothing_left_at_all_still_says_so():
    with pytest.raises(TopoctlError) as raised:
        ranking.require_a_launch([], [])
    assert raised.value.message.endswith("no candidate launch was left to judge")


def test_a_candidate_left_is_no_error():
    ranking.require_a_launch([object()], [], ["x"])  # type: ignore[list-item]
