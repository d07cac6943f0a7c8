"""Shell scripts (`*.sh`, `*.bash`, or a `#!` line naming a shell): every launch line, with the
variables exported before it (topoctl.deploy.launchers.read_script, bash's grammar in
topoctl/deploy/shell.py). Nothing is run or sourced.

Layer: deployment reading (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from topoctl.deploy.found import Found
from topoctl.deploy.launchers import NotALaunch, Unsupported, read_script


def read(path: str, text: str, base_dir: str) -> tuple[str, list[Found]]:
    """("script", every launch the script starts), or why it starts none."""
    try:
        launches = read_script(text, origin=path, base_dir=base_dir)
    except Unsupported as error:
        return "script", [
            Found(path, 1, kind="script", unsupported=error.server, none_reason=error.message)
        ]
    except NotALaunch as error:
        return "script", [Found(path, 1, kind="script", none_reason=f"{path}: {error.message}")]
    if not launches:
        return "script", [
            Found(
                path,
                1,
                kind="script",
                none_reason=f"{path}: no launch: no command of the script starts an SGLang server",
            )
        ]
    return "script", [
        Found(path, int(launch.where.rsplit(":", 1)[1]), kind="script", launch=launch)
        for launch in launches
    ]
