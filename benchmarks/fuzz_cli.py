"""Fuzz the real console script: N generated cases per input kind, each a fresh `python -m topoctl` process.

Usage:  python benchmarks/fuzz_cli.py [--cases 300] [--seed 14] [--workers 2] [--kinds snapshot,capture,...]

Input kinds: snapshot (show / recommend / check --topology FILE), capture (probe --from-capture
FILE), rules (rules list / rules test / check --rules DIR), launch.env (check FILE), command (check
-- WORDS...), model-config (recommend --model-config FILE), kubernetes, compose and script (check
FILE: a manifest, a compose file, a shell script, each from the examples in examples/deploy). Cases:
random bytes, random JSON/YAML trees, truncations and one-value mutations of a valid document, and
the hostile shapes of docs/reliability.md (deep nesting, YAML alias bombs, recursive aliases, huge
integers, captures claiming many GPUs, long words, many words, NaN, dates, binary); for manifests,
compose files and scripts also huge files, many documents / containers / services / launch lines,
values of the wrong type where the launch is read, alias bombs in the launch's own fields, odd
encodings (UTF-16, Latin-1, a byte-order mark, NUL bytes, CR line ends), env files that are devices
or missing, scripts that source themselves, variable-doubling expansion bombs and unbalanced quotes.

A case is an internal error when the exit code is not one the interface allows (0, 1, 2; 3 for a
capture of no GPU), when stderr holds a traceback, when an error is more than two lines, or when it
runs past --timeout. Prints one row per kind: cases, internal errors, exit codes seen, worst time,
worst peak memory (the child's own VmHWM at exit; wait4's maxrss where it could not report). Exit 1
if any internal error was found, with the first few cases saved under --keep.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "fixtures")
SYSTEM = "h200-4x-nvswitch-vm"
KINDS = (
    "snapshot",
    "capture",
    "rules",
    "launch.env",
    "command",
    "model-config",
    "kubernetes",
    "compose",
    "script",
)


def read(*parts: str) -> str:
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as handle:
        return handle.read()


# -- generation
# ------------------------------------------------------------------------------------------------
def random_scalar(rng: random.Random):
    return rng.choice(
        [
            None,
            True,
            False,
            0,
            -1,
            1,
            2**63,
            -(2**70),
            10**30,
            3.5,
            float("nan"),
            float("inf"),
            "",
            "OK",
            "NS",
            "unknown",
            "9.0",
            "NV18",
            "PIX",
            "x" * rng.randint(0, 2000),
            "\x1b[31m",
            "$(id)",
            "é東",
            rng.randint(-10, 10**6),
        ]
    )


def random_tree(rng: random.Random, depth: int = 0):
    roll = rng.random()
    if depth > 4 or roll < 0.5:
        return random_scalar(rng)
    if roll < 0.75:
        return [random_tree(rng, depth + 1) for _ in range(rng.randint(0, 5))]
    return {
        str(random_scalar(rng))[:20]: random_tree(rng, depth + 1) for _ in range(rng.randint(0, 5))
    }


def mutate(rng: random.Random, document):
    """One value replaced by a random tree, or one key deleted, anywhere in the document."""
    copied = copy.deepcopy(document)
    node, path = copied, []
    while isinstance(node, (dict, list)) and node and rng.random() < 0.8:
        key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
        path.append((node, key))
        node = node[key]
    if not path:
        return random_tree(rng)
    parent, key = path[-1]
    if isinstance(parent, dict) and rng.random() < 0.25:
        del parent[key]
    else:
        parent[key] = random_tree(rng)
    return copied


def dumps(rng: random.Random, document, yaml_ok: bool = True) -> bytes:
    if yaml_ok and rng.random() < 0.4:
        import yaml

        try:
            return yaml.safe_dump(document, allow_unicode=True).encode()
        except Exception:
            pass
    return json.dumps(document, ensure_ascii=False).encode("utf-8", "surrogatepass")


def hostile(rng: random.Random) -> bytes:
    n = rng.choice([70, 999, 1001, 5000, 100_000])
    shapes = [
        "[" * n + "]" * n,
        '{"a":' * n + "1" + "}" * n,
        "- " * min(n, 5000) + "x",
        "".join(f"{' ' * i}a:\n" for i in range(min(n, 3000))),
        "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
        + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 10)}]\n"
            for i in range(9)
        ),
        "&a [*a]",
        "a: &a {b: *a}",
        "x: " + "9" * n,
        "x: 0x" + "f" * n,
        '{"x": ' + "9" * n + "}",
        "x: 2026-01-01",
        "- !!binary aGVsbG8=",
        "x: .inf",
        "!!set {a: null}",
        "a\n---\nb",
        "!!python/object/apply:os.system [true]",
        "\ufeff{}",
        '{"a": NaN}',
        "[1e999]",
        "\x00" * 100,
    ]
    return rng.choice(shapes).encode("utf-8", "surrogatepass")


def document_case(rng: random.Random, valid: dict, yaml_ok: bool = True) -> bytes:
    roll = rng.random()
    if roll < 0.1:
        return os.urandom(rng.randint(0, 400))
    if roll < 0.2:
        return dumps(rng, random_tree(rng), yaml_ok)
    if roll < 0.3:
        return hostile(rng)
    text = dumps(rng, valid, yaml_ok)
    if roll < 0.4:
        return text[: rng.randint(0, len(text))]
    mutated = valid
    for _ in range(rng.choice([1, 1, 2, 3])):
        mutated = mutate(rng, mutated)
    return dumps(rng, mutated, yaml_ok)


# -- manifests, compose files, scripts
# ------------------------------------------------------------------------
def odd_encoding(rng: random.Random, text: str) -> bytes:
    """The same text as an editor or a tool might have saved it."""
    return rng.choice(
        [
            lambda: text.encode("utf-16"),
            lambda: text.encode("utf-16-le"),
            lambda: "\ufeff".encode() + text.encode(),
            lambda: text.encode("latin-1", "replace") + b"\xe9\xff",
            lambda: text.replace("\n", "\r\n").encode(),
            lambda: text.replace("\n", "\r").encode(),
            lambda: text.encode()[: len(text) // 2] + b"\x00" * 50,
            lambda: text.encode("utf-32"),
            lambda: text.encode() + b"\xc3",
            lambda: text.encode("utf-8", "surrogatepass"),
        ]
    )()


def _yaml_docs(text: str) -> list:
    import yaml

    return [doc for doc in yaml.safe_load_all(text) if doc is not None]


def _dump_all(rng: random.Random, docs: list) -> bytes:
    import yaml

    try:
        return yaml.safe_dump_all(docs, allow_unicode=True).encode()
    except Exception:  # a value safe_dump cannot write (NaN keys, ...): JSON is YAML too
        return json.dumps(docs[0] if docs else None, ensure_ascii=False).encode(
            "utf-8", "surrogatepass"
        )


WRONG = [
    5,
    -1,
    10**30,
    3.5,
    None,
    True,
    "",
    [],
    {},
    [[["deep"]]],
    {"a": {"b": 1}},
    "x" * 100_000,
    ["--tp-size"] * 5000,
    "$(id)",
    "\x1b[31m",
    float("nan"),
]


def manifest_case(rng: random.Random) -> bytes:
    text = read(
        "examples",
        "deploy",
        "kubernetes",
        rng.choice(["sglang-deployment.yaml", "dynamo-sglang-worker.yaml"]),
    )
    docs = _yaml_docs(text)
    roll = rng.random()
    if roll < 0.25:
        return document_case(rng, docs[-1])
    if roll < 0.35:
        return odd_encoding(rng, text)
    if roll < 0.45:  # many documents, or one container with many args
        n = rng.choice([1000, 20_000])
        return (
            "---\n".join([text] * (n // 100))
            if rng.random() < 0.5
            else text.replace(
                "- --model-path", "- --model-path\n" + "            - --tp-size\n" * n, 1
            )
        ).encode()
    if roll < 0.55:  # an alias bomb where the launch is read
        bomb = _bomb_flow(rng) if rng.random() < 0.7 else "&r [*r]"
        return text.replace("args:", "args: " + bomb + "\n          x-old-args:", 1).encode()
    if roll < 0.65:  # deep nesting under spec
        n = rng.choice([100, 1000, 10_000])
        return (
            text + "\n---\nkind: Pod\nspec:\n  containers:\n    - args: " + "[" * n + "]" * n + "\n"
        ).encode()
    # the wrong type somewhere the launch is read
    doc = copy.deepcopy(docs[-1])
    node: Any = doc
    paths: list[list[Any]] = [
        ["spec", "template", "spec", "containers"],
        ["spec", "template", "spec", "containers", 0, "args"],
        ["spec", "template", "spec", "containers", 0, "env"],
        ["spec", "template", "spec"],
        ["spec", "template", "spec", "containers", 0, "resources", "limits", "nvidia.com/gpu"],
        ["spec", "template", "spec", "containers", 0, "command"],
        ["kind"],
        ["spec"],
        ["spec", "services"],
        ["spec", "components"],
    ]
    path = rng.choice(paths)
    try:
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = rng.choice(WRONG)
    except (KeyError, IndexError, TypeError):
        doc[rng.choice(["kind", "spec", "items"])] = rng.choice(WRONG)
    return _dump_all(rng, docs[:-1] + [doc])


def _bomb_flow(rng: random.Random) -> str:
    """An inline alias bomb: `[&a [x,...], &b [*a,...], ...]` as one flow sequence."""
    levels = rng.choice([4, 9, 12])
    parts = ["&l0 [x,x,x,x,x,x,x,x,x,x]"] + [
        f"&l{i} [{','.join(['*l' + str(i - 1)] * 10)}]" for i in range(1, levels)
    ]
    return "[" + ", ".join(parts) + "]"


def compose_case(rng: random.Random, folder: str) -> bytes:
    text = read("examples", "deploy", "compose", "compose.yaml")
    docs = _yaml_docs(text)
    roll = rng.random()
    if roll < 0.25:
        return document_case(rng, docs[0])
    if roll < 0.35:
        return odd_encoding(rng, text)
    if roll < 0.45:  # many services, or a huge command
        n = rng.choice([500, 5000])
        if rng.random() < 0.5:
            body = text.split("services:\n", 1)[1]
            services = "".join(
                body.replace("  sglang:", f"  sglang{i}:", 1).replace(
                    "container_name: sglang", f"container_name: s{i}"
                )
                for i in range(n // 50)
            )
            return ("services:\n" + services).encode()
        return text.replace("--tp-size 4", "--tp-size 4 " * n).encode()
    if roll < 0.55:  # an alias bomb in the command, or a recursive alias
        bomb = _bomb_flow(rng) if rng.random() < 0.7 else "&r [*r]"
        return text.replace("command: >-", "command: " + bomb + "\n    x-old: >-", 1).encode()
    if (
        roll < 0.7
    ):  # env_file that is a device, a folder, missing, itself, or huge; a .env beside it
        target = rng.choice(
            [
                "/dev/zero",
                "/dev/urandom",
                "/",
                "missing.env",
                "compose.yaml",
                "big.env",
                "/proc/self/mem",
            ]
        )
        if target == "big.env":
            open(os.path.join(folder, "big.env"), "wb").write(
                b"A=" + b"x" * rng.choice([10**6, 3 * 10**7]) + b"\n"
            )
        if rng.random() < 0.5:
            dot = rng.choice(
                [b"HOME=${HOME}${HOME}\n", b"\xff\xfe\x00", b"A=" + b"${A}" * 10_000 + b"\n", b""]
            )
            open(os.path.join(folder, ".env"), "wb").write(dot)
        return text.replace(
            "    environment:", f"    env_file: {target}\n    environment:", 1
        ).encode()
    doc = copy.deepcopy(docs[0])
    service = doc["services"]["sglang"]
    key = rng.choice(
        ["command", "entrypoint", "environment", "deploy", "image", "env_file", "services", "gpus"]
    )
    if key == "services":
        doc["services"] = rng.choice(WRONG)
    elif key == "deploy":
        service["deploy"] = {"resources": {"reservations": {"devices": rng.choice(WRONG)}}}
    else:
        service[key] = rng.choice(WRONG)
    return _dump_all(rng, [doc])


SCRIPT_PIECES = [
    "\\\n",
    "'",
    '"',
    "$(",
    ")",
    "`",
    "${",
    "}",
    "$",
    "&&",
    "||",
    ";",
    "|",
    "<<EOF\n",
    "EOF\n",
    "#",
    "export ",
    "set -a\n",
    "source ",
    ". ",
    "eval ",
    "exec ",
    "python3 -m sglang.launch_server ",
    "--tp-size ",
    "${TP_SIZE}",
    "8",
    "\t",
    "\r",
    "é",
    "\x00",
    "NCCL_ALGO=Tree ",
    "\n",
    "docker run ",
    "--gpus ",
    "all ",
    "--env-file ",
    "/dev/zero ",
    "sglang serve ",
    "env -i ",
    "nohup ",
]


def script_case(rng: random.Random, folder: str, path: str) -> bytes:
    text = read("examples", "deploy", "scripts", "run-sglang.sh")
    roll = rng.random()
    if roll < 0.2:  # pieces spliced in
        out = text
        for _ in range(rng.randint(1, 10)):
            cut = rng.randint(0, len(out))
            out = (
                out[:cut]
                + "".join(rng.choice(SCRIPT_PIECES) for _ in range(rng.randint(1, 8)))
                + out[cut:]
            )
        return out.encode("utf-8", "surrogatepass")
    if roll < 0.3:
        return odd_encoding(rng, text)
    if roll < 0.4:  # variable doubling: each name twice the one before
        n = rng.choice([20, 40, 64])
        lines = ["V0=x"] + [f"V{i}=$V{i - 1}$V{i - 1}" for i in range(1, n)]
        return (
            "#!/bin/sh\n"
            + "\n".join(lines)
            + f"\npython3 -m sglang.launch_server --model-path $V{n - 1} "
            "--tp-size 4\n"
        ).encode()
    if roll < 0.5:  # the script sources itself, or a device, or a chain
        name = os.path.basename(path)
        target = rng.choice([name, "./" + name, "/dev/zero", "/dev/stdin", "missing.sh", "/"])
        return ("#!/bin/bash\n" + rng.choice(["source", "."]) + f" {target}\n" + text).encode()
    if roll < 0.6:  # huge: many launch lines, a very long line, many continuations
        n = rng.choice([1000, 50_000])
        return rng.choice(
            [
                lambda: (text + "python3 -m sglang.launch_server --tp-size 4\n" * n).encode(),
                lambda: (
                    "#!/bin/sh\npython3 -m sglang.launch_server --model-path "
                    + "m" * (n * 20)
                    + "\n"
                ).encode(),
                lambda: (
                    "#!/bin/sh\npython3 -m sglang.launch_server \\\n"
                    + "  --tp-size 4 \\\n" * n
                    + "\n"
                ).encode(),
                lambda: (
                    "#!/bin/sh\nexport A='" + "x" * (n * 20) + "\n"
                ).encode(),  # unbalanced quote to the end
            ]
        )()
    if roll < 0.7:
        return os.urandom(rng.randint(0, 2000))
    if roll < 0.8:  # a heredoc / quoting maze around the launch
        depth = rng.choice([10, 100, 3000])
        return (
            "#!/bin/bash\nA="
            + "$(" * depth
            + "echo 4"
            + ")" * depth
            + "\npython3 -m sglang.launch_server "
            "--tp-size $A\n"
        ).encode()
    cut = rng.randint(0, len(text))
    return (text[:cut] + rng.choice(SCRIPT_PIECES) + text[cut:]).encode()


ENV_PIECES = [
    "SGLANG_ARGS=",
    "'",
    '"',
    "\\",
    "\n",
    " ",
    "#",
    "export ",
    "NCCL_ALGO=",
    "$(x)",
    "`",
    "--tp-size",
    "8",
    "--speculative-algorithm",
    "EAGLE3",
    "=",
    ";",
    "\t",
    "\r",
    "é",
    "--disable-custom-all-reduce",
    "TOPOCTL_SGLANG_VERSION=",
    "0.5.12",
    "--enable-torch-symm-mem",
    "NCCL_P2P_DISABLE=1",
]
WORDS = [
    "python",
    "python3",
    "-m",
    "sglang.launch_server",
    "sglang",
    "serve",
    "env",
    "--tp-size",
    "--tp",
    "8",
    "-1",
    "1e9",
    "NCCL_ALGO=Tree",
    "--model-path",
    "M",
    "--speculative-algorithm",
    "EAGLE3",
    "--cuda-graph-max-bs",
    "99999999999999999999",
    "--enable-torch-symm-mem",
    "=",
    "--tp-size=",
    "-u",
    "--disable-custom-all-reduce",
    "\x1b[2J",
    "é",
]


def make_case(kind: str, rng: random.Random, folder: str) -> list[str]:
    """Write the case's files under `folder`; return the topoctl argv."""
    path = os.path.join(folder, "input")
    if kind == "snapshot":
        valid = json.loads(
            read(
                "fixtures",
                rng.choice(["l40s-4x-pcie-2numa", SYSTEM, "rtx-pro-6000-8x-pcie"]),
                "snapshot.json",
            )
        )
        open(path, "wb").write(document_case(rng, valid))
        return rng.choice(
            [
                ["show", "--topology", path],
                ["recommend", "--topology", path, "--model", "llama-3.1-70b"],
                ["check", "--topology", path, "--", "--tp-size", "4", "--enable-torch-symm-mem"],
            ]
        )
    if kind == "capture":
        if rng.random() < 0.15:
            claim = rng.choice([2, 64, 1024, 1025, 10**6])
            data = json.dumps(
                {
                    "capture_version": 1,
                    "nvml": {"nvmlInit": {"ok": None}, "nvmlDeviceGetCount": {"ok": claim}},
                }
            ).encode()
        else:
            valid = json.loads(
                read(
                    "fixtures",
                    rng.choice(["rtx-4090-2x-pcie-no-p2p", "h200-2x-nvswitch-vm"]),
                    "capture.json",
                )
            )
            data = document_case(rng, valid, yaml_ok=False)
        open(path, "wb").write(data)
        return ["probe", "--from-capture", path, "--format", "json"]
    if kind == "rules":
        import yaml

        valid = yaml.safe_load(
            read("rules", "knowledge", rng.choice(["nccl.yaml", "allreduce.yaml", "topology.yaml"]))
        )
        rules_dir = os.path.join(folder, "rules")
        os.makedirs(rules_dir, exist_ok=True)
        open(os.path.join(rules_dir, "site.yaml"), "wb").write(document_case(rng, valid))
        return rng.choice(
            [
                ["rules", "list", "--rules", rules_dir],
                ["rules", "test", "--rules", rules_dir],
                ["check", "--system", SYSTEM, "--rules", rules_dir, "--", "--tp-size", "4"],
            ]
        )
    if kind == "launch.env":
        roll = rng.random()
        if roll < 0.5:
            data = "".join(rng.choice(ENV_PIECES) for _ in range(rng.randint(0, 40))).encode()
        elif roll < 0.6:
            data = (
                "SGLANG_ARGS='--model-path " + "a" * rng.choice([1000, 70_000, 900_000]) + "'\n"
            ).encode()
        elif roll < 0.7:
            data = ("SGLANG_ARGS='" + "--tp 8 " * rng.choice([100, 5000, 100_000]) + "'\n").encode()
        elif roll < 0.8:
            data = os.urandom(rng.randint(0, 400))
        else:
            text = read("docs", "real-hardware", "h200-2x-nvswitch-vm", "launch.env")
            cut = rng.randint(0, len(text))
            data = (text[:cut] + rng.choice(ENV_PIECES) + text[cut:]).encode()
        open(path, "wb").write(data)
        return ["check", path, "--system", SYSTEM]
    if kind == "command":
        roll = rng.random()
        if roll < 0.8:
            words = [rng.choice(WORDS) for _ in range(rng.randint(0, 30))]
        elif roll < 0.9:
            words = ["--tp-size"] * rng.choice([100, 5000])
        else:
            words = ["--model-path", "m" * rng.choice([1000, 70_000])]
        return ["check", "--system", SYSTEM, "--", *words]
    if kind == "model-config":
        valid = {
            "architectures": ["DeepseekV3ForCausalLM"],
            "model_type": "deepseek_v3",
            "num_hidden_layers": 61,
            "hidden_size": 7168,
            "n_routed_experts": 256,
            "text_config": {"num_hidden_layers": 61, "hidden_size": 7168},
        }
        open(path, "wb").write(document_case(rng, valid, yaml_ok=False))
        return ["recommend", "--system", SYSTEM, "--model-config", path]
    if kind == "kubernetes":
        manifest = os.path.join(folder, "deploy.yaml")
        open(manifest, "wb").write(manifest_case(rng))
        return ["check", manifest, "--system", SYSTEM] + rng.choice(
            [[], ["--format", "json"], ["--format", "junit"]]
        )
    if kind == "compose":
        compose = os.path.join(folder, "compose.yaml")
        open(compose, "wb").write(compose_case(rng, folder))
        return ["check", compose, "--system", SYSTEM] + rng.choice([[], ["--format", "github"]])
    if kind == "script":
        script = os.path.join(folder, rng.choice(["run.sh", "start.bash", "launch"]))
        data = script_case(rng, folder, script)
        if not script.endswith(("sh", "bash")) and not data.startswith(b"#!"):
            data = b"#!/bin/sh\n" + data  # a script without a suffix is known by its #! line
        open(script, "wb").write(data)
        return ["check", script, "--system", SYSTEM] + rng.choice([[], ["--format", "json"]])
    raise ValueError(kind)


# -- running
# ---------------------------------------------------------------------------------------------------
# The child reports its own peak resident memory (VmHWM of its address space) when it exits: wait4's
# ru_maxrss of a child starts at the RSS of the forked copy of this process (Linux records the old
# address space's high-water mark at exec), so it would show this script's size, not topoctl's.
BOOT = (
    "import atexit, os, runpy, sys\n"
    "def _hwm():\n"
    "    try:\n"
    "        kib = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
    "        open(os.environ['TOPOCTL_FUZZ_HWM'], 'w').write(kib)\n"
    "    except Exception:\n"
    "        pass\n"
    "atexit.register(_hwm)\n"
    "sys.argv = ['topoctl'] + sys.argv[1:]\n"
    "runpy.run_module('topoctl', run_name='__main__', alter_sys=True)\n"
)


def run_case(
    argv: list[str], timeout: float, env: dict, memory_mib: int = 0
) -> tuple[int | None, bytes, float, int]:
    """(exit code or None on timeout, stderr, seconds, peak memory in KiB) of one `python -m
    topoctl` run; with `memory_mib` the child's address space is capped there (a run past it fails,
    and counts as an internal error)."""

    def cap() -> None:
        if memory_mib:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (memory_mib * 2**20, memory_mib * 2**20))

    started = time.perf_counter()
    hwm_handle, hwm_path = tempfile.mkstemp(prefix="topoctl-fuzz-hwm-")
    os.close(hwm_handle)
    env = dict(env, TOPOCTL_FUZZ_HWM=hwm_path)
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", BOOT, *argv],
            stdout=subprocess.DEVNULL,
            stderr=err,
            stdin=subprocess.DEVNULL,
            env=env,
            preexec_fn=cap,
        )
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - started
        err.seek(0)
        stderr = err.read()
    code = None if seconds >= timeout and proc.returncode < 0 else proc.returncode
    try:
        with open(hwm_path, encoding="ascii") as handle:
            peak_kib = int(handle.read() or 0)
    except (OSError, ValueError):
        peak_kib = 0
    os.unlink(hwm_path)
    # a child killed before it could report (a timeout, the memory cap) falls back to wait4's figure
    return code, stderr, seconds, peak_kib or usage.ru_maxrss


def problem(kind: str, code: int | None, stderr: bytes) -> str | None:
    allowed = {0, 1, 2, 3} if kind == "capture" else {0, 1, 2}
    text = stderr.decode("utf-8", "replace")
    if code is None:
        return "timeout"
    if code not in allowed:
        return f"exit {code}"
    if "Traceback" in text or "internal error" in text:
        return "traceback"
    errors = [line for line in text.splitlines() if line.startswith("topoctl: error:")]
    if code == 2 and (
        len(errors) != 1 or len([line for line in text.splitlines() if line.strip()]) > 2
    ):
        return "message not one line + hint"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300, help="cases per input kind")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds one case may run")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument(
        "--memory-mib",
        type=int,
        default=2048,
        help="address-space cap of each case (0: none); a case past it is an internal error",
    )
    parser.add_argument(
        "--keep", default=os.path.join(tempfile.gettempdir(), "topoctl-fuzz-failures")
    )
    options = parser.parse_args()
    kinds = [kind for kind in options.kinds.split(",") if kind]
    work = tempfile.mkdtemp(prefix="topoctl-fuzz-")
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"), PYTHONHASHSEED="0")
    rows: dict[str, dict] = {
        kind: {
            "cases": 0,
            "internal": 0,
            "codes": {},
            "worst_s": 0.0,
            "worst_kib": 0,
            "failures": [],
        }
        for kind in kinds
    }
    jobs = [(kind, number) for number in range(options.cases) for kind in kinds]
    lock = threading.Lock()
    started = time.perf_counter()

    def worker() -> None:
        while True:
            with lock:
                if not jobs:
                    return
                kind, number = jobs.pop()
            rng = random.Random(f"{options.seed}/{kind}/{number}")
            folder = os.path.join(work, f"{kind}-{number}")
            os.makedirs(folder)
            argv = make_case(kind, rng, folder)
            code, stderr, seconds, kib = run_case(argv, options.timeout, env, options.memory_mib)
            found = problem(kind, code, stderr)
            with lock:
                row = rows[kind]
                row["cases"] += 1
                row["codes"][code] = row["codes"].get(code, 0) + 1
                row["worst_s"] = max(row["worst_s"], seconds)
                row["worst_kib"] = max(row["worst_kib"], kib)
                if found:
                    row["internal"] += 1
                    if len(row["failures"]) < 5:
                        keep = os.path.join(options.keep, f"{kind}-{number}")
                        shutil.copytree(folder, keep, dirs_exist_ok=True)
                        row["failures"].append(
                            (found, argv, stderr.decode("utf-8", "replace")[-300:], keep)
                        )
            shutil.rmtree(folder, ignore_errors=True)

    threads = [threading.Thread(target=worker) for _ in range(options.workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    shutil.rmtree(work, ignore_errors=True)

    print(
        f"topoctl fuzz: {options.cases} cases per kind, seed {options.seed}, {options.workers} "
        f"workers, {time.perf_counter() - started:.0f} s in all; python "
        f"{sys.version.split()[0]}, {os.cpu_count()} CPUs"
        + (
            f", address space capped at {options.memory_mib} MiB per case"
            if options.memory_mib
            else ""
        )
    )
    print(
        f"{'input kind':<14} {'cases':>6} {'internal errors':>16} {'worst time':>11} "
        f"{'worst memory':>13}  exit codes"
    )
    total_internal = 0
    for kind in kinds:
        row = rows[kind]
        total_internal += row["internal"]
        codes = " ".join(
            f"{code}:{count}"
            for code, count in sorted(row["codes"].items(), key=lambda i: str(i[0]))
        )
        print(
            f"{kind:<14} {row['cases']:>6} {row['internal']:>16} {row['worst_s']:>10.2f}s "
            f"{row['worst_kib'] / 1024:>10.1f} MiB  {codes}"
        )
    for kind in kinds:
        for found, argv, tail, keep in rows[kind]["failures"]:
            shown = " ".join(part if len(part) < 80 else part[:77] + "..." for part in argv)
            print(f"FAIL {kind}: {found}: topoctl {shown}\n  kept in {keep}\n  {tail.strip()}")
    return 1 if total_internal else 0


if __name__ == "__main__":
    sys.exit(main())
