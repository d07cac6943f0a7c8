#!/usr/bin/env python3
"""Rebuild every generated file from a wheel cache, or prove offline that the committed ones are what their
inputs give. The inventory (what is generated, from what, by which script) is scripts/regen_inventory.py.

    python scripts/regen.py --check                         # offline, no wheel: CI (.ci/run)
    python scripts/regen.py --wheels DIR                    # rebuild everything from the wheels in DIR
    python scripts/regen.py --wheels DIR --download --release 0.5.24   # fetch 0.5.24 (and any missing) first
    python scripts/regen.py --wheels DIR --only sglang-flags sglang-releases
    python scripts/regen.py --derived                       # only the files derived from committed inputs
    python scripts/regen.py --list                          # the inventory

A rebuild runs the items in dependency order (the flag data, then what reads it), rewrites the
derived files (compiled knowledge, fixtures, docs tables) and records each wheel-derived file's
sha256, source wheel and generator digest in scripts/regen_manifest.json. Then it runs --check and
prints what a person still has to read in the new release's source (docs/sglang-versions.md, "Adding
a release"). Exit status: 0 when every check holds, 1 otherwise (each problem on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import regen_checks as checks  # noqa: E402
from regen_inventory import (  # noqa: E402
    ITEMS,
    MANIFEST,
    OFFLINE_ITEMS,
    ROOT,
    WHEEL_ITEMS,
    Item,
    by_name,
    files_of,
)  # noqa: E402

OFFLINE_CHECKS = (
    (
        "manifest of the wheel-derived files",
        lambda names: checks.check_manifest(tuple(i for i in WHEEL_ITEMS if i.name in names)),
    ),
    ("SGLang flag data and release list", lambda names: checks.check_flag_files()),
    ("Dynamo option data", lambda names: checks.check_dynamo_files()),
    (
        "every per-release file reaches the newest release",
        lambda names: checks.check_release_coverage(),
    ),
    ("op tables and recordings decode", lambda names: checks.check_compressed()),
    ("docs tables", lambda names: checks.check_docs_tables()),
    ("offline generators' own checks", checks.check_scripts),
)


def run_checks(items: list[Item]) -> int:
    names = {item.name for item in items}
    failed = 0
    for title, check in OFFLINE_CHECKS:
        started = time.monotonic()
        problems = check(names)
        print(
            f"{'ok  ' if not problems else 'FAIL'} {title} ({time.monotonic() - started:.1f} s)",
            flush=True,
        )
        for problem in problems:
            print(f"     {problem}", file=sys.stderr)
        failed += len(problems)
    return 1 if failed else 0


def rebuild_offline(items: list[Item]) -> None:
    """The files derived from committed inputs, rewritten in dependency order."""
    names = {item.name for item in items}
    page = Path(ROOT, "docs", "sglang-versions.md")
    if "versions-table" in names:
        page.write_text(
            checks.replace_versions_table(page.read_text(encoding="utf-8")), encoding="utf-8"
        )
    if "parser-check-page" in names:
        from sglang_flags.check import render_md

        results = json.loads(
            Path(ROOT, "tests", "data", "sglang_real_parser_check.json").read_text()
        )["results"]
        Path(ROOT, "docs", "real-parser-check.md").write_text(render_md(results), encoding="utf-8")
    for name, argv in (
        ("compiled-knowledge", ["scripts/compile_knowledge.py"]),
        ("synthetic-captures", ["scripts/make_synthetic_fixtures.py"]),
        ("fixture-snapshots", ["scripts/build_fixture_snapshots.py"]),
        ("snapshot-fields", ["scripts/snapshot_fields.py"]),
    ):
        if name in names:
            subprocess.run([sys.executable, *argv], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)


def rebuild(args: argparse.Namespace, items: list[Item]) -> None:
    import regen_wheels as wheels

    folder = Path(args.wheels)
    folder.mkdir(parents=True, exist_ok=True)
    if args.download:
        known = [row["version"] for row in checks.release_rows()] + checks.flag_versions()
        dynamo = [
            n[len("dynamo-") : -len(".json")]
            for n in os.listdir(os.path.join(ROOT, "rules", "sglang", "generated"))
            if n.startswith("dynamo-")
        ]
        from sglang_oracle.kernel_paths import (
            RELEASES as KERNEL_RELEASES,
        )  # the oracle also reads 0.5.1.post3

        wheels.download(folder, sorted(set(known + args.release + list(KERNEL_RELEASES))), dynamo)
    with tempfile.TemporaryDirectory(prefix="regen-") as scratch:
        cache = wheels.find_wheels(folder, Path(scratch), checks.flag_versions()[0])
        cache.new = list(args.release)
        for item in items:
            if item in WHEEL_ITEMS:
                print(f"{item.name}: {item.what}", flush=True)
                wheels.BUILDERS[item.name](cache)
                wheels.record(
                    [item], cache
                )  # at once: a later item that fails keeps what was built
    rebuild_offline([i for i in items if i in OFFLINE_ITEMS])


def print_inventory() -> None:
    for item in ITEMS:
        kind = f"from {item.wheels} wheels" if item.wheels else "from committed files"
        print(f"{item.name:22} {len(files_of(item)):4} files  {kind:28} {', '.join(item.outputs)}")
        print(f"{'':22} {item.what}; by {', '.join(item.generator)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--check", action="store_true", help="offline: prove the committed files, rebuild nothing"
    )
    ap.add_argument("--wheels", help="wheel cache folder to rebuild from")
    ap.add_argument(
        "--download",
        action="store_true",
        help="pip download the missing wheels into --wheels first",
    )
    ap.add_argument(
        "--release",
        action="append",
        default=[],
        help="a release to add (with --download: fetch it)",
    )
    ap.add_argument("--only", nargs="+", help="these items only (--list names them)")
    ap.add_argument(
        "--record",
        action="store_true",
        help=f"record the committed wheel-derived files in {MANIFEST} as they are, without wheels",
    )
    ap.add_argument(
        "--derived",
        action="store_true",
        help="rewrite only the files derived from committed inputs (after a hand edit of data), "
        "no wheel",
    )
    ap.add_argument("--list", action="store_true", help="print the inventory")
    args = ap.parse_args(argv)
    items = by_name(args.only) if args.only else list(ITEMS)
    if args.list:
        print_inventory()
        return 0
    if args.record:
        import regen_wheels as wheels

        wheels.record([i for i in items if i in WHEEL_ITEMS], None)
    elif args.wheels:
        rebuild(args, items)
    elif args.derived:
        rebuild_offline([i for i in items if i in OFFLINE_ITEMS])
    elif not args.check:
        ap.error("give --check, --wheels DIR, --derived, --record or --list")
    started = time.monotonic()
    status = run_checks(items)
    print(
        f"regen --check: {'clean' if status == 0 else 'FAILED'} in "
        f"{time.monotonic() - started:.1f} s"
    )
    return status


if __name__ == "__main__":
    sys.exit(main())
