"""The start-up goals of topoctl, measured: cold against warm, 1,000 site rules, --version and --help, and
recommend/check, each against `python -c pass` with the same interpreter; plus PyYAML's C and pure-Python
loader/dumper on a snapshot (same text, speed).

    python benchmarks/startup_bench.py [--repeat 11] [--rules 1000]

Each command is a fresh subprocess (what a CI job pays), interleaved so all see the same machine
load. "cold" runs with an empty XDG_CACHE_HOME every time (a fresh CI job); "warm" reuses one. Goals
(README, "Speed"): cold within 10% of warm; 1,000 site rules under 300 ms; --version and a
subcommand's --help under 2x `python -c pass`; recommend and check under 4x.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_startup_common import table  # noqa: E402

SYSTEM = "h200-4x-nvswitch-vm"
MODEL = "llama-3.1-70b"  # fits on 4x H200 (the launch model refuses what does not fit)


def site_rules(folder: str, count: int) -> None:
    """`count` site rules in 10 files, each a valid rule (a copy of the shape the docs teach)."""
    per_file = count // 10
    for number in range(10):
        lines = ["rules:"]
        for index in range(per_file):
            lines += [
                f"  - id: site-bench-{number}-{index}",
                "    title: A site rule for the benchmark",
                "    severity: warn",
                "    when:",
                "      all:",
                "        - {fact: gpu.sm_majors, any_in: [12]}",
                f'        - {{fact: software.sglang, version: "<0.{index % 9 + 1}"}}',
                "    effect:",
                "      forbid:",
                "        - {setting: torch_symm_mem, values: [true]}",
                "    message: Site knowledge.",
                "    remediation: Do not.",
                "    evidence:",
                "      - {source: 'measured:site-box', level: measured, summary: Seen here., "
                "scope: our box}",
                "    tests:",
                "      - {name: fires, expect: fire, snapshot: {gpus: [{index: 0, sm: 120}], "
                "software: {sglang: '0.0.1'}}}",
                "      - {name: silent, expect: silent, snapshot: {gpus: [{index: 0, sm: 90}], "
                "software: {sglang: '0.0.1'}}}",
            ]
        with open(os.path.join(folder, f"site-{number}.yaml"), "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")


def measure(
    commands: dict[str, tuple[list[str], dict[str, str] | None]], repeat: int
) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, (command, extra_env) in commands.items():
            env = dict(os.environ)
            cold = None
            if extra_env == {"COLD": "1"}:
                cold = tempfile.mkdtemp(prefix="topoctl-cold-")
                env["XDG_CACHE_HOME"] = cold
            elif extra_env:
                env.update(extra_env)
            start = time.perf_counter()
            done = subprocess.run(
                command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=False
            )
            timings[name].append(time.perf_counter() - start)
            if cold:
                shutil.rmtree(cold, ignore_errors=True)
            if done.returncode != 0:
                raise SystemExit(
                    f"{name}: exit {done.returncode}\n{done.stderr.decode(errors='replace')[-400:]}"
                )
    return timings


def yaml_compare(rounds: int = 20) -> str:
    import json

    import yaml

    from topoctl.snapshot.catalogue import system_snapshot

    data = system_snapshot("h100-8x-nvswitch")
    options = {"sort_keys": False, "allow_unicode": True, "default_flow_style": False, "width": 120}
    rows = []
    texts = {}
    for label, dumper, loader in (
        ("pure-Python", yaml.SafeDumper, yaml.SafeLoader),
        ("C (libyaml)", getattr(yaml, "CSafeDumper", None), getattr(yaml, "CSafeLoader", None)),
    ):
        if dumper is None or loader is None:
            rows.append(f"  {label}: not available in this PyYAML")
            continue
        start = time.perf_counter()
        for _ in range(rounds):
            text = yaml.dump(data, Dumper=dumper, **options)
        dump_ms = (time.perf_counter() - start) / rounds * 1000
        start = time.perf_counter()
        for _ in range(rounds):
            back = yaml.load(text, Loader=loader)  # noqa: S506 - safe loaders
        load_ms = (time.perf_counter() - start) / rounds * 1000
        texts[label] = text
        assert json.dumps(back, sort_keys=True) == json.dumps(data, sort_keys=True)
        rows.append(
            f"  {label:12s} dump {dump_ms:6.1f} ms, load {load_ms:6.1f} ms (8-GPU snapshot, "
            f"{len(text)} bytes)"
        )
    if len(texts) == 2:
        rows.append(f"  identical text: {len(set(texts.values())) == 1}")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--rules", type=int, default=1000)
    options = parser.parse_args()
    python = sys.executable
    topoctl = [python, "-m", "topoctl"]
    with tempfile.TemporaryDirectory() as folder:
        env_file = os.path.join(folder, "launch.env")
        rules_dir = os.path.join(folder, "site-rules")
        os.makedirs(rules_dir)
        site_rules(rules_dir, options.rules)
        subprocess.run(
            [*topoctl, "recommend", "--system", SYSTEM, "--model", MODEL, "-o", env_file],
            check=True,
        )
        recommend = [*topoctl, "recommend", "--system", SYSTEM, "--model", MODEL]
        commands = {
            "python -c pass": ([python, "-c", "pass"], None),
            "topoctl --version": ([*topoctl, "--version"], None),
            "topoctl recommend --help": ([*topoctl, "recommend", "--help"], None),
            "topoctl check --help": ([*topoctl, "check", "--help"], None),
            "topoctl recommend (warm)": (recommend, None),
            "topoctl recommend (cold: empty cache)": (recommend, {"COLD": "1"}),
            "topoctl check launch.env (warm)": (
                [*topoctl, "check", env_file, "--system", SYSTEM],
                None,
            ),
            "topoctl rules list (warm)": ([*topoctl, "rules", "list"], None),
            f"topoctl rules list --rules <{options.rules} site rules>": (
                [*topoctl, "rules", "list", "--rules", rules_dir],
                None,
            ),
        }
        timings = measure(commands, options.repeat)
    print(
        f"{platform.node()}: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, median of {options.repeat} fresh processes"
    )
    print(table(timings, "python -c pass"))
    med = {name: statistics.median(values) for name, values in timings.items()}
    base = med["python -c pass"]
    site = (
        med[f"topoctl rules list --rules <{options.rules} site rules>"]
        - med["topoctl rules list (warm)"]
    )
    print()
    print(
        "cold / warm recommend: "
        f"{med['topoctl recommend (cold: empty cache)'] / med['topoctl recommend (warm)']:.2f}"
        "  (goal <= 1.10)"
    )
    print(f"{options.rules} site rules add: {site * 1000:.0f} ms  (goal < 300 ms)")
    for name, goal in (
        ("topoctl --version", 2),
        ("topoctl recommend --help", 2),
        ("topoctl check --help", 2),
        ("topoctl recommend (warm)", 4),
        ("topoctl check launch.env (warm)", 4),
    ):
        print(f"{name}: {med[name] / base:.2f}x python -c pass  (goal < {goal}x)")
    print()
    print("PyYAML loader and dumper:")
    print(yaml_compare())
    return 0


if __name__ == "__main__":
    sys.exit(main())
