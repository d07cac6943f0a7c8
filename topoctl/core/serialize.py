"""Serialising plain data for people and scripts: YAML (default) or JSON, deterministic.

Layer: core types and data (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import json
from typing import Any


def to_json(data: object) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def to_yaml(data: object) -> str:
    """YAML with PyYAML's C dumper when it is built with libyaml (same text, several times faster;
    the golden tests hold the probe's output to the committed files byte for byte), else the
    pure-Python one."""
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    text: str = yaml.dump(
        data,
        Dumper=dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=120,
    )
    return text


def safe_load(text: str, origin: str = "<yaml>") -> Any:
    """yaml.safe_load's meaning, within the limits of topoctl/core/safe_read.py (the one bounded
    YAML loader)."""
    from topoctl.core import safe_read as limits

    return limits.load_yaml(text, origin)


def dump(data: object, fmt: str) -> str:
    return to_json(data) if fmt == "json" else to_yaml(data)
