"""A new user's walk through README.md and docs/*.md, from a fresh clone into a fresh venv.

The clone is this checkout's committed HEAD as published (tests/conftest.py, `clean_clone`). The
Quick start's first line runs in it verbatim (it makes `.venv` and installs the clone into it), then
its second line (the test extras; the suite itself only collected, `pytest -q --co`: running all of
it here would run this test again). That one venv then runs every command of every fenced block of
the docs, as a process in the clone, and what each prints is compared with what the doc shows:

- a block of `$ command` lines: each command through bash, compared as tests/docs_helpers.py
  `matches` says (`exit N` lines, `$ echo $?`, `...` elisions);
- a synopsis (`topoctl CMD [--option ...]`): `topoctl CMD --help` names every option it shows;
- every other block is in WALK below: the output of a named command (exactly, or its lines in
  order), a file of the repository, commands run as written with their placeholders filled in, or
  skipped with the reason.

A block that WALK does not name fails the walk, and so does an entry that names no block: a new
example in the docs comes with the way it is checked. Inline `topoctl ...` commands of the prose run
too (INLINE). Live probes answer "no GPU" here as on CI (exit 3); on a machine with a GPU they may
exit 0, and both count.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field

import pytest
import yaml
from docs_helpers import Block, doc_names, fenced_blocks, lines_in_order, matches, sessions

pytestmark = pytest.mark.slow  # minutes: its own step of .ci/run (setup.cfg, "markers")

# ------------------------------------------------------------------------------------------- what
# WALK says


@dataclass(frozen=True)
class Output:
    """The block is what `command` prints, run in the clone (in a scratch folder holding `files`
    when given)."""

    command: str
    compare: str = (
        "exact"  # exact | in-order (lines in order, `...` cut short) | stderr-line | annotated
    )
    exit_code: int = 0
    files: tuple[
        tuple[str, str], ...
    ] = ()  # (file name, the first line of the doc's block that is its text)


@dataclass(frozen=True)
class SameAs:
    """The block is the repository file `path`, or lines of it in order (its commands run in
    tests/integration/test_ci.py)."""

    path: str
    whole: bool = True


@dataclass(frozen=True)
class Run:
    """The block's commands, run in order as written with `<org>/topoctl` and `<commit>` filled in;
    each exits 0 and `check` (a bash test) holds afterwards. `only`: run these lines of the block
    alone, saying why."""

    check: str = "true"
    only: tuple[int, ...] | None = None
    why_only: str = ""
    env_from_workflow: bool = False
    before: str = ""  # what the reader the recipe is for has done already (run first)


@dataclass(frozen=True)
class RuleFile:
    """A rule file shown in full: saved as a site rule file, `topoctl rules test` passes its own
    cases."""


@dataclass(frozen=True)
class DisableFile:
    """A site file that disables a rule: `topoctl rules list --rules FILE` shows the rule disabled,
    with why."""


@dataclass(frozen=True)
class Python:
    """A Python example: run by the venv's Python after `prelude` (what the doc leaves to the
    reader), in a folder with site-rules/site.yaml when `site_rule`: docs/rules.md's rule file, its
    id renamed so that it is a site rule beside the built-in one of that id."""

    prelude: str = ""
    site_rule: bool = False


@dataclass(frozen=True)
class Layout:
    """The repository layout: every folder the block names exists in the clone."""


@dataclass(frozen=True)
class Skip:
    reason: str


@dataclass(frozen=True)
class Input:
    """A file the doc shows and a later block's command reads (named in that block's Output.files)."""


REAL_2X = "docs/real-hardware/h200-2x-nvswitch-vm/machine.yaml"
ORACLE_RESULTS = "tests/integration/test_sglang_oracle.py compares the committed outcomes"
FUZZ = (
    "the closing lines of a fuzz run (benchmarks/, 500-1600 s and more, seeded): measurements of "
    "that run, quoted with their machine, not output a second run is meant to repeat"
)

# (doc, how the block's first line starts) -> what the walk does with it
WALK: dict[tuple[str, str], object] = {
    (
        "README.md",
        "python3 -m venv .venv && .venv/bin/pip install -q . &&",
    ): "the walk's own start (quick_start)",
    ("README.md", "schema_version: 1"): SameAs(REAL_2X, whole=False),
    ("README.md", "GPU0     GPU1     GPU2     GPU3     NUMA"): Output(
        "topoctl show --no-color --system h200-4x-nvswitch-vm"
    ),
    ("README.md", "GPU0     GPU1     GPU2     GPU3     GPU4"): Output(
        "topoctl show --no-color --system rtx-pro-6000-8x-pcie"
    ),
    ("README.md", "# launch.env for SGLang, written by topoctl"): Output(
        "topoctl recommend --model llama-3.1-70b --speculative eagle3 --draft-model "
        "/models/eagle3-draft"
        f" --topology {REAL_2X}"
    ),  # the live run's snapshot, as the README says
    ("README.md", "- name: Install topoctl"): SameAs("examples/ci/github-actions.yml", whole=False),
    ("README.md", "16 nodes: 14 alike"): Output(
        "topoctl fleet nodes",
        "in-order",
        exit_code=1,
        files=(("nodes", "tests/cli/test_fleet.py"),),
    ),
    ("README.md", "probe/      the only code"): Layout(),
    ("docs/architecture.md", "probe/  (NVML"): Skip("a drawing of the data flow, no command"),
    ("docs/architecture.md", "commands and CLI"): Skip(
        "the layers; .importlinter and tests/test_architecture.py hold the code to them"
    ),
    ("docs/architecture.md", "schema_version: 1"): Skip(
        "the Snapshot's outline; tests/docs/test_docs_snapshot.py checks its keys against what "
        "the probe writes"
    ),
    ("docs/architecture.md", '{"capture_version": 1'): Skip(
        "an excerpt of a capture, one key of each kind, shortened; no command"
    ),
    ("docs/architecture.md", "from topoctl.rules.engine import load_rules, evaluate"): Skip(
        "the engine's contract with `...` for what varies; docs/rules.md's Engine API example "
        "runs (below)"
    ),
    ("docs/architecture.md", '{"model": {"name": "kimi-k2.5"'): Skip(
        "the shape of a request, with `|` for alternatives; no code to run"
    ),
    ("docs/bench.md", "topoctl probe -o machine.yaml"): Skip(
        "needs a GPU: the live probe and the NCCL bench; tests/integration/test_bench.py runs "
        "the bench over gloo"
    ),
    ("docs/bench.md", "PCIe checks: ACS unknown"): Output(
        "topoctl show --no-color --system h200-1x-vm", "in-order"
    ),
    ("docs/ci.md", 'pip install "topoctl @ git+'): Run(check="topoctl --version"),
    ("docs/ci.md", "python -m build --outdir dist ."): Run(
        check="test -f dist/topoctl-*.tar.gz && topoctl --version"
    ),
    ("docs/ci.md", "git clone https://github.com/<org>/topoctl && cd topoctl"): Run(
        check="test -f topoctl/Dockerfile",
        only=(0,),
        why_only="docker build and docker run need a docker daemon (not on the machines CI runs "
        "on); tests/cli/test_user_paths.py builds the image where one answers",
    ),
    ("docs/ci.md", "# .github/workflows/launch-check.yml"): SameAs(
        "examples/ci/github-actions.yml"
    ),
    ("docs/ci.md", "# .gitlab-ci.yml"): SameAs("examples/ci/gitlab-ci.yml"),
    ("docs/ci.md", "# .pre-commit-config.yaml"): SameAs("examples/ci/pre-commit-config.yaml"),
    ("docs/ci.md", "topoctl report $TARGET"): Run(
        check="grep -q '<html' topoctl-report.html", env_from_workflow=True
    ),
    ("docs/recommend-and-check.md", "# comments: header"): Output(
        "topoctl recommend --system rtx-pro-6000-8x-pcie --model kimi-k2.5 --sglang-version 0.5.12",
        "annotated",
    ),
    ("docs/recommend-and-check.md", "# env:CUDA_DEVICE_ORDER"): Output(
        "topoctl recommend --system l40s-4x-pcie-2numa --tp-size 2", "in-order"
    ),
    ("docs/recommend-and-check.md", "#!/bin/bash"): Input(),
    ("docs/recommend-and-check.md", "serve.sh:7: SGLang 0.5.21"): Output(
        "topoctl check serve.sh --system h100-8x-nvswitch --sglang-version 0.5.21",
        files=(("serve.sh", "#!/bin/bash"),),
    ),
    ("docs/op-tables.md", "from topoctl.autoconf.op_tables import load_system"): Python(),
    ("docs/op-tables.md", "pip download --no-deps --pre aisimulate"): Skip(
        "downloads two NVIDIA wheels (about 150 MB) and needs pyarrow; "
        "tests/autoconf/test_op_tables.py runs --check where pyarrow is installed"
    ),
    ("docs/reliability.md", "topoctl fuzz: "): Skip(FUZZ),  # each run's block: a new run adds one
    ("docs/reliability.md", "topoctl hostile-input fuzz: "): Skip(FUZZ),
    ("docs/rules.md", "schema_version: 1"): RuleFile(),
    ("docs/rules.md", "python scripts/grep_releases.py SRC_ROOT"): Skip(
        "needs every SGLang release's wheel unpacked under SRC_ROOT (29 downloads)"
    ),
    ("docs/rules.md", "effect:"): Skip(
        "the `effect` field alone, a fragment of the rule file above (which runs)"
    ),
    ("docs/rules.md", "from topoctl.rules.engine import load_rules, evaluate, violations"): Python(
        site_rule=True,
        prelude="from topoctl.snapshot.catalogue import system_snapshot\n"
        "snapshot = system_snapshot('rtx-pro-6000-8x-pcie')\n"
        "request = {'model': None, 'speculative': None, 'tp_size': 8, 'ep_size': 1,"
        " 'sglang_version': '0.5.12', 'launch': {}}\n",
    ),
    ("docs/rules.md", "disable:"): DisableFile(),
    ("docs/sglang-flags.md", "from topoctl.rules.sglang.flags import load_flag_set"): Python(
        prelude="flag = '--tp-size'\n"
    ),
    ("docs/sglang-flags.md", "python scripts/extract_dynamo_flags.py 1.6.1"): Skip(
        "downloads the ai-dynamo 1.6.1 wheel; the data it wrote is committed and "
        "tests/deploy/test_dynamo_real_parser.py checks it"
    ),
    ("docs/sglang-oracle.md", "mkdir -p /tmp/sglang-src"): Skip(
        f"downloads every SGLang release's wheel and runs for about 38 minutes; {ORACLE_RESULTS}"
    ),
    (
        "docs/sglang-oracle.md",
        "python scripts/extract_sglang_fusion_auto_on.py /tmp/sglang-src",
    ): Skip(
        "reads the unpacked wheels of every release (the block above); the rules it writes are "
        "committed and tests/rules/test_sglang_fusion_auto_on.py checks them"
    ),
    ("docs/sglang-versions.md", "topoctl: warning: no SGLang flag data for 0.5.24"): Output(
        "topoctl recommend --system h200-1x-vm --sglang-version 0.5.24", "stderr-line"
    ),
    (
        "docs/sglang-versions.md",
        "python scripts/regen.py --wheels ~/wheels --download --release 0.5.24",
    ): Run(
        only=(1,),
        check='test -z "$(git status --porcelain tests/golden)"',
        # a developer's install (the README's test line)
        before=".venv/bin/pip install -q -e '.[test]'",
        why_only="the first line is the recipe for the next SGLang release (0.5.24, not out); "
        "the second, run here, is the release-coverage test, which passes on the "
        "committed data and writes nothing",
    ),
}

# Inline `topoctl ...` commands of the prose that are whole commands (no FILE, ID, `...` for the
# reader to fill), with the exit code they end with here; the rest of the inline spans name a
# command or an option.
LIVE = (0, 3)  # a live probe: exit 3 without a GPU (CI), 0 on a machine with one
INLINE: dict[str, tuple[int, ...]] = {
    "topoctl --version": (0,),
    "topoctl probe": LIVE,
    "topoctl probe --from-capture h200-2x-nvswitch-vm": (0,),
    "topoctl probe --from-capture no-gpu": (3,),
    "topoctl probe --timings": LIVE,
    "topoctl show": LIVE,
    "topoctl show --system h200-1x-vm": (0,),
    "topoctl recommend": LIVE,
    "topoctl recommend --list-systems": (0,),
    "topoctl recommend --system h200-4x-nvswitch-vm --model kimi-k2.5": (
        1,
    ),  # does not fit, as the doc says
    "topoctl recommend --model llama-3.1-70b --speculative eagle3 --draft-model "
    "/models/eagle3-draft": LIVE,
    "topoctl check launch.env --system h200-4x-nvswitch-vm": (0,),
    "topoctl check serve.sh --system h100-8x-nvswitch --sglang-version 0.5.21": (0,),
    "topoctl check examples/deploy": LIVE,
    "topoctl check": (2,),  # no PATH and no COMMAND: a usage error with a hint
    "topoctl fleet": (2,),  # no snapshot named: a usage error with a hint
    "topoctl fleet nodes/": (1,),
    "topoctl probe -o machines/prod.yaml": LIVE,
    "topoctl rules list": (0,),
    "topoctl rules list | head -1": (0,),
    "topoctl rules list \\| head -1": (0,),  # in a table of the README, where `|` is written `\|`
    "topoctl rules facts": (0,),
    "topoctl rules schema": (0,),
    "topoctl rules test": (0,),
    "topoctl show --format dot": LIVE,
    "topoctl completion fish > ~/.config/fish/completions/topoctl.fish": (0,),
    # docs/ci.md, with the workflow's DEPLOY_DIR and TARGET (every inline command runs with them
    # set)
    'topoctl check "$DEPLOY_DIR" $TARGET --format sarif -o topoctl.sarif': (0,),
}
# Inline spans that are not run, and why.
INLINE_NOT_RUN = {
    "topoctl bench": "needs torch and a GPU (NCCL); tests/integration/test_bench.py runs it over "
    "gloo, and without torch the walk checks its hint (below)",
    "topoctl bench --decode-step": "needs torch and a GPU; benchmarks/run_h200_decode_ops.sh "
    "ran it on a lent H100 (benchmarks/data/h100-decode-ops-bench)",
    "topoctl preflight": "the command's name; its README example is run by "
    "tests/docs/test_e2e_docs.py (torch is in the test venv, not the walk's)",
    "topoctl probe --with-torch": "imports torch to ask CUDA; the venv of the walk installs "
    "topoctl alone",
    "topoctl probe --record": "the option alone; its file name is the reader's (--record FILE)",
    "topoctl completion": "the command's name; its shells run above (completion fish)",
    "topoctl export": "the command's name; `topoctl export nfd` runs",
    "topoctl plot": "the command's name; needs the plot extra and a snapshot with measurements",
    "topoctl report": "the command's name; docs/ci.md's report command runs",
    "topoctl rules": "the group's name; its subcommands run",
    "topoctl export nfd": "writes /etc/kubernetes/node-feature-discovery/features.d/topoctl on a "
    "machine with a GPU; tests/present/test_export_nfd.py runs it with -o",
}


def _placeholder(span: str) -> bool:
    words = shlex.split(span.replace("\\|", "|"))[1:]
    return (
        any(
            w in ("...", "FLAGS", "M", "N", "ID", "FILE", "PATH...", "COMMAND") or w.endswith("...")
            for w in words
        )
        or "\n" in span
    )


# ------------------------------------------------------------------------------------------------
# the clone


@dataclass
class Walk:
    """The clone after the Quick start ran in it: its path, its .venv/bin, and a shell that runs
    there."""

    work: str
    bin_dir: str
    clone_url: str
    commit: str
    results: dict = field(default_factory=dict)

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(
            os.environ,
            PATH=self.bin_dir + os.pathsep + os.environ.get("PATH", ""),
            VIRTUAL_ENV=os.path.dirname(self.bin_dir),
            PIP_DISABLE_PIP_VERSION_CHECK="1",
            **extra,
        )
        return env

    def sh(self, command: str, cwd: str | None = None, timeout: float = 600, **extra: str):
        return subprocess.run(
            ["bash", "-c", command],
            cwd=cwd or self.work,
            env=self.env(**extra),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def fill(self, text: str) -> str:
        return text.replace("https://github.com/<org>/topoctl", self.clone_url).replace(
            "<commit>", self.commit
        )


@pytest.fixture(scope="module")
def walk(clean_clone, tmp_path_factory) -> Walk:
    """The Quick start's two lines, as written, in a fresh clone: the first verbatim, the second
    with the suite collected only (`pytest -q --co`)."""
    from tests.conftest import _base_python, needs_package_index

    needs_package_index()
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    work = str(tmp_path_factory.mktemp("walk") / "topoctl")
    subprocess.run(["git", "clone", "-q", clean_clone.path, work], check=True, timeout=120)
    quick = [
        b
        for b in fenced_blocks(work)
        if b.doc == "README.md" and b.first.startswith("python3 -m venv")
    ][0]
    first, second = quick.text.strip().splitlines()
    python_dir = os.path.dirname(_base_python())  # `python3` is the interpreter this suite runs on
    env = dict(
        os.environ,
        PATH=python_dir + os.pathsep + os.environ.get("PATH", ""),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    env.pop("VIRTUAL_ENV", None)
    walk = Walk(work, os.path.join(work, ".venv", "bin"), clean_clone.url, clean_clone.commit)
    walk.results["install and main job"] = subprocess.run(
        ["bash", "-c", first], cwd=work, env=env, capture_output=True, text=True, timeout=900
    )
    # which copy the first line installed (the second installs the clone editable over it)
    walk.results["where"] = walk.sh("python -c 'import topoctl; print(topoctl.__file__)'", cwd="/")
    walk.results["test extras"] = subprocess.run(
        ["bash", "-c", second.replace("pytest -q", "pytest -q --co")],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return walk


def test_quick_start_line_installs_and_writes_a_launch_env_from_a_fresh_clone(walk):
    done = walk.results["install and main job"]
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "TOPOCTL_MODEL='kimi-k2.5'" in done.stdout and done.stdout.rstrip().splitlines()[
        -1
    ].startswith("SGLANG_ARGS=")
    if (
        "(--fallback-system)" in done.stderr
    ):  # no GPU here, as on CI: the built-in system the README names
        assert "TOPOCTL_SYSTEM='rtx-pro-6000-8x-pcie'" in done.stdout
    # the venv runs the clone's installed copy, not this checkout
    where = walk.results["where"]
    assert os.path.join(walk.work, ".venv") in where.stdout, where.stdout + where.stderr


def test_quick_start_test_line_installs_the_test_extras_and_collects_the_suite(walk):
    """Its two runs, `-m 'not slow'` then `-m slow`, each collect some tests and together the whole
    suite once."""
    done = walk.results["test extras"]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runs = [
        (int(chosen), int(total))
        for chosen, total in re.findall(
            r"^(\d+)/(\d+) tests collected \(\d+ deselected\)", done.stdout, flags=re.M
        )
    ]
    assert len(runs) == 2, done.stdout[-500:]
    (fast, total), (slow, total_again) = runs
    assert total == total_again and fast > 0 and slow > 0 and fast + slow == total, runs


# ------------------------------------------------------------------------------------------------
# the blocks


def _entry(block: Block):
    hits = [
        (key, how)
        for key, how in WALK.items()
        if key[0] == block.doc and block.first.startswith(key[1])
    ]
    return hits


def _is_synopsis(block: Block) -> bool:
    lines = [line for line in block.text.splitlines() if line.strip()]
    return (
        bool(lines)
        and all(line.startswith(("topoctl ", " ")) for line in lines)
        and ("[" in lines[0] or "|" in lines[0])
    )


def _kind(block: Block) -> str:
    if block.first.startswith("$ "):
        return "session"
    if _is_synopsis(block):
        return "synopsis"
    return "walk"


def test_every_block_of_the_docs_is_walked_and_every_walk_entry_names_a_block(walk):
    blocks = fenced_blocks(walk.work)
    assert len(blocks) >= 60, len(blocks)
    unnamed = [
        f"{b.where}: {b.first[:80]}" for b in blocks if _kind(b) == "walk" and len(_entry(b)) != 1
    ]
    assert not unnamed, (
        "blocks WALK does not name exactly once (say how each is checked):\n" + "\n".join(unnamed)
    )
    used = {key for b in blocks if _kind(b) == "walk" for key, _ in _entry(b)}
    assert set(WALK) - used == set(), f"WALK entries that name no block: {sorted(set(WALK) - used)}"


# Sessions the walk's venv cannot run (it installs topoctl alone, no torch), and where they run.
SESSION_NOT_RUN = {
    "topoctl preflight examples/preflight/launch.env": "the gloo harness spawns torch processes; "
    "tests/docs/test_e2e_docs.py runs the session in the test venv, which has torch, and "
    "tests/integration/test_preflight_runs.py runs its faults",
}


def test_every_dollar_session_prints_what_the_doc_shows(walk):
    every = [s for b in fenced_blocks(walk.work) if _kind(b) == "session" for s in sessions(b)]
    found = [s for s in every if not s.command.startswith(tuple(SESSION_NOT_RUN))]
    skipped = {key for key in SESSION_NOT_RUN for s in every if s.command.startswith(key)}
    assert skipped == set(SESSION_NOT_RUN), "every entry of SESSION_NOT_RUN names a session"
    assert len(found) >= 8
    assert any(
        s.block.doc == "docs/recommend-and-check.md" and "--format args" in s.command for s in found
    ), "the indented example inside a list item is walked too"
    failures = []
    for s in found:
        proc = walk.sh(s.command, timeout=300)
        if not matches(s.shown, proc.returncode, proc.stdout, proc.stderr):
            failures.append(
                f"{s.block.where}: `{s.command}`: exit "
                f"{proc.returncode}\n{proc.stdout[:1500]}{proc.stderr[:1500]}"
            )
    assert not failures, "\n\n".join(failures)


def _synopsis_lines(block: Block) -> list[str]:
    """Each `topoctl ...` synopsis of a block with its continuation lines, comments off."""
    found: list[str] = []
    for line in block.text.splitlines():
        line = re.sub(r"\s+# .*$", "", line)
        if line.startswith("topoctl "):
            found.append(line)
        elif line.strip() and found:
            found[-1] += " " + line.strip()
    return found


def test_every_synopsis_names_only_options_the_commands_help_shows(walk):
    blocks = [b for b in fenced_blocks(walk.work) if _kind(b) == "synopsis"]
    assert len(blocks) >= 12
    failures, helps = [], {}
    for block in blocks:
        for synopsis in _synopsis_lines(block):
            words = synopsis.split()[1:]
            path = []
            for word in words:
                if not re.fullmatch(r"[a-z][a-z-]*", word):
                    break
                path.append(word)
            key = " ".join(path)
            if key not in helps:
                helps[key] = walk.sh(f"topoctl {key} --help")
            proc = helps[key]
            if proc.returncode != 0:
                failures.append(
                    f"{block.where}: `topoctl {key} --help` exit {proc.returncode}: {proc.stderr}"
                )
                continue
            shown = set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", synopsis))
            in_help = set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", proc.stdout))
            if shown - in_help:
                failures.append(
                    f"{block.where}: `{synopsis[:70]}`: {sorted(shown - in_help)} not in "
                    f"`topoctl {key} --help`"
                )
    assert not failures, "\n".join(failures)


def _block_by_first(blocks: list[Block], doc: str, first: str) -> Block:
    return next(b for b in blocks if b.doc == doc and b.first.startswith(first))


def _prepare(walk: Walk, how: Output, block: Block, blocks: list[Block], scratch: str) -> str:
    """The folder a command runs in: the clone, or a scratch folder with the files the doc shows."""
    if not how.files:
        return walk.work
    for name, source in how.files:
        if (
            source == "tests/cli/test_fleet.py"
        ):  # the fleet tests' sixteen nodes, written by their own code
            os.makedirs(os.path.join(scratch, name), exist_ok=True)
            # from the scratch folder: in the clone's root, its topoctl/ folder would shadow the
            # installed one
            script = (
                "import sys, pathlib; sys.path.insert(0, "
                f"{os.path.join(walk.work, 'tests', 'cli')!r}); import test_fleet; "
                f"test_fleet.write_sixteen_nodes(pathlib.Path({name!r}))"
            )
            done = walk.sh(f"python -c {shlex.quote(script)}", cwd=scratch)
            assert done.returncode == 0, done.stderr
        else:
            with open(os.path.join(scratch, name), "w", encoding="utf-8") as handle:
                handle.write(_block_by_first(blocks, block.doc, source).text)
    return scratch


def _compare_output(how: Output, block: Block, proc) -> str | None:
    """None when what the command printed is what the block shows, else why not."""
    if proc.returncode != how.exit_code:
        return f"exit {proc.returncode}, the doc implies {how.exit_code}: {proc.stderr[:800]}"
    if how.compare == "exact":
        return None if proc.stdout == block.text else f"prints\n{proc.stdout[:3000]}"
    if how.compare == "in-order":
        missing = lines_in_order(block.text, proc.stdout)
        return (
            None
            if missing is None
            else f"does not print the line {missing!r}:\n{proc.stdout[:3000]}"
        )
    if how.compare == "stderr-line":
        return (
            None if block.text.strip() in proc.stderr.splitlines() else f"stderr is\n{proc.stderr}"
        )
    # annotated: the doc's lines with its `# ...` / `<- ...` notes taken off are the file's lines
    # (the header's comment lines summarised by the first line)
    shown = [re.sub(r"\s+(#|<-) .*$", "", line) for line in block.text.splitlines()[1:]]
    printed = [
        line
        for line in proc.stdout.splitlines()
        if line.startswith(("# --", "# env:")) or (line and not line.startswith("#"))
    ]
    return None if [line for line in shown if line] == printed else f"prints\n{proc.stdout}"


def test_every_block_that_shows_a_commands_output_is_what_it_prints(walk, tmp_path):
    blocks = fenced_blocks(walk.work)
    failures = []
    for block in blocks:
        for _, how in _entry(block):
            if not isinstance(how, Output):
                continue
            scratch = str(tmp_path / f"b{block.line}")
            os.makedirs(scratch, exist_ok=True)
            cwd = _prepare(walk, how, block, blocks, scratch)
            proc = walk.sh(how.command, cwd=cwd, timeout=300)
            why = _compare_output(how, block, proc)
            if why:
                failures.append(f"{block.where}: `{how.command}` {why}")
    assert not failures, "\n\n".join(failures)


def _file_lines(path: str) -> list[str]:
    return [
        re.sub(r"\s+# .* alike$", "", line)
        for line in open(path, encoding="utf-8").read().splitlines()
    ]


def test_every_block_that_shows_a_repository_file_is_that_file(walk):
    failures = []
    for block in fenced_blocks(walk.work):
        for _, how in _entry(block):
            if not isinstance(how, SameAs):
                continue
            path = os.path.join(walk.work, how.path)
            text = open(path, encoding="utf-8").read()
            if how.whole:
                if block.text != text:
                    failures.append(f"{block.where}: is not {how.path} as it is")
                continue
            # an excerpt: its lines (the README's `# GPU 1 alike` notes off) are the file's, in
            # order, as indented there (the excerpt's own indentation is the doc's)
            shown = "\n".join(
                re.sub(r"\s+# .* alike$", "", line).strip() for line in block.text.splitlines()
            )
            missing = lines_in_order(shown, "\n".join(line.strip() for line in text.splitlines()))
            if missing is not None:
                failures.append(f"{block.where}: line {missing!r} is not in {how.path} (in order)")
    assert not failures, "\n".join(failures)


def _workflow_env(walk: Walk) -> dict[str, str]:
    workflow = yaml.safe_load(
        open(os.path.join(walk.work, "examples", "ci", "github-actions.yml"), encoding="utf-8")
    )
    return {name: walk.fill(str(value)) for name, value in workflow["env"].items()}


def test_every_shell_recipe_runs_as_written(walk, tmp_path):
    """docs/ci.md's installs (from the git URL, a built wheel) and its report job, the
    clone-and-build line of the container recipe, and the goldens check of a new SGLang release; in
    that order, in the walk's venv."""
    ran, failures = 0, []
    for block in fenced_blocks(walk.work):
        for _, how in _entry(block):
            if not isinstance(how, Run):
                continue
            lines = [re.sub(r"\s+# .*$", "", line) for line in block.text.strip().splitlines()]
            chosen = lines if how.only is None else [lines[i] for i in how.only]
            assert how.only is None or how.why_only, block.where
            env = _workflow_env(walk) if how.env_from_workflow else {}
            scratch = str(tmp_path / f"run{block.line}")
            os.makedirs(scratch)
            for line in ([how.before] if how.before else []) + chosen:
                # `git clone URL` takes the clone's path (git has no host part in file URLs); pip,
                # the file URL
                command = (
                    walk.fill(line.replace("https://github.com/<org>/topoctl", walk.work))
                    if line.startswith("git clone")
                    else walk.fill(line)
                )
                cwd = scratch if line.startswith("git clone") else walk.work
                proc = walk.sh(command, cwd=cwd, timeout=900, **env)
                ran += 1
                if proc.returncode != 0 or "topoctl: error:" in proc.stderr:
                    failures.append(
                        f"{block.where}: `{line}`: exit {proc.returncode}\n"
                        f"{proc.stdout[-1500:]}{proc.stderr[-1500:]}"
                    )
            check = walk.sh(
                how.check, cwd=scratch if chosen[0].startswith("git clone") else walk.work, **env
            )
            if check.returncode != 0:
                failures.append(
                    f"{block.where}: after it, `{how.check}` fails: {check.stdout}{check.stderr}"
                )
    assert ran >= 5 and not failures, "\n\n".join(failures)


def test_the_rule_file_and_the_disable_file_of_docs_rules_work_as_site_files(walk, tmp_path):
    blocks = fenced_blocks(walk.work)
    for block in blocks:
        for _, how in _entry(block):
            if isinstance(how, RuleFile):
                folder = tmp_path / "rule"
                folder.mkdir()
                (folder / "site.yaml").write_text(block.text)
                proc = walk.sh(f"topoctl rules test --rules {folder} --no-builtin")
                assert proc.returncode == 0 and re.match(
                    r"\d+ passed, 0 failed \(1 rules\)", proc.stdout
                ), proc.stdout + proc.stderr
            elif isinstance(how, DisableFile):
                (tmp_path / "disable.yaml").write_text(block.text)
                reason = yaml.safe_load(block.text)["disable"][0]["reason"]
                rule = yaml.safe_load(block.text)["disable"][0]["id"]
                proc = walk.sh(f"topoctl rules list --rules {tmp_path / 'disable.yaml'}")
                assert proc.returncode == 0, proc.stderr
                line = [line for line in proc.stdout.splitlines() if line.startswith(rule + " ")]
                assert line and f"[disabled: {reason}]" in line[0], proc.stdout


def test_every_python_example_runs(walk, tmp_path):
    ran = 0
    for block in fenced_blocks(walk.work):
        for _, how in _entry(block):
            if isinstance(how, Python):
                if how.site_rule:
                    rule = _block_by_first(
                        fenced_blocks(walk.work), "docs/rules.md", "schema_version: 1"
                    ).text
                    (tmp_path / "site-rules").mkdir(exist_ok=True)
                    (tmp_path / "site-rules" / "site.yaml").write_text(
                        rule.replace(
                            "id: torch-symm-mem-sm12x-keyerror ", "id: site-sm12x-example "
                        )
                    )
                script = tmp_path / f"example{block.line}.py"
                script.write_text(how.prelude + block.text)
                proc = walk.sh(f"python {script}", cwd=str(tmp_path))
                assert proc.returncode == 0, f"{block.where}:\n{proc.stderr[-3000:]}"
                ran += 1
    assert ran == 3


def test_the_layout_names_folders_that_exist(walk):
    block = next(
        b for b in fenced_blocks(walk.work) if any(isinstance(how, Layout) for _, how in _entry(b))
    )
    names = [
        line.split()[0] for line in block.text.splitlines() if line and not line.startswith(" ")
    ]
    assert len(names) >= 8
    missing = [name for name in names if not os.path.exists(os.path.join(walk.work, name))]
    assert not missing, missing


def _inline_spans(root: str) -> dict[str, list[str]]:
    spans: dict[str, list[str]] = {}
    for name in doc_names(root):
        text = open(os.path.join(root, name), encoding="utf-8").read()
        prose = re.sub(r"^[ \t]*```.*?^[ \t]*```", "", text, flags=re.S | re.M)
        for match in re.finditer(r"`(topoctl [^`]+)`", prose):
            spans.setdefault(" ".join(match.group(1).split()), []).append(name)
    return spans


def test_every_inline_command_of_the_prose_runs_with_its_exit_code(walk, tmp_path):
    spans = _inline_spans(walk.work)
    whole = {span for span in spans if not _placeholder(span)}
    unnamed = whole - set(INLINE) - set(INLINE_NOT_RUN)
    assert not unnamed, f"inline commands INLINE does not name: {sorted(unnamed)}"
    assert set(INLINE) | set(INLINE_NOT_RUN) <= whole, sorted(
        (set(INLINE) | set(INLINE_NOT_RUN)) - whole
    )
    # the files the prose's commands name, in a scratch folder: a launch.env, serve.sh, a folder of
    # nodes
    blocks = fenced_blocks(walk.work)
    scratch = str(tmp_path)
    _prepare(
        walk,
        Output("", files=(("serve.sh", "#!/bin/bash"),)),
        _block_by_first(blocks, "docs/recommend-and-check.md", "serve.sh:7"),
        blocks,
        scratch,
    )
    _prepare(
        walk, Output("", files=(("nodes", "tests/cli/test_fleet.py"),)), blocks[0], blocks, scratch
    )
    assert (
        walk.sh(
            "topoctl recommend --system h200-4x-nvswitch-vm -o launch.env", cwd=scratch
        ).returncode
        == 0
    )
    os.symlink(os.path.join(walk.work, "examples"), os.path.join(scratch, "examples"))
    os.makedirs(os.path.join(scratch, "machines"))
    home = tmp_path / "home"
    (home / ".config" / "fish" / "completions").mkdir(parents=True)
    failures = []
    for span, codes in INLINE.items():
        proc = walk.sh(span.replace("\\|", "|"), cwd=scratch, HOME=str(home), **_workflow_env(walk))
        if proc.returncode not in codes or "Traceback" in proc.stderr:
            failures.append(
                f"`{span}` ({', '.join(spans[span])}): exit {proc.returncode}, expected "
                f"{codes}\n{proc.stderr[:600]}"
            )
        elif proc.returncode in (2, 3):
            assert "hint:" in proc.stderr, (span, proc.stderr)
    assert not failures, "\n".join(failures)
    assert (home / ".config" / "fish" / "completions" / "topoctl.fish").read_text().strip()


def test_bench_without_torch_gives_a_hint_that_names_an_extra_the_install_has(walk):
    """The walk's venv has no torch, as a new user's after the Quick start: `topoctl bench` says so
    in one line, and its hint's `pip install '.[bench]'` names an extra of the installed metadata
    that brings torch (torch itself is not installed here: this machine has one CPU build of it, for
    one Python)."""
    proc = walk.sh("topoctl bench --backend gloo", cwd="/")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith(
        "topoctl: error: topoctl bench needs torch, which is not installed\n"
    ), proc.stderr
    assert "from a clone of topoctl: pip install '.[bench]'" in proc.stderr
    script = (
        "from importlib.metadata import metadata; m = metadata('topoctl'); "
        "print('bench' in m.get_all('Provides-Extra')); "
        "print(any(r.startswith('torch') and \"extra == 'bench'\" in r.replace('\"', \"'\") "
        "for r in m.get_all('Requires-Dist')))"
    )
    where = walk.sh(f"python -c {shlex.quote(script)}", cwd="/")
    assert where.stdout.split() == ["True", "True"], where.stdout + where.stderr
