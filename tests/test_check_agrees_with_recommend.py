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
