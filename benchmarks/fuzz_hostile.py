"""Fuzz every hostile-input surface of the console script, with a known verdict wherever one is known.

Usage:  python benchmarks/fuzz_hostile.py [--cases 8400] [--seed 21] [--workers 2] [--surfaces a,b] [--keep DIR]

Independent of the unit tests: it builds its own inputs in a scratch folder per case and runs
topoctl as the console script does (`topoctl.entry.main()` with no argv: SIGPIPE default, stdout and
stderr settled by topoctl). Most cases run in a child forked from a parent that has imported topoctl
(fork costs milliseconds where a fresh interpreter costs about 0.3 s on the 2-core machine); the
surfaces whose subject is the process itself run a fresh `python -m topoctl`: output channels
(stdout/stderr full, closed, read-only, with and without PYTHONUNBUFFERED), signals during `-o`, and
the knowledge cache (a parent that imported topoctl holds nothing of it, but a fresh process is the
honest test of a cache).

Surfaces (the first line of each generator says what it tries and what verdict is known):
  special-files  FIFO, socket, /dev/zero, /dev/urandom, a 64 MiB sparse file, non-UTF-8 bytes, a folder, reached
                 directly and indirectly (inside a checked folder, docker --env-file, compose env_file, SGLang
                 --config, a model folder's config.json / *.safetensors / index, a Hugging Face cache's
                 refs/main, a site rule folder)
  yaml           alias bombs, recursive aliases, 1,001 aliases, deep nesting, 5 MiB files, 50-digit integers in
                 SGLang --config files, snapshots, compose files, manifests and site rule files
  captures       answers of the wrong type (a bool for a P2P status...), answers that are neither ok nor err,
                 random mutations; the no-P2P box replayed and checked must still block
  model-configs  counts of the wrong type or range, mistyped quantization configs, random mutations; built-in
                 configs must still give the built-in profile's verdict
  safetensors    truncated, zero, oversized, inconsistent and non-JSON headers, git-lfs pointers, index
                 total_size of the wrong type, a 1T-parameter model whose checkpoint claims a few bytes
  counts         --tp-size / --dp-size / --ep-size / --base-gpu-id / --gpu-id-step / --nnodes up to 10^30
  versions       --sglang-version and image tags up to 5,000 digits
  escapes        newlines, CR, ESC, NEL, U+2028 and `::error::` in container, deployment and service names,
                 arguments, env values, snapshot host and GPU names, site rule titles; no output line may
                 start with the forged text, no raw control character may reach text output
  code-exec      `!!python/object/apply:os.system`, `$(...)`, backticks in every YAML and shell surface; the
                 marker file they would create must not exist
  output         (fresh process) stdout full / closed / read-only / a reader that leaves, stderr full / closed,
                 PYTHONUNBUFFERED on and off, for commands whose exit code is known (0, 1, 3)
  signals        (fresh process) SIGINT / SIGTERM / SIGHUP at random moments of `-o`: no temp file may stay,
                 the target is absent or whole
  cache          (fresh process) FIFOs, garbage, truncation and a tampered section with a recomputed SHA-256 in
                 the knowledge cache; the verdict must stay the one of a run without a cache
  site-rules     empty, comment-only and FIFO site rule files, alone and beside a real rule; `--rules` on a
                 folder without rules; a rule file's name that is a FIFO, a device or a link to nothing
  launch-kinds   Argo Rollout, Knative Service, KServe InferenceService, Dockerfiles and compose files with an
                 env_file: one launch each (never "no launch"), TP 8 on 4 GPUs blocks, TP 1-4 passes; an env_file
                 that cannot be read is exit 2 naming it

A case fails as an internal error (exit 70, 120 or any code the interface does not have, a
traceback, an error of more than one line plus a hint, MemoryError), as slow (over 10 s wall time),
as too big (peak resident memory over 600 MB: VmHWM of the child, which for a forked child includes
the pages it shares with the parent, so an upper bound), as a wrong verdict (the known answer
differs), as a temp file left behind, or as a code execution. Prints one row per surface and exits 1
if anything failed; --keep DIR keeps the first failing cases' inputs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "fixtures")
SYSTEM = ["--system", "h200-4x-nvswitch-vm"]
NO_P2P_SYSTEM = ["--system", "rtx-4090-2x-pcie-no-p2p"]
NEWEST = "0.5.23"
# An SGLang whose custom allreduce runs over PCIe, so that the no-P2P box must block it: 0.5.12
# serves custom allreduce with its V2 kernel only, which needs NVLink, and keeps it off by itself on
# PCIe (rules/knowledge/ allreduce.yaml), so a 0.5.12 launch there rightly passes.
NO_P2P_VERSION = "0.5.9"
LAUNCH = ["python3", "-m", "sglang.launch_server", "--model-path", "m"]
SLOW_S, BIG_MB, KILL_S = 10.0, 600, 40.0
ALLOWED = {0, 1, 2, 3, 74, 141}
MARK = "PWNED"  # the file a code execution would create in the case folder

Expect = Callable[["Result"], "str | None"]


@dataclass
class Case:
    surface: str
    steps: list[
        list[str]
    ]  # argv lists run one after the other in one process (fork mode); the last one counts
    expect: Expect | None = None  # None: only the generic checks
    env: dict[str, str] = field(default_factory=dict)
    fresh: bool = False  # a fresh `python -m topoctl` process instead of a fork
    stdout: str = "file"  # fresh mode: file | full | closed | readonly | pipe-leaves
    stderr: str = "file"  # fresh mode: file | full | closed
    signal_at: tuple[int, float] | None = None  # fresh mode: (signal, seconds after start)
    temp_dir: str | None = None  # a folder that must hold no .topoctl-* temp file afterwards
    allowed: set[int] = field(default_factory=lambda: set(ALLOWED))
    label: str = ""


@dataclass
class Result:
    code: int | None
    out: str
    err: str
    seconds: float
    peak_mb: float
    folder: str


# -- shared checks
# ---------------------------------------------------------------------------------------------
def first_error(result: Result) -> str:
    lines = [line for line in result.err.splitlines() if line.startswith("topoctl: error:")]
    return lines[0] if lines else ""


def error_with(*fragments: str) -> Expect:
    def expect(result: Result) -> str | None:
        line = first_error(result)
        if result.code != 2 or not all(fragment in line for fragment in fragments):
            return (
                f"expected exit 2 naming {fragments}, got {result.code}: "
                f"{line or result.err[-200:]}"
            )
        return None

    return expect


def code_is(*codes: int) -> Expect:
    def expect(result: Result) -> str | None:
        return (
            None
            if result.code in codes
            else f"expected exit {codes}, got {result.code}: {result.err[-300:]}"
        )

    return expect


def all_of(*checks: Expect) -> Expect:
    def expect(result: Result) -> str | None:
        for check in checks:
            problem = check(result)
            if problem:
                return problem
        return None

    return expect


def internal_problem(case: Case, result: Result) -> str | None:
    if result.code is None:
        return "killed: no exit"
    if result.code not in case.allowed:
        return f"exit {result.code}"
    if (
        case.signal_at
        and result.err.strip().endswith("KeyboardInterrupt")
        and "/topoctl/" not in result.err.replace("__editable___topoctl", "")
    ):
        return None  # Ctrl-C while the interpreter itself was starting: before any topoctl code ran
    if "Traceback (most recent call last)" in result.err or "internal error" in result.err:
        return "traceback or internal error"
    if "MemoryError" in result.err:
        return "MemoryError"
    errors = [line for line in result.err.splitlines() if line.startswith("topoctl: error:")]
    if errors and len(result.err.strip().splitlines()) > 2 + sum(
        line.startswith("topoctl: note") or line.startswith("topoctl: warning")
        for line in result.err.splitlines()
    ):
        return "an error of more than one line plus a hint"
    return None


def write(folder: str, name: str, content: bytes | str) -> str:
    path = os.path.join(folder, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(
            content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
        )
    return path


def read(*parts: str) -> str:
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as handle:
        return handle.read()


def builtin_configs() -> dict[str, dict[str, Any]]:
    import yaml

    data = yaml.safe_load(read("autoconf", "data", "models.yaml"))
    return {name: entry["config"] for name, entry in data["models"].items()}


BOMB = "a: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(9)
)


def hostile_yaml(rng: random.Random) -> tuple[str, str]:
    """(text, what it is) of a YAML document past one of the limits."""
    depth = rng.choice([65, 1000, 10_000])
    return rng.choice(
        [
            (BOMB, "alias bomb"),
            ("a: &a [*a]\n", "recursive alias"),
            ("a: &a {b: *a}\n", "recursive alias"),
            ("a: &x 1\nb: [" + ",".join(["*x"] * 1001) + "]\n", "1,001 aliases"),
            ("a: " + "[" * depth + "]" * depth + "\n", f"{depth}-deep"),
            ("a: " + "9" * 50 + "\n", "50-digit integer"),
            ("# " + "x" * (5 * 1024 * 1024) + "\n", "5 MiB"),
        ]
    )


# -- surfaces
# --------------------------------------------------------------------------------------------------
def special_files(rng: random.Random, folder: str) -> Case:
    """A file that is not a regular one, reached directly or indirectly: exit 2 naming it (FIFOs
    never opened)."""
    kind = rng.choice(["fifo", "fifo", "socket", "zero", "urandom", "sparse", "latin1", "folder"])
    route = rng.choice(
        [
            "topology",
            "capture",
            "launch.env",
            "model-config",
            "config.json",
            "safetensors",
            "index",
            "env-file",
            "compose-env",
            "sglang-config",
            "in-folder",
            "rules-dir",
            "refs-main",
        ]
    )
    name = {
        "launch.env": "launch.env",
        "safetensors": "model.safetensors",
        "index": "model.safetensors.index.json",
        "config.json": "config.json",
        "env-file": "vars.env",
        "compose-env": "vars.env",
        "sglang-config": "server.yaml",
        "in-folder": "deploy.yaml",
        "rules-dir": "site.yaml",
        "refs-main": "main",
    }.get(route, "input.json")
    sub = (
        os.path.join(folder, "model")
        if route in ("config.json", "safetensors", "index")
        else os.path.join(folder, "models--org--m", "refs")
        if route == "refs-main"
        else folder
    )
    os.makedirs(sub, exist_ok=True)
    path = os.path.join(sub, name)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(path)
        server.close()
    elif kind in ("zero", "urandom"):
        os.symlink(f"/dev/{kind}", path)
    elif kind == "sparse":
        with open(path, "wb") as handle:
            handle.truncate(64 * 1024 * 1024)
    elif kind == "latin1":
        write(sub, name, b"\xff\xfe caf\xe9 \x00\x81")
    else:
        os.mkdir(path)
    if route in ("config.json", "safetensors", "index") and route != "config.json":
        write(sub, "config.json", json.dumps(builtin_configs()["llama-3.1-8b"]))
    if route == "compose-env":
        write(
            folder,
            "compose.yaml",
            "services:\n  s:\n    image: lmsysorg/sglang:v0.5.12\n"
            f"    env_file: {name}\n    command: {' '.join(LAUNCH)} --tp-size 4\n",
        )
    if route == "refs-main":  # a Hugging Face cache folder whose refs/main is the special file
        write(
            folder,
            "models--org--m/snapshots/abc/config.json",
            json.dumps(builtin_configs()["llama-3.1-8b"]),
        )
    argv = {
        "topology": ["show", "--topology", path],
        "capture": ["probe", "--from-capture", path],
        "launch.env": ["check", path, *SYSTEM],
        "model-config": ["recommend", *SYSTEM, "--model-config", path],
        "config.json": ["recommend", *SYSTEM, "--model-path", sub],
        "safetensors": ["recommend", *SYSTEM, "--model-path", sub],
        "index": ["recommend", *SYSTEM, "--model-path", sub],
        "env-file": [
            "check",
            *SYSTEM,
            "--",
            "docker",
            "run",
            "--gpus",
            "all",
            "--env-file",
            path,
            "img",
            *LAUNCH,
        ],
        "compose-env": ["check", os.path.join(folder, "compose.yaml"), *SYSTEM],
        "sglang-config": [
            "check",
            *SYSTEM,
            "--sglang-version",
            NEWEST,
            "--",
            *LAUNCH,
            "--config",
            path,
        ],
        "in-folder": ["check", folder, *SYSTEM],
        "rules-dir": ["rules", "list", "--rules", folder],
        "refs-main": ["recommend", *SYSTEM, "--model-path", os.path.join(folder, "models--org--m")],
    }[route]
    if route == "in-folder":
        write(folder, "launch.env", "SGLANG_ARGS='--model-path m --tp-size 4'\n")
        # a file of a checked folder that cannot be read is named as not checked, and the run is
        # exit 2
        expect: Expect = (
            code_is(0, 1, 2)
            if kind == "folder"
            else error_with("deploy.yaml", "could not be checked")
        )
    elif route == "rules-dir" and kind == "folder":
        expect = code_is(2)  # a folder named site.yaml is no rule file: the folder holds none
    elif (
        kind == "folder"
    ):  # a folder is a fine input where check walks folders: only a clean exit is known
        expect = (
            code_is(2)
            if route
            in ("topology", "model-config", "config.json", "safetensors", "index", "refs-main")
            else code_is(0, 1, 2)
        )
    else:
        expect = error_with("refs/main" if route == "refs-main" else name)
    return Case("special-files", [argv], expect, label=f"{kind} as {route}")


def yaml_limits(rng: random.Random, folder: str) -> Case:
    """YAML past a limit wherever YAML is read: exit 2, after bounded work (safe_load would expand a
    bomb)."""
    text, what = hostile_yaml(rng)
    route = rng.choice(
        ["sglang-config", "snapshot", "compose", "manifest", "rule-file", "script-config"]
    )
    if route == "sglang-config":
        path = write(folder, "server.yaml", text)
        argv = ["check", *SYSTEM, "--sglang-version", NEWEST, "--", *LAUNCH, "--config", path]
    elif route == "script-config":
        write(folder, "server.yaml", text)
        path = write(
            folder,
            "run.sh",
            "#!/bin/sh\npython3 -m sglang.launch_server --model-path m --config server.yaml\n",
        )
        argv = ["check", path, *SYSTEM, "--sglang-version", NEWEST]
    elif route == "snapshot":
        argv = ["show", "--topology", write(folder, "snap.yaml", text)]
    elif route == "compose":
        argv = [
            "check",
            write(
                folder,
                "compose.yaml",
                "services:\n  s:\n    image: x\n" + text.replace("a:", "  x-a:", 1)
                if not text.startswith("#")
                else text,
            ),
            *SYSTEM,
        ]
    elif route == "manifest":
        argv = [
            "check",
            write(folder, "deploy.yaml", "apiVersion: v1\nkind: Pod\n" + text),
            *SYSTEM,
        ]
    else:
        os.makedirs(os.path.join(folder, "rules"))
        write(folder, "rules/site.yaml", text)
        argv = ["check", "--rules", os.path.join(folder, "rules"), *SYSTEM, "--", *LAUNCH]
    if what == "50-digit integer" and route == "compose":
        expect = code_is(0, 1, 2)  # an extension field (x-a) compose never reads
    elif what.endswith("-deep") and route.endswith("config"):
        # libyaml refuses 1,000 flow levels itself and SGLang's safe_load fails on them: a block is
        # also right
        expect = code_is(1, 2)
    else:
        expect = code_is(2)
    return Case("yaml", [argv], expect, label=f"{what} in {route}")


_CAPTURES: dict[str, dict[str, Any]] = {}


def capture(name: str) -> dict[str, Any]:
    if name not in _CAPTURES:
        with open(os.path.join(FIXTURES, name, "capture.json"), encoding="utf-8") as handle:
            _CAPTURES[name] = json.load(handle)
    return json.loads(json.dumps(_CAPTURES[name]))


WRONG: dict[str, list[Any]] = {
    "an integer": [True, False, 1.5, 0.0, "0", None, [0], {}, -1],
    "a string": [1, None, True, [], {}, 0.5],
    "a list of two integers": [[1], [1, 2, 3], "9.0", [True, 0], None, [1.5, 0]],
    "null": [0, False, "", [], {}],
}


# What each NVML question answers with (pynvml's return types, as probe/nvml.py records them);
# written out here, not imported, so the harness does not take the code under test's word for it.
_INTEGER = (
    "nvmlSystemGetCudaDriverVersion nvmlDeviceGetCount nvmlDeviceGetArchitecture "
    "nvmlDeviceGetMemoryInfo nvmlDeviceGetVirtualizationMode nvmlDeviceGetCurrPcieLinkGeneration "
    "nvmlDeviceGetMaxPcieLinkGeneration nvmlDeviceGetGpuMaxPcieLinkGeneration "
    "nvmlDeviceGetCurrPcieLinkWidth nvmlDeviceGetMaxPcieLinkWidth nvmlDeviceGetNvLinkState "
    "nvmlDeviceGetNvLinkVersion nvmlDeviceGetNvLinkRemoteDeviceType nvmlDeviceGetP2PStatus "
    "nvmlDeviceGetTopologyCommonAncestor"
).split()
_TEXT = (
    "nvmlSystemGetDriverVersion nvmlSystemGetNVMLVersion nvmlDeviceGetName nvmlDeviceGetUUID "
    "nvmlDeviceGetPciInfo nvmlDeviceGetNvLinkRemotePciInfo"
).split()
NVML_ANSWER_TYPES = {
    **dict.fromkeys(_INTEGER, "an integer"),
    **dict.fromkeys(_TEXT, "a string"),
    "nvmlDeviceGetCudaComputeCapability": "a list of two integers",
    "nvmlDeviceGetMigMode": "a list of two integers",
    "nvmlInit": "null",
}


def captures(rng: random.Random, folder: str) -> Case:
    """Typed answers: a value of the wrong type is exit 2 naming it; the no-P2P box must still
    block."""
    name = rng.choice(
        ["rtx-4090-2x-pcie-no-p2p", "h200-4x-nvswitch-vm", "l40s-4x-pcie-2numa", "b200-8x-nvswitch"]
    )
    data = capture(name)
    roll = rng.random()
    path = os.path.join(folder, "capture.json")
    if roll < 0.45:  # one typed answer of the wrong type
        keys = [
            key
            for key, outcome in data["nvml"].items()
            if "ok" in outcome and NVML_ANSWER_TYPES.get(key.split("|")[0]) in WRONG
        ]
        key = rng.choice(keys)
        data["nvml"][key] = {"ok": rng.choice(WRONG[NVML_ANSWER_TYPES[key.split("|")[0]]])}
        write(folder, "capture.json", json.dumps(data))
        return Case(
            "captures",
            [["probe", "--from-capture", path]],
            error_with(key.split("|")[0]),
            label=f"{key} mistyped",
        )
    if roll < 0.6:  # every P2P answer of the box without P2P as a bool or float: never "P2P OK"
        data = capture("rtx-4090-2x-pcie-no-p2p")
        value = rng.choice([False, 0.0, "0", None])
        for key in data["nvml"]:
            if key.startswith("nvmlDeviceGetP2PStatus|"):
                data["nvml"][key] = {"ok": value}
        write(folder, "capture.json", json.dumps(data))
        snap = os.path.join(folder, "snap.json")
        return Case(
            "captures",
            [
                ["probe", "--from-capture", path, "-o", snap, "--format", "json"],
                [
                    "check",
                    "--topology",
                    snap,
                    "--sglang-version",
                    NO_P2P_VERSION,
                    "--",
                    *LAUNCH,
                    "--tp-size",
                    "2",
                ],
            ],
            code_is(2),
            label=f"P2P answers {value!r}",
        )
    if roll < 0.7:  # the untouched no-P2P box, replayed then checked: the block must hold
        data = capture("rtx-4090-2x-pcie-no-p2p")
        for key in rng.sample(
            sorted(k for k in data["nvml"] if not k.startswith("nvmlDeviceGetP2PStatus")), 3
        ):
            if "err" in data["nvml"][key]:
                data["nvml"][key] = {"err": rng.choice(["NotSupported", "Unknown", "x" * 300])}
        write(folder, "capture.json", json.dumps(data))
        snap = os.path.join(folder, "snap.json")

        def blocks(result: Result) -> str | None:
            if result.code != 1 or "custom-allreduce-without-p2p" not in result.out:
                return f"the no-P2P box must block custom allreduce; got {result.code}"
            return None

        return Case(
            "captures",
            [
                ["probe", "--from-capture", path, "-o", snap, "--format", "json"],
                [
                    "check",
                    "--topology",
                    snap,
                    "--sglang-version",
                    NO_P2P_VERSION,
                    "--",
                    *LAUNCH,
                    "--tp-size",
                    "2",
                ],
            ],
            blocks,
            label="no-P2P replay",
        )
    if roll < 0.8:  # an answer that is neither {"ok": v} nor {"err": reason}
        key = rng.choice(sorted(data["nvml"]))
        data["nvml"][key] = rng.choice(
            [{"ok": 0, "err": "x"}, {}, {"value": 1}, {"err": 5}, [0], "OK", None]
        )
        write(folder, "capture.json", json.dumps(data))
        return Case(
            "captures",
            [["probe", "--from-capture", path]],
            error_with(key.split("|")[0]),
            label="shapeless",
        )
    # a random mutation anywhere: no verdict known, only a clean exit
    section = rng.choice(["nvml", "files", "host", "software", "nvml"])
    if data.get(section):
        key = rng.choice(sorted(data[section]))
        data[section][key] = rng.choice(
            [
                {"ok": rng.choice([None, 1, "x", [1, 2], {"a": [1]}, 10**18])},
                {"err": "Boom"},
                {"ok": {"cpu_cores_logical": "x"}},
            ]
        )
    if rng.random() < 0.2:
        data["nvml"]["nvmlDeviceGetCount"] = {"ok": rng.choice([0, 1, 1024, 5000, 10**12])}
    write(folder, "capture.json", json.dumps(data))
    return Case("captures", [["probe", "--from-capture", path]], None, label="random mutation")


COUNT_KEYS = [
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "vocab_size",
    "intermediate_size",
    "moe_intermediate_size",
    "n_routed_experts",
    "num_experts_per_tok",
    "num_experts",
    "kv_lora_rank",
    "first_k_dense_replace",
    "n_shared_experts",
    "max_position_embeddings",
]


def model_configs(rng: random.Random, folder: str) -> Case:
    """config.json fields of the wrong type or range: exit 2 naming the field; built-ins keep their
    verdict."""
    configs = builtin_configs()
    name = rng.choice(sorted(configs))
    config = json.loads(json.dumps(configs[name]))
    text: dict[str, Any] = (
        config["text_config"] if isinstance(config.get("text_config"), dict) else config
    )
    roll = rng.random()
    path = os.path.join(folder, "config.json")
    argv = ["recommend", *SYSTEM, "--model-config", path]
    if roll < 0.35:
        key = rng.choice(COUNT_KEYS)
        text[key] = rng.choice(
            ["8", 2.5, True, ["8"], {"n": 8}, -3, 10**15, [], [True]]
        )  # 10^15: past every range
        write(folder, "config.json", json.dumps(config))
        return Case("model-configs", [argv], error_with(key), label=f"{key} mistyped")
    if roll < 0.55:
        field_name, value = rng.choice(
            [
                ("quant_method", 8),
                ("bits", "4"),
                ("group_size", 0.5),
                ("ignore", "lm_head"),
                ("config_groups", [1]),
                ("modules_to_not_convert", {"a": 1}),
                ("bits", -4),
                ("format", 7),
                ("quant_algo", ["NVFP4"]),
            ]
        )
        quant: dict[str, Any] = {
            "quant_method": rng.choice(["gptq", "awq", "compressed-tensors", "fp8", "mxfp4"])
        }
        quant[field_name] = value
        text["quantization_config"] = quant
        write(folder, "config.json", json.dumps(config))
        return Case(
            "model-configs",
            [argv],
            error_with("quantization_config", field_name),
            label=f"quant {field_name}",
        )
    if roll < 0.7:  # the built-in config as a file: the same exit as the built-in profile
        write(folder, "config.json", json.dumps(config))
        return Case(
            "model-configs",
            [argv],
            code_is(_BUILTIN_EXIT[name]) if name in _BUILTIN_EXIT else None,
            label=f"builtin {name}",
        )
    # a random value anywhere: a clean exit
    key = rng.choice(sorted(text))
    text[key] = rng.choice([None, "x", -1, 0, 1, 10**15, 0.5, [], {}, True, "\x00"])
    write(folder, "config.json", json.dumps(config))
    return Case("model-configs", [argv], None, label=f"random {key}")


_BUILTIN_EXIT: dict[str, int] = {}


def builtin_exits() -> None:
    """The exit code of `recommend --model NAME` for every built-in profile: what its config.json
    must give."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    for name in builtin_configs():
        done = subprocess.run(
            [sys.executable, "-m", "topoctl", "recommend", *SYSTEM, "--model", name],
            capture_output=True,
            env=env,
        )
        _BUILTIN_EXIT[name] = done.returncode


def _header_file(
    tensors: dict[str, Any], data_bytes: int, length: int | None = None
) -> tuple[bytes, int]:
    header = json.dumps(tensors).encode()
    return struct.pack("<Q", len(header) if length is None else length) + header, data_bytes


def safetensors(rng: random.Random, folder: str) -> Case:
    """Checkpoint bytes: every header field checked, lfs pointers read, bytes consistent with the
    parameters."""
    configs = builtin_configs()
    name = rng.choice(["llama-3.1-8b", "qwen3-32b", "kimi-k2.5"])
    write(folder, "config.json", json.dumps(configs[name]))
    argv = ["recommend", *SYSTEM, "--model-path", folder]
    roll = rng.random()
    if roll < 0.2:  # an index total_size that cannot be these weights
        total = rng.choice([0.5, 0, -1, "16e9", True, None, [1], 1, 1024, 10**6, 10**18])
        write(
            folder,
            "model.safetensors.index.json",
            json.dumps({"metadata": {"total_size": total}, "weight_map": {}}),
        )
        expect = code_is(0, 1) if total is None else error_with("model.safetensors.index.json")
        return Case("safetensors", [argv], expect, label=f"total_size {total!r}")
    if roll < 0.3:
        index = rng.choice(
            [
                {"metadata": [1]},
                {"weight_map": [["a", "b"]]},
                [1],
                {"metadata": "x"},
                {"weight_map": {"a": 1}},
            ]
        )
        write(folder, "model.safetensors.index.json", json.dumps(index))
        return Case(
            "safetensors", [argv], error_with("model.safetensors.index.json"), label="index shape"
        )
    if roll < 0.45:  # git-lfs pointers
        good = rng.random() < 0.5
        size = rng.choice([16_060_522_496, 65_000_000_000, 2_000_000_000_000]) if good else 0
        body = f"version https://git-lfs.github.com/spec/v1\noid sha256:{'a' * 64}\n" + (
            f"size {size}\n" if good else ""
        )
        write(folder, "model-00001-of-00001.safetensors", body)
        if not good:
            return Case(
                "safetensors", [argv], error_with("git-lfs pointer"), label="lfs pointer, no size"
            )
        return Case("safetensors", [argv], None, label="lfs pointer")
    if roll < 0.8:  # a broken header
        data = rng.choice(
            [
                b"",
                b"\0" * 8,
                b"\0" * 4,
                struct.pack("<Q", 10**12) + b"{}",
                struct.pack("<Q", 2**63) + b"{}",
                struct.pack("<Q", 30) + b'{"w": 1}',
                struct.pack("<Q", 4) + b"\xff\xfe{}" + b"\0" * 8,
                _header_file({"w": {"dtype": "BF16", "shape": [4, 4], "data_offsets": [0, 31]}}, 0)[
                    0
                ]
                + b"\0" * 31,
                _header_file({"w": {"dtype": "Q9", "shape": [4], "data_offsets": [0, 8]}}, 0)[0]
                + b"\0" * 8,
                _header_file({"w": {"dtype": "BF16", "shape": [-4], "data_offsets": [0, 8]}}, 0)[0]
                + b"\0" * 8,
                _header_file({"w": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 8000]}}, 0)[
                    0
                ]
                + b"\0" * 8,
                _header_file({"w": {"dtype": "BF16", "shape": [4], "data_offsets": [8, 0]}}, 0)[0]
                + b"\0" * 8,
                os.urandom(rng.randint(9, 200)),
            ]
        )
        write(folder, "model.safetensors", data)
        return Case("safetensors", [argv], error_with("model.safetensors"), label="broken header")
    # a consistent header: a 1T model claiming a few bytes must not "fit"; a real-sized one works
    honest = rng.random() < 0.5
    elements = (
        (
            8_030_000_000
            if name == "llama-3.1-8b"
            else 32_800_000_000
            if name == "qwen3-32b"
            else 1_000_000_000_000
        )
        if honest
        else rng.choice([16, 1024, 10**6])
    )
    head, data_bytes = _header_file(
        {"w": {"dtype": "BF16", "shape": [elements], "data_offsets": [0, 2 * elements]}},
        2 * elements,
    )
    path = write(folder, "model.safetensors", head)
    with open(path, "r+b") as handle:
        handle.truncate(len(head) + data_bytes)  # sparse: no byte of it written
    if honest:
        return Case(
            "safetensors",
            [argv],
            None if name != "llama-3.1-8b" else code_is(0),
            label="honest header",
        )
    return Case(
        "safetensors",
        [argv],
        error_with("more than 8x off"),
        label=f"{name} claiming {2 * elements} bytes",
    )


def counts(rng: random.Random, folder: str) -> Case:
    """Parallel sizes up to 10^30: answered at once; a TP past the 4 GPUs blocks (check) or is exit
    2 (recommend)."""
    values = [0, 1, 2, 4, 5, 8, 1024, 1025, 10**9, 10**18, 10**30, -1, "abc", "4.5"]
    flags: list[str] = []
    chosen: dict[str, Any] = {}
    for flag in rng.sample(
        [
            "--tp-size",
            "--dp-size",
            "--ep-size",
            "--base-gpu-id",
            "--gpu-id-step",
            "--nnodes",
            "--pp-size",
        ],
        rng.randint(1, 3),
    ):
        chosen[flag] = rng.choice(values)
        flags += [flag, str(chosen[flag])]
    tp = chosen.get("--tp-size")
    if rng.random() < 0.5:
        argv = ["check", *SYSTEM, "--sglang-version", NEWEST, "--", *LAUNCH, *flags]
        known = (
            isinstance(tp, int)
            and tp > 4
            and "--nnodes" not in chosen
            and "--pp-size" not in chosen
        )
        return Case("counts", [argv], code_is(1) if known else None, label=" ".join(flags))
    flags = [
        word
        for pair in zip(flags[::2], flags[1::2], strict=False)
        if pair[0] in ("--tp-size", "--dp-size", "--ep-size")
        for word in pair
    ] or ["--tp-size", str(tp if tp is not None else 10**9)]
    argv = ["recommend", *SYSTEM, *flags]
    tp_given = flags[flags.index("--tp-size") + 1] if "--tp-size" in flags else None
    known = tp_given is not None and tp_given.lstrip("-").isdigit() and int(tp_given) > 4
    return Case("counts", [argv], code_is(2) if known else None, label=" ".join(flags))


def versions(rng: random.Random, folder: str) -> Case:
    """Versions of up to 5,000 digits: one line, exit 2 where topoctl is given the version itself."""
    digits = rng.choice([50, 4300, 4301, 5000])
    version = rng.choice(
        ["1" * digits, "0." + "9" * digits, "v" + "1." * (digits // 2) + "1", "0.5." + "7" * digits]
    )
    if rng.random() < 0.6:
        argv = ["check", *SYSTEM, "--sglang-version", version, "--", *LAUNCH, "--tp-size", "4"]
        expect = error_with("is not an SGLang version") if len(version) > 64 else code_is(0, 1, 2)
        return Case("versions", [argv], expect, label=f"{digits} digits")
    path = write(
        folder,
        "compose.yaml",
        f"services:\n  s:\n    image: lmsysorg/sglang:v{version}\n"
        f"    command: {' '.join(LAUNCH)} --tp-size 4\n",
    )
    return Case(
        "versions",
        [["check", path, *SYSTEM]],
        code_is(0, 1, 2),
        label=f"image tag of {digits} digits",
    )


PAYLOADS = [
    "x\n::error::FORGED",
    "x\r\n::warning::FORGED",
    "x\r::error::FORGED",
    "\x1b[2J\x1b[31m::error::FORGED",
    "x\u2028::error::FORGED",
    "x\x85::error::FORGED",
    "x\x0b::error::FORGED",
    "x\x0c::error::FORGED",
    "x\x1c::error::FORGED",
    "x\u2029::notice::FORGED",
]


def _forged(result: Result, raw_ok: bool) -> str | None:
    for line in (result.out + "\n" + result.err).splitlines():
        if line.lstrip("\x1b[0123456789;JmH").startswith(
            ("::error::FORGED", "::warning::FORGED", "::notice::FORGED")
        ):
            return f"a forged annotation line: {line[:80]!r}"
    if not raw_ok:
        for char in result.out + result.err:
            if (ord(char) < 32 and char not in "\n\t") or char in "\x7f\x85\u2028\u2029":
                return f"a raw control character {char!r} in text output"
    return None


def escapes(rng: random.Random, folder: str) -> Case:
    """Input text with newlines and `::error::`: no output line starts with it, no raw control
    character."""
    payload = rng.choice(PAYLOADS)
    quoted = json.dumps(payload)  # YAML reads JSON strings
    fmt = rng.choice(["text", "github", "junit", "text"])
    route = rng.choice(
        [
            "container",
            "deployment",
            "arg",
            "compose-service",
            "env-value",
            "snapshot",
            "rule-title",
            "command-arg",
        ]
    )
    if route in ("container", "deployment", "arg"):
        name = quoted if route == "container" else '"srv"'
        meta = quoted if route == "deployment" else '"dep"'
        arg = quoted if route == "arg" else '"m"'
        path = write(
            folder,
            "deploy.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " + meta + "}\n"
            "spec:\n  template:\n    spec:\n      containers:\n      - name: " + name + "\n"
            "        image: lmsysorg/sglang:v0.5.12\n"
            "        command: [python3, -m, sglang.launch_server, --model-path, "
            + arg
            + ', --tp-size, "2"]\n',
        )
        argv = ["check", path, *NO_P2P_SYSTEM, "--format", fmt]
    elif route in ("compose-service", "env-value"):
        service = quoted if route == "compose-service" else "s"
        env = f"    environment:\n      NCCL_DEBUG: {quoted}\n" if route == "env-value" else ""
        path = write(
            folder,
            "compose.yaml",
            f"services:\n  {service}:\n    image: lmsysorg/sglang:v0.5.12\n{env}"
            "    command: python3 -m sglang.launch_server --model-path m --tp-size 2\n",
        )
        argv = ["check", path, *NO_P2P_SYSTEM, "--format", fmt]
    elif route == "snapshot":
        with open(
            os.path.join(FIXTURES, "rtx-4090-2x-pcie-no-p2p", "snapshot.json"), encoding="utf-8"
        ) as handle:
            snap = json.load(handle)
        snap["host"]["hostname"] = payload
        snap["gpus"][0]["name"] = payload
        path = write(folder, "snap.json", json.dumps(snap))
        argv = rng.choice(
            [
                ["show", "--topology", path],
                [
                    "check",
                    "--topology",
                    path,
                    "--format",
                    fmt,
                    "--sglang-version",
                    NO_P2P_VERSION,
                    "--",
                    *LAUNCH,
                    "--tp-size",
                    "2",
                ],
            ]
        )
    elif route == "rule-title":
        os.makedirs(os.path.join(folder, "rules"))
        write(
            folder,
            "rules/site.yaml",
            "rules:\n  - id: site-forge\n    severity: warn\n    title: " + quoted + "\n"
            "    message: "
            + quoted
            + "\n    remediation: "
            + quoted
            + "\n    when: {tp_size: {gt: 1}}\n"
            "    source: {kind: site, ref: " + quoted + "}\n",
        )
        argv = rng.choice(
            [
                ["rules", "list", "--rules", os.path.join(folder, "rules")],
                [
                    "check",
                    "--rules",
                    os.path.join(folder, "rules"),
                    *NO_P2P_SYSTEM,
                    "--format",
                    fmt,
                    "--sglang-version",
                    NO_P2P_VERSION,
                    "--",
                    *LAUNCH,
                    "--tp-size",
                    "2",
                ],
            ]
        )
    else:
        argv = [
            "check",
            *NO_P2P_SYSTEM,
            "--format",
            fmt,
            "--sglang-version",
            NO_P2P_VERSION,
            "--",
            "python3",
            "-m",
            "sglang.launch_server",
            "--model-path",
            payload,
            "--tp-size",
            "2",
            rng.choice(["--bogus" + payload, "-x"]),
        ]
    raw_ok = fmt == "junit"  # XML text: checked for forged lines only
    return Case(
        "escapes", [argv], lambda result: _forged(result, raw_ok), label=f"{route} in {fmt}"
    )


EXEC_YAML = [
    f'!!python/object/apply:os.system ["touch {MARK}"]',
    f'!!python/object/apply:subprocess.call [["touch", "{MARK}"]]',
    "!!python/name:os.system",
    f'!!python/object/new:os.system ["touch {MARK}"]',
]
EXEC_SHELL = [
    f"$(touch {MARK})",
    f"`touch {MARK}`",
    f"; touch {MARK}",
    f"| touch {MARK}",
    f"&& touch {MARK}",
    f"${{X:=$(touch {MARK})}}",
]


def code_exec(rng: random.Random, folder: str) -> Case:
    """YAML object tags and shell substitutions in every surface: nothing is ever run (no marker
    file)."""
    tag, shell = rng.choice(EXEC_YAML), rng.choice(EXEC_SHELL)
    route = rng.choice(
        [
            "snapshot",
            "rule",
            "manifest",
            "compose",
            "sglang-config",
            "launch.env",
            "script",
            "env-file",
            "command",
        ]
    )
    if route == "snapshot":
        argv = ["show", "--topology", write(folder, "s.yaml", f"schema_version: {tag}\n")]
    elif route == "rule":
        os.makedirs(os.path.join(folder, "rules"))
        write(folder, "rules/site.yaml", f"rules: {tag}\n")
        argv = ["rules", "list", "--rules", os.path.join(folder, "rules")]
    elif route == "manifest":
        argv = [
            "check",
            write(
                folder,
                "d.yaml",
                f"apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: {tag}\n"
                f"    command: [python3, -m, sglang.launch_server, --model-path, m]\n",
            ),
            *SYSTEM,
        ]
    elif route == "compose":
        argv = [
            "check",
            write(
                folder,
                "compose.yaml",
                f"services:\n  s:\n    image: {tag}\n    command: python3 -m "
                f"sglang.launch_server --model-path '{shell}'\n",
            ),
            *SYSTEM,
        ]
    elif route == "sglang-config":
        path = write(folder, "server.yaml", f"tp-size: {tag}\n")
        argv = ["check", *SYSTEM, "--sglang-version", NEWEST, "--", *LAUNCH, "--config", path]
    elif route == "launch.env":
        argv = [
            "check",
            write(folder, "launch.env", f'SGLANG_ARGS="--model-path m {shell}"\nX={shell}\n'),
            *SYSTEM,
        ]
    elif route == "script":
        argv = [
            "check",
            write(
                folder,
                "run.sh",
                f"#!/bin/bash\nTP={shell}\npython3 -m sglang.launch_server "
                f"--model-path m --tp-size $TP {shell}\n",
            ),
            *SYSTEM,
        ]
    elif route == "env-file":
        env = write(folder, "vars.env", f"A={shell}\n")
        argv = ["check", *SYSTEM, "--", "docker", "run", "--env-file", env, "img", *LAUNCH, shell]
    else:
        argv = [
            "check",
            *SYSTEM,
            "--",
            "sh",
            "-c",
            f"python3 -m sglang.launch_server --model-path m {shell}",
        ]
    return Case("code-exec", [argv], None, label=route)


def _output_commands() -> list[tuple[list[str], int, bool]]:
    """(argv, exit code, whether it writes stdout)."""
    return [
        (["recommend", *SYSTEM], 0, True),
        (
            [
                "check",
                *NO_P2P_SYSTEM,
                "--sglang-version",
                NO_P2P_VERSION,
                "--",
                *LAUNCH,
                "--tp-size",
                "2",
            ],
            1,
            True,
        ),
        (
            [
                "check",
                *NO_P2P_SYSTEM,
                "--format",
                "github",
                "--sglang-version",
                NO_P2P_VERSION,
                "--",
                *LAUNCH,
                "--tp-size",
                "2",
            ],
            1,
            True,
        ),
        (["probe", "--from-capture", os.path.join(FIXTURES, "no-gpu")], 3, False),
        (["rules", "list"], 0, True),
        (["--version"], 0, True),
        (["show", *SYSTEM], 0, True),
        (["recommend", "--help"], 0, True),
        (["nonsense-command"], 2, False),
    ]


def output(rng: random.Random, folder: str) -> Case:
    """(fresh process) stdout full/closed/read-only -> 74 when the command writes stdout; stderr
    lost -> the verdict."""
    argv, code, writes = rng.choice(_output_commands())
    out_mode = rng.choice(["file", "full", "closed", "readonly", "pipe-leaves"])
    err_mode = rng.choice(["file", "full", "closed"])
    env = {"PYTHONUNBUFFERED": "1"} if rng.random() < 0.5 else {}
    wanted = {74} if writes and out_mode in ("full", "closed", "readonly") else {code}
    if out_mode == "pipe-leaves":
        wanted = {code, 141}
    label = f"{' '.join(argv[:2])} stdout={out_mode} stderr={err_mode} unbuffered={bool(env)}"

    def expect(result: Result) -> str | None:
        return (
            None
            if result.code in wanted
            else f"expected {sorted(wanted)}, got {result.code}: {result.err[-200:]}"
        )

    return Case(
        "output",
        [argv],
        expect,
        env=env,
        fresh=True,
        stdout=out_mode,
        stderr=err_mode,
        label=label,
        allowed=ALLOWED | {120},
    )


_REFERENCE: dict[str, bytes] = {}


def signals(rng: random.Random, folder: str) -> Case:
    """(fresh process) a signal at a random moment of `-o`: no temp file stays; the target is absent
    or whole."""
    which = rng.choice([signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
    target = os.path.join(folder, "out", rng.choice(["launch.env", "snapshot.yaml"]))
    os.makedirs(os.path.dirname(target))
    if target.endswith(".env"):
        argv = ["recommend", *SYSTEM, "--model", "llama-3.1-70b", "-o", target]
    else:
        argv = ["probe", "--from-capture", os.path.join(FIXTURES, "b200-8x-nvswitch"), "-o", target]
    key = os.path.basename(target)

    def expect(result: Result) -> str | None:
        left = [name for name in os.listdir(os.path.dirname(target)) if name != key]
        if left:
            return f"left behind: {left}"
        if os.path.exists(target):
            with open(target, "rb") as handle:
                content = handle.read()
            reference = _REFERENCE.get(key)
            if reference is not None and content != reference:
                return "a target that is not the whole output"
        return None

    return Case(
        "signals",
        [argv],
        expect,
        fresh=True,
        signal_at=(which, rng.uniform(0.0, 0.8)),
        temp_dir=os.path.dirname(target),
        label=f"{signal.Signals(which).name}",
        allowed=ALLOWED | {130, 143, 129},
    )


_CACHE_PLAN: dict[str, Any] = {}


def cache_cases(rng: random.Random, folder: str) -> Case:
    """(fresh process) a broken or tampered knowledge cache: the verdict stays the one of a run
    without a cache."""
    xdg = os.path.join(folder, "xdg")
    cache = os.path.join(xdg, "topoctl")
    os.makedirs(cache)
    argv = [
        "check",
        *NO_P2P_SYSTEM,
        "--sglang-version",
        NO_P2P_VERSION,
        "--",
        *LAUNCH,
        "--tp-size",
        "2",
    ]
    plan = _CACHE_PLAN
    kind = rng.choice(["fifo", "garbage", "truncated", "tampered", "tampered", "folder-is-file"])
    rules_name, rules_stamp = plan["rules"]
    if kind == "fifo":
        for name in plan["names"]:
            os.mkfifo(os.path.join(cache, name))
    elif kind == "garbage":
        write(cache, rules_name, os.urandom(rng.randint(0, 3000)))
    elif kind == "truncated":
        write(cache, rules_name, plan["rules_text"][: rng.randint(0, len(plan["rules_text"]))])
    elif (
        kind == "tampered"
    ):  # a block made info, the digest recomputed: what a cache keyed by nothing admits
        body = json.dumps(
            plan["rules_tampered"], separators=(",", ":"), ensure_ascii=False
        ).encode()
        header = {"fingerprint": rules_stamp, "sha256": hashlib.sha256(body).hexdigest()}
        write(cache, rules_name, json.dumps(header, separators=(",", ":")).encode() + b"\n" + body)
    else:
        shutil.rmtree(cache)
        write(xdg, "topoctl", "not a folder")

    def expect(result: Result) -> str | None:
        if result.code != 1 or "custom-allreduce-without-p2p" not in result.out:
            return f"the cache changed the verdict ({kind}): exit {result.code}"
        return None

    return Case(
        "cache",
        [argv],
        expect,
        env={"XDG_CACHE_HOME": xdg, "TOPOCTL_NO_CACHE": ""},
        fresh=True,
        label=kind,
    )


def _k8s_container(tp: str, flag: str, image: str, indent: str, named: bool = True) -> str:
    first = (
        f"{indent}- name: sglang\n{indent}  image: {image}\n"
        if named
        else f"{indent}- image: {image}\n"
    )
    return (
        first + f'{indent}  command: ["python3", "-m", "sglang.launch_server"]\n'
        f'{indent}  args: ["--model-path", "Qwen/Qwen3-8B", "{flag}", "{tp}", "--port", "8080"]\n'
        f"{indent}  resources:\n{indent}    limits:\n{indent}      nvidia.com/gpu: 4\n"
    )


def _launch_file(kind: str, tp: str, flag: str, image: str) -> tuple[str, str]:
    """(file name, text) of one SGLang launch in a form that once read as "no launch" (issue 21):
    the forms of argo-rollouts' canary Rollout, knative/docs' serving Service, kserve/website's
    InferenceService (custom container, and model + runtime with args), Docker's Dockerfile
    reference (exec CMD, shell CMD with ENV, ENTRYPOINT + CMD) and a compose service with an
    env_file; written here, with 4 GPUs given."""
    if kind == "argo-rollout":
        return "rollout.yaml", (
            "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata:\n  name: sglang\nspec:\n"
            "  replicas: 2\n  strategy:\n    canary:\n      steps:\n        - setWeight: 50\n"
            "  selector:\n    matchLabels: {app: sglang}\n  template:\n    metadata:\n"
            "      labels: {app: sglang}\n    spec:\n      containers:\n"
            + _k8s_container(tp, flag, image, "        ")
        )
    if kind == "knative":
        return "service.yaml", (
            "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata:\n  name: sglang\nspec:\n"
            "  template:\n    metadata:\n      annotations:\n"
            '        autoscaling.knative.dev/min-scale: "1"\n    spec:\n      containers:\n'
            + _k8s_container(tp, flag, image, "        ", named=False)
        )
    if kind == "kserve-containers":
        return "isvc.yaml", (
            "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata:\n  name: q\n"
            "spec:\n  predictor:\n    containers:\n" + _k8s_container(tp, flag, image, "      ")
        )
    if kind == "kserve-model":
        return "isvc.yaml", (
            "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata:\n  name: q\n"
            "spec:\n  predictor:\n    model:\n      modelFormat:\n        name: huggingface\n"
            "      runtime: kserve-sglang\n      args:\n        - --model-path\n"
            f'        - Qwen/Qwen3-8B\n        - {flag}\n        - "{tp}"\n'
            '      resources:\n        limits:\n          nvidia.com/gpu: "4"\n'
        )
    if kind == "dockerfile-exec":
        return "Dockerfile", (
            f'FROM {image}\nWORKDIR /app\nCMD ["python3", "-m", "sglang.launch_server", '
            f'"--model-path", "Qwen/Qwen3-8B", "{flag}", "{tp}", "--port", "30000"]\n'
        )
    if kind == "dockerfile-shell":
        return "Dockerfile", (
            f"FROM {image}\nENV TP={tp}\nENV MODEL=Qwen/Qwen3-8B\n"
            f"CMD python3 -m sglang.launch_server --model-path $MODEL {flag} $TP --port 30000\n"
        )
    if kind == "dockerfile-entrypoint":
        return "Dockerfile", (
            f'FROM {image} AS base\nENTRYPOINT ["python3", "-m", "sglang.launch_server"]\n'
            f'CMD ["--model-path", "Qwen/Qwen3-8B", "{flag}", "{tp}"]\n'
        )
    return "compose.yaml", (
        f"services:\n  sglang:\n    image: {image}\n    env_file: vars.env\n"
        f"    command: python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B {flag} {tp}\n"
        "    deploy:\n      resources:\n        reservations:\n          devices:\n"
        "            - {driver: nvidia, count: 4, capabilities: [gpu]}\n"
    )


LAUNCH_KINDS = [
    "argo-rollout",
    "knative",
    "kserve-containers",
    "kserve-model",
    "dockerfile-exec",
    "dockerfile-shell",
    "dockerfile-entrypoint",
    "compose-env-file",
]


def launch_kinds(rng: random.Random, folder: str) -> Case:
    """Kinds that hold a launch but once read as "no launch" (issue 21): each is judged as one
    launch, never "no launch"; a TP of 8 on the 4 GPUs given blocks (exit 1), a TP of 1, 2 or 4 does
    not. A compose env_file that cannot be read (missing, not UTF-8, a FIFO, /dev/zero, a folder) is
    exit 2 naming it, never "no launch"."""
    kind = rng.choice(LAUNCH_KINDS)
    tp = rng.choice(["1", "2", "4", "8", "8"])
    flag = rng.choice(["--tp-size", "--tp-size", "--tensor-parallel-size"])
    image = rng.choice(
        ["lmsysorg/sglang:v0.5.12", "lmsysorg/sglang:v0.5.21-cu129", "lmsysorg/sglang:latest"]
    )
    name, text = _launch_file(kind, tp, flag, image)
    if rng.random() < 0.3 and name.endswith(
        ".yaml"
    ):  # more documents around it, as a real manifest has
        text = (
            (
                "# deploy/sglang\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: "
                "cfg}\ndata: {a: b}\n---\n" + text + "---\n"
            )
            if name != "compose.yaml"
            else "# compose\n" + text
        )
    if rng.random() < 0.2 and name.endswith(".yaml"):
        text = text.replace("\n", "\r\n")  # CRLF, as a file saved on Windows
    path = write(folder, name, text)
    broken = ""
    if kind == "compose-env-file":
        broken = rng.choice(["", "", "missing", "latin1", "fifo", "zero", "folder"])
        env_path = os.path.join(folder, "vars.env")
        if broken == "":
            write(folder, "vars.env", "NCCL_DEBUG=WARN\n")
        elif broken == "latin1":
            write(folder, "vars.env", b"\xff\xfeA=1\n")
        elif broken == "fifo":
            os.mkfifo(env_path)
        elif broken == "zero":
            os.symlink("/dev/zero", env_path)
        elif broken == "folder":
            os.mkdir(env_path)
    argv = ["check", path, *SYSTEM, "--format", "json"]

    def expect(result: Result) -> str | None:
        if broken:
            line = first_error(result)
            return (
                None
                if result.code == 2 and "vars.env" in line
                else f"a compose env_file that is {broken} must be exit 2 naming it; got "
                f"{result.code}: {line}"
            )
        try:
            doc = json.loads(result.out)
        except ValueError:
            return f"no JSON report (exit {result.code}): {result.err[-200:]}"
        launches, none = doc.get("results", []), doc.get("no_launch", [])
        if len(launches) != 1 or none:
            return (
                f"{len(launches)} launches and {len(none)} 'no launch' in a file holding one launch"
            )
        blocks = [item["id"] for item in launches[0]["findings"] if item["severity"] == "block"]
        if tp == "8":
            return (
                None
                if result.code == 1 and "topoctl-tp-exceeds-gpus" in blocks
                else f"TP 8 on 4 GPUs must block; exit {result.code}, blocks {blocks}"
            )
        return (
            None
            if result.code == 0 and not blocks
            else f"TP {tp} on 4 GPUs: exit {result.code}, blocks {blocks}"
        )

    return Case(
        "launch-kinds",
        [argv],
        expect,
        label=f"{kind} tp {tp}" + (f" env_file {broken}" if broken else ""),
    )


SITE_BLOCK_RULE = """\
rules:
  - id: site-no-tp4
    title: Our boxes run TP 8 only
    severity: block
    when:
      all:
        - {fact: gpu.count, ge: 2}
    effect:
      forbid:
        - {setting: tp_size, values: [4]}
    message: This site runs TP 8.
    remediation: Use --tp-size 8.
    evidence:
      - {source: "measured:site-box", level: measured, summary: site policy, scope: our boxes}
    tests:
      - {name: fires on two GPUs, expect: fire, snapshot: {gpus: [{index: 0, sm: 90}, {index: 1, sm: 90}]}}
      - {name: silent on one GPU, expect: silent, snapshot: {gpus: [{index: 0, sm: 90}]}}
"""
NO_RULES = {
    "empty": "",
    "comments": "# our blocking rules\n# - id: x\n",
    "null": "null\n",
    "empty-list": "rules: []\n",
    "blank-lines": "\n\n",
    "document-marker": "---\n",
}


def site_rules(rng: random.Random, folder: str) -> Case:
    """Site rule files that hold no rules (issue 21): each is a warning naming it; beside a file
    with a real rule that rule still applies (a blocking site rule that fires: exit 1); a folder
    whose files hold no rule, or that holds no rule file (only a README), is exit 2, with each empty
    file named first. A rule file's name that is not a regular file (a FIFO, a device, a link to
    nothing), alone or beside a real rule, is exit 2 naming it: skipped, it would drop that file's
    rules without a word."""
    rules = os.path.join(folder, "rules")
    os.makedirs(rules)
    kind = rng.choice([*NO_RULES, "no-rules-folder", "fifo", "fifo", "device", "dangling-link"])
    beside = kind != "no-rules-folder" and rng.random() < 0.5
    argv = [
        "check",
        "--rules",
        rules,
        *SYSTEM,
        "--sglang-version",
        NEWEST,
        "--",
        *LAUNCH,
        "--tp-size",
        "4",
    ]
    site = os.path.join(rules, "site.yaml")
    if kind in NO_RULES:
        write(rules, "site.yaml", NO_RULES[kind])
    elif kind == "fifo":
        os.mkfifo(site)
    elif kind == "device":
        os.symlink("/dev/zero", site)
    elif kind == "dangling-link":
        os.symlink(os.path.join(rules, "gone.yaml.bak"), site)
    else:
        write(rules, "README.md", "no rules here\n")
    if beside:
        write(rules, "real.yaml", SITE_BLOCK_RULE)

    def expect(result: Result) -> str | None:
        if kind == "no-rules-folder":
            return (
                None
                if result.code == 2
                else f"--rules on a folder without rules: exit {result.code}, not 2"
            )
        if kind in ("fifo", "device", "dangling-link"):
            return (
                None
                if result.code == 2 and "site.yaml" in first_error(result)
                else f"a rule file that is {kind} ({'beside a rule' if beside else 'alone'}) "
                f"must be exit 2 naming it; got {result.code}: "
                f"{first_error(result) or result.err[-200:]}"
            )
        named = any(
            line.startswith("topoctl: warning: ") and "site.yaml holds no rules" in line
            for line in result.err.splitlines()
        )
        if not named:
            return f"a site rule file with no rules ({kind}) passed without a warning naming it"
        if beside:
            return (
                None
                if result.code == 1 and "site-no-tp4" in result.out
                else f"the real rule beside an empty file ({kind}) did not block: exit "
                f"{result.code}"
            )
        return (
            None
            if result.code == 2
            else f"a folder whose only file holds no rules ({kind}): exit {result.code}, not 2"
        )

    return Case("site-rules", [argv], expect, label=f"{kind} beside a rule" if beside else kind)


GENERATORS: dict[str, tuple[Callable[[random.Random, str], Case], float]] = {
    "special-files": (special_files, 0.11),
    "yaml": (yaml_limits, 0.09),
    "captures": (captures, 0.13),
    "model-configs": (model_configs, 0.12),
    "safetensors": (safetensors, 0.10),
    "counts": (counts, 0.09),
    "versions": (versions, 0.05),
    "escapes": (escapes, 0.10),
    "code-exec": (code_exec, 0.06),
    "output": (output, 0.03),
    "signals": (signals, 0.025),
    "cache": (cache_cases, 0.015),
    "site-rules": (site_rules, 0.04),
    "launch-kinds": (launch_kinds, 0.05),
}


# -- running
# -----------------------------------------------------------------------------------------------------
def _preload() -> None:
    """Import every module of topoctl (but torch's), so each forked child starts warm: modules only,
    no data."""
    sys.path.insert(0, ROOT) if ROOT not in sys.path else None
    import importlib
    import pkgutil

    import topoctl

    for name in ("yaml", "packaging.version", "jsonschema", "click"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    for info in pkgutil.walk_packages(topoctl.__path__, "topoctl."):
        if "torch" in info.name or ".bench" in info.name:
            continue
        try:
            importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - a module that cannot be imported is imported by the child instead
            pass
    # The built-in knowledge, as a long-running process would hold it (what a case gives is read by
    # the child).
    from topoctl.autoconf import data_files
    from topoctl.core.gpus import _data
    from topoctl.rules.engine.loader import builtin_rules, rule_schema
    from topoctl.rules.sglang.flags import _load_doc

    os.environ["TOPOCTL_NO_CACHE"] = (
        "1"  # the parent must not write a user cache the fresh cases would read
    )
    builtin_rules()
    rule_schema()
    _data()
    for version in (NEWEST, NO_P2P_VERSION, "0.5.5"):
        _load_doc(version)
    for name in ("models.yaml",):
        data_files.load(name)
    _warm_up()
    del os.environ["TOPOCTL_NO_CACHE"]


def _warm_up() -> None:
    """Run each command once in the parent (output to /dev/null), as a long-running process would
    have: the lazy imports and the parsed built-in knowledge are then there in every child, which
    costs 0.03 s a case instead of 0.35 s. Only built-in data is held; everything a case gives is
    read by the child."""
    from topoctl.cli.app import main as cli_main

    saved = os.dup(1), os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    try:
        for argv in (
            ["check", *SYSTEM, "--sglang-version", NEWEST, "--", *LAUNCH, "--tp-size", "4"],
            [
                "check",
                *NO_P2P_SYSTEM,
                "--sglang-version",
                NO_P2P_VERSION,
                "--format",
                "github",
                "--",
                *LAUNCH,
                "--tp-size",
                "2",
            ],
            ["check", os.path.join(ROOT, "examples", "deploy"), *SYSTEM],
            ["recommend", *SYSTEM],
            ["recommend", *SYSTEM, "--model", "kimi-k2.5"],
            ["show", *SYSTEM],
            ["probe", "--from-capture", os.path.join(FIXTURES, "h200-4x-nvswitch-vm")],
            ["rules", "list"],
        ):
            cli_main(argv)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)


def _child(case: Case, folder: str) -> None:
    """In the forked child: rlimits, the case's folder and files as fds 0-2, then the console
    script's main."""
    resource.setrlimit(resource.RLIMIT_AS, (4 * 1024**3, 4 * 1024**3))
    os.chdir(folder)
    os.environ.update(case.env)
    os.environ.setdefault("XDG_CACHE_HOME", os.path.join(folder, ".cache"))
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    for fd, name in ((1, "stdout.txt"), (2, "stderr.txt")):
        os.dup2(
            os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd
        )
    from topoctl.entry import main

    code = 0
    try:
        for number, argv in enumerate(case.steps):
            sys.argv = ["topoctl", *argv]
            if number + 1 < len(case.steps):
                code = main(argv)
                if code not in (0, 1):
                    break
            else:
                code = main()
    except BaseException as exc:  # noqa: BLE001 - reported as an internal error
        try:
            os.write(
                2,
                f"\nTraceback (most recent call last): escaped main: {type(exc).__name__}: {exc}\n".encode(),
            )
        except OSError:
            pass
        code = 70
    with open("/proc/self/status", encoding="ascii") as handle:
        hwm = [line.split()[1] for line in handle if line.startswith("VmHWM:")]
    with open(os.path.join(folder, "hwm.txt"), "w", encoding="ascii") as handle:
        handle.write(hwm[0] if hwm else "0")
    os._exit(code if 0 <= code < 256 else 70)


def run_forked(case: Case, folder: str) -> Result:
    sys.stdout.flush()
    sys.stderr.flush()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            _child(case, folder)
        finally:
            os._exit(70)
    code: int | None = None
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            code = 128 - code if code < 0 else code  # ended by a signal: what a shell reports
            break
        if time.monotonic() - started > KILL_S:
            os.kill(pid, signal.SIGKILL)
            os.wait4(pid, 0)
            break
        time.sleep(0.005)
    seconds = time.monotonic() - started
    return _result(code, seconds, folder, usage.ru_maxrss / 1024 if code is not None else 0.0)


def _result(code: int | None, seconds: float, folder: str, rss_mb: float) -> Result:
    def text(name: str) -> str:
        try:
            with open(os.path.join(folder, name), "rb") as handle:
                return handle.read(200_000).decode("utf-8", "replace")
        except OSError:
            return ""

    hwm = text("hwm.txt").strip()
    peak = int(hwm) / 1024 if hwm.isdigit() else rss_mb
    return Result(code, text("stdout.txt"), text("stderr.txt"), seconds, peak, folder)


BOOT = (
    "import os, sys, resource\n"
    "resource.setrlimit(resource.RLIMIT_AS, (4 * 1024 ** 3, 4 * 1024 ** 3))\n"
    "from topoctl.entry import main\n"
    "ready = int(os.environ.pop('FUZZ_READY_FD', '-1'))\n"
    "if ready >= 0:\n"
    "    os.write(ready, b'r')\n"
    "    os.close(ready)\n"
    "sys.argv = ['topoctl', *sys.argv[1:]]\n"
    "sys.exit(main())\n"
)


def _wait_readable(fd: int, timeout: float) -> None:
    import select

    readable, _, _ = select.select([fd], [], [], timeout)
    if readable:
        os.read(fd, 1)


def run_fresh(case: Case, folder: str) -> Result:
    """A fresh `python -c BOOT argv...` with the case's stdout/stderr conditions and signal."""
    opened: list[Any] = []

    def channel(mode: str, name: str) -> Any:
        handle: Any
        if mode == "full":
            handle = open("/dev/full", "wb")
        elif mode == "readonly":
            write(folder, name, b"")
            handle = open(os.path.join(folder, name), "rb")
        elif mode == "pipe-leaves":
            return subprocess.PIPE
        elif mode == "closed":
            return None
        else:
            handle = open(os.path.join(folder, name), "wb")
        opened.append(handle)
        return handle

    out, err = channel(case.stdout, "stdout.txt"), channel(case.stderr, "stderr.txt")
    closing = [fd for fd, mode in ((1, case.stdout), (2, case.stderr)) if mode == "closed"]

    def prepare() -> None:
        # The signals a terminal delivers act by default in the case, whatever the harness was
        # started under: `nohup` ignores SIGHUP and a shell without job control ignores SIGINT in
        # background jobs, and an ignored signal stays ignored across exec, so a signals case would
        # test nothing.
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, signal.SIG_DFL)
        for fd in closing:
            os.close(fd)

    env = dict(os.environ, **case.env)
    env["PYTHONPATH"] = ROOT
    env.setdefault("XDG_CACHE_HOME", os.path.join(folder, ".cache"))
    ready_read, ready_write = os.pipe() if case.signal_at else (-1, -1)
    if case.signal_at:
        env["FUZZ_READY_FD"] = str(ready_write)
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", BOOT, *case.steps[-1]],
        stdin=subprocess.DEVNULL,
        stdout=out if out is not None else subprocess.DEVNULL,
        stderr=err if err is not None else subprocess.DEVNULL,
        env=env,
        cwd=folder,
        preexec_fn=prepare,
        pass_fds=(ready_write,) if case.signal_at else (),
    )
    # the signal's moment counts from topoctl's entry being imported, not the interpreter's start
    if case.signal_at:
        os.close(ready_write)
        _wait_readable(ready_read, KILL_S)
        os.close(ready_read)
    if case.stdout == "pipe-leaves":
        proc.stdout.read(1)  # type: ignore[union-attr]
        proc.stdout.close()  # type: ignore[union-attr]
    code: int | None = None
    try:
        if case.signal_at is not None:
            try:
                code = proc.wait(timeout=case.signal_at[1])
            except subprocess.TimeoutExpired:
                proc.send_signal(case.signal_at[0])
        code = proc.wait(timeout=KILL_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        code = None
    seconds = time.monotonic() - started
    if code is not None and code < 0:  # ended by a signal: what a shell reports (SIGPIPE: 141)
        code = 128 - code
    for handle in opened:
        handle.close()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = _result(code, seconds, folder, usage.ru_maxrss / 1024)
    result.peak_mb = 0.0 if case.signal_at else result.peak_mb
    if case.stdout != "file":
        result.out = ""
    return result


def _marker_found(folder: str) -> bool:
    for _base, _dirs, files in os.walk(folder):
        if MARK in files:
            return True
    return os.path.exists(os.path.join(ROOT, MARK)) or os.path.exists(
        os.path.join(os.getcwd(), MARK)
    )


def judge(case: Case, result: Result) -> dict[str, str]:
    found: dict[str, str] = {}
    problem = internal_problem(case, result)
    if problem:
        found["internal"] = problem
    if result.seconds > SLOW_S:
        found["slow"] = f"{result.seconds:.1f}s"
    if result.peak_mb > BIG_MB:
        found["big"] = f"{result.peak_mb:.0f} MB"
    if case.expect is not None and "internal" not in found:
        wrong = case.expect(result)
        if wrong:
            found["wrong" if case.surface != "signals" else "temp"] = wrong
    if case.temp_dir and any(name.startswith(".topoctl-") for name in os.listdir(case.temp_dir)):
        found["temp"] = "temp file left"
    if _marker_found(result.folder):
        found["exec"] = "marker file created"
    return found


def build_reference() -> None:
    """What a signal case's target must be when present, and the cache names a tampering case
    plants."""
    env = dict(os.environ, PYTHONPATH=ROOT, TOPOCTL_NO_CACHE="1")
    with tempfile.TemporaryDirectory() as scratch:
        for key, argv in (
            ("launch.env", ["recommend", *SYSTEM, "--model", "llama-3.1-70b"]),
            (
                "snapshot.yaml",
                ["probe", "--from-capture", os.path.join(FIXTURES, "b200-8x-nvswitch")],
            ),
        ):
            target = os.path.join(scratch, key)
            subprocess.run(
                [sys.executable, "-m", "topoctl", *argv, "-o", target],
                env=env,
                check=True,
                capture_output=True,
            )
            with open(target, "rb") as handle:
                _REFERENCE[key] = handle.read()
        probe = (
            "import json, sys, topoctl.core.knowledge_cache as c\n"
            "seen = {}\n"
            "orig = c._read\n"
            "def spy(path, stamp):\n"
            "    seen[path.rsplit('/', 1)[-1].split('-')[0]] = [path.rsplit('/', 1)[-1], stamp]\n"
            "    return orig(path, stamp)\n"
            "c._read = spy\n"
            "from topoctl.cli.app import main\n"
            "main(sys.argv[1:])\n"
            "print(json.dumps(seen), file=sys.stderr)\n"
        )
        argv = [
            "check",
            *NO_P2P_SYSTEM,
            "--sglang-version",
            NO_P2P_VERSION,
            "--",
            *LAUNCH,
            "--tp-size",
            "2",
        ]
        done = subprocess.run(
            [sys.executable, "-c", probe, *argv],
            capture_output=True,
            text=True,
            env=dict(env, TOPOCTL_NO_CACHE="", XDG_CACHE_HOME=os.path.join(scratch, "x")),
        )
        seen = json.loads(done.stderr.strip().splitlines()[-1])
    with open(
        os.path.join(ROOT, "topoctl", "data", "compiled", "rules.json"), encoding="utf-8"
    ) as handle:
        _header, _, body = handle.read().partition("\n")
    rules = json.loads(body)
    tampered = json.loads(body)
    for entry in tampered if isinstance(tampered, list) else tampered.get("rules", []):
        if isinstance(entry, dict) and entry.get("severity") == "block":
            entry["severity"] = "info"
    _CACHE_PLAN.update({name: tuple(value) for name, value in seen.items()})
    _CACHE_PLAN["names"] = [value[0] for value in seen.values()]
    _CACHE_PLAN["rules_text"] = (
        json.dumps({"fingerprint": seen["rules"][1], "sha256": "0" * 64}) + "\n" + body
    ).encode()
    _CACHE_PLAN["rules_tampered"] = tampered
    _CACHE_PLAN["rules_plain"] = rules


def _keep(folder: str, where: str) -> None:
    """Copy a failing case's regular files (not FIFOs, sockets or sparse weights) for a look later."""
    for base, _dirs, files in os.walk(folder):
        for name in files:
            path = os.path.join(base, name)
            if (
                os.path.islink(path)
                or not os.path.isfile(path)
                or os.path.getsize(path) > 1024 * 1024
            ):
                continue
            target = os.path.join(where, os.path.relpath(path, folder))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(path, target)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=8400)
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--surfaces", default=",".join(GENERATORS))
    parser.add_argument("--keep", default="")
    parser.add_argument("--out", default="", help="also write the summary here")
    args = parser.parse_args()
    surfaces = [name for name in args.surfaces.split(",") if name]
    weights = {name: GENERATORS[name][1] for name in surfaces}
    total_weight = sum(weights.values())
    plan = [
        (name, max(1, round(args.cases * weight / total_weight)))
        for name, weight in weights.items()
    ]
    _preload()
    if any(name in surfaces for name in ("signals", "cache")):
        build_reference()
    if "model-configs" in surfaces:
        builtin_exits()
    rng = random.Random(args.seed)
    jobs = [
        (name, random.Random(rng.getrandbits(64))) for name, count in plan for _ in range(count)
    ]
    rng.shuffle(jobs)
    scratch = tempfile.mkdtemp(prefix="topoctl-fuzz-")
    stats: dict[str, dict[str, Any]] = {
        name: {
            "cases": 0,
            "internal": 0,
            "slow": 0,
            "big": 0,
            "wrong": 0,
            "temp": 0,
            "exec": 0,
            "worst_s": 0.0,
            "worst_mb": 0.0,
            "codes": {},
        }
        for name in surfaces
    }
    failures: list[tuple[str, str, dict[str, str], str]] = []
    lock = threading.Lock()
    started = time.monotonic()
    position = [0]

    def worker() -> None:
        while True:
            with lock:
                if position[0] >= len(jobs):
                    return
                number = position[0]
                position[0] += 1
            name, case_rng = jobs[number]
            folder = os.path.join(scratch, f"{number:05d}")
            os.makedirs(folder)
            try:
                case = GENERATORS[name][0](case_rng, folder)
            except Exception as exc:  # noqa: BLE001 - a generator bug is the harness's, reported apart
                print(f"generator {name} failed: {exc!r}", file=sys.stderr)
                continue
            result = run_fresh(case, folder) if case.fresh else run_forked(case, folder)
            found = judge(case, result)
            with lock:
                row = stats[name]
                row["cases"] += 1
                row["worst_s"] = max(row["worst_s"], result.seconds)
                row["worst_mb"] = max(row["worst_mb"], result.peak_mb)
                row["codes"][result.code] = row["codes"].get(result.code, 0) + 1
                for kind in found:
                    row[kind] += 1
                if found:
                    failures.append((name, case.label, found, folder))
                    if args.keep and len([f for f in failures if f[0] == name]) <= 5:
                        _keep(folder, os.path.join(args.keep, f"{name}-{number:05d}"))
            if not found:
                shutil.rmtree(folder, ignore_errors=True)
            if number % 200 == 0 and args.out:
                with open(args.out + ".progress", "w", encoding="utf-8") as handle:
                    handle.write(f"{number} of {len(jobs)} at {time.strftime('%H:%M:%S')}\n")

    threads = [threading.Thread(target=worker) for _ in range(args.workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    lines = [
        f"topoctl hostile-input fuzz: {sum(r['cases'] for r in stats.values())} cases, seed "
        f"{args.seed}, {args.workers} workers, {elapsed:.0f} s; python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"{'surface':14} {'cases':>6} {'internal':>8} {'>10s':>5} {'>600MB':>6} {'wrong':>6} "
        f"{'temp':>5} {'exec':>5} {'worst s':>8} {'worst MB':>8}  exit codes",
    ]
    for name in surfaces:
        row = stats[name]
        codes = " ".join(
            f"{code}:{count}"
            for code, count in sorted(row["codes"].items(), key=lambda kv: str(kv[0]))
        )
        lines.append(
            f"{name:14} {row['cases']:6} {row['internal']:8} {row['slow']:5} {row['big']:6} "
            f"{row['wrong']:6} {row['temp']:5} {row['exec']:5} {row['worst_s']:8.2f} "
            f"{row['worst_mb']:8.1f}  {codes}"
        )
    totals = {
        kind: sum(r[kind] for r in stats.values())
        for kind in ("internal", "slow", "big", "wrong", "temp", "exec")
    }
    lines.append("total: " + ", ".join(f"{kind} {count}" for kind, count in totals.items()))
    for name, label, found, _folder in failures[:60]:
        lines.append(
            f"  FAIL {name} [{label}]: " + "; ".join(f"{k}: {v}"[:220] for k, v in found.items())
        )
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)
    shutil.rmtree(scratch, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
