"""scripts/regen.py: its inventory names every generated file, and --check catches a hand edit
offline."""

from __future__ import annotations

import glob
import os
import shutil
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import regen_checks  # noqa: E402
import regen_inventory as inventory  # noqa: E402


def test_every_file_under_a_generated_folder_belongs_to_an_item():
    owned = {path for item in inventory.ITEMS for path in inventory.files_of(item)}
    for folder in ("rules/sglang/generated", "autoconf/generated"):
        for base, _, names in os.walk(os.path.join(ROOT, folder)):
            for name in names:
                path = os.path.relpath(os.path.join(base, name), ROOT)
                assert path in owned, (
                    f"{path}: generated, but no item of scripts/regen_inventory.py builds it"
                )


def test_no_hand_written_data_folder_holds_a_wheel_derived_file():
    for item in inventory.WHEEL_ITEMS:
        for path in inventory.files_of(item):
            assert not path.startswith(("rules/sglang/data/", "autoconf/data/")), path


def test_the_committed_files_pass_the_offline_checks():
    assert regen_checks.check_manifest() == []
    assert regen_checks.check_flag_files() == []
    assert regen_checks.check_release_coverage() == []
    assert regen_checks.check_docs_tables() == []


@pytest.fixture
def copy_root(tmp_path, monkeypatch):
    """The wheel-derived SGLang flag files, their generator and the manifest, in a scratch root."""
    item = inventory.SGLANG_FLAGS
    paths = inventory.files_of(item) + [inventory.MANIFEST]
    paths += [
        os.path.relpath(p, ROOT) for g in item.generator for p in glob.glob(os.path.join(ROOT, g))
    ]
    for path in paths:
        os.makedirs(tmp_path / os.path.dirname(path), exist_ok=True)
        shutil.copy(os.path.join(ROOT, path), tmp_path / path)
    monkeypatch.setattr(inventory, "ROOT", str(tmp_path))
    monkeypatch.setattr(regen_checks, "ROOT", str(tmp_path))
    return tmp_path


def test_a_hand_edit_of_a_wheel_derived_file_fails_the_check(copy_root):
    item = (inventory.SGLANG_FLAGS,)
    assert regen_checks.check_manifest(item) == []
    path = copy_root / "rules" / "sglang" / "generated" / "sglang-0.5.23.json"
    path.write_text(
        path.read_text(encoding="utf-8").replace('"deprecated": false', '"deprecated": true', 1)
    )
    assert regen_checks.check_manifest(item) == [
        "rules/sglang/generated/sglang-0.5.23.json: differs from what sglang-flags built "
        "(sha256); edited by hand?"
    ]


def test_an_extractor_changed_without_a_rebuild_fails_the_check(copy_root):
    extractor = copy_root / "scripts" / "sglang_flags" / "extract.py"
    extractor.write_text(extractor.read_text(encoding="utf-8") + "\nCHANGED = True\n")
    problems = regen_checks.check_manifest((inventory.SGLANG_FLAGS,))
    assert len(problems) == 1 and "changed since its files were built" in problems[0]


def test_a_comment_or_docstring_in_an_extractor_changes_nothing(copy_root):
    # the generator's version is its syntax tree without docstrings: formatting a generator needs no
    # rebuild
    extractor = copy_root / "scripts" / "sglang_flags" / "extract.py"
    text = extractor.read_text(encoding="utf-8")
    assert text.startswith('"""')
    extractor.write_text('"""Reworded. ' + text[3:].replace("\n", "\n\n", 1) + "\n# changed\n")
    assert regen_checks.check_manifest((inventory.SGLANG_FLAGS,)) == []


def test_a_file_no_rebuild_wrote_fails_the_check(copy_root):
    shutil.copy(
        copy_root / "rules/sglang/generated/sglang-0.5.23.json",
        copy_root / "rules/sglang/generated/sglang-99.0.json",
    )
    assert regen_checks.check_manifest((inventory.SGLANG_FLAGS,)) == [
        "rules/sglang/generated/sglang-99.0.json: not in scripts/regen_manifest.json (not built "
        "by scripts/regen.py)"
    ]
