"""The CI set-ups of docs/ci.md work as written: each example file (GitHub Actions, GitLab CI, pre-commit) is
parsed and its topoctl commands are run, as the CI system would run them, against the repository's example
deployment files (they pass) and against a copy with an unsafe launch (they fail, at its file and line)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
import yaml

import topoctl
from tests.conftest import ROOT

CI = os.path.join(ROOT, "examples", "ci")
DEPLOY = os.path.join("examples", "deploy")
UNSAFE = os.path.join(DEPLOY, "kubernetes", "sglang-deployment.yaml")


def _shell(command: str, cwd: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    full = dict(os.environ, PATH=path, **env)
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=full, capture_output=True, text=True, timeout=120)


def _unsafe_copy(tmp_path) -> tuple[str, int]:
    """examples/deploy copied under tmp_path, its Deployment given 2 GPUs for --tp-size 4."""
    shutil.copytree(os.path.join(ROOT, DEPLOY), tmp_path / DEPLOY)
    path = tmp_path / UNSAFE
    path.write_text(path.read_text().replace("nvidia.com/gpu: 4", "nvidia.com/gpu: 2"))
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if "command:" in text)
    return str(path), line


def _topoctl_commands(commands: list[str]) -> list[str]:
    """The commands that run topoctl (the install step is the CI system's business, not this test's)."""
    return [c for c in commands if re.match(r"\s*topoctl\s", c)]


def _install_commands(commands: list[str]) -> list[str]:
    return [c for c in commands if "pip install" in c]


def _assert_installs_the_release(commands: list[str]) -> None:
    installs = _install_commands(commands)
    assert installs, commands
    for command in installs:
        assert f'"topoctl @ git+https://github.com/<org>/topoctl@v{topoctl.__version__}"' in command, command


def test_docs_ci_shows_each_example_file_as_it_is():
    doc = open(os.path.join(ROOT, "docs", "ci.md"), encoding="utf-8").read()
    for name in ("github-actions.yml", "gitlab-ci.yml", "pre-commit-config.yaml"):
        text = open(os.path.join(CI, name), encoding="utf-8").read()
        assert f"```yaml\n{text}```" in doc, name


def test_the_readme_ci_section_uses_the_tested_set_ups():
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    section = readme[readme.index("#### In CI"):]
    section = section[:section.index("\n### ")]
    assert "docs/ci.md" in section and "pip install topoctl\n" not in section
    workflow = yaml.safe_load(open(os.path.join(CI, "github-actions.yml"), encoding="utf-8"))
    runs = [step["run"] for step in workflow["jobs"]["check"]["steps"] if "run" in step]
    for command in runs:
        assert command in section, command


# ----------------------------------------------------------------------------------------------- GitHub Actions

def _github():
    workflow = yaml.safe_load(open(os.path.join(CI, "github-actions.yml"), encoding="utf-8"))
    steps = workflow["jobs"]["check"]["steps"]
    return {k: str(v) for k, v in workflow["env"].items()}, [step["run"] for step in steps if "run" in step]


def test_github_actions_example_passes_on_the_example_deployments():
    env, runs = _github()
    _assert_installs_the_release(runs)
    assert env["DEPLOY_DIR"] == DEPLOY
    commands = _topoctl_commands(runs)
    assert commands
    for command in commands:
        proc = _shell(command, ROOT, env)
        assert proc.returncode == 0, (command, proc.stdout, proc.stderr)
        lines = [line for line in proc.stdout.splitlines() if line]
        assert lines and all(line.startswith(("::notice", "::warning")) for line in lines), proc.stdout


def test_github_actions_example_fails_with_an_annotation_at_the_unsafe_line(tmp_path):
    env, runs = _github()
    path, line = _unsafe_copy(tmp_path)
    for command in _topoctl_commands(runs):
        proc = _shell(command, str(tmp_path), env)
        assert proc.returncode == 1, (command, proc.stdout, proc.stderr)
        errors = [text for text in proc.stdout.splitlines() if text.startswith("::error")]
        assert any(text.startswith(f"::error file={UNSAFE},line={line},") for text in errors), proc.stdout
        assert os.path.exists(path)


# ----------------------------------------------------------------------------------------------- GitLab CI

def _gitlab():
    pipeline = yaml.safe_load(open(os.path.join(CI, "gitlab-ci.yml"), encoding="utf-8"))
    job = pipeline["topoctl-check"]
    return {k: str(v) for k, v in pipeline["variables"].items()}, job["before_script"], job["script"], job


def test_gitlab_ci_example_passes_and_writes_its_junit_report(tmp_path):
    env, before, script, job = _gitlab()
    _assert_installs_the_release(before)
    work = tmp_path / "repo"
    shutil.copytree(os.path.join(ROOT, DEPLOY), work / DEPLOY)
    commands = _topoctl_commands(script)
    assert len(commands) == len(script)
    for command in commands:
        proc = _shell(command, str(work), env)
        assert proc.returncode == 0, (command, proc.stdout, proc.stderr)
    report = job["artifacts"]["reports"]["junit"]
    root = ET.parse(work / report).getroot()
    assert root.tag == "testsuites" and root.get("failures") == "0"
    assert int(root.get("tests")) >= 5  # four launches and the config file without one


def test_gitlab_ci_example_fails_and_the_report_names_the_launch(tmp_path):
    env, _, script, job = _gitlab()
    _unsafe_copy(tmp_path)
    for command in _topoctl_commands(script):
        proc = _shell(command, str(tmp_path), env)
        assert proc.returncode == 1, (command, proc.stdout, proc.stderr)
    root = ET.parse(tmp_path / job["artifacts"]["reports"]["junit"]).getroot()
    assert int(root.get("failures")) >= 1
    failed = [suite.get("name") for suite in root.iter("testsuite") if int(suite.get("failures")) > 0]
    assert failed and all(name.startswith(f"{UNSAFE}:") for name in failed), failed


# ----------------------------------------------------------------------------------------------- pre-commit

def _pre_commit_files(root: str, hook: dict) -> list[str]:
    """The files pre-commit would pass: tracked-like files under examples/deploy, by `files` and `exclude`."""
    files, exclude = re.compile(hook.get("files", "")), re.compile(hook["exclude"]) if hook.get("exclude") else None
    out = []
    for folder, _, names in os.walk(os.path.join(root, DEPLOY)):
        for name in sorted(names):
            relative = os.path.relpath(os.path.join(folder, name), root)
            if files.search(relative) and not (exclude and exclude.search(relative)):
                out.append(relative)
    return sorted(out)


def _hooks():
    config = yaml.safe_load(open(os.path.join(CI, "pre-commit-config.yaml"), encoding="utf-8"))
    shipped = {h["id"]: h for h in yaml.safe_load(open(os.path.join(ROOT, ".pre-commit-hooks.yaml"), encoding="utf-8"))}
    out = []
    for repo in config["repos"]:
        for hook in repo["hooks"]:
            if repo["repo"] == "local":
                out.append(("local", hook))
            else:
                assert repo["repo"].endswith("/topoctl") and repo["rev"] == f"v{topoctl.__version__}"
                out.append(("url", {**shipped[hook["id"]], "args": hook.get("args", [])}))
    return out


def _hook_command(hook: dict, files: list[str]) -> str:
    import shlex

    return " ".join([hook["entry"], *map(shlex.quote, hook.get("args", [])), *map(shlex.quote, files)])


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
        proc = _shell(_hook_command(hook, _pre_commit_files(str(tmp_path), hook)), str(tmp_path), {})
        assert proc.returncode == 1, (kind, proc.stdout, proc.stderr)
        assert f"{UNSAFE}:{line} (Deployment qwen3-32b / container sglang)" in proc.stdout
