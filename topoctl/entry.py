"""The console script's door: `topoctl --version` answers without importing click or any command (it is
what scripts and CI logs call most often), everything else goes to topoctl.cli."""
from __future__ import annotations

import sys


def version_text() -> str:
    """topoctl's own version and the SGLang releases it has flag data for, the newest named."""
    from topoctl import __version__
    from topoctl.sglang.flags import known_versions, newest_version

    versions = known_versions()
    text = f"topoctl {__version__}\n"
    if versions:
        text += (f"SGLang flag data: {len(versions)} versions, {versions[0]} to {newest_version()}; newest known "
                 f"release {newest_version()} (a newer one is judged with its data, with a warning)\n")
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
