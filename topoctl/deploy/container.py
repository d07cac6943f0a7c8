"""A container's command words as a launch, shared by the Kubernetes and compose readers:
Kubernetes' command + args (`$(NAME)` expanded from the container's env) or compose's entrypoint +
command (`${NAME}` interpolated from the project's .env), with `sh -c SCRIPT` read as the shell
script it runs.

Layer: deployment reading (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from topoctl.deploy.found import Found, Node
from topoctl.deploy.launchers import (
    GpuSet,
    Launch,
    NotALaunch,
    Unsupported,
    expand,
    read_command,
    read_script,
)


@dataclass(frozen=True)
class Container:
    """What a manifest says of one container or compose service around its command words."""

    label: str
    kind: str  # kubernetes | compose
    env: dict[str, str]
    env_where: dict[str, str]
    gpus: GpuSet | None
    image: str | None


def from_words(
    path: str,
    container: Container,
    words: list[tuple[str, int, Node]],
    base_dir: str,
    line: int,
    interpolate: dict[str, str] | None = None,
) -> Found:
    """The launch a container's command words (Kubernetes command + args, compose entrypoint +
    command) run: Kubernetes expands $(VAR) from the container's env, compose interpolates ${VAR}
    from the project's .env."""
    label, env, env_where, gpus, image = (
        container.label,
        container.env,
        container.env_where,
        container.gpus,
        container.image,
    )
    found = Found(path, line, label, kind=container.kind)
    unresolved: list[str] = []
    if container.kind == "kubernetes":
        tokens = [expand(word, env, unresolved, kubernetes=True) for word, _, _ in words]
    else:  # compose: interpolated from the project's .env, not from the container's environment
        tokens = [expand(word, interpolate or {}, unresolved, compose=True) for word, _, _ in words]
    wheres = [f"{path}:{word_line}" for _, word_line, _ in words]
    where = f"{path}:{line}"
    launch = Launch(
        launcher="",
        where=where,
        base_dir=base_dir,
        env=dict(env),
        env_where=dict(env_where),
        gpus=gpus,
        image=image,
        unresolved=unresolved,
    )
    shell = _shell_script(tokens)
    try:
        if shell is not None:
            index = shell
            script_node = words[index][2]
            offset = script_node.line - 1 + (1 if script_node.style in ("|", ">") else 0)
            launches = read_script(
                tokens[index], origin=path, base_dir=base_dir, inherit=launch, line_offset=offset
            )
            if not launches:
                found.none_reason = (
                    f"{label}: the shell script in its command starts no SGLang launch"
                )
                return found
            chosen = replace(
                launches[-1],
                gpus=gpus,
                image=image,
                unresolved=unresolved + launches[-1].unresolved,
            )
            found.launch = chosen
            found.line = int(chosen.where.rsplit(":", 1)[1])
            return found
        found.launch = read_command(tokens, where=where, base_dir=base_dir, launch=launch)
    except Unsupported as error:
        found.unsupported = error.server
        found.none_reason = f"{label}: {error.message}"
        return found
    except NotALaunch as error:
        found.none_reason = f"{label}: {error.message}"
        return found
    args = found.launch.args
    if args and tokens[-len(args) :] == args:
        found.launch = replace(found.launch, arg_where=wheres[-len(args) :])
    return found


def _shell_script(tokens: list[str]) -> int | None:
    """Index of the script word of `sh -c SCRIPT` / `bash -lc SCRIPT`, when the command is one."""
    if not tokens or tokens[0].rsplit("/", 1)[-1] not in ("bash", "sh", "dash", "zsh", "ash"):
        return None
    index, script_at = 1, None
    while index < len(tokens) and tokens[index].startswith("-"):
        if re.fullmatch(r"-[a-z]*c[a-z]*", tokens[index]):
            script_at = index
        index += 1
    return index if script_at is not None and index < len(tokens) else None
