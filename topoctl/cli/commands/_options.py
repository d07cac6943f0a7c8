"""Options several subcommands share, spelt and explained once: the target machine (--topology,
--system, --fallback-system), the rules (--rules, --disable) with how they are loaded, and
--sglang-version.

Only click is imported here; everything else is imported where a value is used, so `topoctl --help`
and `topoctl rules list` stay fast.

Layer: commands and CLI (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import click

from topoctl.core.errors import TopoctlError
from topoctl.snapshot.view import SnapshotLike, view_of

if TYPE_CHECKING:
    from topoctl.rules.sglang.flags import FlagSet

_Decorated = Callable[..., Any]


class LaunchCommand(click.Command):
    """A command that takes a launch after `--` (check, preflight): those words are kept apart from
    the file arguments, in ctx.meta["topoctl_launch_command"]."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            cut = args.index("--")
            ctx.meta["topoctl_launch_command"] = args[cut + 1 :]
            args = args[:cut]
        return super().parse_args(ctx, args)


# ------------------------------------------------------------------------------------------------
# target


def target_options(function: _Decorated) -> _Decorated:
    """`--topology FILE`, `--system NAME` and `--fallback-system NAME`: the machine a command works
    on (topoctl.cli.target_machine.resolve_target); without --topology and --system, this machine is
    probed."""
    from topoctl.cli.commands.completion import complete_systems

    function = click.option(
        "--fallback-system",
        metavar="NAME",
        shell_complete=complete_systems,
        help="When neither --topology nor --system is given and this machine shows no GPU, use "
        "this built-in system instead of failing with exit 3 (announced on stderr).",
    )(function)
    function = click.option(
        "--system",
        metavar="NAME",
        shell_complete=complete_systems,
        help="A built-in reference system as the target (`topoctl recommend --list-systems`).",
    )(function)
    return click.option(
        "--topology",
        metavar="FILE",
        help="Snapshot of the target machine, written by `topoctl probe` (JSON or YAML).",
    )(function)


# -------------------------------------------------------------------------------------------------
# rules


def rules_options(function: _Decorated | None = None, *, disable: bool = True) -> Any:
    """`--rules DIR` (repeatable) and, unless disable=False, `--disable ID=REASON` (repeatable); the
    command receives `rules_dirs` and `disabled` and loads them with load_rules_for()."""

    def decorate(function: _Decorated) -> _Decorated:
        if disable:
            function = click.option(
                "--disable",
                "disabled",
                multiple=True,
                metavar="ID=REASON",
                help="Switch a rule off by id, with a written reason shown in every report "
                "(repeatable).",
            )(function)
        return click.option(
            "--rules",
            "rules_dirs",
            multiple=True,
            metavar="DIR",
            help="A folder (or file) of site rule files to add (repeatable).",
        )(function)

    return decorate(function) if function is not None else decorate


def parse_disable(items: tuple[str, ...] | list[str]) -> dict[str, str]:
    """`ID=REASON` pairs -> {id: reason}; a missing reason is an error (it is shown in every
    report)."""
    disabled: dict[str, str] = {}
    for item in items:
        rule_id, separator, reason = item.partition("=")
        if not separator or not rule_id.strip() or not reason.strip():
            raise TopoctlError(
                f"--disable {item!r}: write ID=REASON",
                hint="the reason is shown in every report, "
                "e.g. --disable nccl-ll128-without-nvlink='validated on our fabric'",
            )
        disabled[rule_id.strip()] = reason.strip()
    return disabled


def unique_rule_paths(paths: tuple[str, ...] | list[str]) -> list[str]:
    """--rules paths with each rule file once: the same folder or file given twice (or under another
    spelling, a symlink, or a file inside a folder also given) is read once, so it never reports
    duplicate ids against itself."""
    from topoctl.rules.engine.loader import rule_files

    seen: set[str] = set()
    out: list[str] = []
    for path in paths:
        files = rule_files(path)  # a missing path fails here as it would in the loader
        real = _real_paths(files)
        fresh = [name for name, where in zip(files, real, strict=True) if where not in seen]
        seen.update(real)
        if len(fresh) == len(files):
            out.append(path)
        else:
            out.extend(fresh)
    return out


def load_rules_for(
    rules_dirs: tuple[str, ...] | list[str],
    disabled: tuple[str, ...] | list[str] = (),
    builtin: bool = True,
    with_tests: bool = False,
) -> Any:
    """Built-in rules (unless builtin=False) plus `--rules DIR` folders, less `--disable ID=REASON`:
    a missing reason is a usage error (exit 2), because every report shows it. Site rules come
    without their test cases unless `with_tests` (the `rules` commands show and run them; judging a
    launch does not use them)."""
    from topoctl.rules.engine import load_rules
    from topoctl.rules.engine.loader import NoSiteRulesError

    try:
        ruleset = load_rules(
            extra_dirs=unique_rule_paths(rules_dirs),
            disabled=parse_disable(disabled),
            builtin=builtin,
            with_tests=with_tests,
        )
    except NoSiteRulesError as error:  # each empty file is named, then the error (exit 2)
        for warning in error.warnings:
            click.echo(f"topoctl: warning: {warning}", err=True)
        raise
    for (
        warning
    ) in ruleset.warnings:  # a site file that holds no rules: said, never silently dropped
        click.echo(f"topoctl: warning: {warning}", err=True)
    return ruleset


def _real_paths(files: list[str]) -> list[str]:
    """os.path.realpath of each file, its folder resolved once: a name that is not a symbolic link
    is its folder's real path joined with it (realpath walks every component of every name: 2,000
    calls for a folder of 1,000 files cost more than reading them)."""
    import os

    folders: dict[str, str] = {}
    out = []
    for name in files:
        if os.path.islink(name):
            out.append(os.path.realpath(name))
            continue
        folder, base = os.path.split(name)
        if folder not in folders:
            folders[folder] = os.path.realpath(folder)
        out.append(os.path.join(folders[folder], base))
    return out


# ------------------------------------------------------------------------------------------ option
# values


def require_value(option: str, value: str | None, hint: str) -> None:
    """An option given as '' is a usage error, never a silent default."""
    if value is not None and not value.strip():
        raise TopoctlError(f"{option} is empty", hint=hint)


def requested_version(requested: str | None) -> str | None:
    """--sglang-version normalised once (`v0.5.12`, ` 0.5.12 `, `0.5.12+cu129` -> 0.5.12); None when
    not given. Called before the target is resolved, so a bad version fails before a probe."""
    if requested is None:
        return None
    from topoctl.rules.sglang.flags import normalise_version

    if not requested.strip():
        raise TopoctlError(
            "--sglang-version is empty",
            hint="give a version such as 0.5.23, or leave the option out",
        )
    return normalise_version(requested)


def target_version(snapshot: SnapshotLike, requested: str | None) -> str | None:
    """The SGLang version to use: `requested` (already normalised by requested_version), else the
    one installed on the target, normalised, else None (the newest with flag data)."""
    if requested is not None:
        return requested
    from topoctl.rules.sglang.flags import normalise_version

    installed = view_of(snapshot).software("sglang")
    if installed is None or not str(installed).strip():
        return None
    try:
        return normalise_version(str(installed))
    except TopoctlError as error:
        raise TopoctlError(
            f"the target's installed SGLang: {error.message}",
            hint="pass --sglang-version X.Y.Z, or probe the machine again",
        ) from None


def flag_set_for(version: str | None) -> FlagSet:
    """SGLang's flags for `version` (normalised), or for the newest version with flag data when
    None."""
    from topoctl.rules.sglang.flags import load_flag_set, newest_version

    if version is None:
        version = (
            newest_version() or ""
        )  # the newest release (an empty data folder: load_flag_set says so)
    try:
        flags = load_flag_set(version)
    except TopoctlError:
        raise
    except Exception as exc:  # noqa: BLE001 - an odd version string from a snapshot
        raise TopoctlError(
            f"cannot read SGLang version {version!r}: {exc}", hint="pass --sglang-version X.Y.Z"
        ) from None
    warn_inexact(flags)
    return flags


def warn_inexact(flags: FlagSet) -> None:
    """Flags judged with another version's data: one line on stderr (once per version and run),
    besides the note in the output's header."""
    warning = getattr(flags, "warning", None)
    if not warning:
        return
    ctx = click.get_current_context(silent=True)
    said = (
        ctx.find_root().meta.setdefault("topoctl_version_warnings", set())
        if ctx is not None
        else set()
    )
    if warning in said:
        return
    said.add(warning)
    click.echo(f"topoctl: warning: {warning}", err=True)
