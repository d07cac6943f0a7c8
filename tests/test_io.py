"""Atomic writes: a reader never sees half a file, a failed write leaves the old file intact and no debris."""
from __future__ import annotations

import os
import tempfile

import pytest

from topoctl.errors import TopoctlError
from topoctl.io import write_atomic


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
