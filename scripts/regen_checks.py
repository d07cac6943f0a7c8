"""The offline half of scripts/regen.py: what can be proved about every generated file without a
wheel.

* wheel-derived files: each one's sha256 and its generator's digest against scripts/regen_manifest.json (a
  hand edit, a file nobody recorded, or an extractor changed without a rebuild fails), and their shape and
  internal consistency (file name and recorded version agree, counts match, the release list, the flag
  data, the parser check, the recordings and the oracle name the same releases);
* files derived from committed inputs: rebuilt and compared (compiled knowledge, fixtures, docs tables).
Each check returns a list of problems, empty when it holds.
"""

from __future__ import annotations

import gzip
import json
import lzma
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from regen_inventory import (
    MANIFEST,
    ROOT,
    WHEEL_ITEMS,
    Item,
    files_of,
    generator_digest,
    sha256_file,
)

from topoctl.core.pep440 import Version

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE_NOTE = "<!-- the table below is generated from the data files and the check results"


def load_manifest() -> dict[str, Any]:
    path = os.path.join(ROOT, MANIFEST)
    if not os.path.exists(path):
        return {"items": {}, "files": {}}
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def check_manifest(items: tuple[Item, ...] = WHEEL_ITEMS) -> list[str]:
    manifest = load_manifest()
    problems = []
    for item in items:
        recorded = manifest["items"].get(item.name)
        if recorded is None:
            problems.append(f"{item.name}: not in {MANIFEST}")
            continue
        if recorded["generator_sha256"] != generator_digest(item):
            problems.append(
                f"{item.name}: its generator ({', '.join(item.generator)}) changed since its "
                "files were "
                "built; rebuild them: scripts/regen.py --wheels DIR --only " + item.name
            )
        listed = {p for p, entry in manifest["files"].items() if entry["item"] == item.name}
        present = set(files_of(item))
        problems += [f"{p}: generated file missing" for p in sorted(listed - present)]
        problems += [
            f"{p}: not in {MANIFEST} (not built by scripts/regen.py)"
            for p in sorted(present - listed)
        ]
        problems += [
            f"{p}: differs from what {item.name} built (sha256); edited by hand?"
            for p in sorted(present & listed)
            if sha256_file(p) != manifest["files"][p]["sha256"]
        ]
    return problems


def _json(path: str) -> Any:
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        return json.load(handle)


def flag_versions() -> list[str]:
    names = os.listdir(os.path.join(ROOT, "rules", "sglang", "generated"))
    found = [m.group(1) for m in map(re.compile(r"^sglang-(.+)\.json$").match, names) if m]
    return sorted(found, key=Version)


def release_rows() -> list[dict[str, Any]]:
    return list(_json("rules/sglang/generated/releases.json")["releases"])


def check_flag_files() -> list[str]:
    problems = []
    for version in flag_versions():
        path = f"rules/sglang/generated/sglang-{version}.json"
        doc = _json(path)
        source = doc.get("source", {})
        if doc.get("sglang_version") != version:
            problems.append(f"{path}: records version {doc.get('sglang_version')}")
        if doc.get("flag_count") != len(doc.get("flags", {})):
            problems.append(
                f"{path}: flag_count {doc.get('flag_count')} but {len(doc.get('flags', {}))} flags"
            )
        if not str(source.get("wheel", "")).startswith(f"sglang-{version}-"):
            problems.append(f"{path}: source wheel {source.get('wheel')} is not {version}'s")
        if not re.fullmatch(r"[0-9a-f]{64}", str(source.get("sha256", ""))):
            problems.append(f"{path}: no wheel sha256")
    finals = [v for v in flag_versions() if not Version(v).is_prerelease]
    listed = [row["version"] for row in release_rows()]
    if finals != listed:
        problems.append(
            f"releases.json lists {listed[-1:]}.. but the flag data's releases are {finals[-1:]}.."
        )
    problems += [
        f"releases.json: {row['version']} has no FlashInfer pin"
        for row in release_rows()
        if not row.get("flashinfer")
    ]
    return problems


def check_dynamo_files() -> list[str]:
    problems = []
    folder = os.path.join(ROOT, "rules", "sglang", "generated")
    for name in sorted(os.listdir(folder)):
        m = re.match(r"^dynamo-(.+)\.json$", name)
        if not m:
            continue
        doc = _json(f"rules/sglang/generated/{name}")
        if doc.get("ai_dynamo_version") != m.group(1) or not doc["source"]["wheel"].startswith(
            f"ai_dynamo-{m.group(1)}-"
        ):
            problems.append(
                f"rules/sglang/generated/{name}: version or source wheel disagrees with its name"
            )
    return problems


def check_release_coverage() -> list[str]:
    """The generated files read from every release's source all name the newest release as their
    last."""
    newest = release_rows()[-1]["version"]
    problems = []
    for path in (
        "autoconf/generated/sglang-model-lists.yaml",
        "rules/knowledge/sglang_fusion_auto_on.yaml",
    ):
        with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
            header = handle.readline()
        m = re.search(r"wheels (\S+)\.\.(\S+?);", header)
        if not m or m.group(2) != newest:
            problems.append(
                f"{path}: read from releases {m.groups() if m else '?'}, not through {newest}"
            )
    check = _json("tests/data/sglang_real_parser_check.json")
    by_version = {r["version"]: r for r in check["results"]}
    if sorted(by_version, key=Version) != flag_versions():
        problems.append(
            "tests/data/sglang_real_parser_check.json does not cover exactly the flag data's "
            "versions"
        )
    for version in flag_versions():
        sha = _json(f"rules/sglang/generated/sglang-{version}.json")["source"]["sha256"]
        if version in by_version and by_version[version]["wheel_sha256"] != sha:
            problems.append(f"parser check of {version} ran on another wheel than the flag data")
    oracle = {
        n[len("sglang-") : -len(".json.gz")]
        for n in os.listdir(os.path.join(ROOT, "tests", "data", "oracle"))
        if n.startswith("sglang-")
    }
    problems += [
        f"tests/data/oracle: no SGLang verdicts for {r['version']}"
        for r in release_rows()
        if r["version"] not in oracle
    ]
    return problems


def check_compressed() -> list[str]:
    """Every op table and recording decompresses to JSON of its format."""
    problems = []
    for path in sorted(Path(ROOT, "autoconf", "generated", "op-tables").glob("*.json.gz")):
        doc = json.loads(gzip.decompress(path.read_bytes()))
        tables = doc.get("tables", {})
        if doc.get("format") != "topoctl-op-tables/1" or not doc.get("wheels") or not tables:
            problems.append(
                f"{path.relative_to(ROOT)}: not a topoctl-op-tables/1 document with its wheels"
            )
        problems += [
            f"{path.relative_to(ROOT)}: table {name} has no sources or no rows"
            for name, table in tables.items()
            if not table.get("sources") or not table.get("rows")
        ]
    for path in sorted(Path(ROOT, "tests", "data", "real_parsers").glob("*.json.xz")):
        try:
            json.loads(lzma.decompress(path.read_bytes()))
        except (lzma.LZMAError, ValueError) as exc:
            problems.append(f"{path.relative_to(ROOT)}: {exc}")
    return problems


def versions_table() -> list[str]:
    """The covered-releases table of docs/sglang-versions.md, one row a flag data file."""
    check = {r["version"]: r for r in _json("tests/data/sglang_real_parser_check.json")["results"]}
    rows = [
        "| version | flags | deprecated | fields compared with SGLang's parser | disagreements | "
        "wheel |",
        "|---|---|---|---|---|---|",
    ]
    for version in flag_versions():
        doc = _json(f"rules/sglang/generated/sglang-{version}.json")
        deprecated = sum(1 for flag in doc["flags"].values() if flag.get("deprecated"))
        result = check.get(version, {})
        rows.append(
            f"| {version} | {doc['flag_count']} | {deprecated} | "
            f"{result.get('compared_fields', '?')} | {len(result.get('disagreements', ['?']))} | "
            f"{doc['source']['wheel']} |"
        )
    return rows


def replace_versions_table(text: str) -> str:
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(TABLE_NOTE))
    begin = next(i for i in range(start, len(lines)) if lines[i].startswith("| version |"))
    end = next((i for i in range(begin, len(lines)) if not lines[i].startswith("|")), len(lines))
    return "\n".join(lines[:begin] + versions_table() + lines[end:])


def check_docs_tables() -> list[str]:
    sys.path.insert(0, HERE)
    from sglang_flags.check import render_md

    problems = []
    page = Path(ROOT, "docs", "sglang-versions.md").read_text(encoding="utf-8")
    if replace_versions_table(page) != page:
        problems.append(
            "docs/sglang-versions.md: the covered-releases table differs from the data "
            "(scripts/regen.py)"
        )
    results = _json("tests/data/sglang_real_parser_check.json")["results"]
    if Path(ROOT, "docs", "real-parser-check.md").read_text(encoding="utf-8") != render_md(results):
        problems.append(
            "docs/real-parser-check.md differs from tests/data/sglang_real_parser_check.json"
        )
    return problems


# The offline generators' own --check modes, each exit 1 when its files are stale.
SCRIPT_CHECKS = (
    ("compiled-knowledge", ["scripts/compile_knowledge.py", "--check"]),
    ("synthetic-captures", ["scripts/make_synthetic_fixtures.py", "--check"]),
    ("fixture-snapshots", ["scripts/build_fixture_snapshots.py", "--check"]),
    ("snapshot-fields", ["scripts/snapshot_fields.py", "--check"]),
    ("pictures", ["scripts/draw_pictures.py", "--check"]),
)


def check_scripts(names: set[str]) -> list[str]:
    problems = []
    for name, argv in SCRIPT_CHECKS:
        if name not in names:
            continue
        proc = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0:
            problems.append(
                f"{name}: {' '.join(argv)} exit {proc.returncode}: "
                f"{(proc.stderr or proc.stdout)[-600:]}"
            )
    return problems
