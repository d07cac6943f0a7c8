"""Shared helper for the CLI benchmarks: median wall time of fresh subprocesses, interleaved."""

from __future__ import annotations

import statistics
import subprocess
import time


def median_wall_times(
    commands: dict[str, list[str]],
    repeat: int,
    cwd: str | None = None,
    expected_codes: tuple[int, ...] = (0,),
) -> dict[str, list[float]]:
    """Run each command `repeat` times, interleaved so all see the same machine load; return the
    timings.

    A run that exits with a code outside `expected_codes` stops the benchmark: a failing command is
    fast and would make a meaningless number.
    """
    timings: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, command in commands.items():
            start = time.perf_counter()
            done = subprocess.run(
                command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False, cwd=cwd
            )
            timings[name].append(time.perf_counter() - start)
            if done.returncode not in expected_codes:
                raise SystemExit(
                    f"{name}: exit {done.returncode}, not a valid measurement:\n"
                    f"{done.stderr.decode(errors='replace')[-500:]}"
                )
    return timings


def table(timings: dict[str, list[float]], baseline: str) -> str:
    """Each command's minimum and median, and both as ratios to the baseline's in the same run (the
    ratio of minimums is the least disturbed by other load on the machine)."""
    base_median, base_min = statistics.median(timings[baseline]), min(timings[baseline])
    rows = [f"{'command':60s} {'median s':>9s} {'min s':>7s} {'x min':>7s} {'x median':>9s}"]
    for name, values in timings.items():
        median = statistics.median(values)
        rows.append(
            f"{name:60s} {median:9.3f} {min(values):7.3f} {min(values) / base_min:7.2f} "
            f"{median / base_median:9.2f}"
        )
    return "\n".join(rows)
