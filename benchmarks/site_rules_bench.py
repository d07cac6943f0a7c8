"""What 1,000 one-rule site rule files cost `topoctl check`, the first time and warm, paired with a run
without them and with `python -c pass` in the same interleaved rounds.

Usage:  python benchmarks/site_rules_bench.py [--files 1000] [--repeat 7] [--system NAME] [--markdown FILE]

The site files are the shipped rules, one per file under new ids (site-NNNN-<id>), written as YAML:
the real mix of matchers, specifiers and pair quantifiers. Each command is a fresh process (what a
CI job pays). "first time": every run with an empty cache folder of its own (XDG_CACHE_HOME), so
every file is parsed and checked; "warm": the same folder again with the cache filled. Added cost is
the median over rounds of (this run - the run without --rules in the same round), so load shared by
the round cancels. CPU time (user + system of the process and any helper it forks, from wait4) is
given beside the wall time: on a machine other jobs keep busy, wall time is mostly waiting for a
core. Goals (issue 22): first time < 1.5 s, warm added < 100 ms.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


def write_site_files(folder: str, count: int) -> None:
    """`count` files of one rule each: the shipped rules in turn, each under a new id."""
    import yaml

    from topoctl.rules.engine.loader import builtin_rule_files

    shipped: list[Any] = []
    for path in builtin_rule_files():
        with open(path, encoding="utf-8") as handle:
            shipped.extend((yaml.safe_load(handle) or {}).get("rules") or [])
    os.makedirs(folder, exist_ok=True)
    for number in range(count):
        rule = dict(shipped[number % len(shipped)])
        rule["id"] = f"site-{number:04d}-{rule['id']}"[:80]
        with open(os.path.join(folder, f"site-{number:04d}.yaml"), "w", encoding="utf-8") as handle:
            yaml.safe_dump({"rules": [rule]}, handle, sort_keys=False)


CPU: dict[
    str, list[float]
] = {}  # CPU seconds (user + system, from wait4) per row, beside the wall times


def _run(command: list[str], env: dict[str, str], cwd: str, row: str = "") -> float:
    """Wall seconds of one fresh process; its CPU seconds (a forked helper's included) go to
    CPU[row]."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=errors, env=env, cwd=cwd
        )
        _, status, usage = os.wait4(process.pid, 0)
        took = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        errors.seek(0)
        if code not in (0, 1):
            raise SystemExit(
                f"{' '.join(command[2:6])}: exit {code}:\n{errors.read().decode()[-600:]}"
            )
    if row:
        CPU.setdefault(row, []).append(usage.ru_utime + usage.ru_stime)
    return took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--system", default="h200-4x-nvswitch-vm")
    parser.add_argument(
        "--markdown",
        help="also write the table as Markdown to this file (docs/performance.md quotes it)",
    )
    args = parser.parse_args(argv)
    python = sys.executable
    load_before, started = os.getloadavg()[0], time.time()
    with tempfile.TemporaryDirectory() as scratch:
        site = os.path.join(scratch, "site-rules")
        write_site_files(site, args.files)
        launch = [
            python,
            "-m",
            "topoctl",
            "check",
            "--system",
            args.system,
            "--",
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "M",
            "--tp",
            "4",
        ]
        with_rules = launch[:4] + ["--rules", site] + launch[4:]
        warm_env = dict(os.environ, XDG_CACHE_HOME=os.path.join(scratch, "warm-cache"))
        warm_env.pop("TOPOCTL_NO_CACHE", None)
        warm_env.pop(
            "PYTHONDONTWRITEBYTECODE", None
        )  # as installed: bytecode written once, then read
        _run(with_rules, warm_env, scratch)  # fill the warm cache (and the page cache)
        rows: dict[str, list[float]] = {
            "python -c pass": [],
            "check (no --rules)": [],
            f"check --rules <{args.files} files> first time": [],
            f"check --rules <{args.files} files> warm": [],
        }
        for round_number in range(args.repeat):
            cold_env = dict(warm_env, XDG_CACHE_HOME=os.path.join(scratch, f"cold-{round_number}"))
            for name, command, env in zip(
                rows,
                ([python, "-c", "pass"], launch, with_rules, with_rules),
                (warm_env, warm_env, cold_env, warm_env),
                strict=False,
            ):
                rows[name].append(_run(command, env, scratch, name))
    took, load_after = time.time() - started, os.getloadavg()[0]
    base = rows["python -c pass"]
    plain = rows["check (no --rules)"]
    plain_cpu = CPU["check (no --rules)"]
    header = (
        f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
        f"{args.repeat} interleaved rounds in {took:.0f} s, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}; load average "
        f"{load_before:.1f} before, {load_after:.1f} after"
    )
    print(header)
    print(
        f"{'command':48s} {'min s':>7s} {'median s':>9s} {'x pass (min)':>13s} "
        f"{'x pass (med)':>13s} {'added ms (med of pairs)':>24s} {'CPU min s':>10s} "
        f"{'CPU added ms (med)':>19s}"
    )
    for name, values in rows.items():
        added = statistics.median(v - p for v, p in zip(values, plain, strict=False)) * 1000
        cpu_added = (
            statistics.median(v - p for v, p in zip(CPU[name], plain_cpu, strict=False)) * 1000
        )
        print(
            f"{name:48s} {min(values):7.3f} {statistics.median(values):9.3f} "
            f"{min(values) / min(base):13.2f} "
            f"{statistics.median(values) / statistics.median(base):13.2f} {added:24.0f} "
            f"{min(CPU[name]):10.3f} {cpu_added:19.0f}"
        )
    first = statistics.median(rows[f"check --rules <{args.files} files> first time"])
    warm_added = statistics.median(
        w - p for w, p in zip(rows[f"check --rules <{args.files} files> warm"], plain, strict=False)
    )
    print(
        f"\nfirst time {first:.2f} s (goal < 1.5 s); warm added {warm_added * 1000:.0f} ms (goal "
        f"< 100 ms); {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, Python "
        f"{sys.version.split()[0]}"
    )
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as handle:
            handle.write(markdown(rows, header, args.files))
    return 0


def markdown(rows: dict[str, list[float]], header: str, files: int) -> str:
    """The table as docs/performance.md quotes it: wall and CPU, each with the added cost over the
    run without --rules in the same round (median of the pairs), and the two goals judged on the
    medians."""
    base, plain, plain_cpu = (
        rows["python -c pass"],
        rows["check (no --rules)"],
        CPU["check (no --rules)"],
    )
    lines = [
        header,
        "",
        "| run | wall min s | wall median s | x pass, wall (min / median) | added wall ms "
        "(median of pairs) | CPU min s | CPU median s | added CPU ms (median of pairs) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, values in rows.items():
        added = statistics.median(v - p for v, p in zip(values, plain, strict=False)) * 1000
        cpu_added = (
            statistics.median(v - p for v, p in zip(CPU[name], plain_cpu, strict=False)) * 1000
        )
        pairs = (
            ("", "") if values is base else (f"{added:.0f}", f"{cpu_added:.0f}")
        )  # pass: no check to add to
        lines.append(
            f"| {name} | {min(values):.3f} | {statistics.median(values):.3f} | "
            f"{min(values) / min(base):.2f} / "
            f"{statistics.median(values) / statistics.median(base):.2f} | {pairs[0]} | "
            f"{min(CPU[name]):.3f} | {statistics.median(CPU[name]):.3f} | {pairs[1]} |"
        )
    first = f"check --rules <{files} files> first time"
    warm = f"check --rules <{files} files> warm"
    first_wall, first_cpu = statistics.median(rows[first]), statistics.median(CPU[first])
    warm_wall = statistics.median(w - p for w, p in zip(rows[warm], plain, strict=False)) * 1000
    warm_cpu = statistics.median(w - p for w, p in zip(CPU[warm], plain_cpu, strict=False)) * 1000
    lines += [
        "",
        f"Goals (medians): first time < 1.5 s: wall {first_wall:.2f} s "
        + ("met" if first_wall < 1.5 else "**not met**")
        + f", CPU {first_cpu:.2f} s "
        + ("met" if first_cpu < 1.5 else "**not met**")
        + f"; warm added < 100 ms: wall {warm_wall:.0f} ms "
        + ("met" if warm_wall < 100 else "**not met**")
        + f", CPU {warm_cpu:.0f} ms "
        + ("met" if warm_cpu < 100 else "**not met**")
        + ".",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
