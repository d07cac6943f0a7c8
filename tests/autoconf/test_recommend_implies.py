"""recommend judges each candidate as SGLang will run it, the way check does: what SGLang sets by
itself (effect.implies, rules/knowledge/sglang_sets.yaml) reaches the candidate's cost, its evidence
and the rule preferences, not only the blocking rules.

The site rule below is written here (a site policy "serve deterministically"), not shipped
knowledge; what it makes SGLang do comes from the built-in rule
sglang-deterministic-inference-nccl-tree (SGLang turns custom allreduce off and sets
NCCL_ALGO=allreduce:tree with deterministic inference and TP > 1)."""

from __future__ import annotations

import json

from rules_helpers import site_policy_rule, write_rules

SITE = site_policy_rule(
    "site-serve-deterministically",
    "deterministic_inference",
    "--enable-deterministic-inference",
    "deterministic inference",
)


def test_a_path_sglang_turns_off_is_priced_as_the_path_that_runs(cli, tmp_path):
    folder = tmp_path / "rules"
    write_rules(folder, SITE)
    code, out, err = cli(
        [
            "recommend",
            "--system",
            "h100-8x-nvswitch",
            "--model",
            "llama-3.1-70b",
            "--tp-size",
            "8",
            "--rules",
            str(folder),
            "--format",
            "json",
        ]
    )
    assert code == 0, err
    doc = json.loads(out)
    chosen = doc["chosen"]
    assert doc["settings"]["deterministic_inference"] is True
    # custom allreduce is SGLang's default and the written launch does not turn it off; with
    # deterministic inference SGLang turns it off itself, so the launch runs NCCL and is priced as
    # NCCL
    call = next(
        item
        for item in chosen["estimate"]["inputs"]
        if item["name"] == "allreduce latency per call (decode)"
    )
    assert call["source"].startswith("h100_sxm/nccl:"), (
        call
    )  # the op table's NCCL rows, not its custom allreduce
    assert any(
        "SGLang sets custom_all_reduce=False by itself here "
        "(sglang-deterministic-inference-nccl-tree)" in e
        for e in chosen["evidence"]
    )
    assert (
        any("runs allreduce path nccl, not custom" in e for e in chosen["evidence"])
        or chosen["allreduce_path"] == "nccl"
    )
    # every custom-path alternative is priced the same as the NCCL one: nothing is faster by a path
    # that never runs
    same = {
        round(alt["predicted_tok_s"], 3)
        for alt in [chosen, *doc["alternatives"]]
        if alt["tp_size"] == 8 and alt["allreduce_path"] in ("custom", "nccl")
    }
    assert len(same) == 1, same


def test_check_agrees_with_the_deterministic_launch(cli, tmp_path):
    folder = tmp_path / "rules"
    write_rules(folder, SITE)
    target = tmp_path / "launch.env"
    code, _, err = cli(
        [
            "recommend",
            "--system",
            "h100-8x-nvswitch",
            "--model",
            "llama-3.1-70b",
            "--tp-size",
            "8",
            "--rules",
            str(folder),
            "-o",
            str(target),
        ]
    )
    assert code == 0, err
    code, out, err = cli(
        ["check", str(target), "--system", "h100-8x-nvswitch", "--rules", str(folder)]
    )
    assert code == 0, out + err
