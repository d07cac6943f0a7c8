"""Wall time of `topoctl show --topology FILE` (goal: under 0.3 s on a 2-core CI-class machine).

Usage: python benchmarks/show_bench.py [--repeat 15]
Uses the real 4x H200 snapshot shipped as a fixture; each run is a fresh process, as a user pays it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_startup_common import median_wall_times, table  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args(argv)
    snapshot = os.path.join(ROOT, "fixtures", "h200-4x-nvswitch-vm", "snapshot.json")
    cwd = (
        tempfile.mkdtemp()
    )  # not the repo root: the installed package is measured, not the source tree
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "topoctl show --topology <4x H200 snapshot>": [
            sys.executable,
            "-m",
            "topoctl",
            "show",
            "--topology",
            snapshot,
        ],
        "topoctl show --system rtx-pro-6000-8x-pcie": [
            sys.executable,
            "-m",
            "topoctl",
            "show",
            "--system",
            "rtx-pro-6000-8x-pcie",
        ],
    }
    print(table(median_wall_times(commands, args.repeat, cwd=cwd), "python -c pass"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
