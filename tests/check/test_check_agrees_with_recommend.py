"""`check` and `recommend` hold a launch to the same limits, each reported once: parallel sizes, the
speculative parameters given partly, and the options both commands share."""

from __future__ import annotations

import json

import pytest

H100 = ["--system", "h100-8x-nvswitch"]


def findings(cli, argv):
    code, out, err = cli([*argv[:1], "--format", "json", *argv[1:]])
    results = json.loads(out)["results"]
    return code, [item for result in results for item in result["findings"]], err


# ---------------------------------------------------------------------------------- speculative
# parameters


def test_the_number_of_steps_alone_is_one_block(cli):
    # With the number of steps but no top-k, SGLang's post-init fails with a TypeError (the oracle's
    # outcome for every release it ran; docs/rule-changes.md): one block, nothing else.
    tokens = [
        "--tp-size",
        "8",
        "--speculative-algorithm",
        "EAGLE3",
        "--speculative-draft-model-path",
        "/d",
        "--speculative-num-steps",
        "3",
    ]
    code, items, err = findings(cli, ["check", *H100, "--", *tokens])
    assert code == 1, err
    assert [(i["id"], i["severity"]) for i in items] == [
        ("speculative-num-steps-without-topk", "block")
    ], items


@pytest.mark.parametrize(
    "given",
    [
        ["--speculative-eagle-topk", "1"],
        ["--speculative-num-draft-tokens", "4"],
    ],
)
def test_one_speculative_parameter_alone_is_one_blocking_finding(cli, tmp_path, given):
    tokens = [
        "--tp-size",
        "8",
        "--speculative-algorithm",
        "EAGLE3",
        "--speculative-draft-model-path",
        "/d",
        *given,
    ]
    env = tmp_path / "launch.env"
    env.write_text("SGLANG_ARGS='" + " ".join(tokens) + "'\n")
    for argv in (["check", str(env), *H100], ["check", *H100, "--", *tokens]):
        code, items, err = findings(cli, argv)
        assert code == 1, err
        assert [(i["id"], i["severity"]) for i in items] == [
            ("speculative-params-all-or-none", "block")
        ], items
        assert given[0] in items[0]["message"]


def test_all_three_speculative_parameters_or_none_pass(cli):
    base = [
        "--tp-size",
        "8",
        "--speculative-algorithm",
        "EAGLE3",
        "--speculative-draft-model-path",
        "/d",
    ]
    for extra in (
        [],
        [
            "--speculative-num-steps",
            "3",
            "--speculative-eagle-topk",
            "1",
            "--speculative-num-draft-tokens",
            "4",
        ],
    ):
        code, items, err = findings(cli, ["check", *H100, "--", *base, *extra])
        assert code == 0, (items, err)
        assert not [i for i in items if "speculative" in i["id"]]


def test_the_speculative_group_is_written_once_in_the_settings_table():
    from topoctl.autoconf import search
    from topoctl.rules.sglang import spelling as table

    assert search.SPEC_GROUP == tuple(table.table()["speculative_group"])


def test_partial_speculative_rule_blocks_in_the_rules_listing(cli):
    code, out, _ = cli(["rules", "list", "--format", "json"])
    assert code in (0, None)
    rows = {row["id"]: row for row in json.loads(out)["rules"]}
    assert rows["speculative-params-all-or-none"]["severity"] == "block"


# ---------------------------------------------------------------------------------------- parallel
# sizes


@pytest.mark.parametrize(
    "args, rule_id, text",
    [
        (
            "--tp-size 8 --ep-size 3",
            "topoctl-ep-size-invalid",
            "--ep-size 3 does not divide the tensor parallel size 8",
        ),
        # without --tp-size SGLang runs TP 1 (its flag default), not TP 8
        (
            "--ep-size 3",
            "topoctl-ep-size-invalid",
            "--ep-size 3 is larger than the tensor parallel size 1",
        ),
        (
            "--ep-size 8",
            "topoctl-ep-size-invalid",
            "--ep-size 8 is larger than the tensor parallel size 1",
        ),
        (
            "--tp-size 4 --ep-size 8",
            "topoctl-ep-size-invalid",
            "--ep-size 8 is larger than the tensor parallel size 4",
        ),
        ("--tp-size 16", "topoctl-tp-exceeds-gpus", "--tp-size 16 is more than the 8 GPUs"),
    ],
)
def test_check_blocks_the_parallel_sizes_recommend_refuses(cli, tmp_path, args, rule_id, text):
    env = tmp_path / "launch.env"
    env.write_text(f"SGLANG_ARGS='{args}'\n")
    for argv in (["check", str(env), *H100], ["check", *H100, "--", *args.split()]):
        code, items, err = findings(cli, argv)
        assert code == 1, err
        sizes = [i for i in items if i["id"].startswith("topoctl-") and i["severity"] == "block"]
        assert [(i["id"], i["severity"]) for i in sizes] == [(rule_id, "block")], items
        assert text in sizes[0]["message"]
    code, items, _ = findings(cli, ["check", str(env), *H100])
    assert [i["where"] for i in items if i["id"] == rule_id] == [f"{env}:1"]


@pytest.mark.parametrize("tp", [1, 2, 3, 4, 6, 8, 9])
@pytest.mark.parametrize("ep", [1, 2, 3, 4, 8])
def test_check_and_recommend_agree_on_every_parallel_size(cli, tp, ep):
    """recommend refuses a size pair (exit 2) exactly when check blocks it; otherwise check passes
    its launch."""
    code, out, err = cli(
        ["recommend", *H100, "--tp-size", str(tp), "--ep-size", str(ep), "--format", "args"]
    )
    assert code in (0, 2), err
    tokens = out.split() if code == 0 else ["--tp-size", str(tp), "--ep-size", str(ep)]
    check_code, items, check_err = findings(cli, ["check", *H100, "--", *tokens])
    sizes = [
        i["id"] for i in items if i["id"] in ("topoctl-tp-exceeds-gpus", "topoctl-ep-size-invalid")
    ]
    if code == 0:
        assert check_code == 0 and not sizes, (out, items, check_err)
    else:
        assert check_code == 1 and len(sizes) == 1, (err, items)


# ------------------------------------------------------------------------------------------ shared
# options


def _command(path):
    from topoctl.cli.app import cli as cli_group

    command = cli_group
    for name in path:
        command = (
            command.get_command(None, name)
            if hasattr(command, "get_command")
            else command.commands[name]
        )
    return command


def _option(command, long_name):
    import click

    found = [
        p
        for p in command.params
        if isinstance(p, click.Option) and long_name in p.opts + p.secondary_opts
    ]
    assert len(found) == 1, (command.name, long_name)
    return found[0]


TARGET_COMMANDS = [["show"], ["recommend"], ["check"]]
RULES_COMMANDS = [["recommend"], ["check"], ["rules", "list"], ["rules", "explain"]]


@pytest.mark.parametrize("long_name", ["--topology", "--system", "--fallback-system"])
def test_target_options_are_the_same_option_in_show_recommend_and_check(long_name):
    options = [_option(_command(path), long_name) for path in TARGET_COMMANDS]
    assert len({(o.name, o.metavar, o.help, o.multiple) for o in options}) == 1


@pytest.mark.parametrize("long_name", ["--rules", "--disable"])
def test_rules_options_are_the_same_option_wherever_rules_are_loaded(long_name):
    paths = RULES_COMMANDS + ([["rules", "test"]] if long_name == "--rules" else [])
    options = [_option(_command(path), long_name) for path in paths]
    assert len({(o.name, o.metavar, o.help, o.multiple) for o in options}) == 1


def test_rules_test_takes_rules_but_not_disable():
    names = {opt for p in _command(["rules", "test"]).params for opt in getattr(p, "opts", [])}
    assert "--rules" in names and "--disable" not in names


def test_show_falls_back_to_a_built_in_system_where_no_gpu_is_seen(cli, monkeypatch):
    import topoctl.probe.collect as collect
    from topoctl.core.errors import NoGpuError

    def no_gpu():
        raise NoGpuError("no NVIDIA driver")

    monkeypatch.setattr(collect, "probe_live", no_gpu)
    code, out, err = cli(["show", "--no-color", "--fallback-system", "rtx-pro-6000-8x-pcie"])
    assert code in (0, None), err
    assert "RTX PRO 6000" in out and "GPU7" in out
    assert "rtx-pro-6000-8x-pcie" in err and "--fallback-system" in err
    code, out, err = cli(
        [
            "show",
            "--no-color",
            "--system",
            "h100-8x-nvswitch",
            "--fallback-system",
            "rtx-pro-6000-8x-pcie",
        ]
    )
    assert code in (0, None) and "H100" in out and err == ""
    assert cli(["show"])[0] == 3


@pytest.mark.parametrize(
    "argv, tail",
    [
        (["rules", "list"], []),
        (["rules", "explain", "nccl-ll128-without-nvlink"], []),
        (["recommend", *H100], []),
        (["check", *H100], ["--", "--tp-size", "8"]),
    ],
)
def test_disable_needs_a_reason_everywhere(cli, argv, tail):
    code, out, err = cli([*argv, "--disable", "nccl-ll128-without-nvlink", *tail])
    assert code == 2 and out == "" and "write ID=REASON" in err


# ------------------------------------------------------------------------- flag data and version,
# once each


def _count_calls(monkeypatch, module, name):
    calls = []
    original = getattr(module, name)

    def counting(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return calls


def test_check_reads_the_flag_data_once_per_launch(cli, monkeypatch, tmp_path):
    import topoctl.rules.sglang.flags as flags_module

    first, second = tmp_path / "a.env", tmp_path / "b.env"
    first.write_text("SGLANG_ARGS='--tp-size 8'\n")
    second.write_text("NCCL_DEBUG='INFO'\n")  # no SGLANG_ARGS: its environment is still judged
    loads = _count_calls(monkeypatch, flags_module, "load_flag_set")
    code, out, err = cli(["check", str(first), str(second), *H100, "--", "--tp-size", "8"])
    assert code == 0, out + err
    assert len(loads) == 3  # two files and one command


@pytest.mark.parametrize(
    "command, tail", [(["recommend", *H100], []), (["check", *H100], ["--", "--tp-size", "8"])]
)
def test_sglang_version_is_normalised_once(cli, monkeypatch, command, tail):
    import topoctl.rules.sglang.flags as flags_module

    calls = _count_calls(monkeypatch, flags_module, "normalise_version")
    code, out, err = cli([*command, "--sglang-version", "v0.5.12+cu129", *tail])
    assert code == 0, out + err
    assert [args for args in calls if args and args[0] == "v0.5.12+cu129"] == [("v0.5.12+cu129",)]


def test_a_launch_without_tp_size_is_judged_at_sglangs_default_and_warned(cli):
    code, items, err = findings(cli, ["check", *H100, "--", "--model-path", "M"])
    assert code == 0, err
    warned = [i for i in items if i["id"] == "topoctl-tp-size-not-given"]
    assert len(warned) == 1 and warned[0]["severity"] == "warn"
    assert "tensor parallel size 1" in warned[0]["message"] and "8 GPUs" in warned[0]["message"]
    code, items, _ = findings(cli, ["check", *H100, "--", "--model-path", "M", "--tp-size", "8"])
    assert code == 0 and not [i for i in items if i["id"] == "topoctl-tp-size-not-given"]
