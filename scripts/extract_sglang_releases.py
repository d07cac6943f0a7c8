#!/usr/bin/env python3
"""Write rules/sglang/generated/releases.json's release list from SGLang wheels: every final release
among them, oldest first, with the FlashInfer its wheel pins (METADATA `Requires-Dist:
flashinfer_python==X`).

    python scripts/extract_sglang_releases.py WHEEL...     (scripts/regen.py runs it on its wheel cache)

The comment and `flashinfer_releases` (FlashInfer's releases, read from the package index, not from
a wheel) are kept from the committed file.
"""

from __future__ import annotations

import json
import os
import re
import sys
import zipfile
from pathlib import Path

from topoctl.core.pep440 import Version

RELEASES_JSON = (
    Path(__file__).resolve().parent.parent / "rules" / "sglang" / "generated" / "releases.json"
)


def version_of(wheel: Path) -> str:
    return wheel.name.split("-")[1]


def flashinfer_pin(wheel: Path) -> str | None:
    with zipfile.ZipFile(wheel) as archive:
        meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(meta).decode("utf-8")
    m = re.search(
        r"^Requires-Dist: flashinfer[_-]python(?:\[[^\]]*\])?\s*\(?==\s*([^\s;,)]+)",
        text,
        re.MULTILINE,
    )
    return m.group(1) if m else None


def main(argv: list[str]) -> int:
    wheels = sorted((Path(a) for a in argv), key=lambda w: Version(version_of(w)))
    doc = json.loads(RELEASES_JSON.read_text(encoding="utf-8"))
    doc["releases"] = [
        {"version": version_of(w), "flashinfer": flashinfer_pin(w)}
        for w in wheels
        if not Version(version_of(w)).is_prerelease
    ]
    tmp = RELEASES_JSON.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, RELEASES_JSON)
    print(
        f"{RELEASES_JSON.name}: {len(doc['releases'])} releases, newest "
        f"{doc['releases'][-1]['version']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
