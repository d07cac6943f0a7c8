"""Write the synthetic reference systems' captures: fixtures/<name>/capture.json.

Each system is a spec (tests/fakes/systems.py) of what NVML, sysfs, /proc and the package metadata would
answer on that machine. This script installs the fake NVML binding (tests/fakes/nvml.py) as `pynvml`,
runs the real probe (topoctl.probe.collect.run_probe) through a recording Session whose sysfs/host/
software answers come from the spec, and writes what was recorded, marked "synthetic": true, with a
description of where its facts come from. Then it rebuilds every fixture's snapshot.json.

Usage: python scripts/make_synthetic_fixtures.py [NAME ...]      (default: all synthetic systems)
The README.md beside each capture (written by hand) lists the sources and every assumption.
"""
from __future__ import annotations

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from fakes.nvml import make_fake_pynvml  # noqa: E402
from fakes.session import SpecSession, installed  # noqa: E402
from fakes.systems import SYSTEMS  # noqa: E402

from topoctl.errors import NoGpuError  # noqa: E402
from topoctl.probe.collect import run_probe  # noqa: E402
from topoctl.render import to_json  # noqa: E402

RECORDED_AT = "2026-11-30T00:00:00+00:00"  # fixed, so that regenerating gives byte-identical files

DESCRIPTIONS = {
    "rtx-pro-6000-8x-pcie": "SYNTHETIC: 8x RTX PRO 6000 Blackwell Server Edition (SM 12.0), PCIe Gen5, no NVLink, "
                            "P2P OK on all 56 pairs (torch cross-check), two sockets. Facts from the field report "
                            "(shared seeds); PCIe tree, host and versions assumed, see README.md.",
    "h100-8x-nvswitch": "SYNTHETIC: bare-metal HGX/DGX H100 SXM5, 8 GPUs, 18 NVLink 4.0 links each to NVSwitch "
                        "(NV18 all pairs), two sockets. Facts from public NVIDIA DGX H100 documentation and "
                        "upstream-facts.md; see README.md.",
    "rtx-4090-2x-pcie-no-p2p": "SYNTHETIC: 2x GeForce RTX 4090 (SM 8.9), PCIe Gen4 x16, no NVLink, P2P not "
                               "supported by the GPU (GNS). Facts from upstream-facts.md (custom allreduce crash on "
                               "2x 4090); see README.md.",
    "l40s-4x-pcie-2numa": "SYNTHETIC: 4x L40S (SM 8.9), PCIe Gen4, two per socket, P2P OK within a socket and CNS "
                          "across; GPU 2 down-trained to x8. Written from public NVIDIA/server documentation and "
                          "assumptions listed in README.md.",
    "no-gpu": "SYNTHETIC: a machine without the NVIDIA driver: nvmlInit fails with LibraryNotFound "
              "(topoctl probe exits 3).",
}


def capture_for(name: str) -> dict:
    """Run the real probe against system `name`'s spec and return the recorded capture document."""
    system = SYSTEMS[name]()
    session = SpecSession(system["world"], record=True)
    with installed(make_fake_pynvml(system["nvml"])):
        try:
            run_probe(session, with_torch=system["with_torch"])
        except NoGpuError:
            pass  # the no-GPU system: its capture holds the failed nvmlInit
    document = session.capture_document(DESCRIPTIONS[name])
    document["recorded_at"] = RECORDED_AT
    document["topoctl_version"] = "fixture"
    document["synthetic"] = True
    return document


def main(argv: list[str]) -> int:
    names = argv or sorted(SYSTEMS)
    for name in names:
        if name not in SYSTEMS:
            print(f"unknown synthetic system {name!r}; known: {', '.join(sorted(SYSTEMS))}", file=sys.stderr)
            return 2
        folder = os.path.join(ROOT, "fixtures", name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "capture.json"), "w", encoding="utf-8") as handle:
            handle.write(to_json(capture_for(name)))
        print(f"{name}: capture.json written")
    return subprocess.call([sys.executable, os.path.join(HERE, "build_fixture_snapshots.py")])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
