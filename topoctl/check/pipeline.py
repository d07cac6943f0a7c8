"""check's pipeline, stage after stage (topoctl/check/__init__.py): the files and folders (or the
command after `--`) -> the launches found in them (sources) -> the releases that read each one
(resolve) -> each read as that release reads it (parse) -> judged on the target (judge, with its
nodes and GPU group from resolve) -> Outcomes for the report stage, in file order. A launch that
cannot be read becomes an Outcome saying why, so that a folder run reports every file.

Layer: judge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from topoctl.check.judge import judge
from topoctl.check.outcome import Outcome
from topoctl.check.parse import parse_env_file, parse_launch
from topoctl.check.resolve import VersionChooser
from topoctl.core.errors import TopoctlError
from topoctl.deploy import registry
from topoctl.deploy.sglang_launch import ParsedLaunch
from topoctl.snapshot.view import SnapshotLike

if TYPE_CHECKING:
    from topoctl.deploy.launchers import Launch
    from topoctl.rules.engine.model import RuleSet

Entry = (
    ParsedLaunch | Outcome
)  # a launch to judge, or an Outcome already decided (no launch, not checked)


def read_command(tokens: list[str]) -> Launch:
    """The launch given after `--`: one usage error (exit 2) when it is not an SGLang launch."""
    from topoctl.core.safe_read import check_tokens
    from topoctl.deploy import launchers

    check_tokens(list(tokens), "the command after --")
    try:
        launch = launchers.read_command(list(tokens))
    except launchers.Unsupported as error:
        raise TopoctlError(error.message, hint=error.hint) from None
    if not launch.args:
        raise TopoctlError(
            "the command after `--` has no SGLang flags",
            hint="e.g. -- python -m sglang.launch_server --model-path M --tp 8",
        )
    return launch


def find(paths: list[str]) -> list[tuple[str, bool, str, list[Any]]]:
    """The sources stage: (path, found in a folder, kind of file, what was found in it) for each
    file."""
    return [
        (path, in_folder, *registry.read_file(path, found_in_folder=in_folder))
        for path, in_folder in registry.expand_paths(list(paths))
    ]


def read(
    found_files: list[tuple[str, bool, str, list[Any]]],
    chooser: VersionChooser,
    command_launch: Launch | None = None,
) -> list[Entry]:
    """The resolve (versions) and parse stages for every launch found, in file order, then the
    command's."""
    entries: list[Entry] = []
    for path, in_folder, kind, founds in found_files:
        for found in founds:
            entries.append(_entry(chooser, path, kind, found, in_folder))
    if command_launch is not None:
        entry = parse_launch(
            command_launch, chooser.versions(command_launch, "<command>"), "<command>", chooser.note
        )
        if isinstance(entry, str):
            raise TopoctlError(entry, hint="topoctl checks SGLang's language-model server launches")
        entries.append(entry)
    return entries


def judge_all(
    entries: list[Entry],
    snapshot: SnapshotLike,
    ruleset: RuleSet,
    gpu_count: int,
    model: dict[str, Any] | None,
    expected: SnapshotLike,
) -> list[Outcome]:
    """The judge stage for every launch read; an entry already decided passes through."""
    return [_judged(entry, snapshot, ruleset, gpu_count, model, expected) for entry in entries]


def parsed_launches(paths: list[str], chooser: VersionChooser) -> list[ParsedLaunch]:
    """Every launch of the files as check reads them, before judging (the launch corpus's oracle
    reads these)."""
    return [entry for entry in read(find(paths), chooser) if isinstance(entry, ParsedLaunch)]


def _entry(chooser: VersionChooser, path: str, kind: str, found: Any, in_folder: bool) -> Entry:
    """What one found launch becomes before judging: a ParsedLaunch, or an Outcome (no launch, not
    checked). A file named on the command line that cannot be checked stops the run at once (exit
    2); in a folder run it is reported with the others, and the run ends with exit 2."""
    if kind == "unreadable" or found.kind == "unreadable":
        return Outcome(_label(found), error=found.none_reason)
    try:
        if kind == "launch.env":
            return parse_env_file(path, chooser.env_file_flags(path))
        if found.launch is not None:
            label = _label(found)
            entry = parse_launch(
                found.launch, chooser.versions(found.launch, label), label, chooser.note
            )
            return Outcome(label, skipped=entry) if isinstance(entry, str) else entry
    except (
        TopoctlError
    ) as error:  # one launch that cannot be read (a version without data) stops no other
        if not in_folder:
            raise
        return Outcome(
            _label(found), error=error.message + (f" ({error.hint})" if error.hint else "")
        )
    return Outcome(_label(found), skipped=found.none_reason)


def _judged(
    entry: Entry,
    snapshot: SnapshotLike,
    ruleset: RuleSet,
    gpu_count: int,
    model: dict[str, Any] | None,
    expected: SnapshotLike,
) -> Outcome:
    if isinstance(entry, Outcome):
        return entry
    if entry.flags is None:  # parse_args names the flag data on every launch it reads
        return Outcome(entry.origin, error="no SGLang flag data read this launch")
    try:
        return judge(entry, snapshot, entry.flags, ruleset, gpu_count, model=model, expect=expected)
    except TopoctlError as error:
        return Outcome(entry.origin, error=error.message)


def _label(found: Any) -> str:
    """`file:line (what)`: the origin a report shows for a launch found in a file."""
    return f"{found.path}:{found.line}" + (f" ({found.label})" if found.label else "")
