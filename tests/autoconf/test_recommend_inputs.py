"""recommend refuses launches SGLang (and topoctl check) would refuse, checks its option values
before use, normalises SGLang versions, and writes a start line that survives quoted values."""

from __future__ import annotations

import json
import subprocess

import pytest
from rules_helpers import one_rule

H100 = ["--system", "h100-8x-nvswitch"]
RTX = ["--system", "rtx-pro-6000-8x-pcie"]


def one_line_error(code, out, err, contains):
    assert code == 2, err
    assert out == ""
    assert "Traceback" not in err and len(err.splitlines()) <= 2, err
    assert contains in err.splitlines()[0], err


@pytest.mark.parametrize(
    "argv, contains",
    [
        (["--tp-size", "16"], "--tp-size 16 is more than the 8 GPUs"),
        (["--ep-size", "16"], "--ep-size 16 is larger than the tensor parallel size 8"),
        (["--tp-size", "4", "--ep-size", "8"], "--ep-size 8 is larger"),
        (["--tp-size", "8", "--ep-size", "3"], "--ep-size 3 does not divide"),
        (["--tp-size", "6", "--ep-size", "4"], "does not divide"),
    ],
)
def test_parallel_sizes_check_would_block_are_refused(cli, argv, contains):
    code, out, err = cli(["recommend", *H100, *argv])
    one_line_error(code, out, err, contains)
    assert "hint:" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["--tp-size", "8", "--ep-size", "8"],
        ["--tp-size", "4", "--ep-size", "2"],
        ["--ep-size", "4"],
    ],
)
def test_parallel_sizes_that_fit_are_written_and_pass_check(cli, tmp_path, argv):
    env = str(tmp_path / "launch.env")
    code, _, err = cli(["recommend", *H100, *argv, "-o", env])
    assert code == 0, err
    assert cli(["check", env, *H100])[0] == 0


@pytest.mark.parametrize(
    "content, key",
    [
        ({"num_hidden_layers": 5000, "hidden_size": 7168}, "num_hidden_layers"),
        ({"num_hidden_layers": 61, "hidden_size": 2_000_000}, "hidden_size"),
        ({"num_hidden_layers": 0, "hidden_size": 7168}, "num_hidden_layers"),
        ({"num_hidden_layers": True, "hidden_size": 7168}, "num_hidden_layers"),
        ({"num_hidden_layers": 61.0, "hidden_size": 7168}, "num_hidden_layers"),
        ({"num_hidden_layers": 61, "hidden_size": 7168.0}, "hidden_size"),
        ({"text_config": {"num_hidden_layers": 61, "hidden_size": -1}}, "hidden_size"),
    ],
)
def test_implausible_model_config_names_the_key(cli, tmp_path, content, key):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    code, out, err = cli(["recommend", *RTX, "--model-config", str(path)])
    one_line_error(code, out, err, key)


def test_model_config_at_the_limits_is_accepted(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(
        json.dumps({"num_hidden_layers": 1000, "hidden_size": 1_000_000}), encoding="utf-8"
    )
    code, _, err = cli(["recommend", *RTX, "--model-config", str(path)])
    assert code == 1 and "does not fit" in err  # read and accepted; a model that size loads nowhere


@pytest.mark.parametrize(
    "argv, contains",
    [
        (["--model", ""], "--model is empty"),
        (["--model", "  "], "--model is empty"),
        (["--model-config", ""], "--model-config is empty"),
        (["--sglang-version", ""], "--sglang-version is empty"),
        (["--speculative", "eagle3", "--draft-model", ""], "--draft-model is empty"),
        (["--draft-model", "/models/eagle3"], "--draft-model needs --speculative eagle3"),
    ],
)
def test_empty_values_and_draft_model_alone_are_usage_errors(cli, argv, contains):
    code, out, err = cli(["recommend", *RTX, *argv])
    one_line_error(code, out, err, contains)
    assert "hint:" in err


@pytest.mark.parametrize(
    "name, meant",
    [
        ("KIMI-K2.5", "kimi-k2.5"),
        ("kimi", "kimi-k2.5"),
        ("deepseek-v4", "deepseek-v3"),
        ("Llama-3.1-70B", "llama-3.1-70b"),
    ],
)
def test_unknown_model_gets_did_you_mean(cli, name, meant):
    code, out, err = cli(["recommend", *RTX, "--model", name])
    one_line_error(code, out, err, f"did you mean {meant}")


@pytest.mark.parametrize("given", ["0.5.12+cu129", "v0.5.12", " 0.5.12 ", "V0.5.12"])
def test_sglang_version_is_normalised(cli, given):
    code, out, err = cli(["recommend", *RTX, "--sglang-version", given])
    assert code == 0, err
    assert "TOPOCTL_SGLANG_VERSION='0.5.12'" in out
    assert "TOPOCTL_SGLANG_FLAGS_VERSION='0.5.12'" in out
    assert "nearest older" not in out and err == ""


def test_installed_version_with_a_build_tag_is_normalised(cli, tmp_path):
    with open("fixtures/rtx-4090-2x-pcie-no-p2p/snapshot.json", encoding="utf-8") as handle:
        data = json.load(handle)
    data["software"]["sglang"] = "0.5.12+cu129"
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    code, out, err = cli(["recommend", "--topology", str(path)])
    assert code == 0, err
    assert "TOPOCTL_SGLANG_VERSION='0.5.12'" in out and "nearest older" not in out


def test_version_newer_than_all_flag_data_is_noted_on_stderr(cli):
    code, out, err = cli(["recommend", *RTX, "--sglang-version", "99.0"])
    assert code == 0
    assert len(err.splitlines()) == 1 and "newest known version" in err and "99.0" in err
    code, out, err = cli(["recommend", *RTX, "--sglang-version", "0.5.23"])
    assert err == ""


def test_start_line_handles_a_draft_model_path_with_a_space(cli, tmp_path):
    env = tmp_path / "launch.env"
    code, _, err = cli(
        [
            "recommend",
            "--system",
            "h200-4x-nvswitch-vm",
            "--speculative",
            "eagle3",
            "--force-speculative",
            "--draft-model",
            "/models/my draft",
            "-o",
            str(env),
        ]
    )
    assert code == 0, err
    text = env.read_text(encoding="utf-8")
    start = next(line for line in text.splitlines() if "python -m sglang.launch_server" in line)
    assert 'eval "set -- $SGLANG_ARGS"' in start and '"$@"' in start
    command = (
        start.split("flags:", 1)[1]
        .strip()
        .replace("python -m sglang.launch_server --model-path MODEL", "printf '[%s]\\n'")
    )
    proc = subprocess.run(
        ["sh", "-c", f"set -a; . ./launch.env; set +a; {command}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "[/models/my draft]" in proc.stdout.splitlines()


def test_disable_reason_in_json_is_escaped_once(cli):
    code, out, _ = cli(
        ["recommend", *RTX, "--format", "json", "--disable", "nccl-ll128-without-nvlink=ok\nx"]
    )
    assert code == 0
    assert json.loads(out)["disabled"] == [
        {"rule_id": "nccl-ll128-without-nvlink", "reason": "ok\nx"}
    ]
    code, out, _ = cli(["recommend", *RTX, "--disable", "nccl-ll128-without-nvlink=ok\nx"])
    assert "# Rule nccl-ll128-without-nvlink disabled: ok\\nx" in out


def test_recommend_help_says_what_options_need_and_read(cli):
    code, out, _ = cli(["recommend", "--help"])
    assert code == 0
    flat = " ".join(out.split())
    for text in (
        "needs --draft-model",
        "needs --speculative eagle3",
        "num_hidden_layers",
        "hidden_size",
        "n_routed_experts",
    ):
        assert text in flat, text


@pytest.mark.parametrize("sub", ["list", "explain", "test", "schema", "facts"])
def test_every_rules_subcommand_has_examples(cli, sub):
    code, out, _ = cli(["rules", sub, "--help"])
    assert code == 0
    assert "Examples:" in out
    examples = out.split("Examples:", 1)[1]
    assert f"topoctl rules {sub}" in examples
    for line in examples.splitlines():  # a \b block keeps each example on its own unwrapped line
        if "topoctl rules" in line:
            assert line.strip().startswith("topoctl rules"), line


def test_rules_test_without_any_rule_is_exit_2(cli, tmp_path):
    code, out, err = cli(["rules", "test", "--no-builtin"])
    one_line_error(code, out, err, "no rules to test")
    assert "hint:" in err
    (tmp_path / "empty").mkdir()
    code, out, err = cli(["rules", "test", "--no-builtin", "--rules", str(tmp_path / "empty")])
    one_line_error(code, out, err, "no rule files")


def test_same_rules_path_twice_is_read_once(cli, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "r.yaml").write_text(one_rule("site-once"), encoding="utf-8")
    (tmp_path / "link").symlink_to(site)
    paths = [str(site), str(site) + "/", str(site / "r.yaml"), str(tmp_path / "link")]
    argv = [arg for path in paths for arg in ("--rules", path)]
    code, out, err = cli(["rules", "test", "--no-builtin", *argv])
    assert code == 0, err
    assert "(1 rules)" in out
    code, out, err = cli(["rules", "list", *argv])
    assert code == 0, err
    assert out.count("site-once") == 1
    code, _, err = cli(["recommend", *RTX, *argv])
    assert code == 0, err


@pytest.mark.parametrize("memory", [1, 1000, 1024**2 - 1])
def test_a_gpu_memory_reading_under_one_mib_is_no_reading(cli, tmp_path, memory):
    """Found by tests/cli/test_commands_over_schema_snapshots.py: memory_total_bytes below 1 MiB
    (schema-valid, a broken reading) was 0 MiB to SGLang's memory model and `recommend` died
    dividing by it (exit 70). Such a reading counts as none: the datasheet's memory is used, as for
    a null."""
    from topoctl.snapshot.catalogue import system_snapshot

    data = system_snapshot("h200-4x-nvswitch-vm")
    for gpu in data["gpus"]:
        gpu["memory_total_bytes"] = memory
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    code, out, err = cli(["recommend", "--topology", str(path), "--model", "llama-3.1-8b"])
    assert code == 0, err
    for gpu in data["gpus"]:
        gpu["memory_total_bytes"] = None
    path.write_text(json.dumps(data))
    assert cli(["recommend", "--topology", str(path), "--model", "llama-3.1-8b"])[1] == out


@pytest.mark.parametrize("value", ["0", "-5", "1.5", "many"])
def test_a_bad_decode_context_is_one_usage_error(cli, value):
    code, out, err = cli(
        ["recommend", *H100, "--model", "llama-3.1-70b", "--decode-context", value]
    )
    one_line_error(code, out, err, "--decode-context")
