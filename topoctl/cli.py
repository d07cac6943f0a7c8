"""The `topoctl` command line: a click group whose subcommands load lazily.

Each subcommand lives in its own module under topoctl/commands/ and is imported only when it runs, so
`topoctl check` never pays for the probe's imports (NVML, torch) and CI runners without them work.
`main(argv) -> int` is the door tests and the console script use; it turns every expected failure into
a one-line message, a hint and an exit code (see topoctl/errors.py).
"""
from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from topoctl import __version__
from topoctl.errors import EXIT_USAGE, TopoctlError

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "probe": ("topoctl.commands.probe", "What is this machine? GPUs, every pair's P2P and link, PCIe tree, versions."),
    "show": ("topoctl.commands.show", "An nvidia-smi-like matrix of links and P2P, for people."),
    "recommend": ("topoctl.commands.recommend", "The fastest launch known to work here (> launch.env)."),
    "check": ("topoctl.commands.check", "Is this launch safe on that machine? Exit code for CI."),
    "rules": ("topoctl.commands.rules", "List, explain, test and publish the schema of the knowledge rules."),
}


class LazyGroup(click.Group):
    """A group that imports a subcommand's module only when that subcommand is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = SUBCOMMANDS.get(cmd_name)
        if entry is None:
            return None
        module = importlib.import_module(entry[0])
        return module.command

    def invoke(self, ctx: click.Context) -> Any:
        # Expected failures become a message and an exit code here, so click's own runner (CliRunner, and
        # anyone embedding `cli`) sees the same exit codes as the console script.
        try:
            return super().invoke(ctx)
        except TopoctlError as error:
            ctx.exit(_report(error))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Listing help must not import every subcommand: use the short texts above.
        rows = [(name, SUBCOMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="topoctl")
def cli() -> None:
    """Probe a multi-GPU machine, recommend the fastest SGLang launch known to work on it, and block
    known-broken launches before they reach the GPUs.

    \b
    Typical use:
      topoctl probe -o machine.yaml              # what is this machine?
      topoctl show --topology machine.yaml       # the link/P2P matrix
      topoctl recommend --model kimi-k2.5 > launch.env
      topoctl check launch.env --topology machine.yaml   # in CI: exit 1 on a blocking finding

    Without a GPU, use a built-in reference system: --system rtx-pro-6000-8x-pcie
    (topoctl recommend --list-systems shows them).
    """


def _report(error: TopoctlError) -> int:
    click.echo(f"topoctl: error: {error.message}", err=True)
    if error.hint:
        click.echo(f"  hint: {error.hint}", err=True)
    return error.exit_code


def main(argv: list[str] | None = None) -> int:
    """Run the CLI with `argv` (default: sys.argv[1:]) and return the exit code instead of exiting."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result: Any = cli.main(args=args, prog_name="topoctl", standalone_mode=False)
    except TopoctlError as error:
        return _report(error)
    except click.exceptions.Abort:
        click.echo("topoctl: aborted", err=True)
        return 130
    except click.ClickException as error:
        error.show()
        return EXIT_USAGE if error.exit_code in (1, 2) else error.exit_code
    except click.exceptions.Exit as stop:
        return stop.exit_code
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        click.echo("topoctl: interrupted", err=True)
        return 130
    return result if isinstance(result, int) else 0
