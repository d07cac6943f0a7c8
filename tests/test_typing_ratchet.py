"""A ratchet on two counts of product code (topoctl/, following its links to autoconf/, rules/,
probe/ and fixtures/): the word `Any` and imports inside functions. Each may not rise above its
ceiling in tests/data/typing_ratchet.txt; the ceilings only go down, and whoever lowers a count
writes the new number there.

`Any` belongs between a parser and the constructor of a typed record (docs/architecture.md; issue
35, item 3); everywhere else a value is a record, an enum, a TypedDict, or `object` when it is truly
unknown. An import sits inside a function only for start-up speed: the lazy torch and matplotlib
imports, and the other start-up reasons (or known debt) listed in tests/data/function_imports.txt,
are why any exist at all.
"""

from __future__ import annotations

import os
import re
import sys

import pytest
from architecture_imports import ROOT, function_imports, product_modules

CEILINGS = os.path.join(ROOT, "tests", "data", "typing_ratchet.txt")
_ANY = re.compile(r"(?<![A-Za-z0-9_])Any(?![A-Za-z0-9_])")  # grep -w's idea of a word


def ceilings() -> dict[str, int]:
    with open(CEILINGS, encoding="utf-8") as handle:
        pairs = (line.split() for line in handle if line.strip() and not line.startswith("#"))
        return {name: int(value) for name, value in pairs}


def any_count() -> int:
    total = 0
    for path in product_modules().values():
        with open(path, encoding="utf-8") as handle:
            total += len(_ANY.findall(handle.read()))
    return total


def function_import_count() -> int:
    return sum(function_imports().values())


COUNTS = {"any": any_count, "function_imports": function_import_count}


def test_the_ceilings_file_names_each_count_once():
    assert sorted(ceilings()) == sorted(COUNTS)


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_count_stays_at_or_below_its_ceiling(name):
    ceiling, count = ceilings()[name], COUNTS[name]()
    assert count <= ceiling, (
        f"{name}: product code has {count}, above the ceiling {ceiling} in "
        f"tests/data/typing_ratchet.txt; type the new code (a record, an enum, object) "
        f"rather than raising the ceiling"
    )
    if count < ceiling:
        print(
            f"{name}: {count} is below the ceiling {ceiling}: write `{name} {count}` in "
            "tests/data/typing_ratchet.txt"
        )


def test_the_any_count_sees_a_new_any(tmp_path, monkeypatch):
    """The counter counts what a reader would: a new annotation, not a word that merely contains it."""
    module = tmp_path / "sample.py"
    module.write_text(
        "from typing import Any\n\ndef f(x: Any) -> dict[str, Any]:  # Anything, AnyStr, _Any\n"
        "    return {}\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(sys.modules[__name__], "product_modules", lambda: {"sample": str(module)})
    assert any_count() == 3
