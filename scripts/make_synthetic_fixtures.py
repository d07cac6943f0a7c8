"""Write the synthetic reference systems' captures: fixtures/<name>/capture.json from
fixtures/<name>/spec.json.

A synthetic system is data: its spec.json (in its fixture folder, beside the README.md that lists
every source and assumption) says what NVML, sysfs, /proc and the package metadata would answer on
that machine. This script installs the generic fake NVML binding (tests/fakes/nvml.py) as `pynvml`,
runs the real probe (topoctl.probe.collect.run_probe) through a recording Session whose
sysfs/host/software answers come from the spec, and writes what was recorded, marked "synthetic":
true, with the spec's description. Then it rebuilds every fixture's snapshot.json
(scripts/build_fixture_snapshots.py).

Usage: python scripts/make_synthetic_fixtures.py [NAME ...]      (default: every folder with a spec.json)
       python scripts/make_synthetic_fixtures.py --check          (writes nothing; exit 1 when a capture is stale)
A new reference system is a new folder: copy a spec.json, change what differs, write its README.md, run this.
"""

from __future__ import annotations

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import json  # noqa: E402

from fakes.nvml import make_fake_pynvml  # noqa: E402
from fakes.session import SpecSession, installed  # noqa: E402

from topoctl.core.errors import NoGpuError  # noqa: E402
from topoctl.core.serialize import to_json  # noqa: E402
from topoctl.probe.collect import run_probe  # noqa: E402

RECORDED_AT = "2026-11-30T00:00:00+00:00"  # fixed, so that regenerating gives byte-identical files

FIXTURES = os.path.join(ROOT, "fixtures")


def spec_names() -> list[str]:
    """The synthetic systems: fixture folders with a spec.json."""
    return sorted(
        name
        for name in os.listdir(FIXTURES)
        if os.path.isfile(os.path.join(FIXTURES, name, "spec.json"))
    )


def load_spec(name: str) -> dict:
    with open(os.path.join(FIXTURES, name, "spec.json"), encoding="utf-8") as handle:
        spec = json.load(handle)
    if spec.get("spec_version") != 1 or spec.get("synthetic") is not True:
        raise SystemExit(f"fixtures/{name}/spec.json: expected spec_version 1 and synthetic: true")
    return spec


def capture_for(name: str) -> dict:
    """Run the real probe against system `name`'s spec and return the recorded capture document."""
    system = load_spec(name)
    session = SpecSession(system["world"], record=True)
    with installed(make_fake_pynvml(system["nvml"])):
        try:
            run_probe(session, with_torch=system["with_torch"])
        except NoGpuError:
            pass  # the no-GPU system: its capture holds the failed nvmlInit
    document = session.capture_document(system["description"])
    document["recorded_at"] = RECORDED_AT
    document["topoctl_version"] = "fixture"
    document["synthetic"] = True
    return document


def check_captures() -> int:
    """Exit status 1 when a committed synthetic capture.json differs from what its spec.json gives
    now."""
    stale = 0
    for name in spec_names():
        with open(os.path.join(FIXTURES, name, "capture.json"), encoding="utf-8") as handle:
            if handle.read() != to_json(capture_for(name)):
                print(f"stale: fixtures/{name}/capture.json", file=sys.stderr)
                stale += 1
    return 1 if stale else 0


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        return check_captures()
    names = argv or spec_names()
    for name in names:
        if name not in spec_names():
            print(
                f"unknown synthetic system {name!r}; known: {', '.join(spec_names())}",
                file=sys.stderr,
            )
            return 2
        folder = os.path.join(ROOT, "fixtures", name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "capture.json"), "w", encoding="utf-8") as handle:
            handle.write(to_json(capture_for(name)))
        print(f"{name}: capture.json written")
    return subprocess.call([sys.executable, os.path.join(HERE, "build_fixture_snapshots.py")])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
