"""Wall time of `topoctl probe` against `nvidia-smi topo -m`, measured in the same run on the same machine.

Usage (on a GPU machine):  python benchmarks/probe_bench.py --repeat 7 [--json FILE]
Each command runs as a fresh subprocess (what a user pays), interleaved so that all see the same load.
Goal: `topoctl probe` within 2x of `nvidia-smi topo -m`, while it reports far more (all five P2P
capabilities per ordered pair, NVLink, PCIe tree, NUMA, versions). For scale, the five
`nvidia-smi topo -p2p` calls it would take to get the P2P matrices alone are timed too, and so are the
floor any Python tool pays on that machine (interpreter start, importing the NVML binding).

Bytecode: pip compiles .pyc files at install time. Where an image ships packages without them and
sets PYTHONDONTWRITEBYTECODE, every Python start recompiles the 7,000-line NVML binding (~50 ms);
set PYTHONPYCACHEPREFIX=/tmp/pyc and run `python -m compileall -q <site-packages>/pynvml.py` first
to measure what a normal install pays. Say which one you measured.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_startup_common import median_wall_times, table  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    if shutil.which("nvidia-smi") is None:
        print("nvidia-smi not found: run this on a GPU machine", file=sys.stderr)
        return 2
    p2p = " && ".join(f"nvidia-smi topo -p2p {flag}" for flag in "rwnap")
    commands = {
        "nvidia-smi topo -m": ["nvidia-smi", "topo", "-m"],
        "python -c pass (interpreter start, the floor)": [sys.executable, "-c", "pass"],
        "python -c 'import pynvml' (NVML binding import)": [sys.executable, "-c", "import pynvml"],
        "topoctl probe": [sys.executable, "-m", "topoctl", "probe", "--format", "json"],
        "topoctl probe --format yaml": [sys.executable, "-m", "topoctl", "probe"],
        "nvidia-smi topo -p2p r,w,n,a,p (5 calls)": ["sh", "-c", p2p],
    }
    timings = median_wall_times(commands, args.repeat, cwd=tempfile.mkdtemp())
    print(table(timings, "nvidia-smi topo -m"))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"repeat": args.repeat, "timings_s": timings}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
