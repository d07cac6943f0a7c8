"""Atomic writes: a reader never sees half a file, a failed write leaves the old file intact and no
debris."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile

import pytest

from topoctl.core.errors import TopoctlError
from topoctl.core.io import write_atomic


def test_writes_and_replaces(tmp_path):
    target = tmp_path / "launch.env"
    write_atomic(str(target), "A='1'\n")
    write_atomic(str(target), "A='2'\n")
    assert target.read_text() == "A='2'\n"
    assert [p.name for p in tmp_path.iterdir()] == ["launch.env"]


def test_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    target = tmp_path / "launch.env"
    target.write_text("old")
    os.chmod(target, 0o640)
    write_atomic(str(target), "new")
    assert os.stat(target).st_mode & 0o777 == 0o640


def test_missing_folder_is_a_usage_error(tmp_path):
    with pytest.raises(TopoctlError) as caught:
        write_atomic(str(tmp_path / "nope" / "launch.env"), "x")
    assert caught.value.exit_code == 2 and "does not exist" in caught.value.message


def test_a_folder_as_target_is_a_usage_error(tmp_path):
    with pytest.raises(TopoctlError) as caught:
        write_atomic(str(tmp_path), "x")
    assert "is a folder" in caught.value.message


def test_unwritable_folder_is_a_usage_error(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(TopoctlError) as caught:
        write_atomic(str(tmp_path / "launch.env"), "x")
    assert "Permission denied" in caught.value.message and caught.value.hint


def test_failed_rename_leaves_old_file_and_no_temp_file(tmp_path, monkeypatch):
    target = tmp_path / "launch.env"
    target.write_text("old")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(TopoctlError):
        write_atomic(str(target), "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["launch.env"]


# -- -o PATH is what the shell's `>` would write to: links written through, FIFOs and devices
# written into --


def test_a_symlink_is_written_through_to_its_target(tmp_path):
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    target = real_dir / "launch.env"
    target.write_text("old")
    os.chmod(target, 0o640)
    link = tmp_path / "current.env"
    link.symlink_to(target)
    write_atomic(str(link), "new")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new"
    assert os.stat(target).st_mode & 0o777 == 0o640
    assert sorted(p.name for p in real_dir.iterdir()) == ["launch.env"], (
        "temp file left next to the target"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["current.env", "real"]


def test_a_relative_and_a_dangling_symlink_are_written_through(tmp_path):
    (tmp_path / "a").mkdir()
    link = tmp_path / "a" / "out.yaml"
    link.symlink_to("../b.yaml")  # does not exist yet: the shell's `>` creates it
    write_atomic(str(link), "x: 1\n")
    assert link.is_symlink()
    assert (tmp_path / "b.yaml").read_text() == "x: 1\n"


def test_a_symlink_to_a_folder_is_a_usage_error(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "l").symlink_to(tmp_path / "d")
    with pytest.raises(TopoctlError) as caught:
        write_atomic(str(tmp_path / "l"), "x")
    assert "is a folder" in caught.value.message and caught.value.exit_code == 2


def test_a_symlink_loop_is_a_usage_error(tmp_path):
    (tmp_path / "l1").symlink_to(tmp_path / "l2")
    (tmp_path / "l2").symlink_to(tmp_path / "l1")
    with pytest.raises(TopoctlError) as caught:
        write_atomic(str(tmp_path / "l1"), "x")
    assert caught.value.exit_code == 2


def test_a_fifo_is_written_into_not_replaced(tmp_path):
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []

    def reader():
        with open(fifo, encoding="utf-8") as handle:
            received.append(handle.read())

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    write_atomic(str(fifo), "through the pipe\n")
    thread.join(10)
    assert received == ["through the pipe\n"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced by a regular file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root")
def test_a_character_device_is_written_into_not_replaced(tmp_path):
    device = (
        tmp_path / "null"
    )  # our own node (the null device's numbers) in a scratch folder, never /dev
    os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    write_atomic(str(device), "discarded")
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]


def test_dev_stdout_is_written_into_never_renamed_over():
    from topoctl.core.io import Destination

    # Decided without writing anything: a test must never risk replacing the machine's /dev/stdout.
    for name in ("/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"):
        assert Destination(name).direct, name


def test_dash_o_a_link_to_stdout_writes_to_stdout(tmp_path):
    """`-o /dev/stdout` as the shell's `>` does it; a link of our own to /proc/self/fd/1 stands in
    for it."""
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    argv = [
        sys.executable,
        "-m",
        "topoctl",
        "recommend",
        "--system",
        "h200-2x-nvswitch-vm",
        "-o",
        str(link),
    ]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "SGLANG_ARGS=" in proc.stdout
    assert link.is_symlink()
    out_file = (
        tmp_path / "out.env"
    )  # stdout redirected to a file: written in place, like `> /dev/stdout`
    with open(out_file, "w") as handle:
        proc = subprocess.run(
            argv, stdout=handle, stderr=subprocess.PIPE, text=True, cwd=str(tmp_path)
        )
    assert proc.returncode == 0, proc.stderr
    assert "SGLANG_ARGS=" in out_file.read_text()
    assert link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.env", "stdout"]


def test_a_read_only_file_is_refused(tmp_path, monkeypatch):
    target = tmp_path / "launch.env"
    target.write_text("old")
    os.chmod(target, 0o444)
    import topoctl.core.io

    monkeypatch.setattr(
        topoctl.core.io.os, "access", lambda path, mode: False
    )  # as a user who may not write it
    with pytest.raises(TopoctlError) as caught:
        write_atomic(str(target), "new")
    assert caught.value.exit_code == 2 and "is read-only" in caught.value.message
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["launch.env"]


def test_a_read_only_file_the_user_may_write_anyway_is_written(tmp_path, monkeypatch):
    target = tmp_path / "launch.env"
    target.write_text("old")
    os.chmod(target, 0o444)
    import topoctl.core.io

    monkeypatch.setattr(topoctl.core.io.os, "access", lambda path, mode: True)  # root
    write_atomic(str(target), "new")
    assert target.read_text() == "new"
    assert os.stat(target).st_mode & 0o777 == 0o444


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write a read-only file")
def test_a_read_only_file_is_refused_for_real(tmp_path):
    target = tmp_path / "launch.env"
    target.write_text("old")
    os.chmod(target, 0o444)
    with pytest.raises(TopoctlError) as caught:
        write_atomic(str(target), "new")
    assert "is read-only" in caught.value.message
