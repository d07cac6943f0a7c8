"""The logical launch settings rules talk about, and what each one is when a launch leaves it out.

Defaults live in settings.yaml (data, next to this file) so that `violations()` can tell that a
launch which never mentions `custom_all_reduce` runs with it on, and so users can read them.
"""
from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Any

ENV_PREFIX = "env:"
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@lru_cache(maxsize=1)
def setting_table() -> dict[str, dict[str, Any]]:
    """name -> {type, default, doc} for the non-env settings (read once from settings.yaml, or from the
    knowledge cache, topoctl/cache.py)."""
    from topoctl import cache

    path = os.path.join(cache.package_dir(__package__), "settings.yaml")
    return dict(cache.cached("rule-settings", [path, __file__], lambda: _read_table(path)))


def _read_table(path: str) -> dict[str, dict[str, Any]]:
    import yaml

    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return dict(yaml.load(text, Loader=loader)["settings"])  # noqa: S506 - a safe loader


def is_env_setting(name: str) -> bool:
    return name.startswith(ENV_PREFIX)


def is_known_setting(name: str) -> bool:
    """A logical setting of settings.yaml, or `env:NAME` with a valid variable name."""
    if is_env_setting(name):
        return bool(ENV_NAME.match(name[len(ENV_PREFIX):]))
    return name in setting_table()


def setting_type(name: str) -> str:
    """bool | int | str (env settings are strings)."""
    return "str" if is_env_setting(name) else setting_table()[name]["type"]


def default_of(name: str) -> Any:
    """SGLang's behaviour when the launch does not name the setting (None: unset / decided at start-up)."""
    if is_env_setting(name):
        return None
    return setting_table()[name]["default"]


def normalize(name: str, value: Any) -> Any:
    """Env values compare as strings (a launch may carry 1 or "1"); others pass through."""
    if value is None:
        return None
    if is_env_setting(name):
        if isinstance(value, bool):
            return "1" if value else "0"
        return str(value)
    return value
