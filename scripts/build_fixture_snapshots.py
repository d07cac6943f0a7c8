"""Regenerate fixtures/<system>/snapshot.json from each fixture's capture.json (the replayed probe),
with the fixture's measurements.json (what `topoctl bench` measured there) under `measurements`
where there is one.

Run after a probe change or a new capture: python scripts/build_fixture_snapshots.py python
scripts/build_fixture_snapshots.py --check writes nothing and exits 1 when a snapshot.json is stale.
tests/snapshot/test_fixtures.py fails when a committed snapshot.json differs from its replay, so the
shipped reference systems always say what the current probe makes of the recorded answers.
"""

from __future__ import annotations

import os
import sys

from topoctl.core.errors import NoGpuError
from topoctl.core.serialize import to_json
from topoctl.probe.capture import load_capture
from topoctl.probe.collect import probe_capture

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")


def snapshot_for(folder: str) -> dict | None:
    name = os.path.basename(folder.rstrip("/"))
    try:
        snapshot = probe_capture(load_capture(folder), name=name, kind="system")
    except NoGpuError:
        return None
    snapshot["topoctl_version"] = "fixture"  # keeps the files stable across releases
    measured = os.path.join(folder, "measurements.json")
    if os.path.isfile(
        measured
    ):  # what `topoctl bench` measured on that machine, in the same session
        import json

        with open(measured, encoding="utf-8") as handle:
            snapshot["measurements"] = json.load(handle)
    return snapshot


def main(argv: list[str] | None = None) -> int:
    check = "--check" in (argv or [])
    stale = 0
    for name in sorted(os.listdir(ROOT)):
        folder = os.path.join(ROOT, name)
        if not os.path.isfile(os.path.join(folder, "capture.json")):
            continue
        snapshot = snapshot_for(folder)
        target = os.path.join(folder, "snapshot.json")
        text = None if snapshot is None else to_json(snapshot)
        if check:
            committed = open(target, encoding="utf-8").read() if os.path.exists(target) else None
            if committed != text:
                print(f"stale: fixtures/{name}/snapshot.json", file=sys.stderr)
                stale += 1
            continue
        if snapshot is None or text is None:
            print(f"{name}: no GPU visible (exit-3 fixture), no snapshot.json")
            if os.path.exists(target):
                os.unlink(target)
            continue
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(text)
        print(
            f"{name}: {snapshot['summary']['gpu_count']} GPUs, "
            f"{snapshot['summary']['interconnect']}"
        )
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
