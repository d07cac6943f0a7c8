"""Wall time of `topoctl probe` against `nvidia-smi topo -m`, measured in the same run on the same machine.

Usage (on a GPU machine):  python benchmarks/probe_bench.py --repeat 7
Each command runs as a fresh subprocess (what a user pays), interleaved so that both see the same load.
Prints a table and, with --json FILE, the raw timings.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time


def _time(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    commands = {
        "nvidia-smi topo -m": ["nvidia-smi", "topo", "-m"],
        "topoctl probe": [sys.executable, "-m", "topoctl", "probe", "--format", "json"],
        "nvidia-smi topo -p2p r,w,n,a,p (5 calls)": None,
    }
    if shutil.which("nvidia-smi") is None:
        print("nvidia-smi not found: run this on a GPU machine", file=sys.stderr)
        return 2
    timings: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.repeat):
        timings["nvidia-smi topo -m"].append(_time(commands["nvidia-smi topo -m"]))
        timings["topoctl probe"].append(_time(commands["topoctl probe"]))
        timings["nvidia-smi topo -p2p r,w,n,a,p (5 calls)"].append(
            sum(_time(["nvidia-smi", "topo", "-p2p", flag]) for flag in "rwnap"))
    base = statistics.median(timings["nvidia-smi topo -m"])
    print(f"{'command':58s} {'median s':>9s} {'min s':>7s} {'x topo -m':>9s}")
    for name, values in timings.items():
        label = name
        median = statistics.median(values)
        print(f"{label:58s} {median:9.3f} {min(values):7.3f} {median / base:9.2f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"repeat": args.repeat, "timings_s": timings}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
