"""autoconf/ranking.py: the order of candidate launches. A remedy of a blocking rule (its `prefer`, e.g.
NCCL_P2P_DISABLE=1) left out ranks a launch down before speed; with the same remedies left out the launch
model's predicted tok/s decides, and a tie in prediction is reported only between candidates that leave out
the same number of remedies. Candidates here are built by hand (no rules run)."""
from __future__ import annotations

from dataclasses import dataclass

from topoctl.autoconf.ranking import rank, ties, winner_reasons
from topoctl.autoconf.space import Candidate, Space


@dataclass
class _Predicted:  # the one field of launch_model.Estimate the ranking reads
    tokens_per_s: float
    objective: str = "latency"


def _cand(tp: int, tok_s: float, remedies: int = 0, dp: int = 1, gpus: tuple[int, ...] = (),
          asked: int | None = None) -> Candidate:
    launch = {"tp_size": tp, **({"dp_size": dp} if dp > 1 else {})}
    return Candidate("nccl", launch, predicted=_Predicted(tok_s), remedies=remedies, gpus=gpus,
                     remedies_asked=remedies if asked is None else asked)


def test_a_remedy_of_a_blocking_rule_comes_before_a_faster_prediction():
    fast, safe = _cand(2, 120.0, asked=1), _cand(2, 90.0, remedies=1)
    ranked = [fast, safe]
    rank(ranked, [])
    assert ranked == [safe, fast]


def test_an_option_no_blocking_rule_asks_anything_of_competes_on_speed():
    # TP 1 x DP 2 has no pair, so no remedy is asked of it; TP 2 honours the one its group needs
    replicas, remedied, unremedied = _cand(1, 100.0, dp=2), _cand(2, 90.0, remedies=1), _cand(2, 130.0, asked=1)
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
    assert reasons["tp_size"] == ["launch model: the fastest TP size that fits (latency, 1 replica on 4 GPUs): GPUs 2,3"]
    replicas = _cand(2, 95.0, dp=2, gpus=(0, 1, 4, 5))
    reasons, _ = winner_reasons(replicas, space, {"nccl": {}}, True, 8)
    assert reasons["tp_size"] == ["topoctl: tensor parallel across 2 GPUs (--tp-size): GPUs 0,1,4,5 (replicas 0,1 / 4,5)"]
    assert reasons["dp_size"] == ["2 data-parallel replicas of 2 GPUs (--dp-size): 4 of the 8 GPUs"]
    whole = _cand(4, 95.0, gpus=(0, 1, 2, 3))
    reasons, _ = winner_reasons(whole, space, {"nccl": {}}, False, 4)
    assert "GPUs 0" not in reasons["tp_size"][0]


# ------------------------------------------------ speculation: kept, uncertain or slower, by the band for gains

@dataclass
class _SpecPredicted(_Predicted):
    moe: bool = False


def _verdict(gain: float, moe: bool) -> dict:
    """The speculative comparison recommend prints when the launch model alone predicts EAGLE-3 at `gain` x
    the same launch without it (TP 4, one path, nothing measured)."""
    from topoctl.autoconf.ranking import speculative_comparison

    fit = object() if moe else None
    plain = Candidate("nccl", {"tp_size": 4}, predicted=_SpecPredicted(100.0, moe=moe), fit=fit)
    spec = Candidate("nccl", {"tp_size": 4, "speculative_algorithm": "eagle3"},
                     predicted=_SpecPredicted(100.0 * gain, moe=moe), fit=fit)
    ranked = [plain, spec]
    rank(ranked, [])
    out = speculative_comparison(ranked, ranked[0], "eagle3", False, [])
    assert out is not None
    return out


def test_speculation_is_called_slower_only_when_its_loss_clears_the_band():
    from topoctl.autoconf.launch_model import band_of

    for moe, group in ((True, "gain-moe"), (False, "gain-dense")):
        band, _ = band_of(group)
        assert band > 1.05  # the fitted bands (autoconf/data/decode-fit.yaml) leave room on both sides
        inside_loss = _verdict(1.0 / band * 1.01, moe)  # below 1 but inside the band: uncertain, not slower
        assert inside_loss["verdict"] == "uncertain" and inside_loss["emitted"] == "without", group
        assert f"inside the launch model's band for speculative gains (x/{band:.2f})" in inside_loss["message"]
        assert "bench_one_batch_server --batch-size 1" in inside_loss["message"]
        assert "slower" not in inside_loss["message"]
        assert _verdict(0.99, moe)["verdict"] == "uncertain"
        cleared_loss = _verdict(1.0 / band * 0.99, moe)  # the loss clears the band: slower
        assert cleared_loss["verdict"] == "slower" and cleared_loss["emitted"] == "without", group
        assert cleared_loss["message"].startswith("EAGLE-3 is slower here")
        inside_gain = _verdict(band * 0.99, moe)  # above 1 but inside the band: uncertain, launched without it
        assert inside_gain["verdict"] == "uncertain" and inside_gain["emitted"] == "without", group
        cleared_gain = _verdict(band * 1.01, moe)  # the gain clears the band: kept
        assert cleared_gain["verdict"] == "kept" and cleared_gain["emitted"] == "with", group


def test_a_measured_number_is_not_second_guessed_by_the_band():
    from topoctl.autoconf.ranking import speculative_comparison

    plain = Candidate("nccl", {"tp_size": 4}, predicted=_SpecPredicted(100.0), estimate=100.0, estimate_level=3)
    spec = Candidate("nccl", {"tp_size": 4, "speculative_algorithm": "eagle3"}, predicted=_SpecPredicted(99.0),
                     estimate=99.0, estimate_level=3)
    ranked = [spec, plain]
    rank(ranked, [])
    out = speculative_comparison(ranked, ranked[0], "eagle3", False, [])
    assert out is not None and out["verdict"] == "slower"  # 0.99x, measured on both sides: no band applies
