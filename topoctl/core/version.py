"""topoctl's own version and the SGLang releases it has flag data for, as `topoctl --version` prints
them.

Layer: core types and data (docs/architecture.md, "Layers").

The flag data folder is listed here without importing topoctl.rules.sglang.flags, so that `topoctl
--version` (what scripts and CI logs call most often) stays a few imports. Versions are ordered by
PEP 440 (topoctl.core.pep440), the same order topoctl.rules.sglang.flags uses.
"""

from __future__ import annotations

import os

from topoctl.core.pep440 import InvalidVersion, Version

FLAG_DATA = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rules", "sglang", "generated"
)


def flag_data_versions() -> list[str]:
    """The SGLang versions with flag data (rules/sglang/generated/sglang-<version>.json), oldest
    first: the same listing as topoctl.rules.sglang.flags.known_versions() (tests hold them equal).
    """
    try:
        found = [
            name[len("sglang-") : -len(".json")]
            for name in os.listdir(FLAG_DATA)
            if name.startswith("sglang-")
            and name.endswith(".json")
            and len(name) > len("sglang-.json")
        ]
    except OSError:
        found = []
    versions = []
    for text in found:  # the names topoctl/rules/sglang/flags.py's _NAME_RE takes
        if not (
            text[0].isdigit()
            and all(char.isascii() and (char.isalnum() or char in ".+-") for char in text)
        ):
            continue
        try:
            versions.append((Version(text), text))
        except InvalidVersion:
            continue
    return [text for _, text in sorted(versions)]


def version_text() -> str:
    """topoctl's own version and the SGLang releases it has flag data for, the newest final release
    named."""
    from topoctl import __version__

    versions = flag_data_versions()
    text = f"topoctl {__version__}\n"
    if versions:
        finals = [v for v in versions if not Version(v).is_prerelease]
        newest = finals[-1] if finals else versions[-1]
        text += (
            f"SGLang flag data: {len(versions)} versions, {versions[0]} to {newest}; newest known "
            f"release {newest} (a newer one is judged with its data, with a warning)\n"
        )
    return text
