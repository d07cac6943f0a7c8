"""`check` and `recommend` hold a launch to the same limits, each reported once: parallel sizes, the
speculative parameters given partly, and the options both commands share."""
from __future__ import annotations

import json

import pytest

from topoctl.cli import main

H100 = ["--system", "h100-8x-nvswitch"]


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def findings(capsys, argv):
    code, out, err = run(capsys, [*argv[:1], "--format", "json", *argv[1:]])
    results = json.loads(out)["results"]
    return code, [item for result in results for item in result["findings"]], err


# ---------------------------------------------------------------------------------- speculative parameters

@pytest.mark.parametrize("given", [
    ["--speculative-num-steps", "3"],
    ["--speculative-eagle-topk", "1"],
    ["--speculative-num-draft-tokens", "4"],
])
def test_one_speculative_parameter_alone_is_one_blocking_finding(capsys, tmp_path, given):
    tokens = ["--tp-size", "8", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/d", *given]
    env = tmp_path / "launch.env"
    env.write_text("SGLANG_ARGS='" + " ".join(tokens) + "'\n")
    for argv in (["check", str(env), *H100], ["check", *H100, "--", *tokens]):
        code, items, err = findings(capsys, argv)
        assert code == 1, err
        assert [(i["id"], i["severity"]) for i in items] == [("speculative-params-all-or-none", "block")], items
        assert given[0] in items[0]["message"]


def test_all_three_speculative_parameters_or_none_pass(capsys):
    base = ["--tp-size", "8", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/d"]
    for extra in ([], ["--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
                       "--speculative-num-draft-tokens", "4"]):
        code, items, err = findings(capsys, ["check", *H100, "--", *base, *extra])
        assert code == 0, (items, err)
        assert not [i for i in items if "speculative" in i["id"]]


def test_the_speculative_group_is_written_once_in_the_settings_table():
    from topoctl.autoconf import search
    from topoctl.autoconf import settings as table

    assert search.SPEC_GROUP == tuple(table.table()["speculative_group"])


def test_partial_speculative_rule_blocks_in_the_rules_listing(capsys):
    code, out, _ = run(capsys, ["rules", "list", "--format", "json"])
    assert code in (0, None)
    rows = {row["id"]: row for row in json.loads(out)["rules"]}
    assert rows["speculative-params-all-or-none"]["severity"] == "block"


# ---------------------------------------------------------------------------------------- parallel sizes

@pytest.mark.parametrize("args, rule_id, text", [
    ("--tp-size 8 --ep-size 3", "topoctl-ep-size-invalid", "--ep-size 3 does not divide the tensor parallel size 8"),
    ("--ep-size 3", "topoctl-ep-size-invalid", "--ep-size 3 does not divide the tensor parallel size 8"),
    ("--tp-size 4 --ep-size 8", "topoctl-ep-size-invalid", "--ep-size 8 is larger than the tensor parallel size 4"),
    ("--tp-size 16", "topoctl-tp-exceeds-gpus", "--tp-size 16 is more than the 8 GPUs"),
])
def test_check_blocks_the_parallel_sizes_recommend_refuses(capsys, tmp_path, args, rule_id, text):
    env = tmp_path / "launch.env"
    env.write_text(f"SGLANG_ARGS='{args}'\n")
    for argv in (["check", str(env), *H100], ["check", *H100, "--", *args.split()]):
        code, items, err = findings(capsys, argv)
        assert code == 1, err
        sizes = [i for i in items if i["id"].startswith("topoctl-")]
        assert [(i["id"], i["severity"]) for i in sizes] == [(rule_id, "block")], items
        assert text in sizes[0]["message"]
    code, items, _ = findings(capsys, ["check", str(env), *H100])
    assert [i["where"] for i in items if i["id"] == rule_id] == [f"{env}:1"]


@pytest.mark.parametrize("tp", [1, 2, 3, 4, 6, 8, 9])
@pytest.mark.parametrize("ep", [1, 2, 3, 4, 8])
def test_check_and_recommend_agree_on_every_parallel_size(capsys, tp, ep):
    """recommend refuses a size pair (exit 2) exactly when check blocks it; otherwise check passes its launch."""
    code, out, err = run(capsys, ["recommend", *H100, "--tp-size", str(tp), "--ep-size", str(ep), "--format", "args"])
    assert code in (0, 2), err
    tokens = out.split() if code == 0 else ["--tp-size", str(tp), "--ep-size", str(ep)]
    check_code, items, check_err = findings(capsys, ["check", *H100, "--", *tokens])
    sizes = [i["id"] for i in items if i["id"] in ("topoctl-tp-exceeds-gpus", "topoctl-ep-size-invalid")]
    if code == 0:
        assert check_code == 0 and not sizes, (out, items, check_err)
    else:
        assert check_code == 1 and len(sizes) == 1, (err, items)
