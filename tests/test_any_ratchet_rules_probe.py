"""The `Any` ratchet of rules/ and probe/ (issue 35, "typed at the border"): the count of the word
`Any` in their Python files (what `grep -rwo Any rules probe --include=*.py | wc -l` counts) may
only go down. Lower the ceiling when a change removes more; a new `Any` needs a typed record, alias
or `object` instead."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Measured when the folders were typed at the border (530 before: rules 266, probe 264).
CEILINGS = {"rules": 63, "probe": 133}
_WORD = re.compile(r"(?<![A-Za-z0-9_])Any(?![A-Za-z0-9_])")


def count_any(folder: Path) -> int:
    return sum(
        len(_WORD.findall(path.read_text(encoding="utf-8")))
        for path in sorted(folder.rglob("*.py"))
    )


@pytest.mark.parametrize("folder", sorted(CEILINGS))
def test_any_count_only_goes_down(folder: str) -> None:
    found = count_any(ROOT / folder)
    assert found <= CEILINGS[folder], (
        f"{folder}/ has {found} `Any` (ceiling {CEILINGS[folder]}): type the new "
        "value at the border instead"
    )


def test_count_matches_grep_words() -> None:
    """The count is grep -w's: `Any` inside a longer name (AnyStr, Anything) is not counted."""
    assert _WORD.findall("Any, AnyStr, Anything, x_Any, Any]") == ["Any", "Any"]
