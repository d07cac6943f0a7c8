"""Writing files so that a reader never sees half of one (temp file in the same folder, then rename)."""
from __future__ import annotations

import os

from topoctl.errors import TopoctlError


def write_atomic(path: str, text: str) -> None:
    """Write `text` to `path` atomically; the old file, if any, stays intact on failure."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise TopoctlError(f"cannot write {path}: folder {directory} does not exist",
                           hint="create the folder first or pick another -o path")
    import tempfile  # here, not at import: printing to stdout needs none of it

    if os.path.isdir(path):
        raise TopoctlError(f"cannot write {path}: it is a folder", hint="give a file name, e.g. -o launch.env")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".topoctl-", dir=directory)
    except OSError as exc:
        raise TopoctlError(f"cannot write {path}: {exc.strerror or exc}",
                           hint="check that the folder exists and is writable") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if os.path.exists(path):
            os.chmod(tmp, os.stat(path).st_mode & 0o777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise TopoctlError(f"cannot write {path}: {exc.strerror or exc}",
                           hint="check the path and its permissions") from None


def emit(text: str, output: str | None) -> None:
    """Write to `output` atomically, or to stdout when no output path is given."""
    if output and output != "-":
        write_atomic(output, text)
    else:
        import click

        click.echo(text, nl=False)
