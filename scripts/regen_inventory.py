"""Every generated file of the repository, what it is generated from and by which script
(scripts/regen.py).

Two kinds. A wheel-derived item is read from release wheels (SGLang, ai-dynamo, aiconfigurator): it
is rebuilt only with a wheel cache, and offline its files are held to a recorded manifest
(scripts/regen_manifest.json: each file's sha256, its source wheel, and the sha256 of its
generator's sources) plus shape checks. An offline item is derived from committed files alone:
--check rebuilds it in memory or through its generator's own --check and compares.

The list is in build order: a later item reads what an earlier one writes.
"""

from __future__ import annotations

import ast
import glob
import hashlib
import os
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = os.path.join("scripts", "regen_manifest.json")


@dataclass(frozen=True)
class Item:
    name: str
    outputs: tuple[str, ...]  # glob patterns relative to the repository root
    generator: tuple[str, ...]  # the sources whose digest is the generator version (globs)
    wheels: str | None  # the wheel kind it is read from; None: from committed files only
    what: str


SGLANG_FLAGS = Item(
    "sglang-flags",
    ("rules/sglang/generated/sglang-*.json", "tests/data/sglang_real_parser_check.json"),
    (
        "scripts/extract_sglang_flags.py",
        "scripts/check_sglang_parser.py",
        "scripts/sglang_flags/*.py",
    ),
    "sglang",
    "each release's server flags, read from its wheel with ast, then compared with the parser "
    "SGLang builds from it, which also fills in the choices SGLang computes at run time "
    "(--write-choices)",
)
RELEASES = Item(
    "sglang-releases",
    ("rules/sglang/generated/releases.json",),
    ("scripts/extract_sglang_releases.py",),
    "sglang",
    "the releases and each one's FlashInfer pin (wheel METADATA Requires-Dist)",
)
DYNAMO_FLAGS = Item(
    "dynamo-flags",
    ("rules/sglang/generated/dynamo-*.json",),
    ("scripts/extract_dynamo_flags.py",),
    "ai_dynamo",
    "what Dynamo's SGLang worker takes from a command line, per ai-dynamo release",
)
MODEL_LISTS = Item(
    "sglang-model-lists",
    ("autoconf/generated/sglang-model-lists.yaml",),
    ("scripts/extract_sglang_model_lists.py",),
    "sglang",
    "the architecture lists of SGLang's default memory reserve, per release",
)
FUSION_AUTO_ON = Item(
    "sglang-fusion-auto-on",
    ("rules/knowledge/sglang_fusion_auto_on.yaml",),
    ("scripts/extract_sglang_fusion_auto_on.py",),
    "sglang",
    "rules: where each release turns FlashInfer allreduce fusion on by itself (the rule loader "
    "reads rules/knowledge/, so this generated rule file stays there)",
)
OP_TABLES = Item(
    "op-tables",
    ("autoconf/generated/op-tables/*.json.gz",),
    ("scripts/extract_op_tables.py",),
    "aic",
    "per-operation latency tables from NVIDIA's aiconfigurator/AISimulate wheels",
)
KERNEL_MATRIX = Item(
    "kernel-matrix",
    ("rules/sglang/generated/kernel-matrix.json",),
    ("scripts/extract_kernel_matrix.py", "scripts/kernel_matrix/*.py"),
    "sglang",
    "the SM architectures each op's kernels are built for, per release and the kernel wheels it "
    "pins (docs/kernel-matrix.md; the kernel wheels are downloaded beside the cache, about 11 GB)",
)
REAL_PARSERS = Item(
    "real-parsers",
    ("tests/data/real_parsers/*.json.xz",),
    ("scripts/dump_real_parsers.py", "scripts/sglang_flags/*.py"),
    "sglang",
    "SGLang's and Dynamo's own parsers and probe outcomes, recorded for the tests to replay",
)
ORACLE = Item(
    "sglang-oracle",
    ("tests/data/oracle/*.json.gz", "tests/data/oracle/*.json", "docs/sglang-oracle-results.md"),
    ("scripts/sglang_oracle/*.py", "scripts/sglang_oracle_regenerate.py"),
    "sglang",
    "SGLang's own verdicts on the launch grid and the decode kernel path each release picks",
)
PARSER_CHECK_PAGE = Item(
    "parser-check-page",
    ("docs/real-parser-check.md",),
    ("scripts/sglang_flags/check.py",),
    None,
    "the summary page of the parser check, rendered from its results",
)
VERSIONS_TABLE = Item(
    "versions-table",
    ("docs/sglang-versions.md",),
    ("scripts/regen_checks.py",),
    None,
    "the table of covered releases in docs/sglang-versions.md, from the flag data and the check "
    "results",
)
COMPILED = Item(
    "compiled-knowledge",
    ("topoctl/data/compiled/*.json",),
    ("scripts/compile_knowledge.py",),
    None,
    "the pre-parsed knowledge sections cold runs read",
)
SYNTHETIC = Item(
    "synthetic-captures",
    ("fixtures/*/capture.json",),
    ("scripts/make_synthetic_fixtures.py",),
    None,
    "the synthetic reference systems' probe captures, from their spec.json (real captures are "
    "inputs)",
)
SNAPSHOTS = Item(
    "fixture-snapshots",
    ("fixtures/*/snapshot.json",),
    ("scripts/build_fixture_snapshots.py",),
    None,
    "every reference system's snapshot, the probe replayed on its capture",
)
SNAPSHOT_FIELDS = Item(
    "snapshot-fields",
    ("docs/architecture.md",),
    ("scripts/snapshot_fields.py",),
    None,
    "the snapshot field table of docs/architecture.md, from the published schema",
)
PICTURES = Item(
    "pictures",
    ("docs/pictures/*.dot", "docs/pictures/*.svg"),
    ("scripts/draw_pictures.py",),
    None,
    "each reference system's topology picture (the .svg needs Graphviz to rebuild)",
)

WHEEL_ITEMS = (
    SGLANG_FLAGS,
    RELEASES,
    DYNAMO_FLAGS,
    MODEL_LISTS,
    FUSION_AUTO_ON,
    OP_TABLES,
    KERNEL_MATRIX,
    REAL_PARSERS,
    ORACLE,
)
OFFLINE_ITEMS = (
    PARSER_CHECK_PAGE,
    VERSIONS_TABLE,
    COMPILED,
    SYNTHETIC,
    SNAPSHOTS,
    SNAPSHOT_FIELDS,
    PICTURES,
)
ITEMS = WHEEL_ITEMS + OFFLINE_ITEMS


def files_of(item: Item) -> list[str]:
    """The item's files as committed, relative to the root, sorted."""
    found: set[str] = set()
    for pattern in item.outputs:
        found.update(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, pattern)))
    if item is SYNTHETIC:  # only the folders with a spec.json are synthetic
        found = {
            p for p in found if os.path.exists(os.path.join(ROOT, os.path.dirname(p), "spec.json"))
        }
    return sorted(found)


def sha256_file(path: str) -> str:
    with open(os.path.join(ROOT, path), "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def generator_digest(item: Item) -> str:
    """The generator version: one sha256 over the generator's source files, names included. A Python
    file counts by its syntax tree without docstrings, so comments, docstrings and formatting change
    nothing."""
    digest = hashlib.sha256()
    paths = sorted(
        {os.path.relpath(p, ROOT) for g in item.generator for p in glob.glob(os.path.join(ROOT, g))}
    )
    for path in paths:
        digest.update(path.encode() + b"\0")
        with open(os.path.join(ROOT, path), "rb") as handle:
            data = handle.read()
        digest.update(hashlib.sha256(_code_of(data) if path.endswith(".py") else data).digest())
    return digest.hexdigest()


def _code_of(source: bytes) -> bytes:
    """The syntax tree of a Python source, its docstrings left out, as bytes."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, include_attributes=False).encode()


def by_name(names: list[str]) -> list[Item]:
    known = {item.name: item for item in ITEMS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown item(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return [item for item in ITEMS if item.name in names]
