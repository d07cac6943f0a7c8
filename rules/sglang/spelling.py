"""Logical settings <-> SGLang flags and environment variables, for one SGLang version.

The mapping is data (data/spelling.yaml): each logical setting lists candidate flag names in order
of preference; the first name the target version's flag data accepts, non-deprecated names first, is
the one written. `check` uses the same table backwards, resolving abbreviated flags the way argparse
does (FlagSet.resolve) so that a launch is understood as SGLang will understand it.

Layer: knowledge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from topoctl.core.pep440 import SpecifierSet, parse
from topoctl.rules.sglang import settings as launch_settings

if TYPE_CHECKING:
    from topoctl.rules.sglang.flags import FlagSet

FALSE_WORDS = {"0", "false", "no", "off", "none", ""}


@functools.lru_cache(maxsize=None)
def table() -> dict[str, Any]:
    """The parsed spelling table, served from the knowledge cache when it is unchanged."""
    from topoctl.core import knowledge_cache as cache

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "spelling.yaml")
    return cache.cached(
        "sglang-spelling", [path, __file__], lambda: launch_settings.read_yaml(path)
    )


@functools.lru_cache(maxsize=None)
def specs() -> dict[str, dict[str, Any]]:
    """setting -> how it is written (data/spelling.yaml), plus `kind` and `default` from the one
    table of what each setting is, data/settings.yaml (so a setting's type and default are never
    written twice)."""
    out = {}
    for name, spec in table()["settings"].items():
        out[name] = dict(
            spec, kind=launch_settings.setting_type(name), default=launch_settings.default_of(name)
        )
    return out


def default(setting: str) -> launch_settings.SettingValue:
    """What SGLang does when a launch leaves the setting out (data/settings.yaml); None for an
    unknown name."""
    return (
        launch_settings.default_of(setting) if launch_settings.is_known_setting(setting) else None
    )


def _entries(spec: dict[str, Any], role: str) -> list[dict[str, Any]]:
    out = []
    for item in spec.get(role) or []:
        out.append(item if isinstance(item, dict) else {"flag": item})
    return out


def all_flag_names() -> set[str]:
    """Every flag name the table may write (a test checks each exists in some version's flag data)."""
    names: set[str] = set()
    for spec in specs().values():
        for role in ("flags", "enable", "disable"):
            names.update(entry["flag"] for entry in _entries(spec, role))
    return names


def env_names() -> dict[str, str]:
    """Environment variable name -> setting."""
    return {spec["env"]: name for name, spec in specs().items() if spec.get("env")}


def version_allows(setting: str, version: str | None) -> bool:
    """Whether the setting exists in this SGLang version (spelling.yaml `sglang:` specifier)."""
    spec = specs().get(setting, {})
    wanted = spec.get("sglang")
    if not wanted or not version:
        return True
    parsed = parse(
        version
    )  # a version that is not PEP 440 cannot be placed: the setting is not refused
    return parsed is None or SpecifierSet(wanted).contains(parsed)


def choose_flag(candidates: list[dict[str, Any]], flags: FlagSet) -> dict[str, Any] | None:
    """The first candidate the version accepts, non-deprecated ones first; None if it accepts none."""
    accepted = [entry for entry in candidates if flags.has(entry["flag"])]
    for entry in accepted:
        if not flags.is_deprecated(entry["flag"]):
            return entry
    return accepted[0] if accepted else None


@dataclass
class Rendered:
    """One launch written for one SGLang version."""

    args: list[tuple[str, list[str]]] = field(default_factory=list)  # (setting, tokens)
    env: dict[str, tuple[str, str]] = field(default_factory=dict)  # NAME -> (value, setting)
    problems: list[tuple[str, str]] = field(
        default_factory=list
    )  # (setting, why it could not be written)

    def flat_args(self) -> list[str]:
        return [token for _, tokens in self.args for token in tokens]


def _value_token(spec: dict[str, Any], value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    mapped = (spec.get("values") or {}).get(str(value).lower()) if isinstance(value, str) else None
    return mapped if mapped is not None else str(value)


def render(
    launch: Mapping[str, object],
    flags: FlagSet,
    decided: set[str] | frozenset[str] = frozenset(),
    version: str | None = None,
) -> Rendered:
    """Write `launch` (logical settings) as flags and env for the version of `flags`.

    A setting equal to SGLang's default is left out unless a rule decided it (`decided`), in which
    case it is written explicitly when the version has a way to say it (e.g.
    --disable-custom-all-reduce).
    """
    out = Rendered()
    table_specs = specs()
    for setting in table_specs:
        if setting not in launch:
            continue
        value = launch[setting]
        spec = table_specs[setting]
        is_default = launch_settings.equal(setting, value, None)
        if value is None or (is_default and setting not in decided):
            continue
        if not version_allows(setting, version):
            out.problems.append(
                (setting, f"not available in SGLang {version} (needs {spec['sglang']})")
            )
            continue
        if spec.get("env"):
            if spec.get("kind") == "bool":
                text = spec.get("env_on", "1") if value else spec.get("env_off", "0")
            else:
                text = _value_token(spec, value)
            out.env[spec["env"]] = (str(text), setting)
            continue
        if spec.get("kind") == "bool":
            role = "enable" if value else "disable"
            entry = choose_flag(_entries(spec, role), flags)
            if entry is None:
                if is_default:
                    continue
                out.problems.append((setting, f"SGLang {flags.version} has no flag to {role} it"))
                continue
            tokens = [entry["flag"]] + ([str(entry["value"])] if "value" in entry else [])
            out.args.append((setting, tokens))
            continue
        entry = choose_flag(_entries(spec, "flags"), flags)
        if entry is None:
            out.problems.append((setting, f"SGLang {flags.version} has no flag for it"))
            continue
        out.args.append((setting, [entry["flag"], _value_token(spec, value)]))
    for setting in sorted(launch):
        if setting in table_specs or not setting.startswith("env:") or launch[setting] is None:
            continue
        name = setting[len("env:") :]
        value = launch[setting]
        text = ("1" if value else "0") if isinstance(value, bool) else str(value)
        out.env[name] = (text, setting)
    return out


@functools.lru_cache(maxsize=None)
def reverse_map() -> dict[str, tuple[str, str, object]]:
    """Flag name -> (setting, role, value): role is flags (valued), enable or disable."""
    out: dict[str, tuple[str, str, object]] = {}
    for setting, spec in specs().items():
        for role in ("flags", "enable", "disable"):
            for entry in _entries(spec, role):
                out.setdefault(entry["flag"], (setting, role, entry.get("value")))
    return out


def _dest(flag: str) -> str:
    """The argparse dest of a long flag SGLang declares without `dest=` (--enable-dp-attention ->
    enable_dp_attention)."""
    return flag.lstrip("-").replace("-", "_")


def switch(launch: Mapping[str, object], setting: str) -> bool | None:
    """Whether a launch dict turns the bool `setting` on (True) or off (False), or leaves it (None).

    A launch dict is keyed by setting names (a recommend candidate, a launch check read from its
    flags: `dp_attention`, `cuda_graph`), or in places by the argparse dest of one of the setting's
    switches in this table (`enable_dp_attention`, `disable_cuda_graph`); both are read here,
    through the table, so a reader of a launch asks for the setting once and never spells SGLang's
    dest itself."""
    value = launch.get(setting)
    if value is not None:
        return bool(parse_value(setting, value) if isinstance(value, str) else value)
    spec = specs().get(setting, {})
    for role, meaning in (("disable", False), ("enable", True)):
        for entry in _entries(spec, role):
            if entry.get("value") is None and launch.get(_dest(entry["flag"])):
                return meaning
    return None


def parse_value(setting: str, text: str) -> bool | int | str:
    spec = specs().get(setting, {})
    kind = spec.get("kind")
    if kind == "int":
        try:
            return int(text)
        except ValueError:
            return text
    if kind == "bool":
        return text.strip().lower() not in FALSE_WORDS
    if setting == "speculative_algorithm":
        return text.lower()
    return text
