"""The parse stage of check: a launch found in a file (topoctl/deploy/launchers.py Launch) -> a
ParsedLaunch, read with the SGLang version the resolve stage chose for it, as that version's
argparse reads it.

What a launcher hands SGLang's parser (topoctl/deploy/launcher_args.py), the launch's environment,
the parts of the file that were skipped and a floating image tag (said), and the words topoctl
cannot resolve ($EXTRA_ARGS, "$@", a value set by the scheduler): left out and named, never guessed.
Also the readers of flags topoctl has no logical setting for (--base-gpu-id, --nnodes), as argparse
reads them, for the later stages.

Layer: judge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable, Iterator

from topoctl.check.resolve import MOVING_SOURCE
from topoctl.deploy.launchers import floating_tag, moving_image_tag
from topoctl.deploy.sglang_launch import ParsedLaunch

if TYPE_CHECKING:
    from topoctl.check.resolve import Versions
    from topoctl.deploy.launcher_args import Prepared
    from topoctl.deploy.launchers import Launch
    from topoctl.deploy.sglang_launch import FlagsFor
    from topoctl.rules.sglang.flags import FlagSet


def given_flags(
    parsed: ParsedLaunch, dest: str | tuple[str, ...]
) -> Iterator[tuple[str | None, int]]:
    """Each flag of the launch's arguments whose argparse dest is `dest` (one of them, for a tuple),
    read with the version's flag data as argparse reads it (abbreviations, --flag=value): (its value
    as written or None for a switch at the end of the line, the index of the flag)."""
    flags, args = getattr(parsed, "flags", None), list(getattr(parsed, "args", []) or [])
    wanted = (dest,) if isinstance(dest, str) else dest
    if flags is None:
        return
    for index, token in enumerate(args):
        if not token.startswith("-"):
            continue
        resolution = flags.resolve(token)
        if not getattr(resolution, "ok", False):
            continue
        if (flags.get(resolution.option or resolution.flag) or {}).get("dest") not in wanted:
            continue
        yield (
            (
                resolution.value
                if resolution.value is not None
                else (args[index + 1] if index + 1 < len(args) else None)
            ),
            index,
        )


def written_value(parsed: ParsedLaunch, dest: str | tuple[str, ...]) -> tuple[str | None, str]:
    """The value of a flag as written in the launch's arguments (the last one counts), and where."""
    given = [value for value, _ in given_flags(parsed, dest)]
    return (given[-1] if given else None), str(getattr(parsed, "where", "") or "")


def raw_int(parsed: ParsedLaunch, dest: str | tuple[str, ...], default: int) -> int:
    """An int flag topoctl has no logical setting for (--base-gpu-id, --gpu-id-step), read from the
    launch's arguments with the version's flag data; the last one given counts, as in argparse (one
    argparse refuses is already a blocking flag problem: the default stands for it)."""
    text, _ = written_value(parsed, dest)
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


_WHOLE_EXPANSION = ("$@", "$*", '"$@"')


# Variables a scheduler gives every process it starts: LeaderWorkerSet (LWS_LEADER_ADDRESS,
# LWS_WORKER_INDEX, LWS_GROUP_SIZE), Slurm (SLURM_NODEID, SLURM_NNODES...), SkyPilot
# (SKYPILOT_NODE_RANK, SKYPILOT_NODE_IPS), Open MPI / PMI ranks.
_SCHEDULER_VALUE = re.compile(r"\$.*?\b(LWS|SLURM|SKYPILOT|OMPI_COMM_WORLD|PMI|PMIX)_")


def _judged_env(name: str) -> bool:
    """Environment variables whose value check judges (NCCL, CUDA, SGLang, torch, the settings
    table); an unknown HF_TOKEN or a mount path is not worth a warning."""
    from topoctl.rules.sglang import spelling

    return (
        name.startswith(("NCCL_", "CUDA_", "SGLANG_", "TORCH_", "NVSHMEM_", "PYTORCH_"))
        or name in spelling.env_names()
    )


def _said_problems(
    parsed: ParsedLaunch, launch: Launch, flags: FlagSet, source: str, note: Callable[[str], None]
) -> None:
    """What the reader of a launch should know before its findings: parts of the file that were
    skipped, and a floating image tag with the version assumed for it and why."""
    from topoctl.deploy.sglang_launch import Problem

    for text in launch.notes:
        parsed.problems.append(
            Problem(
                "skipped" if text.startswith(("skipped", "not rendered")) else "note",
                "info",
                text,
                "",
                launch.where,
            )
        )
    why = floating_tag(launch.image)
    if why is not None:
        text = f"image {launch.image}: {why}; " + (
            f"{moving_image_tag(launch.image)}: judged as {flags.version}, the newest known; "
            "pin a release to be sure"
            if source.startswith(MOVING_SOURCE)
            else f"judged as SGLang {flags.version} ({source}), which may not be what it pulls"
        )
        parsed.problems.append(
            Problem(
                "floating-image-tag",
                "info",
                text,
                "pin the image to a release tag (lmsysorg/sglang:v0.5.21-cu129), or pass "
                "--sglang-version",
                launch.where,
            )
        )
        note(f"{launch.where or parsed.origin}: {text}")


def _drop_unresolved(
    prepared: Prepared, launch: Launch, parsed: ParsedLaunch, flags: FlagSet
) -> tuple[list[str], list[str], set[int]]:
    """Words that are a whole shell/Kubernetes expansion topoctl cannot resolve ($EXTRA_ARGS, "$@")
    are left out (a warning names them): what they hold is not known here."""
    from topoctl.deploy.sglang_launch import Problem

    whole = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\([A-Za-z_][A-Za-z0-9_]*\)|\$[@*]")
    args: list[str] = []
    wheres: list[str] = []
    config: set[int] = set()
    unknown_words = {u for u in launch.unresolved if u.startswith("$")}
    named: list[
        str
    ] = []  # each unknown as the reader should see it: "--tp-size from $1", "$EXTRA_ARGS"
    for index, word in enumerate(prepared.args):
        previous = flags.resolve(args[-1]) if args and args[-1].startswith("-") else None
        takes_value = (
            previous is not None
            and previous.ok
            and previous.value is None
            and bool((flags.get(previous.option or "") or {}).get("takes_value"))
        )
        if (
            word in _WHOLE_EXPANSION
            or whole.fullmatch(word)
            or (word.startswith("$") and word in unknown_words)
        ):
            if (
                not takes_value
            ):  # a value of the flag before it stays (its value is unknown, not checked)
                named.append(word)
                continue
        if "$" in word:
            named.append(f"{args[-1].split('=', 1)[0]} from {word}" if takes_value else word)
        if index in prepared.from_config:
            config.add(len(args))
        args.append(word)
        wheres.append(prepared.where_of[index] if index < len(prepared.where_of) else launch.where)
    named += [
        f"{name}={value}"
        for name, value in sorted(launch.env.items())
        if "$" in value and _judged_env(name) and any(u in value for u in launch.unresolved)
    ]
    scheduled = [item for item in dict.fromkeys(named) if _SCHEDULER_VALUE.search(item)]
    others = [item for item in dict.fromkeys(named) if item not in scheduled]
    if others:
        parsed.problems.append(
            Problem(
                "unresolved-expansion",
                "warn",
                f"{', '.join(others)}: not set in what topoctl reads, so not checked",
                "write the value in the file, or check the launch as it is run (topoctl check -- "
                "COMMAND)",
                launch.where,
            )
        )
    if (
        scheduled
    ):  # LeaderWorkerSet, Slurm and MPI set these on each node: a value per node, not a mistake
        parsed.problems.append(
            Problem(
                "scheduler-value",
                "info",
                f"{', '.join(scheduled)}: set on each node by the scheduler, not checked",
                "",
                launch.where,
            )
        )
    return args, wheres, config


def parse_launch(
    launch: Launch, versions: Versions, origin: str, note: Callable[[str], None]
) -> ParsedLaunch | str:
    """One launch found in a file (or given after `--`), read with the releases the resolve stage
    chose for it (`versions`: flags, why that version, the ai-dynamo table): a ParsedLaunch, or why
    the launch is not checked (a launcher that hands SGLang nothing topoctl can read)."""
    from topoctl.deploy import sglang_launch as launch_mod
    from topoctl.deploy.launcher_args import prepare

    flags = versions.flags
    parsed = launch_mod.ParsedLaunch(
        origin=origin,
        launcher=launch.launcher,
        image=launch.image,
        gpus=launch.gpus,
        where=launch.where,
        version_source=versions.source,
        nodes=launch.nodes,
    )
    _said_problems(parsed, launch, flags, versions.source, note)
    for name, value in sorted(launch.env.items()):
        launch_mod.apply_env(parsed, name, value, launch.env_where.get(name, ""))
    prepared = prepare(launch, flags, versions.dynamo)
    if prepared.not_checked:
        return str(prepared.not_checked)
    parsed.problems.extend(prepared.problems)
    args, wheres, from_config = _drop_unresolved(prepared, launch, parsed, flags)
    launch_mod.parse_args(
        args, flags, parsed, where=launch.where, where_of=wheres, from_config=from_config
    )
    if launch.where:
        parsed.lines["SGLANG_ARGS"] = launch.where
    return parsed


def parse_env_file(path: str, flags_for: FlagsFor) -> ParsedLaunch:
    """A launch.env (topoctl recommend's output), read with the flag data `flags_for` picks from its
    metadata."""
    from topoctl.deploy import sglang_launch as launch_mod

    parsed = launch_mod.parse_env_file(path, flags_for)
    parsed.launcher = "launch.env"
    return parsed
