"""Reading this package's YAML data (models, settings, cost model) once per process.

Parsed files are kept in topoctl's knowledge cache (topoctl/core/knowledge_cache.py), so a warm
start does not import PyYAML; an edited data file is read again.

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import functools
import os
from typing import Any


def _load_yaml(text: str) -> Any:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader


def read_yaml(path: str) -> Any:
    """One YAML data file, parsed with the C loader where PyYAML has it."""
    from topoctl.core import safe_read as limits

    return _load_yaml(limits.read_text(path, limits.MAX_DATA_FILE_BYTES))


@functools.lru_cache(maxsize=None)
def load(name: str, folder: str = "data") -> Any:
    """Parsed content of autoconf/<folder>/<name>: hand-written data in data/, extracted data in
    generated/."""
    from topoctl.core import knowledge_cache as cache

    path = os.path.join(cache.package_dir("topoctl.autoconf"), folder, name)
    stem = os.path.splitext(name)[0]
    return cache.cached(f"autoconf-{stem}", [path, __file__], lambda: read_yaml(path))
