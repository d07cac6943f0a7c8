"""The minimal snapshots of tests/snapshot_factory.py (docs/architecture.md, schema_version 1) load.

Used where a test needs a machine the built-in systems do not cover (hostile strings, drift).
"""

from __future__ import annotations

from snapshot_factory import hostile, make_snapshot

from topoctl.snapshot.document import validate_snapshot


def test_minimal_snapshots_validate():
    for snap in (
        make_snapshot(),
        make_snapshot(
            count=2, p2p="NS", gpu_name="NVIDIA GeForce RTX 4090", capability="8.9", link="PHB"
        ),
        hostile(make_snapshot(), "/tmp/never"),
    ):
        validate_snapshot(snap, origin="test")
