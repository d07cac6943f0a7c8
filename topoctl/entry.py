"""The console script's door: `topoctl --version` answers without importing click or any command (it
is what scripts and CI logs call most often), everything else goes to topoctl.cli.app.

Layer: commands and CLI (docs/architecture.md, "Layers")."""

from __future__ import annotations

import sys

from topoctl.core.errors import caused_by_ctrl_c
from topoctl.core.version import version_text


def _say(text: str) -> None:
    """One line to stderr, dropped when stderr cannot take it (the exit code still says what
    happened)."""
    try:
        if sys.stderr is not None:
            sys.stderr.write(text)
            sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _print_version() -> int:
    """`topoctl --version` on stdout: 74 (EX_IOERR) with one line when stdout is closed or cannot be
    written."""
    hint = "  hint: give topoctl a writable stdout\n"
    if sys.stdout is None:  # started with stdout closed (`topoctl --version >&-`)
        _say("topoctl: error: cannot write the output: stdout is closed\n" + hint)
        return 74
    try:
        sys.stdout.write(version_text())
        sys.stdout.flush()
    except BrokenPipeError:
        return 0
    except (OSError, ValueError) as exc:
        _say(
            "topoctl: error: cannot write the output to stdout: "
            f"{getattr(exc, 'strerror', None) or exc}\n" + hint
        )
        return 74
    return 0


def settle_streams(code: int) -> int:
    """Flush stdout and stderr and close them, inside topoctl, before the interpreter's exit would.

    Python flushes both once more at exit and turns a failure there into exit 120, whatever the
    command returned; closing them here leaves it nothing to flush. A stdout that fails now (a full
    disk, a read-only or closed descriptor) makes a successful run 74; stderr that fails is dropped
    (the code stays what it was).
    """
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name, None)
        if stream is None:
            continue
        try:
            stream.flush()
        except BrokenPipeError:
            pass
        except (OSError, ValueError) as exc:
            if name == "stdout" and code == 0:
                _say(
                    "topoctl: error: cannot write the output to stdout: "
                    f"{getattr(exc, 'strerror', None) or exc}\n"
                )
                code = 74
        try:
            stream.close()
        except (OSError, ValueError):
            pass
    return code


def _dispatch(args: list[str], argv: list[str] | None) -> int:
    from topoctl.core.io import Interrupted

    try:
        if list(args) == ["--version"]:
            return _print_version()
        from topoctl.cli.app import main as cli_main

        return cli_main(argv)
    except (
        Interrupted
    ) as stop:  # SIGTERM/SIGHUP during -o, under a handler that did not end the process
        return 128 + stop.signum


def main(argv: list[str] | None = None) -> int:
    """The console script (`topoctl`, `python -m topoctl`): with no `argv`, stdout and stderr are
    settled here and the exit code is final; with `argv` (tests, embedding), the streams are left
    open."""
    args = sys.argv[1:] if argv is None else argv
    try:
        code = _dispatch(args, argv)
    except KeyboardInterrupt:  # Ctrl-C while the command's modules were still being imported
        _say("topoctl: interrupted\n")
        code = 130
    except Exception as error:  # the same Ctrl-C, wrapped by Python while a class was being created
        if not caused_by_ctrl_c(error):
            raise
        _say("topoctl: interrupted\n")
        code = 130
    return settle_streams(code) if argv is None else code
