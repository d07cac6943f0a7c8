"""`topoctl recommend --format table`: the ranked candidates, best first, as a table for people.

The same ranking `recommend` writes the winner of (autoconf/ranking.py), read from the
recommendation's document (autoconf/launch_text.py), so that the table and launch.env can never
disagree on the order. Blocked and unfit launches are counted below the table; `--explain` says what
blocked each.

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from typing import Any

COLUMNS = ("RANK", "TP", "DP", "LAUNCH", "TOK/S", "EVIDENCE")


def _tokens(candidate: dict[str, Any]) -> str:
    value = candidate.get("estimated_tok_s")
    if value is None:
        value = candidate.get("predicted_tok_s")
    return "-" if value is None else f"{value:.1f}"


def _row(rank: int, candidate: dict[str, Any]) -> tuple[str, ...]:
    return (
        str(rank),
        str(candidate.get("tp_size", "-")),
        str(candidate.get("dp_size", "-")),
        str(candidate.get("config", "")),
        _tokens(candidate),
        f"{candidate.get('level', '-')}: {candidate.get('basis', '')}".rstrip(": "),
    )


def render_table(doc: dict[str, Any], top: int) -> str:
    """The winner and the next `top - 1` passing launches, then how many more, blocked and unfit
    there are."""
    ranked = [doc["chosen"], *doc.get("alternatives", [])]
    rows = [COLUMNS, *(_row(rank, candidate) for rank, candidate in enumerate(ranked[:top], 1))]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS) - 1)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
        + "  "
        + row[-1]
        for row in rows
    ]
    lines = [line.rstrip() for line in lines]
    target = doc.get("target", {})
    tail = [
        f"{len(ranked)} passing launch(es) on {target.get('system', 'the target')}"
        + (f", {len(ranked) - top} more not shown (--top)" if len(ranked) > top else "")
        + f"; {len(doc.get('blocked', []))} blocked by the rules, {len(doc.get('unfit', []))} do "
        "not fit "
        "(--explain says why)"
    ]
    return "\n".join(lines + tail) + "\n"
