"""The CI set-ups of docs/ci.md work as written: each example file (GitHub Actions, GitLab CI,
pre-commit) is parsed and its topoctl commands are run, as the CI system would run them, against the
repository's example deployment files (they pass) and against a copy with an unsafe launch (they
fail, at its file and line)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
import yaml

from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # minutes: its own step of .ci/run (setup.cfg, "markers")

CI = os.path.join(ROOT, "examples", "ci")
DEPLOY = os.path.join("examples", "deploy")
UNSAFE = os.path.join(DEPLOY, "kubernetes", "sglang-deployment.yaml")


def _shell(command: str, cwd: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    full = dict(os.environ, PATH=path, **env)
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=full, capture_output=True, text=True, timeout=120
    )


def _unsafe_copy(tmp_path) -> tuple[str, int]:
    """examples/deploy copied under tmp_path, its Deployment given 2 GPUs for --tp-size 4."""
    shutil.copytree(os.path.join(ROOT, DEPLOY), tmp_path / DEPLOY)
    path = tmp_path / UNSAFE
    path.write_text(path.read_text().replace("nvidia.com/gpu: 4", "nvidia.com/gpu: 2"))
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if "command:" in text)
    return str(path), line


def _topoctl_commands(commands: list[str]) -> list[str]:
    """The commands that run topoctl (the install step is the CI system's business, not this
    test's)."""
    return [c for c in commands if re.match(r"\s*topoctl\s", c)]


def _install_commands(commands: list[str]) -> list[str]:
    return [c for c in commands if "pip install" in c]


INSTALL = 'pip install "topoctl @ git+https://github.com/<org>/topoctl@$TOPOCTL_COMMIT"'


def _assert_installs_a_pinned_commit(commands: list[str], env: dict[str, str]) -> None:
    """The repository has branch main only and no tags: the install pins a commit, never a release
    tag."""
    installs = _install_commands(commands)
    assert installs == [INSTALL], commands
    assert env["TOPOCTL_COMMIT"] == "<commit>"


def test_no_recipe_or_doc_names_a_release_tag():
    """A recipe that names a tag (`@v0.2.0`, `rev: v0.2.0`) fails: the published repository has
    none."""
    tag = re.compile(r"(@v?\d+\.\d+|rev:\s*v?\d+\.\d+|release tag\b)")
    paths = [
        os.path.join(ROOT, "README.md"),
        os.path.join(ROOT, ".pre-commit-hooks.yaml"),
        os.path.join(ROOT, "topoctl", "cli", "commands", "bench.py"),
        os.path.join(ROOT, "probe", "torch_check.py"),
    ]
    paths += [os.path.join(CI, name) for name in os.listdir(CI)]
    paths += [
        os.path.join(ROOT, "docs", name)
        for name in os.listdir(os.path.join(ROOT, "docs"))
        if name.endswith(".md")
    ]
    for path in paths:
        text = open(path, encoding="utf-8").read()
        assert not tag.search(text), (path, tag.search(text))
        assert "pip install 'topoctl[" not in text and 'pip install "topoctl[' not in text, path


def test_docs_ci_shows_each_example_file_as_it_is():
    doc = open(os.path.join(ROOT, "docs", "ci.md"), encoding="utf-8").read()
    for name in ("github-actions.yml", "gitlab-ci.yml", "pre-commit-config.yaml"):
        text = open(os.path.join(CI, name), encoding="utf-8").read()
        assert f"```yaml\n{text}```" in doc, name


def test_the_readme_ci_section_uses_the_tested_set_ups():
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    section = readme[readme.index("#### In CI") :]
    section = section[: section.index("\n### ")]
    assert "docs/ci.md" in section and "pip install topoctl\n" not in section
    workflow = yaml.safe_load(open(os.path.join(CI, "github-actions.yml"), encoding="utf-8"))
    runs = [step["run"] for step in workflow["jobs"]["check"]["steps"] if "run" in step]
    for command in runs:
        assert command in section, command


# -----------------------------------------------------------------------------------------------
# GitHub Actions


def _github():
    workflow = yaml.safe_load(open(os.path.join(CI, "github-actions.yml"), encoding="utf-8"))
    steps = workflow["jobs"]["check"]["steps"]
    return {k: str(v) for k, v in workflow["env"].items()}, [
        step["run"] for step in steps if "run" in step
    ]


def test_github_actions_example_passes_on_the_example_deployments():
    env, runs = _github()
    _assert_installs_a_pinned_commit(runs, env)
    assert env["DEPLOY_DIR"] == DEPLOY
    commands = _topoctl_commands(runs)
    assert commands
    for command in commands:
        proc = _shell(command, ROOT, env)
        assert proc.returncode == 0, (command, proc.stdout, proc.stderr)
        lines = [line for line in proc.stdout.splitlines() if line]
        assert lines and all(line.startswith(("::notice", "::warning")) for line in lines), (
            proc.stdout
        )


def test_github_actions_example_fails_with_an_annotation_at_the_unsafe_line(tmp_path):
    env, runs = _github()
    path, line = _unsafe_copy(tmp_path)
    for command in _topoctl_commands(runs):
        proc = _shell(command, str(tmp_path), env)
        assert proc.returncode == 1, (command, proc.stdout, proc.stderr)
        errors = [text for text in proc.stdout.splitlines() if text.startswith("::error")]
        assert any(text.startswith(f"::error file={UNSAFE},line={line},") for text in errors), (
            proc.stdout
        )
        assert os.path.exists(path)


# -----------------------------------------------------------------------------------------------
# GitLab CI


def _gitlab():
    pipeline = yaml.safe_load(open(os.path.join(CI, "gitlab-ci.yml"), encoding="utf-8"))
    job = pipeline["topoctl-check"]
    return (
        {k: str(v) for k, v in pipeline["variables"].items()},
        job["before_script"],
        job["script"],
        job,
    )


def _gitlab_script(script: list[str]) -> str:
    """The job's script as GitLab's shell runner runs it: one shell, stopping at the first failing
    command."""
    return "set -eo pipefail\n" + "\n".join(script)


def test_gitlab_ci_example_passes_and_writes_its_junit_report(tmp_path):
    env, before, script, job = _gitlab()
    _assert_installs_a_pinned_commit(before, env)
    work = tmp_path / "repo"
    shutil.copytree(os.path.join(ROOT, DEPLOY), work / DEPLOY)
    assert _topoctl_commands(script)
    proc = _shell(_gitlab_script(script), str(work), env)
    assert proc.returncode == 0, (script, proc.stdout, proc.stderr)
    assert "ok: 0 blocking" in proc.stdout, (
        proc.stdout
    )  # the findings (none blocking) in the job log
    report = job["artifacts"]["reports"]["junit"]
    root = ET.parse(work / report).getroot()
    assert root.tag == "testsuites" and root.get("failures") == "0"
    assert int(root.get("tests")) >= 5  # four launches and the config file without one


def test_gitlab_ci_example_fails_prints_the_findings_and_the_report_names_the_launch(tmp_path):
    env, _, script, job = _gitlab()
    _, line = _unsafe_copy(tmp_path)
    proc = _shell(_gitlab_script(script), str(tmp_path), env)
    assert proc.returncode == 1, (script, proc.stdout, proc.stderr)
    # the job log shows what failed, where: the text report after the JUnit one
    assert f"{UNSAFE}:{line} (Deployment qwen3-32b / container sglang)" in proc.stdout, proc.stdout
    assert "BLOCK" in proc.stdout and "FAIL: " in proc.stdout, proc.stdout
    root = ET.parse(tmp_path / job["artifacts"]["reports"]["junit"]).getroot()
    assert int(root.get("failures")) >= 1
    failed = [
        suite.get("name") for suite in root.iter("testsuite") if int(suite.get("failures")) > 0
    ]
    assert failed and all(name.startswith(f"{UNSAFE}:") for name in failed), failed


def test_gitlab_ci_example_keeps_exit_2_for_unreadable_input(tmp_path):
    env, _, script, _ = _gitlab()
    (tmp_path / DEPLOY).mkdir(parents=True)
    (tmp_path / DEPLOY / "launch.env").write_bytes(b"\xff\xfe not text")
    proc = _shell(_gitlab_script(script), str(tmp_path), env)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)


# -----------------------------------------------------------------------------------------------
# pre-commit


def _pre_commit_files(root: str, hook: dict) -> list[str]:
    """The files pre-commit would pass: tracked-like files under examples/deploy, by `files` and
    `exclude`."""
    files, exclude = (
        re.compile(hook.get("files", "")),
        re.compile(hook["exclude"]) if hook.get("exclude") else None,
    )
    out = []
    for folder, _, names in os.walk(os.path.join(root, DEPLOY)):
        for name in sorted(names):
            relative = os.path.relpath(os.path.join(folder, name), root)
            if files.search(relative) and not (exclude and exclude.search(relative)):
                out.append(relative)
    return sorted(out)


def _hooks():
    config = yaml.safe_load(open(os.path.join(CI, "pre-commit-config.yaml"), encoding="utf-8"))
    shipped = {
        h["id"]: h
        for h in yaml.safe_load(
            open(os.path.join(ROOT, ".pre-commit-hooks.yaml"), encoding="utf-8")
        )
    }
    out = []
    for repo in config["repos"]:
        for hook in repo["hooks"]:
            if repo["repo"] == "local":
                out.append(("local", hook))
            else:
                assert (
                    repo["repo"] == "https://github.com/<org>/topoctl" and repo["rev"] == "<commit>"
                )
                out.append(("url", {**shipped[hook["id"]], "args": hook.get("args", [])}))
    return out


def _hook_command(hook: dict, files: list[str]) -> str:
    import shlex

    return " ".join(
        [hook["entry"], *map(shlex.quote, hook.get("args", [])), *map(shlex.quote, files)]
    )


def test_pre_commit_hooks_pass_on_the_example_deployments():
    hooks = _hooks()
    assert {kind for kind, _ in hooks} == {"local", "url"}
    for kind, hook in hooks:
        files = _pre_commit_files(ROOT, hook)
        assert len(files) == 5, (kind, files)  # four launches and the config file
        proc = _shell(_hook_command(hook, files), ROOT, {})
        assert proc.returncode == 0, (kind, proc.stdout, proc.stderr)
        assert "no launch checked" in proc.stdout


def test_pre_commit_hooks_fail_on_an_unsafe_launch(tmp_path):
    _, line = _unsafe_copy(tmp_path)
    for kind, hook in _hooks():
        proc = _shell(
            _hook_command(hook, _pre_commit_files(str(tmp_path), hook)), str(tmp_path), {}
        )
        assert proc.returncode == 1, (kind, proc.stdout, proc.stderr)
        assert f"{UNSAFE}:{line} (Deployment qwen3-32b / container sglang)" in proc.stdout


# ------------------------------------------------------------------------ the recipes as written,
# from a clone `installed_from_clone` (tests/conftest.py) is a fresh venv where the install line of
# the recipes ran, filled in with a clone that has branch main only and no tags, as the repository
# is published.


def _filled(clone, env: dict[str, str]) -> dict[str, str]:
    return {name: clone.fill(value) for name, value in env.items()}


def _unsafe_clone_copy(clone, tmp_path) -> tuple[str, int]:
    """The clone's own example deployments, copied, with the Deployment's launch made unsafe."""
    work = tmp_path / "deployments"
    shutil.copytree(os.path.join(clone.path, DEPLOY), work / DEPLOY)
    path = work / UNSAFE
    path.write_text(path.read_text().replace("nvidia.com/gpu: 4", "nvidia.com/gpu: 2"))
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if "command:" in text)
    return str(work), line


def test_github_actions_recipe_from_a_clean_clone(installed_from_clone, clean_clone, tmp_path):
    env, runs = _github()
    env = _filled(clean_clone, env)
    for command in _topoctl_commands(runs):
        proc = installed_from_clone.run(command, clean_clone.path, **env)
        assert proc.returncode == 0, (command, proc.stdout, proc.stderr)
        assert proc.stdout and all(
            line.startswith(("::notice", "::warning")) for line in proc.stdout.splitlines()
        )
    work, line = _unsafe_clone_copy(clean_clone, tmp_path)
    for command in _topoctl_commands(runs):
        proc = installed_from_clone.run(command, work, **env)
        assert proc.returncode == 1, (command, proc.stdout, proc.stderr)
        assert f"::error file={UNSAFE},line={line}," in proc.stdout


def test_gitlab_recipe_from_a_clean_clone(installed_from_clone, clean_clone, tmp_path):
    env, before, script, job = _gitlab()
    github_env, runs = _github()
    assert _install_commands(before) == _install_commands(runs), (
        "the two recipes install alike (tested once)"
    )
    env = _filled(clean_clone, env)
    proc = installed_from_clone.run(_gitlab_script(script), clean_clone.path, **env)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    work, line = _unsafe_clone_copy(clean_clone, tmp_path)
    proc = installed_from_clone.run(_gitlab_script(script), work, **env)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert f"{UNSAFE}:{line} (Deployment qwen3-32b / container sglang)" in proc.stdout
    assert (
        ET.parse(os.path.join(work, job["artifacts"]["reports"]["junit"])).getroot().get("failures")
        != "0"
    )


def _pre_commit() -> str:
    found = shutil.which("pre-commit", path=os.path.dirname(sys.executable)) or shutil.which(
        "pre-commit"
    )
    if not found:
        pytest.skip("pre-commit is not installed (pip install -e '.[test]' installs it)")
    return found


def _deployment_repo(clone, tmp_path, config: str) -> str:
    """A deployment repository: the clone's example deployments and the documented pre-commit
    config."""
    repo = str(tmp_path / "deployments")
    shutil.copytree(os.path.join(clone.path, DEPLOY), os.path.join(repo, DEPLOY))
    with open(os.path.join(repo, ".pre-commit-config.yaml"), "w", encoding="utf-8") as handle:
        handle.write(config)
    for command in (["git", "init", "-q"], ["git", "add", "-A"]):
        subprocess.run(command, cwd=repo, check=True, capture_output=True)
    return repo


def test_pre_commit_recipe_from_a_clean_clone_runs_both_hooks_and_updates_its_pin(
    installed_from_clone, clean_clone, tmp_path
):
    """pre-commit itself: the hook from the clone at `rev: <commit>` (installed into pre-commit's
    own environment) and the `repo: local` hook; both pass, both fail an unsafe launch; `autoupdate
    --bleeding-edge` moves an older pin to main's newest commit."""
    pre_commit = _pre_commit()
    template = open(os.path.join(CI, "pre-commit-config.yaml"), encoding="utf-8").read()
    repo = _deployment_repo(clean_clone, tmp_path, clean_clone.fill(template))
    home = {"PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "GIT_CONFIG_NOSYSTEM": "1"}
    proc = installed_from_clone.run(f"{pre_commit} run --all-files", repo, **home)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert re.search(
        r"^topoctl check \(launches against the target machine\)\.+Passed$", proc.stdout, re.M
    ), proc.stdout
    assert re.search(r"^topoctl check \(local install\)\.+Passed$", proc.stdout, re.M), proc.stdout

    path = os.path.join(repo, UNSAFE)
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace("nvidia.com/gpu: 4", "nvidia.com/gpu: 2"))
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    proc = installed_from_clone.run(f"{pre_commit} run --all-files", repo, **home)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert proc.stdout.count("Failed") == 2 and f"{UNSAFE}:" in proc.stdout, proc.stdout

    older = subprocess.run(
        ["git", "-C", clean_clone.path, "rev-list", "--max-count=1", "HEAD~1"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    config = os.path.join(repo, ".pre-commit-config.yaml")
    with open(config, "w", encoding="utf-8") as handle:
        handle.write(
            template.replace("https://github.com/<org>/topoctl", clean_clone.url).replace(
                "<commit>", older
            )
        )
    update = re.search(r"^\s*#\s+(pre-commit autoupdate .*)$", template, re.M).group(1)
    proc = installed_from_clone.run(
        clean_clone.fill(f"{pre_commit} {update.split(' ', 1)[1]}"), repo, **home
    )
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    revs = [
        repo_["rev"]
        for repo_ in yaml.safe_load(open(config, encoding="utf-8"))["repos"]
        if "rev" in repo_
    ]
    assert revs == [clean_clone.commit], (older, revs, proc.stdout)
