"""The probe: the only code in topoctl that touches hardware (NVML, sysfs, /proc, package metadata,
torch).

Every raw answer passes through a `capture.Session`, which can record it (`topoctl probe --record`)
or replay a recording (`--from-capture`), so tests run the very same code path on answers real
hardware gave.

Layer: probe (docs/architecture.md, "Layers").
"""
