"""Dockerfiles: the command the built image runs (its last stage's ENTRYPOINT and CMD), with the ENV
it sets and the image it is built FROM (whose tag may name the SGLang version).

As Docker's reference gives it: exec form (a JSON array) or shell form (`/bin/sh -c TEXT`); an
exec-form CMD is the arguments of an exec-form ENTRYPOINT; a shell-form ENTRYPOINT ignores CMD;
ENTRYPOINT set in a stage resets the CMD it inherits. `${NAME}` / `$NAME` / `${NAME:-default}` in
ENV and FROM are replaced from ARG and ENV (Docker does not expand them inside CMD/ENTRYPOINT; a
shell form's shell does, from the ENV). An ENTRYPOINT script that ends in `exec "$@"` (read when it
sits beside the Dockerfile) runs the CMD: the CMD is the launch.

Layer: deployment reading (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import json
import os
import re

from topoctl.deploy.found import Found
from topoctl.deploy.launchers import Launch, NotALaunch, Unsupported, expand, read_command

_INSTRUCTION = re.compile(r"\s*([A-Za-z]+)\s+(.*)", re.S)


def is_dockerfile(path: str) -> bool:
    name = os.path.basename(path)
    return (
        name == "Dockerfile"
        or name.startswith("Dockerfile.")
        or name.endswith((".Dockerfile", ".dockerfile"))
    )


def _instructions(text: str) -> list[tuple[int, str, str]]:
    """(line, INSTRUCTION, arguments) with continuation lines joined and comment lines dropped."""
    out: list[tuple[int, str, str]] = []
    buffer, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and buffer):
            continue
        if not buffer:
            start = number
        if stripped.endswith("\\"):
            buffer += stripped[:-1] + " "
            continue
        buffer += stripped
        match = _INSTRUCTION.match(buffer)
        if match:
            out.append((start, match.group(1).upper(), match.group(2).strip()))
        buffer = ""
    return out


def _form(arguments: str) -> tuple[list[str], bool]:
    """(words, exec form)."""
    if arguments.startswith("["):
        try:
            words = json.loads(arguments)
        except ValueError:
            words = None
        if isinstance(words, list) and all(isinstance(word, str) for word in words):
            return words, True
    return ["/bin/sh", "-c", arguments], False


def _env_pairs(arguments: str) -> list[tuple[str, str]]:
    from topoctl.core.safe_read import split_words

    try:
        words = split_words(arguments, "ENV")
    except ValueError:
        return []
    if words and "=" not in words[0]:  # legacy `ENV NAME value with spaces`
        return [(words[0], " ".join(words[1:]))]
    return [tuple(word.split("=", 1)) for word in words if "=" in word]  # type: ignore[misc]


class _Stage:
    def __init__(self, image: str, line: int) -> None:
        self.image, self.line = image, line
        self.env: dict[str, str] = {}
        self.env_where: dict[str, str] = {}
        self.entrypoint: tuple[list[str], bool, int] | None = None
        self.cmd: tuple[list[str], bool, int] | None = None


def _stages(path: str, text: str) -> list[_Stage]:
    args: dict[str, str] = {}
    stages: list[_Stage] = []
    named: dict[str, _Stage] = {}
    for line, instruction, arguments in _instructions(text):
        variables = {**args, **(stages[-1].env if stages else {})}
        if instruction == "ARG":
            name, _, default = arguments.partition("=")
            args.setdefault(name.strip(), expand(default.strip().strip("\"'"), variables, []))
        elif instruction == "FROM":
            words = expand(arguments, variables, []).split()
            image = next((word for word in words if not word.startswith("--")), "")
            stage = _Stage(image, line)
            if image.lower() in named:  # FROM an earlier stage: its ENV and commands carry over
                base = named[image.lower()]
                stage.image, stage.env, stage.env_where = (
                    base.image,
                    dict(base.env),
                    dict(base.env_where),
                )
                stage.entrypoint, stage.cmd = base.entrypoint, base.cmd
            if len(words) >= 3 and words[-2].upper() == "AS":
                named[words[-1].lower()] = stage
            stages.append(stage)
        elif stages and instruction == "ENV":
            for name, value in _env_pairs(arguments):
                stages[-1].env[name] = expand(value, variables, [])
                stages[-1].env_where[name] = f"{path}:{line}"
        elif stages and instruction in ("CMD", "ENTRYPOINT"):
            words, exec_form = _form(arguments)
            if instruction == "ENTRYPOINT":
                stages[-1].entrypoint, stages[-1].cmd = (words, exec_form, line), None
            else:
                stages[-1].cmd = (words, exec_form, line)
    return stages


def _runs_its_arguments(script: str, base_dir: str) -> bool:
    """An entrypoint script beside the Dockerfile that hands over to its arguments (`exec "$@"`)."""
    candidate = os.path.join(base_dir, os.path.basename(script))
    from topoctl.core import safe_read as limits
    from topoctl.core.errors import TopoctlError

    try:  # the one reading layer: a FIFO or device in its place is not opened
        text = limits.read_head(candidate, 256 * 1024)[0].decode("utf-8", "replace")
    except (OSError, TopoctlError):
        return False
    return re.search(r'(^|\s)(exec\s+)?"\$@"', text) is not None


def read(path: str, text: str, base_dir: str) -> tuple[str, list[Found]]:
    """The Dockerfile kind's reader (topoctl/deploy/registry.py)."""
    return "dockerfile", read_dockerfile(path, text, base_dir)


def read_dockerfile(path: str, text: str, base_dir: str) -> list[Found]:
    stages = _stages(path, text)
    if not stages:
        return [
            Found(path, 1, kind="dockerfile", none_reason=f"{path}: no FROM (not a Dockerfile)")
        ]
    stage = stages[-1]
    entry, cmd = stage.entrypoint, stage.cmd
    if entry is not None and entry[1] and not entry[0]:  # ENTRYPOINT []: none (moby/moby#3465)
        entry = None
    if entry is None and cmd is None:
        return [
            Found(
                path,
                stage.line,
                kind="dockerfile",
                none_reason=f"{path}: no CMD or ENTRYPOINT: the image runs {stage.image}'s own "
                "command, "
                "not visible here",
            )
        ]
    notes: list[str] = []
    if entry is not None and not entry[1]:
        words, line = entry[0], entry[2]  # shell-form ENTRYPOINT: CMD is ignored
    elif entry is not None and cmd is not None and cmd[1]:
        words, line = entry[0] + cmd[0], cmd[2]
        if _runs_its_arguments(entry[0][0], base_dir) and len(entry[0]) == 1:
            words = cmd[0]
            notes.append(
                f'ENTRYPOINT {entry[0][0]} runs its arguments (exec "$@"): the CMD is the launch'
            )
    else:
        chosen = entry or cmd
        assert chosen is not None
        words, line = chosen[0], chosen[2]
    where = f"{path}:{line}"
    launch = Launch(
        launcher="",
        where=where,
        base_dir=base_dir,
        env=dict(stage.env),
        env_where=dict(stage.env_where),
        image=stage.image or None,
        notes=notes,
    )
    found = Found(path, line, "CMD" if cmd is not None else "ENTRYPOINT", kind="dockerfile")
    try:
        found.launch = read_command(words, where=where, base_dir=base_dir, launch=launch)
    except Unsupported as error:
        found.unsupported, found.none_reason = error.server, f"{path}: {error.message}"
    except NotALaunch as error:
        found.none_reason = f"{path}:{line}: {error.message}"
    return [found]
