"""`topoctl check` over the launch corpus (tests/data/launch_corpus/): time per file and the verdicts.

    .venv/bin/python benchmarks/check_corpus.py [--repeat N]

Each corpus file is checked in-process (topoctl.cli.app.main, as the tests call it) against the
reference system its expectation names, N times (default 5); the median time per file is printed
next to the baseline of the same run (a one-line launch.env, the cheapest check there is), as a
ratio, so that the figure means the same on another machine. Then the results against
tests/data/launch_corpus/expected.yaml: files, launches, false blocks (a block where the expectation
has none), missed launches (an expected launch not found, or reported as "no launch"). Quoted in
docs/recommend-and-check.md with the machine it ran on.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import statistics
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "tests", "data", "launch_corpus")
BASELINE = os.path.join(CORPUS, "env", "h100_launch.env")


def run_check(path: str, system: str) -> tuple[int, dict, float]:
    from topoctl.cli.app import main

    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["check", path, "--system", system, "--format", "json"])
    elapsed = time.perf_counter() - start
    return code, json.loads(out.getvalue() or "{}"), elapsed


def timed(path: str, system: str, repeat: int) -> tuple[dict, float]:
    times = []
    doc: dict = {}
    for _ in range(repeat):
        _, doc, elapsed = run_check(path, system)
        times.append(elapsed)
    return doc, statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    expected = yaml.safe_load(open(os.path.join(CORPUS, "expected.yaml"), encoding="utf-8"))
    run_check(
        BASELINE, "h100-8x-nvswitch"
    )  # warm: imports and data caches, as a long CI job has them
    _, baseline = timed(BASELINE, "h100-8x-nvswitch", args.repeat)
    rows, false_blocks, missed, launches = [], 0, 0, 0
    for relative in sorted(expected):
        entry = expected[relative]
        doc, seconds = timed(
            os.path.join(CORPUS, relative), entry.get("system", "h100-8x-nvswitch"), args.repeat
        )
        found = doc.get("results", [])
        blocked = sum(1 for result in found if result["blocking"])
        want_blocks = sum(1 for launch in entry["launches"] if launch[1] == "block")
        false_blocks += max(blocked - want_blocks, 0)
        missed += max(len(entry["launches"]) - len(found), 0)
        launches += len(found)
        rows.append((relative, len(found), seconds))
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}; load average at start {os.getloadavg()[0]:.1f} (1 min)"
    )
    print(f"baseline (launch.env, one line): {baseline * 1000:.1f} ms")
    print(f"{'file':52} {'launches':>8} {'ms':>8} {'x baseline':>10}")
    for relative, count, seconds in rows:
        print(f"{relative:52} {count:8d} {seconds * 1000:8.1f} {seconds / baseline:10.1f}")
    times = [seconds for _, _, seconds in rows]
    print(
        f"files: {len(rows)}, launches: {launches}, false blocks: {false_blocks}, missed "
        f"launches: {missed}"
    )
    print(
        f"per file: median {statistics.median(times) * 1000:.1f} ms "
        f"({statistics.median(times) / baseline:.1f}x baseline), max {max(times) * 1000:.1f} ms "
        f"({max(times) / baseline:.1f}x)"
    )
    print(f"load average at end {os.getloadavg()[0]:.1f} (1 min)")
    return 1 if false_blocks or missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
