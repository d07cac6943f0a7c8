"""Time per `recommend` decision over the whole grid: every built-in system x built-in model x known SGLang
version x speculative on/off, in one process (rules, flag data and profiles loaded once, as a CI job that
checks many launches would), and the same for the CLI as a user runs it (one process per call) on a sample.

    python benchmarks/recommend_grid.py [--cli-sample 12]

Prints the machine, the number of calls, and per-call median / p90 / max in milliseconds; the
decision includes the memory fit, the launch model and the rules for every candidate, and writing
launch.env.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time


def _stats(times: list[float]) -> str:
    ordered = sorted(times)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    return (
        f"median {1000 * statistics.median(ordered):.1f} ms, p90 {1000 * p90:.1f} ms, "
        f"max {1000 * ordered[-1]:.1f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cli-sample", type=int, default=12, help="CLI calls timed as separate processes"
    )
    args = parser.parse_args()

    from topoctl.autoconf import models
    from topoctl.autoconf.launch_text import render
    from topoctl.autoconf.search import Request, search
    from topoctl.cli.commands._options import flag_set_for
    from topoctl.core.errors import TopoctlError
    from topoctl.rules.engine import load_rules
    from topoctl.rules.sglang.flags import known_versions
    from topoctl.snapshot.catalogue import list_systems, system_snapshot

    rules = load_rules()
    profiles = {name: models.profile(name) for name in sorted(models.builtin_models())}
    versions = known_versions()
    flags = {version: flag_set_for(version) for version in versions}
    times: list[float] = []
    refused = 0
    grid = []
    for system in list_systems():
        snapshot = system_snapshot(system)
        for name, model in profiles.items():
            for version in versions:
                for spec in (None, "eagle3"):
                    grid.append((system, name, version, spec))
                    start = time.perf_counter()
                    try:
                        result = search(
                            snapshot,
                            model,
                            flags[version],
                            version,
                            ruleset=rules,
                            request=Request(spec, "/models/draft" if spec else None),
                        )
                        render(result, "env")
                    except TopoctlError:
                        refused += 1
                    times.append(time.perf_counter() - start)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} logical CPUs, "
        f"{platform.processor() or 'cpu'}, Python {platform.python_version()}"
    )
    print(
        f"in process: {len(times)} recommend calls ({len(list_systems())} systems x "
        f"{len(profiles)} models x {len(versions)} SGLang versions x speculative on/off; "
        f"{refused} refused): {_stats(times)}, total {sum(times):.1f} s"
    )
    step = max(1, len(grid) // max(args.cli_sample, 1))
    cli_times = []
    for system, name, version, spec in grid[::step][: args.cli_sample]:
        argv = [
            sys.executable,
            "-m",
            "topoctl",
            "recommend",
            "--system",
            system,
            "--model",
            name,
            "--sglang-version",
            version,
        ]
        if spec:
            argv += ["--speculative", spec, "--draft-model", "/models/draft"]
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=False)
        cli_times.append(time.perf_counter() - start)
    if cli_times:
        print(
            f"CLI, one process per call (warm knowledge cache): {len(cli_times)} calls: "
            f"{_stats(cli_times)}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
