"""Reading this package's YAML data (models, settings, cost model) once per process."""
from __future__ import annotations

import functools
from importlib import resources
from typing import Any


def _load_yaml(text: str) -> Any:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader


@functools.lru_cache(maxsize=None)
def load(name: str) -> Any:
    """Parsed content of autoconf/data/<name>."""
    text = resources.files("topoctl.autoconf").joinpath("data", name).read_text(encoding="utf-8")
    return _load_yaml(text)
