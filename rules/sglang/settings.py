"""The logical launch settings (what rules talk about and recommend writes), and what SGLang does
with each one when a launch leaves it out: SGLang knowledge, so it lives with SGLang's flag data and
spelling.

Types and defaults live in data/settings.yaml so that the rules' `violations()` can tell that a
launch which never mentions `custom_all_reduce` runs with it on, so that reading a launch knows an
int from a switch, and so users can read them. topoctl.rules.sglang.settings gives the rules the
same functions.

Layer: knowledge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Any, Literal, Mapping, TypedDict

SETTINGS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "settings.yaml")
ENV_PREFIX = "env:"
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

SettingType = Literal["bool", "int", "str"]
SettingValue = bool | int | str | None  # a setting's value as settings.yaml writes a default


class SettingSpec(TypedDict):
    """One entry of settings.yaml's `settings` (a dict: the knowledge cache stores and returns it as
    JSON)."""

    type: SettingType
    default: SettingValue
    doc: str


@lru_cache(maxsize=1)
def setting_table() -> dict[str, SettingSpec]:
    """name -> {type, default, doc} for the non-env settings (read once from settings.yaml, or from
    the knowledge cache, topoctl/core/knowledge_cache.py)."""
    from topoctl.core import knowledge_cache as cache

    path = SETTINGS_FILE
    return dict(cache.cached("rule-settings", [path, __file__], lambda: _read_table(path)))


def read_yaml(path: str) -> Any:
    """One of this package's YAML data files, parsed with the C loader where PyYAML has it."""
    import yaml

    from topoctl.core import safe_read as limits

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(limits.read_text(path, limits.MAX_DATA_FILE_BYTES), Loader=loader)  # noqa: S506 - a safe loader


def _read_table(path: str) -> dict[str, SettingSpec]:
    return dict(read_yaml(path)["settings"])


def is_env_setting(name: str) -> bool:
    return name.startswith(ENV_PREFIX)


def is_known_setting(name: str) -> bool:
    """A logical setting of settings.yaml, or `env:NAME` with a valid variable name."""
    if is_env_setting(name):
        return bool(ENV_NAME.match(name[len(ENV_PREFIX) :]))
    return name in setting_table()


def setting_type(name: str) -> SettingType:
    """bool | int | str (env settings are strings)."""
    return "str" if is_env_setting(name) else setting_table()[name]["type"]


def default_of(name: str) -> SettingValue:
    """SGLang's behaviour when the launch does not name the setting (None: unset / decided at
    start-up)."""
    if is_env_setting(name):
        return None
    return setting_table()[name]["default"]


def normalize(name: str, value: object) -> object:
    """Env values compare as strings (a launch may carry 1 or "1"); others pass through."""
    if value is None:
        return None
    if is_env_setting(name):
        if isinstance(value, bool):
            return "1" if value else "0"
        return str(value)
    return value


UNSET_WORDS = (
    "none",
    "null",
)  # a value written `none`/`null` means "not set": the setting's default


def comparable(name: str, value: object, scoped: Mapping[str, object] | None = None) -> object:
    """`value` as launch settings compare: unset (None, `none`, `null`) is the setting's default
    (what a rule's effect.defaults says SGLang does in its scope, `scoped`, else settings.yaml); env
    values are strings; strings ignore case and surrounding space; an int setting written as digits
    is that int."""
    value = _unset_to_none(normalize(name, value))
    if value is None:
        known = is_known_setting(name)
        if scoped and name in scoped:
            value = _unset_to_none(normalize(name, scoped[name]))
        elif known:
            value = _unset_to_none(normalize(name, default_of(name)))
    if isinstance(value, str):
        text = value.strip().casefold()
        if (
            not is_env_setting(name)
            and name in setting_table()
            and setting_table()[name]["type"] == "int"
        ):
            try:
                return int(text)
            except ValueError:
                return text
        return text
    return value


def equal(
    name: str, left: object, right: object, scoped: Mapping[str, object] | None = None
) -> bool:
    """Whether two values of a launch setting mean the same launch: the one comparison behind
    violations() and recommend's ranking, so the two never disagree about defaults. True never
    equals 1."""
    left, right = comparable(name, left, scoped), comparable(name, right, scoped)
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    return left == right


def _unset_to_none(value: object) -> object:
    return None if isinstance(value, str) and value.strip().casefold() in UNSET_WORDS else value
