"""What `topoctl recommend --system X`, `topoctl check` and `topoctl show` import at start-up
(issue: start-up time).

Each command runs through the console script's door (topoctl.entry, as `topoctl ...` does) in a
fresh interpreter with its own cache folder: the first run fills the knowledge cache, the second
must not import PyYAML; none may ever import torch, NVML, jsonschema or packaging (release strings
are read by topoctl.core.pep440).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

SYSTEM = "h200-4x-nvswitch-vm"
NEVER = ("torch", "pynvml", "jsonschema", "packaging", "topoctl.probe.nvml")
RUN = (
    "import sys, json\n"
    "from topoctl.entry import main\n"
    "code = main(sys.argv[1:])\n"
    "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}), file=sys.stderr)\n"
)


def _run(argv: list[str], env: dict[str, str]) -> tuple[int, set[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", RUN, *argv], capture_output=True, text=True, env=env, timeout=120
    )
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    return report["code"], set(report["modules"])


@pytest.fixture
def env(tmp_path):
    values = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    values.pop("TOPOCTL_NO_CACHE", None)
    return values


@pytest.fixture
def launch_env(tmp_path, env):
    path = tmp_path / "launch.env"
    code, _ = _run(
        ["recommend", "--system", SYSTEM, "--model", "qwen3-235b-a22b", "-o", str(path)], env
    )
    assert code == 0
    return str(path)


def _commands(launch_env: str) -> list[list[str]]:
    return [
        ["recommend", "--system", SYSTEM, "--model", "qwen3-235b-a22b"],
        ["check", launch_env, "--system", SYSTEM],
        [
            "check",
            "--system",
            SYSTEM,
            "--",
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "M",
            "--tp",
            "4",
        ],
    ]


def test_warm_start_imports_no_yaml_torch_nvml_jsonschema_or_packaging(env, launch_env):
    for argv in _commands(launch_env):
        code, modules = _run(argv, env)  # warm: the launch_env fixture filled the cache
        assert code == 0, argv
        assert not [name for name in (*NEVER, "yaml") if name in modules], argv


def test_cold_start_imports_no_torch_nvml_jsonschema_or_packaging(tmp_path, launch_env):
    for number, argv in enumerate(_commands(launch_env)):
        cold = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / f"cold-{number}"))
        code, modules = _run(argv, cold)
        assert code == 0, argv
        assert not [name for name in NEVER if name in modules], argv


def test_without_cache_imports_no_torch_nvml_jsonschema_or_packaging(env, launch_env):
    env = dict(env, TOPOCTL_NO_CACHE="1")
    code, modules = _run(_commands(launch_env)[0], env)
    assert code == 0
    assert not [name for name in NEVER if name in modules]


# What each command may import at a warm start: a budget of modules in all and of topoctl's own, and
# what it must not import (issue 22: start-up is mostly imports). Raising a budget is a decision:
# say why in the commit. Counted through topoctl.entry (3 of topoctl's own: entry, version, pep440,
# before the command's modules), with 2 modules of slack in all; packaging (5 modules with bisect,
# ~20 ms) is off every path. Each layer folder a command reaches adds its package's __init__
# (topoctl.cli, .core, .snapshot, .deploy: docstrings only).
BUDGETS = {
    # the CUDA_VISIBLE_DEVICES record's view (topoctl/snapshot/visible_view.py) is read only from a
    # snapshot holding the record: no built-in system does, so no command here imports it
    "show": (
        143,
        28,
        (
            "yaml",
            "jsonschema",
            "topoctl.rules",
            "topoctl.autoconf.search",
            "hmac",
            "subprocess",
            "topoctl.snapshot.visible_view",
        ),
    ),
    # check: its pipeline's stage modules (topoctl/check/: outcome, parse, resolve, resolve_nodes,
    # resolve_gpus, judge, judge_memory, report, pipeline); subprocess and shutil only when helm
    # renders a chart check FILE.env: no Helm or Dockerfile reader (only a folder or another kind of
    # file needs them); no hmac or OpenSSL while the shipped knowledge serves every section (nothing
    # in the user cache to verify) and no GPU table while the snapshot names its GPUs' architectures
    # (every reference system does) +1 own (issue 35): Found in a module of its own
    # (topoctl/deploy/found.py) beside the kinds' registry, so that no reader imports the dispatcher
    # back; the readers themselves load only for a file of their kind +2 own: judge_kernels and
    # rules.sglang.kernels; the kernel matrix is read only when a launch names a backend +1 own:
    # judge_network, the launch's network names against the node's NICs (issue 37) +1 own:
    # check/judge_preflight.py, a recorded preflight failure blocks the same launch (issue 37) +1
    # own: rules/engine/node_facts.py, the node facts SGLang's multi-node checks need (issue 43)
    "check": (
        176,
        59,
        (
            "yaml",
            "jsonschema",
            "topoctl.autoconf.launch_model",
            "topoctl.probe.collect",
            "subprocess",
            "shutil",
            "topoctl.deploy.helm",
            "topoctl.deploy.dockerfile",
            "hmac",
            "_hashlib",
            "topoctl.snapshot.network_view",
            "topoctl.core.gpus",
            "topoctl.snapshot.visible_view",
        ),
    ),
    # check -- COMMAND: no file to read, so no Helm reader; the same two kernel modules as check,
    # and the same judge_preflight and node_facts
    "check --": (
        181,
        62,
        (
            "yaml",
            "jsonschema",
            "topoctl.autoconf.launch_model",
            "topoctl.probe.collect",
            "subprocess",
            "topoctl.deploy.helm",
            "hmac",
            "_hashlib",
            "topoctl.snapshot.network_view",
            "topoctl.core.gpus",
            "topoctl.snapshot.visible_view",
        ),
    ),
    # recommend: topoctl.rules.sglang.settings (the settings table, SGLang knowledge) beside the
    # rules' view of it (topoctl.rules.sglang.settings) the network view (NICs) only once a rule
    # reads a network fact: none does on a snapshot without NICs and the search's Request in a
    # module of its own (autoconf/request.py), so that a listing needs no search; +2 own: the PCIe
    # IPC record (autoconf/pcie_ipc.py) and the measured-launch anchor (autoconf/anchor.py) +4 own:
    # the step composed from the op tables (op_tables, step_model, step_shapes, step_estimate; issue
    # 41) +1 own: rules/sglang/kernels.py, the search's kernel filter (the matrix is read only for a
    # backend it names) +2 own: the step's records (autoconf/step_ops.py) and its cross-node
    # collectives (autoconf/step_network.py) +1 own: the box's measured per-GEMM rows
    # (autoconf/measured_ops.py, read before the op tables) +1: shlex (stdlib, one module), imported
    # at the top of autoconf/multinode.py instead of inside a function +1 own:
    # rules/engine/node_facts.py, the node facts SGLang's multi-node checks need (issue 43)
    "recommend": (
        186,
        64,
        (
            "yaml",
            "jsonschema",
            "topoctl.check.judge",
            "topoctl.probe.collect",
            "subprocess",
            "hmac",
            "_hashlib",
            "topoctl.snapshot.network_view",
            "topoctl.snapshot.visible_view",
        ),
    ),
}


def test_each_command_imports_within_its_budget(env, launch_env):
    runs = {
        "show": ["show", "--system", SYSTEM],
        "check": _commands(launch_env)[1],
        "check --": _commands(launch_env)[2],
        "recommend": _commands(launch_env)[0],
    }
    for command, argv in runs.items():
        code, modules = _run(argv, env)
        assert code == 0, argv
        total, own, never = BUDGETS[command]
        mine = sorted(name for name in modules if name == "topoctl" or name.startswith("topoctl."))
        assert len(modules) <= total, (command, len(modules))
        assert len(mine) <= own, (command, mine)
        assert not [name for name in (*NEVER, *never) if name in modules], (
            command,
            [n for n in never if n in modules],
        )


@pytest.mark.parametrize(
    "argv",
    [
        ["recommend", "--list-systems"],
        ["recommend", "--list-models"],
        ["recommend", "--system", SYSTEM, "--sglang-version", "not-a-version"],
    ],
)
def test_recommend_answers_a_listing_or_a_usage_error_without_the_search(env, argv):
    """recommend's options hold the search's Request (autoconf/request.py); the listing options and
    the usage errors found before the target is read import neither the search nor the rules engine
    (about 30 modules, ~50 ms of a ~50 ms run when the Request lived in autoconf/search.py)."""
    code, modules = _run(argv, env)
    assert code == (2 if "--sglang-version" in argv else 0), argv
    assert not [
        name
        for name in ("topoctl.autoconf.search", "topoctl.rules.engine.evaluation")
        if name in modules
    ], argv
