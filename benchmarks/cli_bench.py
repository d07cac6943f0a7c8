"""Start-up cost of `topoctl recommend` and `topoctl check` against `python -c pass`, same run, same machine.

Usage:  python benchmarks/cli_bench.py [--repeat 15] [--system NAME]
Each command is a fresh subprocess (what a CI job pays), interleaved so all see the same load. Goal: the
median of each topoctl command within 2.5x of `python -c pass` with the same interpreter. Neither command
may import torch or NVML (tests/check/test_check.py checks sys.modules).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_startup_common import median_wall_times, table  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--system", default="h200-4x-nvswitch-vm")
    parser.add_argument("--model", default="llama-3.1-70b", help="a model that fits on --system")
    options = parser.parse_args()
    python = sys.executable
    with tempfile.TemporaryDirectory() as folder:
        env_file = os.path.join(folder, "launch.env")
        from topoctl.cli.app import main as topoctl_main

        if (
            topoctl_main(
                ["recommend", "--system", options.system, "--model", options.model, "-o", env_file]
            )
            != 0
        ):
            return 1
        commands = {
            "python -c pass": [python, "-c", "pass"],
            f"topoctl recommend --system {options.system} --model {options.model}": [
                python,
                "-m",
                "topoctl",
                "recommend",
                "--system",
                options.system,
                "--model",
                options.model,
            ],
            f"topoctl check launch.env --system {options.system}": [
                python,
                "-m",
                "topoctl",
                "check",
                env_file,
                "--system",
                options.system,
            ],
            f"topoctl check --system {options.system} -- python -m sglang.launch_server ...": [
                python,
                "-m",
                "topoctl",
                "check",
                "--system",
                options.system,
                "--",
                "python",
                "-m",
                "sglang.launch_server",
                "--model-path",
                "M",
                "--tp",
                "4",
            ],
        }
        # Run from a scratch folder: in the source tree, `python -m topoctl` would find the unmapped
        # source folder instead of the installed package.
        median_wall_times(commands, 1, cwd=folder)  # warm the page cache and the knowledge cache
        timings = median_wall_times(commands, options.repeat, cwd=folder)
    print(table(timings, "python -c pass"))
    base = statistics.median(timings["python -c pass"])
    worst = max(statistics.median(v) for k, v in timings.items() if k != "python -c pass") / base
    print(
        f"\nworst ratio {worst:.2f}x (goal <= 2.5x); {os.cpu_count()} CPUs, Python "
        f"{sys.version.split()[0]}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
