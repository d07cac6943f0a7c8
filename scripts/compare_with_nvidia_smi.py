"""Replay a capture folder and compare the probe's answer with the nvidia-smi outputs saved beside it.

Usage: python scripts/compare_with_nvidia_smi.py fixtures/h200-4x-nvswitch-vm [SNAPSHOT.json]
Exit 0 when every pair and every capability agree, 1 otherwise (each disagreement printed).
"""

from __future__ import annotations

import json
import os
import sys

from topoctl.probe.capture import load_capture
from topoctl.probe.collect import probe_capture
from topoctl.probe.nvidia_smi import compare


def read_outputs(folder: str) -> tuple[str | None, dict[str, str]]:
    def read(name: str) -> str | None:
        path = os.path.join(folder, name)
        return open(path, encoding="utf-8").read() if os.path.exists(path) else None

    p2p = {
        flag: text
        for flag in "rwnap"
        if (text := read(f"nvidia-smi-topo-p2p-{flag}.txt")) is not None
    }
    return read("nvidia-smi-topo-m.txt"), p2p


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    folder = argv[0]
    if len(argv) > 1:
        with open(argv[1], encoding="utf-8") as handle:
            snapshot = json.load(handle)
    else:
        snapshot = probe_capture(load_capture(folder), name=folder)
    topo_m, p2p = read_outputs(folder)
    problems = compare(snapshot, topo_m, p2p)
    checked = len(snapshot["pairs"]) * (len(p2p) + (1 if topo_m else 0))
    for line in problems:
        print(line)
    print(
        f"{folder}: {len(snapshot['gpus'])} GPUs, {len(snapshot['pairs'])} ordered pairs, "
        f"{checked} pair-facts compared with nvidia-smi, {len(problems)} disagreements"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
