"""Writing files so that a reader never sees half of one (temp file in the same folder, then
rename).

`-o PATH` behaves like the shell's `>` where that matters to people, and atomically where it can:

- a regular file (or a new name) is replaced atomically: temp file next to it, then rename;
- a symlink is written through: the file it points to is replaced atomically, the link stays a link;
- a FIFO, a character device, a socket, /dev/stdout, /proc/self/fd/N are written into directly
  (there is nothing to rename over: `-o /dev/stdout` and `-o >(gzip > x.gz)` work);
- a read-only file is refused (exit 2) unless this user may write it anyway (root may); a folder
  too;
- a write that fails part way (disk full, I/O error) is an OutputError (exit 74) and leaves the old
  file intact;
- the temp file of a run that was killed (SIGKILL, power loss) is removed by the next run writing to
  that folder, once it is STALE_AFTER_S old: only topoctl's own names (.topoctl-XXXXXXXX.tmp), only
  this user's.

Layer: core types and data (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import os
import re
import stat
from types import FrameType, TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import signal

from topoctl.core.errors import OutputError, TopoctlError


def _link_chain(path: str) -> list[str]:
    """`path` and every name its symlinks lead through (absolute), stopping at 40 hops like the
    kernel."""
    hops = [os.path.abspath(path)]
    current = hops[0]
    for _ in range(40):
        try:
            if not os.path.islink(current):
                break
            target = os.readlink(current)
        except OSError:
            break
        current = os.path.abspath(os.path.join(os.path.dirname(current), target))
        hops.append(current)
    return hops


def _is_stream_name(hops: list[str]) -> bool:
    """/dev/stdout, /dev/fd/1, /proc/self/fd/1 ...: names of an open file, never renamed over."""
    return any(hop.startswith(("/dev/", "/proc/")) for hop in hops)


class Destination:
    """Where `-o PATH` will write, decided before anything is written (see the module docstring)."""

    def __init__(self, path: str) -> None:
        self.path = path
        hops = _link_chain(path)
        self.target = os.path.realpath(path)
        self.direct = False
        try:
            info = os.stat(path)
        except FileNotFoundError:
            info = None
        except OSError as exc:  # a symlink loop, a name too long, a component that is not a folder
            raise TopoctlError(
                f"cannot write {path}: {exc.strerror or exc}",
                hint="check the path and its permissions",
            ) from None
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise TopoctlError(
                f"cannot write {path}: it is a folder", hint="give a file name, e.g. -o launch.env"
            )
        if info is not None and (not stat.S_ISREG(info.st_mode) or _is_stream_name(hops)):
            self.direct = True  # a FIFO, a device, a socket, or the name of an already open file
            return
        directory = os.path.dirname(self.target)
        if not os.path.isdir(directory):
            raise TopoctlError(
                f"cannot write {path}: folder {directory} does not exist",
                hint="create the folder first or pick another -o path",
            )
        if info is not None and not os.access(self.target, os.W_OK):
            raise TopoctlError(
                f"cannot write {path}: it is read-only",
                hint="make it writable (chmod u+w) or pick another -o path",
            )

    def write(self, text: str) -> None:
        if self.direct:
            self._write_direct(text)
        else:
            self._write_atomic(text)

    def _write_direct(self, text: str) -> None:
        try:
            with open(self.path, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(
                f"cannot write {self.path}: {exc.strerror or exc}",
                hint="check the path, its permissions and the free space",
            ) from None

    def _write_atomic(self, text: str) -> None:
        import tempfile  # here, not at import: printing to stdout needs none of it

        path, target = self.path, self.target
        directory = os.path.dirname(target)
        remove_stale_temp_files(directory)
        with _signals_raise():
            mask = _block_signals()  # no signal between creating the temp file and knowing its name
            try:
                try:
                    fd, tmp = tempfile.mkstemp(
                        prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX, dir=directory
                    )
                except OSError as exc:
                    raise TopoctlError(
                        f"cannot write {path}: {exc.strerror or exc}",
                        hint="check that the folder exists and is writable",
                    ) from None
                try:
                    _restore_signals(
                        mask
                    )  # a signal from here on removes the temp file, then ends the run
                    _fill(fd, tmp, target, text)
                except BaseException as exc:
                    _block_signals()
                    try:
                        os.unlink(tmp)
                    except OSError:
                        pass
                    if isinstance(exc, OSError):
                        raise OutputError(
                            f"cannot write {path}: {exc.strerror or exc}",
                            hint="check the path, its permissions and the free space; "
                            "the old file is intact",
                        ) from None
                    raise
            finally:
                _restore_signals(mask)


def _fill(fd: int, tmp: str, target: str, text: str) -> None:
    """Write `text` into the temp file, give it the target's mode (or the umask's), rename it over
    the target."""
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    if os.path.exists(target):
        os.chmod(tmp, os.stat(target).st_mode & 0o777)
    else:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
    os.replace(tmp, target)


# -- signals while a temp file exists
# --------------------------------------------------------------------- SIGINT raises
# KeyboardInterrupt by itself; SIGTERM and SIGHUP would end the process on the spot and leave the
# temp file behind, so while one exists they raise Interrupted: the temp file is removed, then the
# signal is raised again with the handler that was there before (the default ends the process by
# that signal).
_CLEANUP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


class Interrupted(BaseException):
    """SIGTERM or SIGHUP arrived while an -o temp file existed (a BaseException: nothing may swallow
    it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


def _signal_numbers() -> list[int]:
    import signal

    return [getattr(signal, name) for name in _CLEANUP_SIGNALS if hasattr(signal, name)]


def _block_signals() -> set[int | signal.Signals] | None:
    """Block the cleanup signals (delivered when unblocked); the mask to restore, or None where it
    cannot be set."""
    import signal
    import threading

    if (
        not hasattr(signal, "pthread_sigmask")
        or threading.current_thread() is not threading.main_thread()
    ):
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, _signal_numbers())


def _restore_signals(mask: set[int | signal.Signals] | None) -> None:
    import signal

    if mask is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


class _signals_raise:
    """While inside: SIGTERM and SIGHUP raise Interrupted; on the way out the old handlers come
    back, and an Interrupted is raised again as its signal (so the process ends the way it would
    have, minus the temp file)."""

    def __enter__(self) -> None:
        import signal
        import threading

        self.old: dict[int, signal._HANDLER] = {}
        if threading.current_thread() is not threading.main_thread():
            return

        def handler(signum: int, _frame: FrameType | None) -> None:
            raise Interrupted(signum)

        for number in _signal_numbers():
            if number != signal.SIGINT and signal.getsignal(number) is not signal.SIG_IGN:
                self.old[number] = signal.signal(number, handler)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, _tb: TracebackType | None
    ) -> None:
        import signal

        for number, previous in self.old.items():
            signal.signal(number, previous)
        if isinstance(exc, Interrupted) and exc.signum in self.old:
            os.kill(
                os.getpid(), exc.signum
            )  # the old handler now: by default the process ends here


TEMP_PREFIX, TEMP_SUFFIX = ".topoctl-", ".tmp"
# What mkstemp names ours: the prefix, 8 random characters, the suffix (without it: topoctl 0.1's
# name).
_TEMP_NAME = re.compile(r"\.topoctl-[A-Za-z0-9_]{8}(?:\.tmp)?\Z")
STALE_AFTER_S = 600  # far longer than any write takes (a snapshot is written in milliseconds)


def remove_stale_temp_files(directory: str, now: float | None = None) -> list[str]:
    """Remove the temp files a killed topoctl left in `directory`: only topoctl's own names, only
    regular files of this user, only those untouched for STALE_AFTER_S (a run writing now is never
    disturbed). Returns the names removed; never fails (a folder that cannot be listed is left as it
    is)."""
    import time

    removed: list[str] = []
    try:
        names = [name for name in os.listdir(directory) if _TEMP_NAME.match(name)]
    except OSError:
        return removed
    cutoff = (time.time() if now is None else now) - STALE_AFTER_S
    for name in names:
        path = os.path.join(directory, name)
        try:
            info = os.lstat(path)
            if (
                not stat.S_ISREG(info.st_mode)
                or info.st_uid != os.geteuid()
                or info.st_mtime > cutoff
            ):
                continue
            os.unlink(path)
            removed.append(name)
        except OSError:
            continue
    return removed


def check_destination(path: str) -> None:
    """Fail now (exit 2) if `path` could not be written later: for work that is slow or cannot be
    repeated."""
    Destination(path)


def write_atomic(path: str, text: str) -> None:
    """Write `text` to `path` atomically; the old file, if any, stays intact on failure.

    A symlink is written through to its target; a FIFO or device is written into directly (see
    above).
    """
    Destination(path).write(text)


def emit(text: str, output: str | None) -> None:
    """Write to `output` atomically, or to stdout when no output path is given: the same bytes
    either way (UTF-8, whatever the locale says; nothing stripped, unlike click.echo, which drops
    terminal escapes from a pipe only)."""
    if output and output != "-":
        write_atomic(output, text)
    else:
        write_stdout(text)


def write_stdout(text: str) -> None:
    """`text` to stdout as UTF-8 bytes. A closed stdout, a full disk or an I/O error is an
    OutputError (exit 74); a reader that went away is a BrokenPipeError, which the CLI turns into
    141."""
    import sys

    stream = sys.stdout
    if stream is None:  # the process was started with stdout closed (`topoctl ... >&-`)
        raise OutputError("cannot write the output: stdout is closed", hint=STDOUT_HINT)
    try:
        buffer = getattr(stream, "buffer", None)
        if buffer is None:  # a text-only stream (tests, embedding): it takes str
            stream.write(text)
            stream.flush()
            return
        stream.flush()  # text written before (click.echo) comes first
        buffer.write(text.encode("utf-8", "surrogateescape"))
        buffer.flush()
    except BrokenPipeError:
        raise
    except OutputError:
        raise
    except (OSError, ValueError) as exc:  # ValueError: "I/O operation on closed file"
        raise OutputError(
            f"cannot write the output to stdout: {getattr(exc, 'strerror', None) or exc}",
            hint=STDOUT_HINT,
        ) from None


STDOUT_HINT = "free space or give topoctl a writable stdout, or write to a file with -o FILE"
