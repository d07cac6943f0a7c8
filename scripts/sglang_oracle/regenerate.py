"""Regenerate the oracle's outcomes from the release wheels: every grid launch through each release's own code.

    python scripts/sglang_oracle_regenerate.py --src-root DIR [--out tests/data/oracle] [--jobs 2]
        [--only 0.5.12 ...] [--python PYTHON] [--checkpoint-only]

DIR holds one folder per release (DIR/0.5.12/sglang/...), as scripts/grep_releases.py reads them
(`pip download --no-deps sglang==X` and unzip). PYTHON runs the releases (default: this
interpreter); it needs msgspec (SGLang >= 0.5.13 declares its options with it) and nothing else:
torch and the kernels are stubbed. One process per release and reference system (SGLang reads some
hardware answers at import).

With --checkpoint-only, only the checkpoint launches after the grid (grid.CHECKPOINT_LAUNCHES) are
run, and their outcomes replace those of the committed file's launches with the same ids (the grid's
are kept as they are): one process per release and system that has them, instead of the whole grid.

Writes OUT/sglang-<version>.json.gz per release ({"version", "flashinfer", "systems", "launches"},
each launch with its outcome) and OUT/summary.json; the comparison test reads them without the
wheels.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import gzip
import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))

from sglang_oracle import grid  # noqa: E402
from sglang_oracle.hardware import load_system  # noqa: E402

RELEASES = REPO / "rules" / "sglang" / "generated" / "releases.json"
DEFAULT_OUT = REPO / "tests" / "data" / "oracle"
DEFAULT_DOC = REPO / "docs" / "sglang-oracle-results.md"
KINDS = ("ok", "argparse-error", "startup-error", "oracle-error")


def releases() -> list[tuple[str, str | None]]:
    with open(RELEASES, encoding="utf-8") as handle:
        data = json.load(handle)
    return [(entry["version"], entry.get("flashinfer")) for entry in data["releases"]]


def run_system(
    python: str, src: Path, system: str, flashinfer: str | None, batch: list[grid.Launch]
) -> list[dict[str, Any]]:
    hw = load_system(REPO / "fixtures", system, flashinfer)
    lines = "\n".join(
        json.dumps(
            {
                "id": launch.id,
                "argv": launch.argv,
                "env": launch.env,
                "arch": launch.arch,
                # the corpus's files also meet the engine's check_server_args; the grid's record
                # stays ServerArgs and its gates
                "engine_checks": "corpus" in launch.options,
            }
        )
        for launch in batch
    )
    done = subprocess.run(
        [python, str(HERE / "run_release.py"), str(src), json.dumps(hw.to_json())],
        input=lines,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    outcomes = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or len(outcomes) != len(batch):
        tail = done.stderr.strip().splitlines()[-1:] or [""]
        raise RuntimeError(
            f"{src.name} on {system}: {len(outcomes)} of {len(batch)} outcomes ({tail[0][:200]})"
        )
    return outcomes


def run_release(
    python: str,
    src_root: Path,
    index: int,
    version: str,
    flashinfer: str | None,
    merge_into: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Every launch of the release (or, with merge_into, the checkpoint launches, merged into that
    document)."""
    launches = grid.launches(index)
    if merge_into is not None:
        first = len(launches) - len(grid.checkpoint_launches())
        launches = launches[first:]
    by_id = {launch.id: launch for launch in launches}
    results: list[dict[str, Any]] = []
    for system in grid.SYSTEMS:
        batch = [launch for launch in launches if launch.system == system]
        if not batch:
            continue
        for outcome in run_system(python, src_root / version, system, flashinfer, batch):
            launch = asdict(by_id[outcome.pop("id")])
            launch["options"] = list(launch["options"])
            results.append({**launch, "outcome": outcome})
    if merge_into is not None:
        ids = {launch["id"] for launch in results}
        kept = [launch for launch in merge_into["launches"] if launch["id"] not in ids]
        results = sorted(kept + results, key=lambda launch: launch["id"])
    return {"version": version, "flashinfer": flashinfer, "launches": results}


def write(out: Path, doc: dict[str, Any]) -> None:
    path = out / f"sglang-{doc['version']}.json.gz"
    data = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    tmp = path.with_suffix(".tmp")
    with gzip.GzipFile(tmp, "wb", mtime=0) as handle:
        handle.write(data)
    tmp.replace(path)


def summarize(doc: dict[str, Any]) -> dict[str, Any]:
    kinds: dict[str, int] = {}
    for launch in doc["launches"]:
        kind = launch["outcome"]["kind"]
        kinds[kind] = kinds.get(kind, 0) + 1
    return {
        "launches": len(doc["launches"]),
        "outcomes": dict(sorted(kinds.items())),
        "gates": _gate_counts(doc),
    }


def _gate_counts(doc: dict[str, Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for launch in doc["launches"]:
        for gate, result in (launch["outcome"].get("gates") or {}).items():
            state = "runs" if result.get("runs") else ("crashes" if result.get("error") else "off")
            counts[f"{gate} {state}"] = counts.get(f"{gate} {state}", 0) + 1
    return dict(sorted(counts.items()))


def write_doc(summary: dict[str, Any], path: Path) -> None:
    """The regeneration's result, release by release (docs/sglang-oracle-results.md)."""
    rows = []
    total = 0
    for version, entry in summary["releases"].items():
        outcomes = entry["outcomes"]
        total += entry["launches"]
        gates = ", ".join(f"{k}: {v}" for k, v in (entry.get("gates") or {}).items()) or "-"
        rows.append(
            f"| {version} | {entry['launches']} | "
            + " | ".join(str(outcomes.get(k, 0)) for k in KINDS)
            + f" | {gates} |"
        )
    text = "\n".join(
        [
            "# SGLang's own outcomes on the launch grid",
            "",
            f"Generated {summary['generated']} by `python scripts/sglang_oracle_regenerate.py "
            "--src-root DIR` from the "
            "release wheels (`pip download --no-deps sglang==X`, unzipped); do not edit by hand. "
            "How the oracle works and "
            "what it cannot reach: docs/sglang-oracle.md.",
            "",
            f"Releases: {len(summary['releases'])}; launches: {total}. *argparse-error*: the "
            "release's parser refused the "
            "argv; *startup-error*: ServerArgs' post-init raised, asserted or crashed in "
            "SGLang's own code; "
            "*oracle-error*: the stubs could not answer (no verdict, not compared). Gates: the "
            "communicators' own "
            "constructors, run for rank 0 of the TP group.",
            "",
            "| release | launches | ok | argparse-error | startup-error | oracle-error | gates |",
            "|---|---|---|---|---|---|---|",
            *rows,
            "",
        ]
    )
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--src-root", required=True, type=Path, help="one unpacked wheel per release folder"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=None, help="these releases only")
    parser.add_argument(
        "--python", default=sys.executable, help="interpreter with msgspec installed"
    )
    parser.add_argument(
        "--doc", type=Path, default=DEFAULT_DOC, help="where the result table is written"
    )
    parser.add_argument(
        "--doc-only", action="store_true", help="rewrite the table from OUT's data, run nothing"
    )
    parser.add_argument(
        "--checkpoint-only",
        action="store_true",
        help="run only the checkpoint launches after the grid, merged into OUT's files",
    )
    args = parser.parse_args(argv)
    if args.doc_only:
        return _doc_only(args.out, args.doc)
    todo = [(i, v, f) for i, (v, f) in enumerate(releases()) if not args.only or v in args.only]
    missing = [v for _, v, _ in todo if not (args.src_root / v / "sglang").is_dir()]
    if missing:
        print(
            f"error: no unpacked wheel for {', '.join(missing)} under {args.src_root} "
            "(hint: pip download --no-deps sglang==X, then unzip into DIR/X/)",
            file=sys.stderr,
        )
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    summary_path = args.out / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {"releases": {}}
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {
            pool.submit(
                run_release,
                args.python,
                args.src_root,
                i,
                v,
                f,
                _committed(args.out, v) if args.checkpoint_only else None,
            ): v
            for i, v, f in todo
        }
        for future in concurrent.futures.as_completed(futures):
            doc = future.result()
            write(args.out, doc)
            summary["releases"][doc["version"]] = summarize(doc)
            print(f"{doc['version']}: {summary['releases'][doc['version']]}", flush=True)
    summary["generated"] = datetime.date.today().isoformat()
    summary["releases"] = dict(sorted(summary["releases"].items(), key=lambda kv: _key(kv[0])))
    summary_path.write_text(json.dumps(summary, indent=1, sort_keys=False) + "\n")
    write_doc(summary, args.doc)
    return 0


def _committed(out: Path, version: str) -> dict[str, Any]:
    with gzip.open(out / f"sglang-{version}.json.gz", "rt", encoding="utf-8") as handle:
        doc: dict[str, Any] = json.load(handle)
    return doc


def _doc_only(out: Path, doc_path: Path) -> int:
    summary: dict[str, Any] = {"releases": {}}
    dates = (
        json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else {}
    )
    for path in out.glob("sglang-*.json.gz"):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            doc = json.load(handle)
        summary["releases"][doc["version"]] = summarize(doc)
    summary["releases"] = dict(sorted(summary["releases"].items(), key=lambda kv: _key(kv[0])))
    summary["generated"] = dates.get("generated") or datetime.date.today().isoformat()
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    write_doc(summary, doc_path)
    return 0


def _key(version: str) -> Any:
    from packaging.version import Version

    return Version(version)


if __name__ == "__main__":
    sys.exit(main())
