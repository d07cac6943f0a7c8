"""Fuzz the real console script: N generated cases per input kind, each a fresh `python -m topoctl` process.

Usage:  python benchmarks/fuzz_cli.py [--cases 300] [--seed 14] [--workers 2] [--kinds snapshot,capture,...]

Input kinds: snapshot (show / recommend / check --topology FILE), capture (probe --from-capture FILE), rules
(rules list / rules test / check --rules DIR), launch.env (check FILE), command (check -- WORDS...), model-config
(recommend --model-config FILE). Cases: random bytes, random JSON/YAML trees, truncations and one-value mutations
of a valid document, and the hostile shapes of docs/reliability.md (deep nesting, YAML alias bombs, recursive
aliases, huge integers, captures claiming many GPUs, long words, many words, NaN, dates, binary).

A case is an internal error when the exit code is not one the interface allows (0, 1, 2; 3 for a capture of no
GPU), when stderr holds a traceback, when an error is more than two lines, or when it runs past --timeout.
Prints one row per kind: cases, internal errors, exit codes seen, worst time, worst peak memory (the child's
maxrss from wait4). Exit 1 if any internal error was found, with the first few cases saved under --keep.
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "fixtures")
SYSTEM = "h200-4x-nvswitch-vm"
KINDS = ("snapshot", "capture", "rules", "launch.env", "command", "model-config")


def read(*parts: str) -> str:
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as handle:
        return handle.read()


# -- generation ------------------------------------------------------------------------------------------------
def random_scalar(rng: random.Random):
    return rng.choice([None, True, False, 0, -1, 1, 2 ** 63, -(2 ** 70), 10 ** 30, 3.5, float("nan"), float("inf"),
                       "", "OK", "NS", "unknown", "9.0", "NV18", "PIX", "x" * rng.randint(0, 2000), "\x1b[31m", "$(id)",
                       "é東", rng.randint(-10, 10 ** 6)])


def random_tree(rng: random.Random, depth: int = 0):
    roll = rng.random()
    if depth > 4 or roll < 0.5:
        return random_scalar(rng)
    if roll < 0.75:
        return [random_tree(rng, depth + 1) for _ in range(rng.randint(0, 5))]
    return {str(random_scalar(rng))[:20]: random_tree(rng, depth + 1) for _ in range(rng.randint(0, 5))}


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
        "[" * n + "]" * n, '{"a":' * n + "1" + "}" * n, "- " * min(n, 5000) + "x",
        "".join(f"{' ' * i}a:\n" for i in range(min(n, 3000))),
        "a: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(9)),
        "&a [*a]", "a: &a {b: *a}", "x: " + "9" * n, "x: 0x" + "f" * n, '{"x": ' + "9" * n + "}",
        "x: 2026-01-01", "- !!binary aGVsbG8=", "x: .inf", "!!set {a: null}", "a\n---\nb",
        "!!python/object/apply:os.system [true]", "\ufeff{}", '{"a": NaN}', "[1e999]", "\x00" * 100,
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
        return text[:rng.randint(0, len(text))]
    mutated = valid
    for _ in range(rng.choice([1, 1, 2, 3])):
        mutated = mutate(rng, mutated)
    return dumps(rng, mutated, yaml_ok)


ENV_PIECES = ["SGLANG_ARGS=", "'", '"', "\\", "\n", " ", "#", "export ", "NCCL_ALGO=", "$(x)", "`", "--tp-size", "8",
              "--speculative-algorithm", "EAGLE3", "=", ";", "\t", "\r", "é", "--disable-custom-all-reduce",
              "TOPOCTL_SGLANG_VERSION=", "0.5.12", "--enable-torch-symm-mem", "NCCL_P2P_DISABLE=1"]
WORDS = ["python", "python3", "-m", "sglang.launch_server", "sglang", "serve", "env", "--tp-size", "--tp", "8", "-1",
         "1e9", "NCCL_ALGO=Tree", "--model-path", "M", "--speculative-algorithm", "EAGLE3", "--cuda-graph-max-bs",
         "99999999999999999999", "--enable-torch-symm-mem", "=", "--tp-size=", "-u", "--disable-custom-all-reduce",
         "\x1b[2J", "é"]


def make_case(kind: str, rng: random.Random, folder: str) -> list[str]:
    """Write the case's files under `folder`; return the topoctl argv."""
    path = os.path.join(folder, "input")
    if kind == "snapshot":
        valid = json.loads(read("fixtures", rng.choice(["l40s-4x-pcie-2numa", SYSTEM, "rtx-pro-6000-8x-pcie"]),
                                "snapshot.json"))
        open(path, "wb").write(document_case(rng, valid))
        return rng.choice([["show", "--topology", path], ["recommend", "--topology", path, "--model", "llama-3.1-70b"],
                           ["check", "--topology", path, "--", "--tp-size", "4", "--enable-torch-symm-mem"]])
    if kind == "capture":
        if rng.random() < 0.15:
            claim = rng.choice([2, 64, 1024, 1025, 10 ** 6])
            data = json.dumps({"capture_version": 1, "nvml": {"nvmlInit": {"ok": None},
                                                              "nvmlDeviceGetCount": {"ok": claim}}}).encode()
        else:
            valid = json.loads(read("fixtures", rng.choice(["rtx-4090-2x-pcie-no-p2p", "h200-2x-nvswitch-vm"]),
                                    "capture.json"))
            data = document_case(rng, valid, yaml_ok=False)
        open(path, "wb").write(data)
        return ["probe", "--from-capture", path, "--format", "json"]
    if kind == "rules":
        import yaml

        valid = yaml.safe_load(read("rules", "knowledge", rng.choice(["nccl.yaml", "allreduce.yaml", "topology.yaml"])))
        rules_dir = os.path.join(folder, "rules")
        os.makedirs(rules_dir, exist_ok=True)
        open(os.path.join(rules_dir, "site.yaml"), "wb").write(document_case(rng, valid))
        return rng.choice([["rules", "list", "--rules", rules_dir], ["rules", "test", "--rules", rules_dir],
                           ["check", "--system", SYSTEM, "--rules", rules_dir, "--", "--tp-size", "4"]])
    if kind == "launch.env":
        roll = rng.random()
        if roll < 0.5:
            data = "".join(rng.choice(ENV_PIECES) for _ in range(rng.randint(0, 40))).encode()
        elif roll < 0.6:
            data = ("SGLANG_ARGS='--model-path " + "a" * rng.choice([1000, 70_000, 900_000]) + "'\n").encode()
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
        valid = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "num_hidden_layers": 61,
                 "hidden_size": 7168, "n_routed_experts": 256,
                 "text_config": {"num_hidden_layers": 61, "hidden_size": 7168}}
        open(path, "wb").write(document_case(rng, valid, yaml_ok=False))
        return ["recommend", "--system", SYSTEM, "--model-config", path]
    raise ValueError(kind)


# -- running ---------------------------------------------------------------------------------------------------
def run_case(argv: list[str], timeout: float, env: dict) -> tuple[int | None, bytes, float, int]:
    """(exit code or None on timeout, stderr, seconds, peak memory in KiB) of one `python -m topoctl` run."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-m", "topoctl", *argv], stdout=subprocess.DEVNULL, stderr=err,
                                stdin=subprocess.DEVNULL, env=env)
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
    return code, stderr, seconds, usage.ru_maxrss


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
    if code == 2 and (len(errors) != 1 or len([line for line in text.splitlines() if line.strip()]) > 2):
        return "message not one line + hint"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300, help="cases per input kind")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds one case may run")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--keep", default=os.path.join(tempfile.gettempdir(), "topoctl-fuzz-failures"))
    options = parser.parse_args()
    kinds = [kind for kind in options.kinds.split(",") if kind]
    work = tempfile.mkdtemp(prefix="topoctl-fuzz-")
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"), PYTHONHASHSEED="0")
    rows: dict[str, dict] = {kind: {"cases": 0, "internal": 0, "codes": {}, "worst_s": 0.0, "worst_kib": 0,
                                    "failures": []} for kind in kinds}
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
            code, stderr, seconds, kib = run_case(argv, options.timeout, env)
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
                        row["failures"].append((found, argv, stderr.decode("utf-8", "replace")[-300:], keep))
            shutil.rmtree(folder, ignore_errors=True)

    threads = [threading.Thread(target=worker) for _ in range(options.workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    shutil.rmtree(work, ignore_errors=True)

    print(f"topoctl fuzz: {options.cases} cases per kind, seed {options.seed}, {options.workers} workers, "
          f"{time.perf_counter() - started:.0f} s in all; python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print(f"{'input kind':<14} {'cases':>6} {'internal errors':>16} {'worst time':>11} {'worst memory':>13}  exit codes")
    total_internal = 0
    for kind in kinds:
        row = rows[kind]
        total_internal += row["internal"]
        codes = " ".join(f"{code}:{count}" for code, count in sorted(row["codes"].items(), key=lambda i: str(i[0])))
        print(f"{kind:<14} {row['cases']:>6} {row['internal']:>16} {row['worst_s']:>10.2f}s "
              f"{row['worst_kib'] / 1024:>10.1f} MiB  {codes}")
    for kind in kinds:
        for found, argv, tail, keep in rows[kind]["failures"]:
            shown = " ".join(part if len(part) < 80 else part[:77] + "..." for part in argv)
            print(f"FAIL {kind}: {found}: topoctl {shown}\n  kept in {keep}\n  {tail.strip()}")
    return 1 if total_internal else 0


if __name__ == "__main__":
    sys.exit(main())
