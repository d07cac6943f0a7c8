"""The documented examples work as written.

Every example command of every `--help` Examples block runs with its documented exit code; the
outputs the README quotes in full are what the same commands print now, byte for byte; the
launch.env round trip of docs/recommend-and-check.md (`set -a; . ./launch.env; set +a; eval "set --
$SGLANG_ARGS"`) gives back the argument list in sh and bash for every built-in system, and `check`
passes what `recommend` wrote; the pre-commit hook's `files` pattern picks the file names the docs
name. Live probes are replaced by "no GPU" (exit 3), so the results do not depend on the machine
that runs the tests.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET

import pytest
import yaml
from docs_helpers import fenced_blocks, matches, sessions
from model_helpers import fitting_model

from topoctl.rules.sglang.flags import known_versions
from topoctl.snapshot.catalogue import list_systems

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "fixtures")
README = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
RULES_DOC = open(os.path.join(ROOT, "docs", "rules.md"), encoding="utf-8").read()
RC_DOC = open(os.path.join(ROOT, "docs", "recommend-and-check.md"), encoding="utf-8").read()
H200_2X_LIVE = os.path.join(ROOT, "docs", "real-hardware", "h200-2x-nvswitch-vm", "machine.yaml")
SGLANG_VERSIONS = known_versions()


def _blocks(text: str) -> list[str]:
    return [m.group(2) for m in re.finditer(r"^```([^\n]*)\n(.*?)^```", text, re.S | re.M)]


def _section(text: str, heading: str) -> str:
    return text.split(heading, 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]


@pytest.fixture
def no_gpu(monkeypatch):
    """This machine shows no GPU, whatever machine runs the tests."""
    import topoctl.probe.collect as collect
    from topoctl.core.errors import NoGpuError

    def probe_live(*args, **kwargs):
        raise NoGpuError("no NVIDIA driver (test)")

    monkeypatch.setattr(collect, "probe_live", probe_live)


def _systems(cli) -> list[str]:
    code, out, _ = cli(["recommend", "--list-systems"])
    assert code == 0
    return [line.split("\t")[0] for line in out.splitlines()]


# --------------------------------------------------------------------------------------------------------
# README: the outputs it quotes in full


def test_readme_show_outputs_are_what_show_prints(cli):
    blocks = _blocks(_section(README, "### `topoctl show`"))
    assert len(blocks) == 3, "synopsis, the 4x H200 matrix, the RTX PRO 6000 matrix"
    for system, quoted in (("h200-4x-nvswitch-vm", blocks[1]), ("rtx-pro-6000-8x-pcie", blocks[2])):
        code, out, err = cli(["show", "--no-color", "--system", system])
        assert code == 0, err
        assert out == quoted, f"README's `topoctl show --system {system}` is not what it prints now"


def _dollar_command(block: str) -> tuple[list[str], str]:
    """A `$ topoctl ... \\` block: the command's words (continuations joined) and the rest of the
    block."""
    lines = block.splitlines(keepends=True)
    assert lines[0].startswith("$ topoctl ")
    command = lines[0][2:].rstrip()
    i = 1
    while command.endswith("\\"):
        command = command[:-1] + " " + lines[i].strip()
        i += 1
    return shlex.split(command)[1:], "".join(lines[i:])


def test_readme_recommend_output_for_the_field_report_system_is_byte_identical(cli):
    blocks = [
        b
        for b in _blocks(_section(README, "### `topoctl recommend`"))
        if b.startswith("$ topoctl recommend") and "--speculative eagle3" in b
    ]
    assert len(blocks) == 1
    argv, quoted = _dollar_command(blocks[0])
    code, out, err = cli(argv)
    assert (code, err) == (0, "")
    assert out == quoted


def test_readme_real_2x_h200_recommend_output_is_what_the_live_snapshot_gives(cli):
    section = _section(README, "### `topoctl recommend`")
    intro, after = section.split("Real run on the 2x H200 machine", 1)
    command = re.search(r"`(topoctl recommend [^`]+)`", after).group(1)
    quoted = _blocks(after)[0]
    # The live run probed the machine; docs/real-hardware holds the snapshot that probe wrote.
    code, out, err = cli([*shlex.split(command)[1:], "--topology", H200_2X_LIVE])
    assert (code, err) == (0, "")
    assert out == quoted


def _readme_check_examples():
    block = [
        b
        for b in _blocks(_section(README, "### `topoctl check`"))
        if b.startswith("$ topoctl check")
    ][0]
    return [part if part.endswith("\n") else part + "\n" for part in block.split("\n\n")]


@pytest.mark.parametrize("index", [0, 1])
def test_readme_check_examples_print_what_the_readme_shows_and_exit_as_shown(cli, index):
    example = _readme_check_examples()[index]
    argv, quoted = _dollar_command(example)
    expected_exit = int(re.search(r"^exit (\d+)$", quoted, re.M).group(1))
    code, out, err = cli(argv)
    assert code == expected_exit
    assert out + err + f"exit {code}\n" == quoted


def test_readme_probe_excerpt_is_taken_from_the_real_snapshot_file_in_order():
    excerpt = _blocks(_section(README, "### `topoctl probe`"))[1]
    lines = [re.sub(r"\s+# .* alike$", "", line) for line in excerpt.splitlines()]
    full = open(H200_2X_LIVE, encoding="utf-8").read().splitlines()
    i = 0
    for line in lines:
        while i < len(full) and full[i] != line:
            i += 1
        assert i < len(full), (
            f"README's probe excerpt line {line!r} is not in {H200_2X_LIVE} (in order)"
        )
        i += 1


def test_readme_quick_start_main_job_uses_the_fallback_system_on_a_machine_without_gpu(cli, no_gpu):
    quick = _blocks(_section(README, "## Quick start"))[0].strip().splitlines()[0]
    command = quick.split("&&")[-1].strip()
    words = shlex.split(command)
    assert words[0].endswith("/topoctl")
    code, out, err = cli(words[1:])
    assert code == 0, err
    assert (
        "using the built-in reference system 'rtx-pro-6000-8x-pcie' instead (--fallback-system)"
        in err
    )
    assert "TOPOCTL_MODEL='kimi-k2.5'" in out and "TOPOCTL_SYSTEM='rtx-pro-6000-8x-pcie'" in out
    assert out.rstrip().splitlines()[-1].startswith("SGLANG_ARGS='--tp-size 8 ")


# The README's CI section and docs/ci.md's set-ups are run by tests/integration/test_ci.py.


# --------------------------------------------------------------------------------------------------------
# Every `$ topoctl ...` example of the README and docs/: what it prints is what the doc shows.
# In-process here; from a fresh clone in a fresh venv, with the Quick start's own install line, in
# tests/integration/test_docs_walk.py.


def _dollar_examples(root: str = ROOT) -> list[tuple[str, str, str]]:
    """(doc, command line, what the doc shows it print) for each `$ topoctl` example in a fenced
    block of the README and docs/ of the checkout at `root` (indented blocks inside list items too).
    """
    return [
        (s.block.doc, s.command, s.shown)
        for block in fenced_blocks(root)
        if block.first.startswith("$ topoctl")
        for s in sessions(block)
    ]


def test_the_docs_show_dollar_examples_of_every_command_kind():
    commands = {shlex.split(command)[1] for _, command, _ in _dollar_examples()}
    assert {"recommend", "check", "--version"} <= commands, commands


@pytest.mark.parametrize(
    "doc, command, shown",
    _dollar_examples(),
    ids=[f"{doc}:{command[:60]}" for doc, command, _ in _dollar_examples()],
)
def test_every_dollar_example_prints_what_the_doc_shows(cli, monkeypatch, doc, command, shown):
    monkeypatch.chdir(ROOT)  # the examples name the repository's own files (examples/deploy)
    words = shlex.split(command)[1:]
    if words == ["--version"]:
        from topoctl.entry import version_text

        code, out, err = 0, version_text(), ""
    else:
        code, out, err = cli(words)
    assert matches(shown, code, out, err), f"{doc}: `{command}` prints\n{out}{err}exit {code}"


# --------------------------------------------------------------------------------------------------------
# Every `--help` Examples block: each example runs, with its documented exit code


HELP_COMMANDS = [
    [],
    ["probe"],
    ["show"],
    ["recommend"],
    ["check"],
    ["rules"],
    ["rules", "list"],
    ["rules", "explain"],
    ["rules", "test"],
    ["rules", "schema"],
    ["rules", "facts"],
    ["completion"],
]

# Examples whose exit code is not 0 on a machine without a GPU (the tests make every machine one).
EXPECTED_EXIT = {
    "topoctl probe": 3,
    "topoctl probe -o machine.yaml": 3,  # and machine.yaml stays as it was (checked below)
    "topoctl probe --format json -o machine.json": 3,
    "topoctl probe --record capture.json": 3,
    "topoctl show": 3,
    "topoctl recommend --model kimi-k2.5 > launch.env": 3,
}


def _help_examples(cli) -> list[tuple[str, str]]:
    examples = []
    for words in HELP_COMMANDS:
        code, out, err = cli([*words, "--help"])
        assert code == 0, err
        for heading in (
            "Examples:",
            "Typical use:",
            "Without a GPU, use a built-in reference system:",
        ):
            if heading not in out:
                continue
            body = out.split(heading, 1)[1]
            lines = []
            for line in body.splitlines()[1:] if body.startswith("\n") else body.splitlines():
                if not line.startswith("    "):
                    break
                lines.append(line.strip())
            command = ""
            for line in lines:
                command = (command + " " + line) if command else line
                if command.endswith("\\"):
                    command = command[:-1].rstrip()
                    continue
                command = re.sub(r"\s+# .*$", "", command).strip()
                examples.append((" ".join(words) or "topoctl", command))
                command = ""
    return examples


def _prepare_scratch(cli, tmp_path):
    """Files the examples name: machine.yaml, capture.json, config.json, launch.env,
    deploy/*/launch.env."""
    capture = os.path.join(FIXTURES, "h200-4x-nvswitch-vm")
    assert cli(["probe", "--from-capture", capture, "-o", "machine.yaml"])[0] == 0
    shutil.copy(os.path.join(capture, "capture.json"), "capture.json")
    with open("config.json", "w") as f:
        f.write('{"num_hidden_layers": 80, "hidden_size": 8192}\n')
    os.makedirs("site-rules")
    with open("site-rules/site.yaml", "w") as f:
        yaml.safe_dump({"schema_version": 1, "rules": [_site_rule("<0.5.18")]}, f)
    assert cli(["recommend", "--topology", "machine.yaml", "-o", "launch.env"])[0] == 0
    for name in ("a", "b"):
        os.makedirs(f"deploy/{name}")
        shutil.copy("launch.env", f"deploy/{name}/launch.env")


def test_the_help_texts_have_examples(cli):
    examples = _help_examples(cli)
    owners = {owner for owner, _ in examples}
    assert owners == {
        "topoctl",
        "probe",
        "show",
        "recommend",
        "check",
        "rules",
        "rules list",
        "rules explain",
        "rules test",
        "rules schema",
        "rules facts",
        "completion",
    }, owners
    assert len(examples) >= 25


def test_every_help_example_runs_with_its_documented_exit_code(cli, tmp_path, monkeypatch, no_gpu):
    monkeypatch.chdir(tmp_path)
    _prepare_scratch(cli, tmp_path)
    examples = _help_examples(cli)
    seen = set()
    for owner, command in examples:
        seen.add(command)
        words = shlex.split(command)
        assert words[0] == "topoctl", command
        words = words[1:]
        redirect = None
        if ">" in words:
            i = words.index(">")
            words, redirect = words[:i], words[i + 1]
        words = [w for pattern in words for w in (sorted(glob.glob(pattern)) or [pattern])]
        if (
            "--from-capture" in words
        ):  # a recorded capture, not the one the failed `--record` example left
            shutil.copy(
                os.path.join(FIXTURES, "h200-4x-nvswitch-vm", "capture.json"), "capture.json"
            )
        code, out, err = cli(words)
        expected = EXPECTED_EXIT.get(command, 0)
        assert code == expected, (
            f"`{command}` (from `{owner} --help`): exit {code}, documented {expected}\n{err}"
        )
        if code == 2:
            assert err.startswith("topoctl: error: ") and "hint:" in err, err
        if code == 0 and redirect:
            with open(redirect, "w") as f:
                f.write(out)
    assert set(EXPECTED_EXIT) <= seen, set(EXPECTED_EXIT) - seen
    # a failed probe left the snapshot written before it alone; what the examples wrote is what they
    # say
    assert yaml.safe_load(open("machine.yaml"))["summary"]["gpu_count"] == 4
    root = ET.parse("check.xml").getroot()
    assert root.tag == "testsuites" and root.get("failures") == "0"
    assert yaml.safe_load(open("rule.schema.json")) and open(
        "rule.schema.json"
    ).read().lstrip().startswith("{")


# --------------------------------------------------------------------------------------------------------
# launch.env round trip, every built-in system x (no model, Kimi-K2.5 + EAGLE-3 with a draft path
# with a space) x SGLang version


ROUND_TRIP = 'set -a; . ./launch.env; set +a; eval "set -- $SGLANG_ARGS"; printf \'%s\\n\' "$@"'


# check reads flags with the target's installed SGLang (0.5.12 on this system), not the version the
# file was written for: these launches use --cuda-graph-max-bs-decode, which 0.5.12 does not know.
def _writes_the_decode_graph_flag(version: str) -> bool:
    from topoctl.rules.sglang.flags import load_flag_set

    return load_flag_set(version).has("--cuda-graph-max-bs-decode")


CHECK_SAME_SYSTEM_FAILS = {
    ("rtx-pro-6000-8x-pcie", "kimi", version)
    for version in SGLANG_VERSIONS
    if _writes_the_decode_graph_flag(version) and not _writes_the_decode_graph_flag("0.5.12")
}


# SGLang 0.5.12 keeps custom allreduce off over PCIe by itself (its V2-only kernel needs NVLink), so
# a launch written for 0.5.12 on the no-P2P box leaves --disable-custom-all-reduce out; judged as
# the box's own 0.5.5, where custom allreduce turns on blindly, the same file is rightly blocked.
# With a model the same file is written: NCCL's predicted gain over the custom allreduce (1.10x with
# EAGLE-3) is inside the launch model's band, so recommend keeps SGLang's default path
# (ranking.hold_within_band).
CHECK_OTHER_VERSION_BLOCKS = {
    ("rtx-4090-2x-pcie-no-p2p", model, version)
    for version in SGLANG_VERSIONS
    for model in ("none", "kimi")
    if version.startswith("0.5.12")
}


def _cases():
    systems = list_systems()
    return [(s, m, v) for s in systems for m in ("none", "kimi") for v in SGLANG_VERSIONS]


def test_the_round_trip_covers_every_built_in_system(cli):
    assert sorted({s for s, _, _ in _cases()}) == _systems(cli)


@pytest.mark.parametrize("system, model, version", _cases())
def test_launch_env_round_trip_in_sh_and_bash_and_check_passes_it(
    cli, tmp_path, monkeypatch, system, model, version
):
    monkeypatch.chdir(tmp_path)
    argv = ["recommend", "--system", system, "--sglang-version", version, "-o", "launch.env"]
    if model == "kimi":
        argv += [
            "--model",
            fitting_model(system),
            "--speculative",
            "eagle3",
            "--draft-model",
            "/models/my draft",
        ]
    code, out, err = cli(argv)
    assert code == 0, err
    text = open("launch.env", encoding="utf-8").read()
    assert f"TOPOCTL_SGLANG_VERSION='{version}'" in text
    assigned = [line for line in text.splitlines() if line.startswith("SGLANG_ARGS=")]
    assert len(assigned) == 1
    expected = shlex.split(shlex.split(assigned[0][len("SGLANG_ARGS=") :])[0])
    if "--speculative-draft-model-path" in expected:
        assert expected[expected.index("--speculative-draft-model-path") + 1] == "/models/my draft"
    for shell in ("sh", "bash"):
        if shutil.which(shell) is None:
            continue
        result = subprocess.run(
            [shell, "-c", ROUND_TRIP],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        )
        assert (result.returncode, result.stderr) == (0, ""), shell
        assert result.stdout.split("\n")[:-1] == expected, shell
    # check against the same system, in the version the launch was written for
    code, out, err = cli(["check", "launch.env", "--system", system, "--sglang-version", version])
    assert code == 0, out + err
    # ... and as documented, without naming the version (see CHECK_SAME_SYSTEM_FAILS)
    code, out, err = cli(["check", "launch.env", "--system", system])
    if (system, model, version) in CHECK_SAME_SYSTEM_FAILS:
        assert code == 1 and "sglang-unknown-flag" in out
    elif (system, model, version) in CHECK_OTHER_VERSION_BLOCKS:
        assert code == 1 and "custom-allreduce-without-p2p" in out and "version-mismatch" in out
    else:
        assert code == 0, out + err
    code, out, err = cli(["check", "launch.env", "--system", system, "--format", "junit"])
    root = ET.fromstring(out)
    assert root.tag == "testsuites"
    code, out, err = cli(
        [
            "check",
            "launch.env",
            "--system",
            system,
            "--format",
            "github",
            "--disable",
            "nccl-ll128-without-nvlink=test: every line is an annotation",
        ]
    )
    lines = out.splitlines()
    assert lines, "the disabled rule is at least a ::notice"
    for line in lines:
        assert line.startswith(("::error", "::warning", "::notice")), line


# --------------------------------------------------------------------------------------------------------
# pre-commit


def test_pre_commit_hook_matches_the_deployment_files_the_docs_name():
    hooks = yaml.safe_load(open(os.path.join(ROOT, ".pre-commit-hooks.yaml"), encoding="utf-8"))
    hook = {h["id"]: h for h in hooks}["topoctl-check"]
    assert hook["entry"] == "topoctl check" and hook["pass_filenames"] is True
    assert "`*launch*.env` file names, `*.yaml`/`*.yml`, `*.sh`/`*.bash`" in RC_DOC, (
        "docs/recommend-and-check.md names another files pattern"
    )
    files, exclude = re.compile(hook["files"]), re.compile(hook["exclude"])

    def matched(path):
        return bool(files.search(path)) and not exclude.search(path)  # pre-commit uses re.search

    for path in (
        "launch.env",
        "prod.launch.env",
        "launch-prod.env",
        "deploy/prod/launch.env",
        "deploy/prod.yaml",
        "k8s/sglang.yml",
        "scripts/run.sh",
        "run.bash",
    ):
        assert matched(path), path
    # the pattern is about file names: a folder named launch* does not make its .env files launch
    # files
    for path in (
        "launch.env.bak",
        "launch.envrc",
        "README.md",
        "launcher/.env",
        "deploy/launch/secrets.env",
        ".github/workflows/ci.yml",
        ".gitlab-ci.yml",
        ".pre-commit-config.yaml",
    ):
        assert not matched(path), path


# --------------------------------------------------------------------------------------------------------
# docs/rules.md and docs/recommend-and-check.md examples


def _site_rule(version: str) -> dict:
    return {
        "id": "site-sm120-symm-mem",
        "title": "t",
        "severity": "block",
        "scope": "s",
        "when": {
            "all": [
                {"fact": "gpu.sm_majors", "any_in": [12]},
                {"fact": "software.sglang", "version": version},
            ]
        },
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
            {
                "name": "a",
                "expect": "fire",
                "snapshot": {"gpus": [{"index": 0, "sm": 120}], "software": {"sglang": "0.5.12"}},
            },
            {
                "name": "b",
                "expect": "silent",
                "snapshot": {"gpus": [{"index": 0, "sm": 90}], "software": {"sglang": "0.5.12"}},
            },
        ],
    }


def test_rules_doc_site_file_error_example_is_the_error_printed(cli, tmp_path, monkeypatch):
    example = re.search(
        r"`(site\.yaml: rule 'site-sm120-symm-mem': field 'when\.all\[1\]\.version': [^`]+)`",
        RULES_DOC,
    ).group(1)
    rule = _site_rule(">>0.5")

    monkeypatch.chdir(tmp_path)
    with open("site.yaml", "w") as f:
        yaml.safe_dump({"schema_version": 1, "rules": [rule]}, f)
    code, out, err = cli(["rules", "test", "--rules", "site.yaml"])
    assert code == 2
    assert err.splitlines()[0] == f"topoctl: error: {example}"


def test_rules_doc_disable_file_example_disables_with_its_reason(cli, tmp_path):
    block = re.search(r"^( *)```yaml\n(\1disable:\n.*?)^\1```", RULES_DOC, re.S | re.M).group(2)
    block = textwrap.dedent(block)
    (tmp_path / "site.yaml").write_text(block)
    code, out, err = cli(["rules", "list", "--rules", str(tmp_path / "site.yaml")])
    assert code == 0, err
    reason = yaml.safe_load(block)["disable"][0]["reason"]
    line = [line for line in out.splitlines() if line.startswith("nccl-ll128-without-nvlink ")][0]
    assert f"[disabled: {reason}]" in line


def test_rules_doc_example_rule_is_valid_yaml():
    block = _blocks(_section(RULES_DOC, "## A rule"))[0]
    yaml.safe_load(block)


def test_recommend_doc_launch_env_example_is_what_recommend_writes(cli):
    block = _blocks(_section(RC_DOC, "### The launch.env format"))[0]
    code, out, err = cli(
        [
            "recommend",
            "--system",
            "rtx-pro-6000-8x-pcie",
            "--model",
            "kimi-k2.5",
            "--sglang-version",
            "0.5.12",
        ]
    )
    assert code == 0, err
    written = [line for line in out.splitlines() if line and not line.startswith("# ")]
    shown = [
        re.sub(r"\s+(#|<-) .*$", "", line)
        for line in block.splitlines()
        if line and not line.startswith("# ")
    ]
    assert shown == written
    shown_comments = [
        re.sub(r"\s+<- .*$", "", line) for line in block.splitlines() if line.startswith("# --")
    ]
    assert shown_comments == [line for line in out.splitlines() if line.startswith("# --")]


def test_pipe_closed_by_the_reader_ends_like_other_unix_tools():
    if shutil.which("bash") is None:
        pytest.skip("bash not available")
    topoctl = f"{shlex.quote(sys.executable)} -m topoctl rules list"
    # README's example: head may read everything before topoctl is done writing (0) or not (141);
    # never 1
    result = subprocess.run(
        ["bash", "-c", f'{topoctl} | head -1; echo "${{PIPESTATUS[0]}}"'],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    first, status = result.stdout.splitlines()
    assert first.startswith("ID ") and status in ("0", "141") and result.stderr == ""
    # a reader that is gone before topoctl writes: always SIGPIPE, quietly
    result = subprocess.run(
        ["bash", "-c", f'{topoctl} | true; echo "${{PIPESTATUS[0]}}"'],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert (result.stdout, result.stderr) == ("141\n", "")
