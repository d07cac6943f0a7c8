"""Draw every reference system's topology into docs/pictures/<system>.svg (topoctl show --format svg).

Usage: python scripts/draw_pictures.py        (needs Graphviz's dot; apt-get install graphviz)
Run it after adding a reference system or changing topoctl/picture.py; tests/test_picture.py checks that every
system has its picture.
"""
from __future__ import annotations

import os
import sys

from topoctl.catalogue import list_systems, system_snapshot
from topoctl.picture import render_image, to_dot

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDER = os.path.join(ROOT, "docs", "pictures")


def main() -> int:
    os.makedirs(FOLDER, exist_ok=True)
    for name in list_systems():
        svg = render_image(to_dot(system_snapshot(name)), "svg").decode("utf-8")
        with open(os.path.join(FOLDER, f"{name}.svg"), "w", encoding="utf-8") as handle:
            handle.write(svg)
        print(f"docs/pictures/{name}.svg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
