"""Command line of scripts/extract_kernel_matrix.py."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from .build import release_view, wheel_record
from .pins import Pin, download, find_wheel, release_pins
from .targets import KNOWN_SMS

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "rules" / "sglang" / "generated"
OUT = ROOT / "rules" / "sglang" / "generated" / "kernel-matrix.json"


def releases_with_flag_data(data: Path = DATA) -> list[str]:
    return sorted(p.name[len("sglang-") : -len(".json")] for p in data.glob("sglang-*.json"))


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "--wheels", type=Path, default=Path("/tmp/wheels/kernels"), help="kernel wheel cache"
    )
    ap.add_argument(
        "--sglang-wheels", type=Path, default=Path("/tmp/wheels/sglang"), help="sglang wheel cache"
    )
    ap.add_argument(
        "--download", action="store_true", help="pip download --no-deps what the caches lack"
    )
    ap.add_argument(
        "--delete-after", action="store_true", help="delete each kernel wheel once scanned"
    )
    ap.add_argument(
        "--releases", nargs="*", help="only these SGLang releases (default: all with flag data)"
    )
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--check", action="store_true", help="recompute and diff against --out; exit 1 on a change"
    )
    return ap.parse_args(argv)


def _sglang_wheel(args: argparse.Namespace, release: str) -> Path | None:
    found = find_wheel(args.sglang_wheels, "sglang", release)
    if found is None and args.download:
        found = download(args.sglang_wheels, "sglang", release)
    return found


def _pins(
    args: argparse.Namespace, releases: list[str]
) -> tuple[dict[str, list[Pin]], dict[str, str]]:
    pins: dict[str, list[Pin]] = {}
    missing: dict[str, str] = {}
    for release in releases:
        wheel = _sglang_wheel(args, release)
        if wheel is None:
            missing[release] = (
                f"sglang=={release} wheel not in {args.sglang_wheels} (run with --download)"
            )
            continue
        pins[release] = release_pins(wheel)
    return pins, missing


def _scan_all(args: argparse.Namespace, keys: list[Pin]) -> tuple[dict[str, Any], dict[str, str]]:
    wheels: dict[str, Any] = {}
    missing: dict[str, str] = {}
    for pin in keys:
        assert pin.version is not None
        path = find_wheel(args.wheels, pin.dist, pin.version)
        if path is None and args.download:
            path = download(args.wheels, pin.dist, pin.version)
        if path is None:
            missing[pin.key] = f"no wheel for {pin.key} in {args.wheels}"
            continue
        start = time.monotonic()
        wheels[pin.key] = wheel_record(path)
        print(
            f"{pin.key}: {len(wheels[pin.key]['ops'])} ops in {time.monotonic() - start:.0f}s",
            file=sys.stderr,
        )
        if args.delete_after:
            path.unlink()
    return wheels, missing


def build(args: argparse.Namespace) -> dict[str, Any]:
    releases = args.releases or releases_with_flag_data()
    pins, missing_releases = _pins(args, releases)
    distinct = sorted(
        {p.key: p for ps in pins.values() for p in ps if p.version}.values(), key=lambda p: p.key
    )
    wheels, missing_wheels = _scan_all(args, distinct)
    out_releases: dict[str, Any] = {}
    for release, ps in sorted(pins.items()):
        keys = [p.key for p in ps if p.version]
        out_releases[release] = {
            "pins": {p.dist: p.spec for p in ps},
            "unpinned": sorted(p.key for p in ps if not p.version),
            "missing": {k: missing_wheels[k] for k in keys if k in missing_wheels},
            "wheels": release_view(wheels, keys),
        }
    return {
        "generated_by": "scripts/extract_kernel_matrix.py",
        "known_sms": list(KNOWN_SMS),
        "releases": out_releases,
        "missing_releases": missing_releases,
        "wheels": wheels,
    }


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def _diff(old: Any, new: Any, path: str, out: list[str]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            _diff(old.get(key), new.get(key), f"{path}/{key}", out)
    elif old != new:
        out.append(f"{path}: {json.dumps(old)[:120]} -> {json.dumps(new)[:120]}")


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    start = time.monotonic()
    doc = build(args)
    if args.check:
        old = json.loads(args.out.read_text()) if args.out.exists() else {}
        if args.releases:  # a partial run compares only what it recomputed
            old = {
                **old,
                "releases": {r: old.get("releases", {}).get(r) for r in args.releases},
                "wheels": {k: old.get("wheels", {}).get(k) for k in doc["wheels"]},
            }
        changes: list[str] = []
        _diff(old, doc, "", changes)
        print("\n".join(changes) if changes else f"{args.out}: up to date")
        return 1 if changes else 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(dumps(doc))
    print(f"wrote {args.out} in {time.monotonic() - start:.0f}s", file=sys.stderr)
    return 0
