"""The console script's door: `topoctl --version` answers without importing click or any command (it is
what scripts and CI logs call most often), everything else goes to topoctl.cli."""
from __future__ import annotations

import sys


def _flag_data_versions() -> list[str]:
    """The SGLang versions with flag data (topoctl/sglang/data/sglang-<version>.json), oldest first: the same
    listing as topoctl.sglang.flags.known_versions(), without importing that module (tests hold them equal)."""
    import os
    import re

    from packaging.version import Version

    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sglang", "data")
    name = re.compile(r"^sglang-(?P<version>[0-9][0-9A-Za-z.+-]*)\.json$")
    try:
        found = [m.group("version") for m in map(name.match, os.listdir(folder)) if m]
    except OSError:
        found = []
    return sorted(found, key=Version)


def version_text() -> str:
    """topoctl's own version and the SGLang releases it has flag data for, the newest named."""
    from packaging.version import Version

    from topoctl import __version__

    versions = _flag_data_versions()
    text = f"topoctl {__version__}\n"
    if versions:
        finals = [v for v in versions if not Version(v).is_prerelease]
        newest = finals[-1] if finals else versions[-1]
        text += (f"SGLang flag data: {len(versions)} versions, {versions[0]} to {newest}; newest known "
                 f"release {newest} (a newer one is judged with its data, with a warning)\n")
    return text


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if list(args) == ["--version"]:
        try:
            sys.stdout.write(version_text())
            sys.stdout.flush()
        except BrokenPipeError:
            return 0
        return 0
    from topoctl.cli import main as cli_main

    return cli_main(argv)
