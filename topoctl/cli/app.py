"""The `topoctl` command line: a click group whose subcommands load lazily.

Each subcommand lives in its own module under topoctl/cli/commands/ and is imported only when it
runs, so `topoctl check` never pays for the probe's imports (NVML, torch) and CI runners without
them work. `main(argv) -> int` is the door tests and the console script use; it turns every expected
failure into a one-line message, a hint and an exit code (see topoctl/core/errors.py).

Layer: commands and CLI (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, Callable, Iterable, TextIO

import click

from topoctl.core.errors import (
    EXIT_INTERNAL,
    EXIT_PIPE,
    EXIT_USAGE,
    OutputError,
    TopoctlError,
    caused_by_ctrl_c,
    one_line,
)

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "probe": (
        "topoctl.cli.commands.probe",
        "What is this machine? GPUs, every pair's P2P and link, PCIe tree, versions.",
    ),
    "bench": (
        "topoctl.cli.commands.bench",
        "How fast is it really, does P2P really work? Measurements into the snapshot.",
    ),
    "show": (
        "topoctl.cli.commands.show",
        "An nvidia-smi-like matrix of links and P2P, for people.",
    ),
    "recommend": (
        "topoctl.cli.commands.recommend",
        "The fastest launch known to work here (> launch.env).",
    ),
    "check": (
        "topoctl.cli.commands.check",
        "Is this launch safe on that machine? Exit code for CI.",
    ),
    "preflight": (
        "topoctl.cli.commands.preflight",
        "Prove one launch on its box: its allreduce and kernels, under a watchdog.",
    ),
    "rules": (
        "topoctl.cli.commands.rules",
        "List, explain, test and publish the schema of the knowledge rules.",
    ),
    "completion": (
        "topoctl.cli.commands.completion",
        "Shell completion for bash, zsh or fish (system and model names too).",
    ),
    "report": (
        "topoctl.cli.commands.report",
        "One self-contained HTML page: picture, matrix, measurements, launch, check.",
    ),
    "plot": (
        "topoctl.cli.commands.plot",
        "Measurements as pictures: P2P bandwidth heatmap, allreduce latency by size.",
    ),
    "export": (
        "topoctl.cli.commands.export",
        "The machine as node-feature-discovery labels (export nfd).",
    ),
    "fleet": (
        "topoctl.cli.commands.fleet",
        "Which nodes of a fleet differ from the majority, and how (one snapshot each).",
    ),
}


_HYPHEN = "\ue000"  # stands in for "-" while help text is wrapped, so names never break at a hyphen


class HelpFormatter(click.HelpFormatter):
    """click's formatter, except that `--list-systems` or `rtx-pro-6000-8x-pcie` never break at a
    hyphen."""

    def _unbroken(self, write: Callable[..., None], *args: object, **kwargs: object) -> None:
        start = len(self.buffer)
        write(*args, **kwargs)
        self.buffer[start:] = [text.replace(_HYPHEN, "-") for text in self.buffer[start:]]

    def write_text(self, text: str) -> None:
        self._unbroken(super().write_text, text.replace("-", _HYPHEN))

    def write_dl(self, rows: Iterable[tuple[str, str]], *args: int, **kwargs: int) -> None:
        rows = [(term.replace("-", _HYPHEN), text.replace("-", _HYPHEN)) for term, text in rows]
        self._unbroken(super().write_dl, rows, *args, **kwargs)


class Context(click.Context):
    formatter_class = HelpFormatter


def _adopt(command: click.Command) -> click.Command:
    """Give a subcommand (and a sub-group's commands) topoctl's help formatting."""
    command.context_class = Context
    for sub in getattr(command, "commands", {}).values():
        _adopt(sub)
    return command


class LazyGroup(click.Group):
    """A group that imports a subcommand's module only when that subcommand is used."""

    context_class = Context

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = SUBCOMMANDS.get(cmd_name)
        if entry is None:
            return None
        module = importlib.import_module(entry[0])
        return _adopt(module.command)

    def invoke(self, ctx: click.Context) -> Any:
        # Expected failures become a message and an exit code here, so click's own runner
        # (CliRunner, and anyone embedding `cli`) sees the same exit codes as the console script.
        try:
            return super().invoke(ctx)
        except TopoctlError as error:
            ctx.exit(_report(error))
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except BrokenPipeError:
            # The reader went away (`| head -1`): stop quietly. click would say exit 1, which CI
            # reads as "blocking finding"; 141 is what a shell reports for a process ended by
            # SIGPIPE.
            _pacify_output()
            ctx.exit(EXIT_PIPE)
        except Exception as error:  # a bug: one line and an exit code, not a traceback
            if _debug():
                raise
            ctx.exit(_report_internal(error))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Listing help must not import every subcommand: use the short texts above.
        rows = [(name, SUBCOMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=lambda ctx, _p, value: _version(ctx, value),
    help="Show topoctl's version and the SGLang releases it has flag data for, and exit.",
)
def cli() -> None:
    """Probe a multi-GPU machine, recommend the fastest SGLang launch known to work on it, and block
    known-broken launches before they reach the GPUs.

    \b
    Typical use:
      topoctl probe -o machine.yaml              # what is this machine?
      topoctl show --topology machine.yaml       # the link/P2P matrix
      topoctl recommend --model kimi-k2.5 > launch.env
      topoctl check launch.env --topology machine.yaml   # in CI: exit 1 on a blocking finding

    \b
    Without a GPU, use a built-in reference system:
      topoctl recommend --system rtx-pro-6000-8x-pcie
      topoctl recommend --list-systems           # the built-in systems
    """


def _version(ctx: click.Context, value: bool) -> None:
    """`topoctl --version`: topoctl's own version and the SGLang releases it knows, the newest
    named."""
    if not value or ctx.resilient_parsing:
        return
    from topoctl.core.version import version_text

    click.echo(version_text(), nl=False)
    ctx.exit()


def _report(error: TopoctlError) -> int:
    click.echo(f"topoctl: error: {one_line(error.message)}", err=True)
    if error.hint:
        click.echo(f"  hint: {one_line(error.hint)}", err=True)
    return error.exit_code


def _debug() -> bool:
    return os.environ.get("TOPOCTL_DEBUG", "") not in ("", "0")


def _report_internal(error: BaseException) -> int:
    click.echo(
        f"topoctl: internal error: {one_line(type(error).__name__)}: {one_line(error)}", err=True
    )
    click.echo(
        "  hint: this is a bug in topoctl; rerun with TOPOCTL_DEBUG=1 to see the traceback, and "
        "report it with that output",
        err=True,
    )
    return EXIT_INTERNAL


_STDOUT_HINT = "free space or give topoctl a writable stdout, or write to a file with -o FILE"


class _Guarded:
    """stdout or stderr as the CLI writes them, so that no state of the channel ends in a traceback.

    stdout (strict): a closed stream, a full disk or an I/O error raises OutputError (exit 74,
    EX_IOERR), a closed pipe stays a BrokenPipeError (141); stderr (lenient): a message that cannot
    be written is dropped and the exit code stays the one the message was about. Text the stream's
    encoding cannot hold (LANG=C, PYTHONIOENCODING=ascii or latin-1) is written with backslash
    escapes instead of failing.
    """

    def __init__(self, wrapped: Any, name: str, strict: bool, binary: bool = False) -> None:
        self.wrapped, self.name, self.strict, self.binary = wrapped, name, strict, binary

    def _failed(self, exc: BaseException | None) -> None:
        if not self.strict:
            return
        if exc is None:
            raise OutputError(f"cannot write the output: {self.name} is closed", hint=_STDOUT_HINT)
        why = getattr(exc, "strerror", None) or str(exc)
        raise OutputError(
            f"cannot write the output to {self.name}: {why}", hint=_STDOUT_HINT
        ) from None

    def write(self, data: Any) -> int:
        if self.wrapped is None:
            self._failed(None)
            return len(data)
        try:
            written: int = self.wrapped.write(data)
            return written
        except UnicodeEncodeError:
            encoding = getattr(self.wrapped, "encoding", None) or "ascii"
            escaped: int = self.wrapped.write(
                data.encode(encoding, "backslashreplace").decode(encoding)
            )
            return escaped
        except BrokenPipeError:
            if not self.strict:
                return len(data)
            raise
        except (OSError, ValueError) as exc:
            if isinstance(exc, ValueError) and "closed file" not in str(exc):
                raise
            self._failed(exc)
            return len(data)

    def flush(self) -> None:
        if self.wrapped is None:
            return
        try:
            self.wrapped.flush()
        except BrokenPipeError:
            if self.strict:
                raise
        except (OSError, ValueError) as exc:
            self._failed(exc)

    @property
    def buffer(self) -> Any:
        inner = getattr(self.wrapped, "buffer", None)
        if inner is None:
            raise AttributeError("buffer")
        return _Guarded(inner, self.name, self.strict, binary=True)

    def isatty(self) -> bool:
        try:
            return bool(self.wrapped is not None and self.wrapped.isatty())
        except (OSError, ValueError):
            return False

    def __getattr__(self, name: str) -> Any:
        if self.wrapped is None:
            raise AttributeError(name)
        return getattr(self.wrapped, name)


def _guard_streams() -> tuple[TextIO, TextIO]:
    """Install the guards for one run of main(); returns what to put back."""
    saved = (sys.stdout, sys.stderr)
    if not isinstance(sys.stdout, _Guarded):
        sys.stdout = _Guarded(sys.stdout, "stdout", strict=True)  # type: ignore[assignment]
    if not isinstance(sys.stderr, _Guarded):
        sys.stderr = _Guarded(sys.stderr, "stderr", strict=False)  # type: ignore[assignment]
    return saved


class _QuietFlush:
    """A stream whose flush ignores a closed pipe (Python flushes stdout once more at exit)."""

    def __init__(self, wrapped: TextIO) -> None:
        self.wrapped = wrapped

    def flush(self) -> None:
        try:
            self.wrapped.flush()
        except OSError:
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)


def _pacify_output() -> None:
    """After a closed pipe, let Python's exit-time flush of stdout fail silently."""
    sys.stdout = _QuietFlush(sys.stdout)  # type: ignore[assignment]


def _click_error(error: click.ClickException, args: list[str]) -> TopoctlError:
    """click's own usage errors (typo in a command, bad choice, missing value) in topoctl's error
    format."""
    ctx = getattr(error, "ctx", None)
    if ctx is not None:
        path = ctx.command_path
    else:  # click's parser gives no context for some errors (an option without its value)
        named = [arg for arg in args if arg in SUBCOMMANDS][:1]
        path = " ".join(["topoctl", *named])
    name = getattr(error, "command_name", None)
    if (
        name is None
        and isinstance(error, click.UsageError)
        and error.message.startswith("No such command ")
    ):
        name = error.message[len("No such command ") :].rstrip(".").strip("'\"")
    if name is not None:
        import difflib

        group = ctx.command if ctx is not None else cli
        known = (
            group.list_commands(ctx)
            if ctx is not None and isinstance(group, click.Group)
            else sorted(SUBCOMMANDS)
        )
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"did you mean {close[0]}?" if close else f"see {path} --help"
        return TopoctlError(f"no such command {name!r}", hint=hint)
    code = EXIT_USAGE if error.exit_code in (1, 2) else error.exit_code
    return TopoctlError(error.format_message(), hint=f"see {path} --help", exit_code=code)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI with `argv` (default: sys.argv[1:]) and return the exit code instead of exiting.

    Called without `argv` (the console script, `python -m topoctl`), a closed output pipe ends the
    process the way it ends other Unix tools (SIGPIPE; 141 in the shell), never as exit 1 ("blocking
    finding").
    """
    if argv is None:
        _default_sigpipe()
    saved = _guard_streams()
    try:
        code = _main(list(sys.argv[1:] if argv is None else argv))
        if code != EXIT_PIPE:
            try:
                # what is still buffered fails here, not in the interpreter's exit
                sys.stdout.flush()
            except OutputError as error:
                code = _report(error)
            except BrokenPipeError:
                _pacify_output()
                code = EXIT_PIPE
        return code
    finally:
        guarded_out = sys.stdout
        sys.stdout, sys.stderr = saved
        if isinstance(guarded_out, _QuietFlush):  # a closed pipe: keep the exit-time flush quiet
            _pacify_output()


def _main(args: list[str]) -> int:
    try:
        result: object = cli.main(args=args, prog_name="topoctl", standalone_mode=False)
    except TopoctlError as error:
        return _report(error)
    except click.exceptions.Abort:
        click.echo("topoctl: aborted", err=True)
        return 130
    except click.ClickException as error:
        if (
            type(error).__name__ == "NoArgsIsHelpError"
        ):  # `topoctl` or `topoctl rules` alone: the help
            error.show()
            return EXIT_USAGE
        return _report(_click_error(error, args))
    except click.exceptions.Exit as stop:
        return stop.exit_code
    except BrokenPipeError:
        _pacify_output()
        return EXIT_PIPE
    except KeyboardInterrupt:
        click.echo("topoctl: interrupted", err=True)
        return 130
    except Exception as error:  # a bug: one line and exit 70 (EX_SOFTWARE), not a traceback
        return _unexpected(error)
    return result if isinstance(result, int) else 0


def _unexpected(error: Exception) -> int:
    """An exception no command expected: a Ctrl-C that Python wrapped (130), else a bug (70; raised
    again under TOPOCTL_DEBUG so that its traceback shows)."""
    if caused_by_ctrl_c(error):
        click.echo("topoctl: interrupted", err=True)
        return 130
    if _debug():
        raise error
    return _report_internal(error)


def _default_sigpipe() -> None:
    import signal

    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
