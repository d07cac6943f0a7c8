"""Expected failures: each carries a one-line message, a hint and the exit code the CLI returns.

Anything raised as a TopoctlError is shown to the user as `topoctl: error: ...` plus a hint, never
as a traceback. Exit codes are part of the interface CI scripts rely on (see docs/architecture.md).

Layer: core types and data (docs/architecture.md, "Layers").
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_BLOCKED = 1
EXIT_USAGE = 2
EXIT_NO_GPU = 3
EXIT_INTERNAL = 70  # EX_SOFTWARE (sysexits.h): a bug in topoctl; the message says how to report it
# EX_IOERR (sysexits.h): the output could not be written (stdout closed, disk full, I/O error)
EXIT_OUTPUT = 74
EXIT_PIPE = (
    141  # 128 + SIGPIPE: the reader of stdout went away (`| head -1`), as a shell reports it
)


class TopoctlError(Exception):
    """A failure the user can fix: bad input, unreadable file, missing system."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, hint: str | None = None, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code


class OutputError(TopoctlError):
    """stdout, or an -o file, could not be written: closed, full, an I/O error. Never 1 ("blocking
    finding")."""

    exit_code = EXIT_OUTPUT


class NoGpuError(TopoctlError):
    """The probe could not see any GPU (no driver, no NVML, no device)."""

    exit_code = EXIT_NO_GPU


def caused_by_ctrl_c(error: BaseException) -> bool:
    """Whether `error` carries a Ctrl-C: Python 3.11 wraps an exception raised in a descriptor's
    `__set_name__` in a RuntimeError ("Error calling __set_name__ on 'Field' instance ..."), so a
    SIGINT that lands while a module's dataclass is being created reaches the CLI as that
    RuntimeError, with the KeyboardInterrupt as its cause. Such a run was interrupted (130), not a
    bug (70). (topoctl.entry imports this module first: topoctl.core.io, which every run loads,
    imports it too.)"""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def one_line(text: object, limit: int | None = None) -> str:
    """`text` safe for a terminal, on one line: control characters written as \\n, \\r, \\t, \\xNN
    (\\uNNNN).

    The one escaper of topoctl's text output (errors, check reports, launch.env comments,
    --explain). With `limit`, a longer result is cut to `limit` characters ending in "...".
    """
    out = []
    for char in str(text):
        if char.isprintable():
            out.append(char)
        elif char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x100:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) < 0x10000:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    line = "".join(out)
    if limit is not None and len(line) > limit:
        return line[: max(limit - 3, 0)] + "..."
    return line
