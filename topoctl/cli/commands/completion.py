"""`topoctl completion bash|zsh|fish`: the shell completion script, and what it completes.

click's own shell completion does the work (a well-kept library: it knows each shell's protocol and
every command's options and choices); this module prints its script for the shell asked for, and
adds what click cannot know: the built-in system names (--system, --fallback-system), the captures
(--from-capture), the model profiles (--model) and the rule ids (rules explain). The names are read
from the package's own data folders, so completing them imports neither torch nor NVML.

Layer: commands and CLI (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

SHELLS = ("bash", "zsh", "fish")
COMPLETE_VAR = "_TOPOCTL_COMPLETE"


def _items(names: list[str], incomplete: str) -> list[CompletionItem]:
    from click.shell_completion import CompletionItem

    return [CompletionItem(name) for name in names if name.startswith(incomplete)]


def complete_systems(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    from topoctl.snapshot.catalogue import list_systems

    return _items(list_systems(), incomplete)


def complete_captures(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """The built-in captures by name, then files (a recorded capture.json)."""
    from click.shell_completion import CompletionItem

    from topoctl.snapshot.catalogue import list_captures

    return [*_items(list_captures(), incomplete), CompletionItem(incomplete, type="file")]


def complete_models(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    from topoctl.autoconf.models import builtin_models

    return _items(sorted(builtin_models()), incomplete)


def complete_rule_ids(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    from topoctl.rules.engine import load_rules

    return _items(sorted(rule.id for rule in load_rules().rules), incomplete)


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
def command(shell: str) -> int:
    """Print the shell completion script for bash, zsh or fish: commands, options, choices, and the
    names of the built-in systems, captures, models and rules.

    \b
    Examples:
      topoctl completion bash
      topoctl completion zsh
      topoctl completion fish

    Load it with `eval "$(topoctl completion bash)"` in ~/.bashrc (zsh alike, in ~/.zshrc); for
    fish, write it to ~/.config/fish/completions/topoctl.fish.
    """
    from click.shell_completion import get_completion_class

    from topoctl.cli.app import cli

    completion = get_completion_class(shell)
    assert completion is not None  # click ships all three
    click.echo(completion(cli, {}, "topoctl", COMPLETE_VAR).source(), nl=False)
    return 0
