"""Draw every reference system's topology into docs/pictures/: <system>.dot (the text `topoctl show
--format dot` writes) and <system>.svg (that text drawn by Graphviz's dot, stamped with the text's
sha256).

Usage: python scripts/draw_pictures.py            (needs Graphviz's dot; apt-get install graphviz)
       python scripts/draw_pictures.py --check    (no Graphviz needed: exit 1 when a picture is stale)
Run it after adding a reference system or changing topoctl/present/picture.py. tests/present/test_picture.py runs the check:
each committed .dot must equal what the code draws now, and each .svg must carry that text's digest, so a
picture cannot silently go stale; the SVG bytes themselves depend on the Graphviz release and are not compared.
"""

from __future__ import annotations

import os
import sys

from topoctl.present.picture import dot_digest, render_image, stamp_svg, svg_stamp, to_dot
from topoctl.snapshot.catalogue import list_systems, system_snapshot

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDER = os.path.join(ROOT, "docs", "pictures")


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def stale_pictures() -> list[str]:
    """The reference systems whose committed .dot or .svg is missing or differs from what the code
    draws now."""
    stale = []
    for name in list_systems():
        dot = to_dot(system_snapshot(name))
        svg = _read(os.path.join(FOLDER, f"{name}.svg"))
        if (
            _read(os.path.join(FOLDER, f"{name}.dot")) != dot
            or svg is None
            or svg_stamp(svg) != dot_digest(dot)
        ):
            stale.append(name)
    return stale


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        stale = stale_pictures()
        for name in stale:
            print(
                f"docs/pictures/{name}: stale or missing; run python scripts/draw_pictures.py",
                file=sys.stderr,
            )
        return 1 if stale else 0
    os.makedirs(FOLDER, exist_ok=True)
    for name in list_systems():
        dot = to_dot(system_snapshot(name))
        svg = stamp_svg(render_image(dot, "svg").decode("utf-8"), dot)
        for suffix, text in (("dot", dot), ("svg", svg)):
            with open(os.path.join(FOLDER, f"{name}.{suffix}"), "w", encoding="utf-8") as handle:
                handle.write(text)
        print(f"docs/pictures/{name}.dot, .svg")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
