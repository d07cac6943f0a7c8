"""Serialising plain data for people and scripts: YAML (default) or JSON, deterministic."""
from __future__ import annotations

import json
from typing import Any


def to_json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def to_yaml(data: Any) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False, width=120)


def dump(data: Any, fmt: str) -> str:
    return to_json(data) if fmt == "json" else to_yaml(data)
