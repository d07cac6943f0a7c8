"""topoctl's knowledge: the rule engine and its YAML rules (engine/, knowledge/, schema/), and one
package per engine for what that engine's releases do and how they spell it (sglang/). The engine's
API:

    from topoctl.rules.engine import load_rules, evaluate, violations

Nothing here imports torch or NVML: the knowledge reads a Snapshot, never the hardware.

Layer: knowledge (docs/architecture.md, "Layers").
"""
