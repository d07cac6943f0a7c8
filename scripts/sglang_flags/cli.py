"""The extractor's command line: fetch wheels with pip, extract, write
rules/sglang/generated/sglang-<v>.json."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .common import SERVER_ARGS
from .extract import KNOWN_ENV, extract
from .wheel import Wheel

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
DEFAULT_OUT = REPO_ROOT / "rules" / "sglang" / "generated"


def download(version: str, dest: Path) -> Path:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "-q",
        "-d",
        str(dest),
        f"sglang=={version}",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(dest.glob(f"sglang-{version}-*.whl"))
    if proc.returncode != 0 or not wheels:
        raise SystemExit(f"pip download sglang=={version} failed:\n{proc.stderr[-2000:]}")
    return wheels[0]


def version_of_wheel(path: Path) -> str:
    return path.name.split("-")[1]


def build_document(wheel_path: Path) -> dict[str, Any]:
    wheel = Wheel(wheel_path)
    result = extract(wheel)
    version = version_of_wheel(wheel_path)
    doc = {
        "sglang_version": version,
        "source": {
            "wheel": wheel_path.name,
            "sha256": wheel.sha256(),
            "file": SERVER_ARGS,
            "declared_in": result["declared_in"],
        },
        "extracted_by": "scripts/extract_sglang_flags.py",
        "allow_abbrev": result["allow_abbrev"],
        "allow_abbrev_source": result["allow_abbrev_source"],
        "conflict_handler": result["conflict_handler"],
        "flag_count": len(result["flags"]),
        "flags": result["flags"],
        "env_checked": sorted(KNOWN_ENV),
        "env": result["env"],
    }
    if result["problems"]:
        doc["problems"] = result["problems"]
    return doc


def write(doc: dict[str, Any], out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"sglang-{doc['sglang_version']}.json"
    text = json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Extract SGLang's server CLI flag set from its release wheels."
    )
    ap.add_argument("versions", nargs="*", help="SGLang versions to fetch with pip download")
    ap.add_argument(
        "--wheel",
        action="append",
        default=[],
        type=Path,
        help="use this already-downloaded wheel instead of pip download (repeatable)",
    )
    ap.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})"
    )
    ap.add_argument(
        "--check",
        action="store_true",
        help="then build SGLang's own parser from each wheel, compare it with the data just "
        "written and record the results (tests/data/sglang_real_parser_check.json, "
        "docs/real-parser-check.md; beside --out when that is given); exit 1 on a "
        "disagreement. Needs msgspec installed.",
    )
    args = ap.parse_args(argv)
    if not args.versions and not args.wheel:
        ap.error("give at least one VERSION or --wheel")
    wheels = list(args.wheel)
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="sglang-wheels-") as tmp:
        for v in args.versions:
            wheels.append(download(v, Path(tmp)))
        for w in wheels:
            doc = build_document(w)
            path = write(doc, args.out)
            dep = sum(1 for f in doc["flags"].values() if f["deprecated"])
            print(
                f"{doc['sglang_version']}: {doc['flag_count']} flags ({dep} deprecated), "
                f"{len(doc['env'])} env vars -> {path} ({path.stat().st_size // 1024} KiB)"
            )
            for p in doc.get("problems", []):
                print(f"  warning: {p}", file=sys.stderr)
            if args.check:
                from .check import check_wheel

                result = check_wheel(w, args.out)
                results.append(result)
                print(
                    f"  checked against SGLang's parser: {result['compared_fields']} fields, "
                    f"{len(result['disagreements'])} disagree, "
                    f"{len(result['unresolved_in_data'])} unresolved"
                )
                for item in result["disagreements"]:
                    print(f"  disagreement: {item}", file=sys.stderr)
    if args.check:
        from .check import DEFAULT_JSON, DEFAULT_MD, save

        if args.out.resolve() == DEFAULT_OUT.resolve():
            save(results, DEFAULT_JSON, DEFAULT_MD)
        else:  # data written elsewhere: its check report goes beside it
            save(
                results,
                args.out / "sglang_real_parser_check.json",
                args.out / "real-parser-check.md",
            )
    return 1 if any(r["disagreements"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
