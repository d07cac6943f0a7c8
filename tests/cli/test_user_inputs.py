"""User input handling across commands: wrong files, wrong values, wrong options, hostile text.

Every expected failure must be one line `topoctl: error: ...` (plus at most one `  hint: ...` line) with
the documented exit code (2 bad usage or unreadable input, 3 no GPU), never a traceback; files given with
-o are never half-written; launch.env made from hostile snapshot text only assigns variables when sourced.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from model_helpers import fitting_model
from rules_helpers import one_rule

from topoctl.snapshot.catalogue import list_systems

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "fixtures")
RTX4090 = os.path.join(FIXTURES, "rtx-4090-2x-pcie-no-p2p", "snapshot.json")
SYSTEMS = list_systems()
H200 = ["--system", "h200-4x-nvswitch-vm"]


def assert_one_line_error(err, code, expected_code=2, contains=None):
    """The error contract: exit code, `topoctl: error:` first line, optional hint, nothing else."""
    assert code == expected_code, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert 1 <= len(lines) <= 2, err
    assert lines[0].startswith("topoctl: error: "), err
    if len(lines) == 2:
        assert lines[1].startswith("  hint: "), err
    if contains:
        assert contains in lines[0], err


def assert_click_usage_error(err, code, contains):
    assert code == 2, err
    assert "Traceback" not in err
    assert contains in err, err


def rtx4090() -> dict:
    with open(RTX4090, encoding="utf-8") as handle:
        return json.load(handle)


def write(path, text, mode="w"):
    with open(path, mode) as handle:
        handle.write(text)
    return str(path)


# ----------------------------------------------------------------------------------------------------------
# Front door: typos in subcommands and options


@pytest.mark.parametrize(
    "argv, contains",
    [
        (["prob"], "no such command 'prob'"),
        (["recomend"], "no such command 'recomend'"),
        (["rules", "lst"], "did you mean list?"),
        (["recommend", "--modle", "kimi-k2.5"], "Did you mean"),
        (["check", "--topolgy", "x.yaml", "launch.env"], "Did you mean"),
        (["show", "--sytem", "h100-8x-nvswitch"], "Did you mean"),
        (["recommend", "--format", "toml", *H200], "'toml' is not one of"),
        (["check", "--format", "jsn", "x.env", *H200], "'jsn' is not one of"),
        (["check", "--fail-on", "never", "x.env", *H200], "'never' is not one of"),
        (["rules", "list", "--severity", "fatal"], "'fatal' is not one of"),
        (["recommend", "--tp-size", "0", *H200], "not in the range"),
        (["recommend", "--tp-size", "abc", *H200], "not a valid integer"),
        (["recommend", "--ep-size", "-1", *H200], "not in the range"),
        (["rules", "explain"], "Missing argument"),
    ],
)
def test_typos_and_bad_option_values_are_usage_errors(cli, argv, contains):
    code, out, err = cli(argv)
    assert_click_usage_error(err, code, contains)
    assert out == ""


@pytest.mark.parametrize(
    "argv", [["probe"], ["show"], ["recommend"], ["check"], ["rules"], ["rules", "list"]]
)
def test_help_teaches_with_examples_or_a_command_list(cli, argv):
    code, out, err = cli([*argv, "--help"])
    assert code == 0
    assert "Usage: topoctl" in out
    if argv in (["probe"], ["show"], ["recommend"], ["check"], ["rules"]):
        assert "Examples:" in out
        assert out.count("topoctl " + argv[0]) >= 2, "examples should show the command itself"


def test_top_level_help_lists_every_subcommand(cli):
    code, out, _ = cli(["--help"])
    assert code == 0
    for name in ("probe", "show", "recommend", "check", "rules"):
        assert re.search(rf"^\s+{name}\s", out, re.M), name


# ----------------------------------------------------------------------------------------------------------
# Target selection: --system, --topology


@pytest.mark.parametrize("command", [["show"], ["recommend"], ["check", "x.env"]])
@pytest.mark.parametrize(
    "name", ["nope", "H100-8X-NVSWITCH", "../h100-8x-nvswitch", "h100-8x-nvswitch/", "no-gpu"]
)
def test_unknown_system_names_the_known_ones(cli, command, name):
    code, out, err = cli([*command, "--system", name])
    assert_one_line_error(err, code, 2, contains="unknown system")
    for known in SYSTEMS:
        assert known in err
    assert out == ""


@pytest.mark.parametrize("command", [["show"], ["recommend"], ["check", "x.env"]])
def test_topology_and_system_together_is_bad_usage(cli, command):
    code, out, err = cli([*command, "--topology", RTX4090, "--system", "h100-8x-nvswitch"])
    assert_one_line_error(err, code, 2, contains="not both")
    assert out == ""


def test_unknown_fallback_system_fails_before_probing(cli):
    code, out, err = cli(["recommend", "--fallback-system", "nope"])
    assert_one_line_error(err, code, 2, contains="unknown system 'nope'")


# ----------------------------------------------------------------------------------------------------------
# Bad snapshot files: every reader (show, recommend, check, check --expect) says so in one line,
# exit 2


def _bad_snapshots(tmp_path):
    base = rtx4090()
    files = {
        "missing": str(tmp_path / "missing.json"),
        "empty": write(tmp_path / "empty.json", ""),
        "blank-yaml": write(tmp_path / "blank.yaml", "\n\n   \n"),
        "garbage": write(tmp_path / "garbage.bin", bytes(range(128, 256)) * 20, "wb"),
        "nul": write(tmp_path / "nul.json", b"\x00\x01\x02{", "wb"),
        "python-tag": write(
            tmp_path / "tag.yaml", f'!!python/object/apply:os.system ["touch {tmp_path}/pwned"]\n'
        ),
        "python-tag-nested": write(
            tmp_path / "tag2.yaml",
            f'schema_version: 1\ngpus: !!python/object/apply:os.system ["touch {tmp_path}/pwned"]\n',
        ),
        "json-array": write(tmp_path / "arr.json", "[1, 2, 3]\n"),
        "json-string": write(tmp_path / "str.json", '"hello"\n'),
        "json-null": write(tmp_path / "null.json", "null\n"),
        "yaml-int": write(tmp_path / "int.yaml", "42\n"),
        "bad-json": write(tmp_path / "bad.json", '{"schema_version": 1,\n'),
        "folder": str(tmp_path),
    }
    variants = {
        "schema-2": lambda d: d.update(schema_version=2),
        "schema-string": lambda d: d.update(schema_version="1"),
        "no-schema": lambda d: d.pop("schema_version"),
        "no-pairs": lambda d: d.pop("pairs"),
        "null-pairs": lambda d: d.update(pairs=None),
        "no-summary": lambda d: d.pop("summary"),
        "no-software": lambda d: d.pop("software"),
        "gpus-not-list": lambda d: d.update(gpus={"0": {}}),
        "gpu-without-index": lambda d: d["gpus"][0].pop("index"),
        "pair-without-p2p": lambda d: d["pairs"][0].pop("p2p"),
    }
    for name, change in variants.items():
        data = copy.deepcopy(base)
        change(data)
        files[name] = write(tmp_path / f"{name}.json", json.dumps(data))
    return files


BAD_SNAPSHOT_NAMES = [
    "missing",
    "empty",
    "blank-yaml",
    "garbage",
    "nul",
    "python-tag",
    "python-tag-nested",
    "json-array",
    "json-string",
    "json-null",
    "yaml-int",
    "bad-json",
    "folder",
    "schema-2",
    "schema-string",
    "no-schema",
    "no-pairs",
    "null-pairs",
    "no-summary",
    "no-software",
    "gpus-not-list",
    "gpu-without-index",
    "pair-without-p2p",
]


@pytest.mark.parametrize("which", BAD_SNAPSHOT_NAMES)
@pytest.mark.parametrize("command", ["show", "recommend", "check", "check-expect"])
def test_bad_snapshot_is_one_line_exit_2(cli, tmp_path, which, command):
    path = _bad_snapshots(tmp_path)[which]
    if command == "check-expect":
        env = write(tmp_path / "launch.env", "SGLANG_ARGS='--tp-size 4'\n")
        argv = ["check", env, *H200, "--expect", path]
    elif command == "check":
        argv = [
            "check",
            "--topology",
            path,
            "--",
            "python",
            "-m",
            "sglang.launch_server",
            "--tp",
            "2",
        ]
    else:
        argv = [command, "--topology", path]
    code, out, err = cli(argv)
    assert_one_line_error(err, code, 2)
    assert out == ""
    assert not os.path.exists(tmp_path / "pwned"), "a YAML tag ran code"


def test_snapshot_yaml_and_json_give_the_same_launch(cli, tmp_path):
    import yaml

    yaml_path = write(tmp_path / "machine.yaml", yaml.safe_dump(rtx4090()))
    _, from_json, _ = cli(["recommend", "--topology", RTX4090])
    _, from_yaml, _ = cli(["recommend", "--topology", yaml_path])
    assert from_json == from_yaml


# ----------------------------------------------------------------------------------------------------------
# recommend: same inputs, same bytes


@pytest.mark.parametrize("system", SYSTEMS)
@pytest.mark.parametrize("fmt", ["env", "args", "json", "yaml"])
def test_recommend_twice_is_byte_identical(cli, system, fmt):
    argv = [
        "recommend",
        "--system",
        system,
        "--format",
        fmt,
        "--model",
        fitting_model(system),
        "--explain",
    ]
    first = cli(argv)
    second = cli(argv)
    assert first[0] == 0
    assert first == second


def test_recommend_is_byte_identical_across_processes_and_hash_seeds(tmp_path):
    outputs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "topoctl",
                "recommend",
                "--system",
                "rtx-pro-6000-8x-pcie",
                "--model",
                "kimi-k2.5",
                "--speculative",
                "eagle3",
                "--draft-model",
                "/m/d",
                "--format",
                "json",
            ],
            capture_output=True,
            env=env,
            cwd=str(tmp_path),
        )
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1]


# ----------------------------------------------------------------------------------------------------------
# launch.env from hostile snapshot text is safe to source

EVIL_TAGS = ["gpu", "summary-name", "hostname", "source", "driver", "nccl", "torch", "cuda", "arch"]


def _evil(tmp_path, tag):
    return (
        f"x'\"$(touch {tmp_path}/pwned-{tag})`touch {tmp_path}/pwned-bt-{tag}`\n"
        f"NCCL_EVIL=1; touch {tmp_path}/pwned-nl-{tag}\r\x1b[31mred\\'"
    )


def _hostile_snapshot(tmp_path) -> str:
    data = rtx4090()
    for gpu in data["gpus"]:
        gpu["name"] = _evil(tmp_path, "gpu")
    data["summary"]["gpu_names"] = [_evil(tmp_path, "summary-name")]
    data["summary"]["architectures"] = [_evil(tmp_path, "arch")]
    data["host"]["hostname"] = _evil(tmp_path, "hostname")
    data["source"]["name"] = _evil(tmp_path, "source")
    data["software"]["driver"] = _evil(tmp_path, "driver")
    data["software"]["nccl"] = _evil(tmp_path, "nccl")
    data["software"]["torch"] = _evil(tmp_path, "torch")
    data["software"]["cuda_driver"] = _evil(tmp_path, "cuda")
    return write(tmp_path / "evil.json", json.dumps(data))


ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*='(?:[^']|'\\'')*'$")


def _assert_only_assignments_and_comments(text):
    for line in text.splitlines():
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", line), repr(line)
        if not line or line.startswith("#"):
            continue
        assert ASSIGNMENT.match(line), repr(line)


def _source(tmp_path, env_file, extra=""):
    script = f'set -a; . "{env_file}"; set +a; echo "EVIL=${{NCCL_EVIL-unset}}"; {extra}'
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, cwd=str(tmp_path))


def test_launch_env_from_hostile_snapshot_only_assigns(cli, tmp_path):
    snapshot = _hostile_snapshot(tmp_path)
    env_file = str(tmp_path / "launch.env")
    code, out, err = cli(
        ["recommend", "--topology", snapshot, "--model", "llama-3.1-8b", "-o", env_file]
    )
    assert code == 0, err
    assert out == ""
    with open(env_file, encoding="utf-8") as handle:
        text = handle.read()
    _assert_only_assignments_and_comments(text)
    proc = _source(tmp_path, env_file, 'printf "%s" "$TOPOCTL_SYSTEM"')
    assert proc.returncode == 0, proc.stderr
    assert "EVIL=unset" in proc.stdout
    assert "$(touch" in proc.stdout  # the value came through as text
    assert not [name for name in os.listdir(tmp_path) if name.startswith("pwned")]


@pytest.mark.parametrize("fmt", ["args", "json", "yaml"])
def test_other_formats_from_hostile_snapshot_work(cli, tmp_path, fmt):
    snapshot = _hostile_snapshot(tmp_path)
    code, out, err = cli(["recommend", "--topology", snapshot, "--format", fmt])
    assert code == 0, err
    assert "\x1b" not in out
    if fmt == "json":
        json.loads(out)


def test_show_of_hostile_snapshot_keeps_one_line_per_gpu(cli, tmp_path):
    snapshot = _hostile_snapshot(tmp_path)
    code, out, err = cli(["show", "--topology", snapshot, "--no-color"])
    assert code == 0, err
    assert "\x1b" not in out and "\r" not in out
    gpu_lines = [
        line for line in out.splitlines() if line.startswith("GPU0:") or line.startswith("GPU1:")
    ]
    assert len(gpu_lines) == 2
    assert not any(line.startswith("NCCL_EVIL") for line in out.splitlines())


def test_hostile_draft_model_path_and_disable_reason_are_quoted(cli, tmp_path):
    env_file = str(tmp_path / "launch.env")
    draft = f"/models/my draft/$(touch {tmp_path}/pwned-dm)'q`touch {tmp_path}/pwned-bt`"
    reason = f"ok\ntouch {tmp_path}/pwned-reason; X='$(touch {tmp_path}/pwned-r2)"
    code, _, err = cli(
        [
            "recommend",
            "--system",
            "h100-8x-nvswitch",
            "--model",
            "llama-3.1-70b",
            "--speculative",
            "eagle3",
            "--draft-model",
            draft,
            "--force-speculative",
            "--disable",
            f"nccl-ll128-without-nvlink={reason}",
            "-o",
            env_file,
        ]
    )
    assert code == 0, err
    with open(env_file, encoding="utf-8") as handle:
        text = handle.read()
    _assert_only_assignments_and_comments(text)
    proc = _source(
        tmp_path,
        env_file,
        'eval "set -- $SGLANG_ARGS"; for a in "$@"; do printf "[%s]\\n" "$a"; done',
    )
    assert proc.returncode == 0, proc.stderr
    assert f"[{draft}]" in proc.stdout
    assert not [name for name in os.listdir(tmp_path) if name.startswith("pwned")]


# ----------------------------------------------------------------------------------------------------------
# recommend: versions, models, model configs


@pytest.mark.parametrize("version", ["abc", "1e9", "-1", "0.5.12; rm -rf /", "0.1", "0.5"])
def test_sglang_version_garbage_or_too_old_is_exit_2(cli, version):
    code, out, err = cli(
        ["recommend", "--system", "rtx-pro-6000-8x-pcie", "--sglang-version", version]
    )
    assert_one_line_error(err, code, 2)
    assert out == ""


def test_sglang_version_newer_than_any_flag_data_says_which_it_used(cli):
    code, out, err = cli(
        ["recommend", "--system", "rtx-pro-6000-8x-pcie", "--sglang-version", "99.0"]
    )
    assert code == 0, err
    assert "no flag data for 99.0" in out
    assert "TOPOCTL_SGLANG_VERSION='99.0'" in out


def test_sglang_version_garbage_in_snapshot_is_exit_2(cli, tmp_path):
    data = rtx4090()
    data["software"]["sglang"] = "not-a-version"
    path = write(tmp_path / "s.json", json.dumps(data))
    code, out, err = cli(["recommend", "--topology", path])
    assert_one_line_error(err, code, 2, contains="not an SGLang version")


@pytest.mark.parametrize("name", ["nope", "KIMI-K2.5", "kimi"])
def test_unknown_model_lists_the_profiles(cli, name):
    code, out, err = cli(["recommend", *H200, "--model", name])
    assert_one_line_error(err, code, 2, contains="unknown model")
    for known in ("kimi-k2.5", "deepseek-v3", "llama-3.1-70b", "qwen3-235b-a22b", "--model-config"):
        assert known in err


def test_model_and_model_config_together_is_bad_usage(cli, tmp_path):
    code, _, err = cli(
        ["recommend", *H200, "--model", "kimi-k2.5", "--model-config", str(tmp_path / "c.json")]
    )
    assert_one_line_error(err, code, 2, contains="not both")


@pytest.mark.parametrize(
    "content",
    [
        "{bad",
        "",
        "[]",
        "{}",
        '"text"',
        '{"num_hidden_layers": -5, "hidden_size": 7168}',
        '{"num_hidden_layers": 0, "hidden_size": 0}',
        '{"num_hidden_layers": 61}',
        '{"hidden_size": 7168}',
        '{"num_hidden_layers": "61", "hidden_size": "7168"}',
        '{"num_hidden_layers": true, "hidden_size": 7168}',
        '{"num_hidden_layers": 61.5, "hidden_size": 7168}',
        '{"num_hidden_layers": 1e308, "hidden_size": 7168}',
        '{"num_hidden_layers": NaN, "hidden_size": Infinity}',
    ],
)
def test_bad_model_config_is_one_line_exit_2(cli, tmp_path, content):
    path = write(tmp_path / "config.json", content)
    code, out, err = cli(["recommend", *H200, "--model-config", path])
    assert_one_line_error(err, code, 2)
    assert out == ""


@pytest.mark.parametrize("kind", ["missing", "folder", "binary"])
def test_unreadable_model_config_is_exit_2(cli, tmp_path, kind):
    path = {
        "missing": str(tmp_path / "nope.json"),
        "folder": str(tmp_path),
        "binary": write(tmp_path / "c.bin", bytes(range(128, 256)), "wb"),
    }[kind]
    code, _, err = cli(["recommend", *H200, "--model-config", path])
    assert_one_line_error(err, code, 2)


def test_model_config_of_a_real_shape_works(cli, tmp_path):
    path = write(
        tmp_path / "config.json",
        json.dumps({"num_hidden_layers": 61, "hidden_size": 7168, "n_routed_experts": 384}),
    )
    code, out, err = cli(["recommend", "--system", "rtx-pro-6000-8x-pcie", "--model-config", path])
    assert code == 0, err
    assert "122 allreduces" in out


@pytest.mark.parametrize(
    "argv, contains",
    [
        (["--speculative", "eagle3"], "--draft-model"),
        (["--force-speculative"], "--speculative"),
    ],
)
def test_speculative_options_given_partly(cli, argv, contains):
    code, _, err = cli(["recommend", *H200, *argv])
    assert_one_line_error(err, code, 2, contains=contains)


# ----------------------------------------------------------------------------------------------------------
# -o: never half-written, never a wrong file left behind


@pytest.mark.parametrize(
    "argv",
    [
        ["recommend", "--system", "rtx-pro-6000-8x-pcie"],
        ["recommend", "--list-systems"],
        ["check", "LAUNCH", *H200],
        ["probe", "--from-capture", os.path.join(FIXTURES, "h200-2x-nvswitch-vm")],
    ],
)
def test_output_to_a_missing_folder_or_a_folder(cli, tmp_path, argv):
    launch = write(tmp_path / "launch.env", "SGLANG_ARGS='--tp-size 4'\n")
    argv = [launch if item == "LAUNCH" else item for item in argv]
    before = sorted(os.listdir(tmp_path))
    code, out, err = cli([*argv, "-o", str(tmp_path / "no" / "such" / "out.txt")])
    assert_one_line_error(err, code, 2, contains="does not exist")
    assert out == ""
    folder = tmp_path / "a-folder"
    folder.mkdir()
    code, out, err = cli([*argv, "-o", str(folder)])
    assert_one_line_error(err, code, 2)
    assert os.listdir(folder) == []
    assert sorted(os.listdir(tmp_path)) == sorted(before + ["a-folder"]), (
        "a temp file was left behind"
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["recommend", "--system", "nope"],
        ["recommend", "--system", "rtx-pro-6000-8x-pcie", "--model", "nope"],
        ["recommend", "--system", "rtx-pro-6000-8x-pcie", "--sglang-version", "abc"],
        ["check", "BAD", *H200],
    ],
)
def test_failed_run_leaves_the_old_output_file_alone(cli, tmp_path, argv):
    bad = write(tmp_path / "bad.env", "SGLANG_ARGS=$(reboot)\n")
    argv = [bad if item == "BAD" else item for item in argv]
    target = write(tmp_path / "launch.env", "OLD='content'\n")
    code, _, err = cli([*argv, "-o", target])
    assert_one_line_error(err, code, 2)
    with open(target, encoding="utf-8") as handle:
        assert handle.read() == "OLD='content'\n"
    assert sorted(os.listdir(tmp_path)) == ["bad.env", "launch.env"]


def test_check_writes_the_report_and_still_exits_1(cli, tmp_path):
    launch = write(tmp_path / "launch.env", "SGLANG_ARGS='--tp-sise 4'\n")
    report = str(tmp_path / "report.txt")
    code, out, _ = cli(["check", launch, *H200, "-o", report])
    assert code == 1
    assert out == ""
    with open(report, encoding="utf-8") as handle:
        assert "--tp-size" in handle.read()


# ----------------------------------------------------------------------------------------------------------
# check: launch.env parsing (never sourced)


@pytest.mark.parametrize(
    "content",
    [
        "export NCCL_DEBUG='INFO'\nSGLANG_ARGS='--tp-size 4'\n",
        "# comment\n\n   # indented comment\nSGLANG_ARGS='--tp-size 4' # trailing comment\n",
        "SGLANG_ARGS='--tp-size 4'\r\nNCCL_DEBUG=INFO\r\n",
        "SGLANG_ARGS='--tp-size 4'",
        'SGLANG_ARGS="--tp-size 4"\n',
        "SGLANG_ARGS='--tp 4'\n",
        "SGLANG_ARGS='--tp-size=4'\n",
        # a UTF-8 byte-order mark from an editor is not part of line 1
        "\ufeffSGLANG_ARGS='--tp-size 4'\n",
    ],
)
def test_check_accepts_what_sh_accepts(cli, tmp_path, content):
    path = write(tmp_path / "launch.env", content, "w")
    code, out, err = cli(["check", path, *H200])
    assert code == 0, out + err
    assert "ok" in out


@pytest.mark.parametrize(
    "content, contains",
    [
        ('SGLANG_ARGS="$(touch PWNED)"\n', ":1:"),
        ("SGLANG_ARGS=`touch PWNED`\n", ":1:"),
        ("SGLANG_ARGS=$'--tp-size 4'\n", ":1:"),
        ("# ok\nSGLANG_ARGS='--tp-size 4\n", ":2:"),
        ('SGLANG_ARGS="--tp-size 4\n', ":1:"),
        ("NCCL_DEBUG=INFO; touch PWNED\n", ":1:"),
        ("SGLANG_ARGS=--tp-size 4\n", ":1:"),
        ("SGLANG_ARGS='--tp-size 4' NCCL_DEBUG=INFO\n", ":1:"),
        ("SGLANG_ARGS='--tp-size 4'\\\n' --x'\n", ":1:"),
        ("1BAD=x\n", ":1:"),
        ("just some text\n", ":1:"),
        ("export\n", ":1:"),
        ("export SGLANG_ARGS\n", ":1:"),
    ],
)
def test_check_rejects_what_a_shell_would_run_or_choke_on(cli, tmp_path, content, contains):
    content = content.replace("PWNED", str(tmp_path / "pwned"))
    path = write(tmp_path / "launch.env", content)
    code, out, err = cli(["check", path, *H200])
    assert_one_line_error(err, code, 2, contains="launch.env" + contains)
    assert out == ""
    assert not os.path.exists(tmp_path / "pwned")


@pytest.mark.parametrize("kind", ["missing", "folder", "binary"])
def test_check_unreadable_launch_env(cli, tmp_path, kind):
    path = {
        "missing": str(tmp_path / "launch.env"),
        "folder": str(tmp_path),
        "binary": write(tmp_path / "launch.env", bytes(range(128, 256)), "wb"),
    }[kind]
    code, out, err = cli(["check", path, *H200])
    assert_one_line_error(err, code, 2)
    if (
        kind == "folder"
    ):  # a folder run reports every file, the unreadable one as not checked, then exits 2
        assert "not checked" in out and "launch.env" in out
    else:
        assert out == ""


@pytest.mark.parametrize(
    "args, rule",
    [
        ("--tp-sise 4 --disable-custom-allreduce", "did you mean --tp-size"),
        ("--tp-size 99", "topoctl-tp-exceeds-gpus"),
        ("--tp-size 4 --tp-size 8", "topoctl-tp-exceeds-gpus"),
        ("--cuda-graph-max-bs 128", "ambiguous"),
        (
            "--speculative-algorithm EAGLE3 --speculative-eagle-topk 1",
            "speculative-params-all-or-none",
        ),
        ("--tp-size", "expects a value"),
        ("-h", "BLOCK"),
    ],
)
def test_check_blocks_flags_sglang_would_refuse(cli, tmp_path, args, rule):
    path = write(tmp_path / "launch.env", f"SGLANG_ARGS='{args}'\n")
    code, out, err = cli(["check", path, *H200])
    assert code == 1, out + err
    assert rule in out
    code2, out2, _ = cli(
        ["check", *H200, "--", "python", "-m", "sglang.launch_server", *args.split()]
    )
    assert code2 == 1
    assert rule in out2


@pytest.mark.parametrize("tail", [[], ["--"], ["--", "python", "-m", "sglang.launch_server"]])
def test_check_with_nothing_to_check_is_exit_2(cli, tail):
    code, out, err = cli(["check", *H200, *tail])
    assert_one_line_error(err, code, 2)
    assert out == ""


def test_check_launch_env_and_command_together_checks_both(cli, tmp_path):
    path = write(tmp_path / "launch.env", "SGLANG_ARGS='--tp-size 4'\n")
    code, out, err = cli(
        [
            "check",
            path,
            *H200,
            "--format",
            "json",
            "--",
            "NCCL_DEBUG=INFO",
            "python",
            "-m",
            "sglang.launch_server",
            "--tp-sise",
            "4",
        ]
    )
    assert code == 1, err
    results = json.loads(out)["results"]
    assert [r["origin"] for r in results] == [path, "<command>"]
    assert results[0]["ok"] is True and results[1]["ok"] is False


def test_check_reference_launch_env_round_trips(cli, tmp_path):
    for system in SYSTEMS:
        env_file = str(tmp_path / f"{system}.env")
        code, _, err = cli(
            ["recommend", "--system", system, "--model", fitting_model(system), "-o", env_file]
        )
        assert code == 0, err
        code, out, err = cli(["check", env_file, "--system", system])
        assert code == 0, (system, out, err)


@pytest.mark.parametrize("fmt", ["text", "json", "junit", "github"])
def test_check_formats_with_a_hostile_file_name(cli, tmp_path, fmt):
    import xml.dom.minidom

    path = write(tmp_path / "evil::error title=x::pwn,%0A<x>&.env", "SGLANG_ARGS='--tp-sise 4'\n")
    code, out, err = cli(["check", path, *H200, "--format", fmt])
    assert code == 1, err
    if fmt == "json":
        json.loads(out)
    if fmt == "junit":
        xml.dom.minidom.parseString(out)
    if fmt == "github":
        for line in out.splitlines():
            assert (
                line.startswith("::error ")
                or line.startswith("::warning ")
                or line.startswith("::notice ")
            ), line
            assert line.count("::") == 2, line


# ----------------------------------------------------------------------------------------------------------
# rules: site rule folders, --disable


def _rule_dirs(tmp_path):
    dirs = {}
    for name in ("broken", "dup", "pytag", "bad-schema", "builtin-dup"):
        (tmp_path / name).mkdir()
        dirs[name] = str(tmp_path / name)
    write(tmp_path / "broken" / "a.yaml", "rules: [\n  - id: x\n")
    write(tmp_path / "dup" / "a.yaml", one_rule("site-rule-a"))
    write(tmp_path / "dup" / "b.yaml", one_rule("site-rule-a"))
    write(
        tmp_path / "pytag" / "a.yaml",
        f'schema_version: 1\nrules: !!python/object/apply:os.system ["touch {tmp_path}/pwned"]\n',
    )
    write(
        tmp_path / "bad-schema" / "a.yaml",
        "schema_version: 1\nrules:\n  - id: foo\n    severity: catastrophic\n",
    )
    write(tmp_path / "builtin-dup" / "a.yaml", one_rule("flashinfer-allreduce-fusion-sm12x"))
    dirs["text-file"] = write(tmp_path / "rules.txt", "hello\n")
    dirs["missing"] = str(tmp_path / "nope")
    return dirs


@pytest.mark.parametrize(
    "which", ["broken", "dup", "pytag", "bad-schema", "builtin-dup", "text-file", "missing"]
)
@pytest.mark.parametrize(
    "command",
    [["rules", "list"], ["rules", "test"], ["recommend", *H200], ["check", "LAUNCH", *H200]],
)
def test_bad_site_rules_are_one_line_exit_2(cli, tmp_path, which, command):
    path = _rule_dirs(tmp_path)[which]
    launch = write(tmp_path / "launch.env", "SGLANG_ARGS='--tp-size 4'\n")
    argv = [launch if item == "LAUNCH" else item for item in command]
    code, out, err = cli([*argv, "--rules", path])
    assert_one_line_error(err, code, 2)
    assert out == ""
    assert not os.path.exists(tmp_path / "pwned")


def test_good_site_rule_file_is_listed_and_tested(cli, tmp_path):
    path = write(tmp_path / "site.yaml", one_rule("site-rule-a"))
    code, out, err = cli(["rules", "list", "--rules", path])
    assert code == 0, err
    assert "site-rule-a" in out
    code, out, err = cli(["rules", "test", "--rules", path, "--no-builtin"])
    assert code == 0, err
    assert "2 passed, 0 failed" in out


@pytest.mark.parametrize(
    "item",
    [
        "flashinfer-allreduce-fusion-sm12x",
        "flashinfer-allreduce-fusion-sm12x=",
        "flashinfer-allreduce-fusion-sm12x=   ",
        "=a reason",
    ],
)
def test_disable_without_a_reason_is_bad_usage(cli, item):
    code, out, err = cli(["rules", "list", "--disable", item])
    assert_one_line_error(err, code, 2, contains="ID=REASON")
    assert out == ""


def test_disable_an_unknown_rule_is_bad_usage(cli):
    code, _, err = cli(["rules", "list", "--disable", "no-such-rule=because"])
    assert_one_line_error(err, code, 2, contains="no-such-rule")


def test_disable_reason_shows_in_the_check_report(cli, tmp_path):
    code, out, err = cli(
        [
            "check",
            "--system",
            "rtx-pro-6000-8x-pcie",
            "--disable",
            "custom-allreduce-pcie-gate=validated on our boxes",
            "--",
            "python",
            "-m",
            "sglang.launch_server",
            "--tp",
            "8",
        ]
    )
    assert code == 0, err
    assert "validated on our boxes" in out


@pytest.mark.parametrize("rule_id", ["nope", "nccl-ll128", "NCCL-LL128-WITHOUT-NVLINK"])
def test_rules_explain_unknown_id(cli, rule_id):
    code, out, err = cli(["rules", "explain", rule_id])
    assert_one_line_error(err, code, 2, contains=rule_id)


# ----------------------------------------------------------------------------------------------------------
# probe --from-capture with the wrong files


@pytest.mark.parametrize(
    "which", ["snapshot", "readme", "missing", "empty-folder", "array", "yaml-tag", "empty"]
)
def test_probe_from_the_wrong_file_is_exit_2(cli, tmp_path, which):
    folder = tmp_path / "empty-folder"
    folder.mkdir()
    path = {
        "snapshot": os.path.join(FIXTURES, "h200-2x-nvswitch-vm", "snapshot.json"),
        "readme": os.path.join(FIXTURES, "rtx-4090-2x-pcie-no-p2p", "README.md"),
        "missing": str(tmp_path / "nope.json"),
        "empty-folder": str(folder),
        "array": write(tmp_path / "arr.json", "[]"),
        "yaml-tag": write(
            tmp_path / "cap.yaml", f'!!python/object/apply:os.system ["touch {tmp_path}/pwned"]\n'
        ),
        "empty": write(tmp_path / "empty.json", ""),
    }[which]
    code, out, err = cli(["probe", "--from-capture", path])
    assert_one_line_error(err, code, 2)
    assert out == ""
    assert not os.path.exists(tmp_path / "pwned")


def test_probe_of_the_no_gpu_capture_is_exit_3(cli):
    code, out, err = cli(["probe", "--from-capture", os.path.join(FIXTURES, "no-gpu")])
    assert_one_line_error(err, code, 3)
    assert out == ""


def test_probe_from_capture_and_record_together_is_bad_usage(cli, tmp_path):
    code, _, err = cli(
        [
            "probe",
            "--from-capture",
            os.path.join(FIXTURES, "no-gpu"),
            "--record",
            str(tmp_path / "x.json"),
        ]
    )
    assert_one_line_error(err, code, 2, contains="cannot be combined")
    assert not os.path.exists(tmp_path / "x.json")


# ----------------------------------------------------------------------------------------------------------
# colour


def test_show_colour_only_when_asked_or_on_a_terminal(cli, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    code, out, _ = cli(["show", "--system", "l40s-4x-pcie-2numa"])
    assert code == 0 and "\x1b" not in out
    code, out, _ = cli(["show", "--system", "l40s-4x-pcie-2numa", "--color"])
    assert code == 0 and "\x1b" in out
    monkeypatch.setenv("NO_COLOR", "1")
    code, out, _ = cli(["show", "--system", "l40s-4x-pcie-2numa"])
    assert code == 0 and "\x1b" not in out
    code, out, _ = cli(["show", "--system", "l40s-4x-pcie-2numa", "--no-color"])
    assert code == 0 and "\x1b" not in out


@pytest.mark.skipif(
    shutil.which("script") is None, reason="needs util-linux script for a pseudo-terminal"
)
def test_show_on_a_terminal_honours_no_color(tmp_path):
    command = f"{sys.executable} -m topoctl show --system l40s-4x-pcie-2numa"
    with_colour = subprocess.run(
        ["script", "-qec", command, "/dev/null"],
        capture_output=True,
        env={k: v for k, v in os.environ.items() if k != "NO_COLOR"},
        cwd=str(tmp_path),
    )
    without = subprocess.run(
        ["script", "-qec", command, "/dev/null"],
        capture_output=True,
        env=dict(os.environ, NO_COLOR="1"),
        cwd=str(tmp_path),
    )
    assert with_colour.returncode == 0 and without.returncode == 0
    assert b"\x1b[" in with_colour.stdout
    assert b"\x1b[" not in without.stdout


# ----------------------------------------------------------------------------------------------------------
# Empty option values never fall back to a live probe; a bad --fallback-system always fails


def _no_live_probe(monkeypatch):
    import topoctl.probe.collect

    def refuse(*args, **kwargs):
        raise AssertionError("probed this machine")

    monkeypatch.setattr(topoctl.probe.collect, "probe_live", refuse)
    monkeypatch.setattr(topoctl.probe.collect, "run_probe", refuse)


@pytest.mark.parametrize("command", [["show"], ["recommend"], ["check", "x.env"]])
@pytest.mark.parametrize("option", ["--topology", "--system", "--fallback-system"])
def test_empty_target_option_is_bad_usage_not_a_live_probe(cli, monkeypatch, command, option):
    _no_live_probe(monkeypatch)
    code, out, err = cli([*command, option, ""])
    assert_one_line_error(err, code, 2, contains=f"{option} is empty")
    assert out == ""


@pytest.mark.parametrize("command", [["show"], ["recommend"], ["check", "x.env"]])
@pytest.mark.parametrize("target", [["--system", "h100-8x-nvswitch"], ["--topology", RTX4090]])
def test_unknown_fallback_system_fails_even_with_a_target(cli, monkeypatch, command, target):
    _no_live_probe(monkeypatch)
    code, out, err = cli([*command, *target, "--fallback-system", "nope"])
    assert_one_line_error(err, code, 2, contains="unknown system 'nope'")
    assert out == ""


# ----------------------------------------------------------------------------------------------------------
# probe: where the results go is checked before probing; exit 3 is never hidden by a failed --record


@pytest.mark.parametrize("option", ["--record", "-o"])
def test_probe_destination_in_a_missing_folder_fails_before_probing(
    cli, monkeypatch, tmp_path, option
):
    _no_live_probe(monkeypatch)
    code, out, err = cli(["probe", option, str(tmp_path / "nofolder" / "cap.json")])
    assert_one_line_error(err, code, 2, contains="does not exist")
    assert out == ""


def test_probe_destination_that_is_a_folder_fails_before_probing(cli, monkeypatch, tmp_path):
    _no_live_probe(monkeypatch)
    code, _, err = cli(["probe", "--record", str(tmp_path)])
    assert_one_line_error(err, code, 2, contains="is a folder")


def test_probe_without_gpu_keeps_exit_3_when_the_record_cannot_be_written(
    cli, monkeypatch, tmp_path
):
    from fakes.nvml import make_fake_pynvml
    from fakes.session import installed

    import topoctl.cli.commands.probe

    monkeypatch.setattr(
        topoctl.cli.commands.probe, "check_destination", lambda path: None
    )  # the folder goes later
    with installed(make_fake_pynvml({"init_error": "DriverNotLoaded", "gpus": []})):
        code, out, err = cli(["probe", "--record", str(tmp_path / "gone" / "cap.json")])
    assert code == 3, err
    assert out == "" and "Traceback" not in err
    lines = err.splitlines()
    assert lines[0].startswith("topoctl: warning: the record was not saved")
    assert lines[1].startswith("topoctl: error: no GPU visible")


def test_probe_without_gpu_writes_the_record_and_exits_3(cli, tmp_path):
    from fakes.nvml import make_fake_pynvml
    from fakes.session import installed

    capture = tmp_path / "cap.json"
    with installed(make_fake_pynvml({"init_error": "DriverNotLoaded", "gpus": []})):
        code, _, err = cli(
            ["probe", "--record", str(capture), "-o", str(tmp_path / "machine.yaml")]
        )
    assert_one_line_error(err, code, 3, contains="no GPU visible")
    assert json.loads(capture.read_text())["nvml"]["nvmlInit"] == {"err": "DriverNotLoaded"}
    assert not os.path.exists(tmp_path / "machine.yaml")
