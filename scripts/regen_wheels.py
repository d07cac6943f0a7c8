"""The wheel half of scripts/regen.py: find or download the wheels, run each wheel-derived item's
generator, and record the manifest.

A wheel cache is one folder (searched recursively) holding sglang-<v>-*.whl, ai_dynamo-<v>-*.whl and
the aiconfigurator-core / AISimulate wheels, as `pip download --no-deps NAME==X -d DIR` leaves them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from regen_checks import load_manifest
from regen_inventory import (
    DYNAMO_FLAGS,
    FUSION_AUTO_ON,
    KERNEL_MATRIX,
    MANIFEST,
    MODEL_LISTS,
    OP_TABLES,
    ORACLE,
    REAL_PARSERS,
    RELEASES,
    ROOT,
    SGLANG_FLAGS,
    Item,
    files_of,
    generator_digest,
    sha256_file,
)

from topoctl.core.pep440 import Version

PY = sys.executable


@dataclass
class Cache:
    """The wheels of one cache folder by kind, oldest first, and the scratch folder unpacked sources
    go in."""

    sglang: list[Path] = field(default_factory=list)
    dynamo: list[Path] = field(default_factory=list)
    aic: list[Path] = field(default_factory=list)
    scratch: Path = Path(tempfile.gettempdir())
    new: list[str] = field(
        default_factory=list
    )  # --release: the per-release runs that are slow do only these
    older: list[Path] = field(
        default_factory=list
    )  # releases before the flag data's first, read by the oracle only
    _src: Path | None = None

    def src_root(self) -> Path:
        """The SGLang wheels unpacked, one folder a release (the layout scripts/grep_releases.py
        reads)."""
        if self._src is None:
            self._src = self.scratch / "sglang-src"
            for wheel in self.sglang:
                target = self._src / version_of(wheel)
                if not target.exists():
                    with zipfile.ZipFile(wheel) as archive:
                        archive.extractall(target)
        return self._src

    def oracle_root(self) -> Path:
        """src_root plus the older releases the kernel-path oracle cites (0.5.1.post3)."""
        out = self.scratch / "sglang-oracle"
        out.mkdir(parents=True, exist_ok=True)
        for folder in self.src_root().iterdir():
            if not (out / folder.name).exists():
                (out / folder.name).symlink_to(folder)
        for wheel in self.older:
            if not (out / version_of(wheel)).exists():
                with zipfile.ZipFile(wheel) as archive:
                    archive.extractall(out / version_of(wheel))
        return out

    def finals_root(self) -> Path:
        """src_root without the pre-releases (0.5.10rc0): the fusion rules scope releases, as
        releases.json does."""
        out = self.scratch / "sglang-finals"
        out.mkdir(parents=True, exist_ok=True)
        for folder in self.src_root().iterdir():
            if not Version(folder.name).is_prerelease and not (out / folder.name).exists():
                (out / folder.name).symlink_to(folder)
        return out

    def need(self, wheels: list[Path], kind: str) -> list[Path]:
        if not wheels:
            raise SystemExit(f"no {kind} wheel in the cache: add them, or rebuild with --download")
        return wheels

    def folder(self, wheels: list[Path], name: str) -> Path:
        """One flat folder of links to these wheels, for the generators that take a folder."""
        out = self.scratch / name
        out.mkdir(parents=True, exist_ok=True)
        for wheel in wheels:
            link = out / wheel.name
            if not link.exists():
                link.symlink_to(wheel.resolve())
        return out


def version_of(wheel: Path) -> str:
    return wheel.name.split("-")[1]


def find_wheels(folder: Path, scratch: Path, first: str) -> Cache:
    """The cache's wheels; SGLang releases before `first` (the flag data's oldest) go to the oracle
    only."""
    found = sorted(folder.rglob("*.whl"))
    by_version = lambda paths: sorted(paths, key=lambda p: Version(version_of(p)))  # noqa: E731
    newest: dict[str, Path] = {}
    for wheel in found:  # one wheel a release: the same release twice (two platforms) is read once
        if wheel.name.startswith("sglang-"):
            newest.setdefault(version_of(wheel), wheel)
    sglang = by_version(list(newest.values()))
    return Cache(
        sglang=[w for w in sglang if Version(version_of(w)) >= Version(first)],
        older=[w for w in sglang if Version(version_of(w)) < Version(first)],
        dynamo=by_version([w for w in found if w.name.startswith("ai_dynamo-")]),
        aic=[w for w in found if w.name.startswith(("aiconfigurator_core-", "aisimulate-"))],
        scratch=scratch,
    )


def download(folder: Path, sglang: list[str], dynamo: list[str]) -> None:
    """pip download --no-deps each release not in the cache yet."""
    have = {w.name.split("-")[0] + "==" + version_of(w) for w in folder.rglob("*.whl")}
    wanted = [f"sglang=={v}" for v in sglang] + [f"ai-dynamo=={v}" for v in dynamo]
    for spec in wanted:
        if spec.replace("ai-dynamo", "ai_dynamo") in have:
            continue
        cmd = [
            PY,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "-q",
            "-d",
            str(folder),
            spec,
        ]
        if subprocess.run(cmd).returncode != 0:
            raise SystemExit(f"pip download {spec} failed")


def _run(argv: list[str]) -> None:
    print("  $ " + " ".join(argv[1:] if argv[0] == PY else argv), flush=True)
    if subprocess.run(argv, cwd=ROOT).returncode != 0:
        raise SystemExit(f"failed: {' '.join(argv)}")


def _wheel_args(wheels: list[Path]) -> list[str]:
    return [arg for w in wheels for arg in ("--wheel", str(w))]


BUILDERS: dict[str, Callable[[Cache], None]] = {
    SGLANG_FLAGS.name: lambda c: build_flags(c),
    RELEASES.name: lambda c: _run([PY, "scripts/extract_sglang_releases.py", *map(str, c.sglang)]),
    DYNAMO_FLAGS.name: lambda c: _run(
        [PY, "scripts/extract_dynamo_flags.py", *_wheel_args(c.need(c.dynamo, "ai_dynamo"))]
    ),
    MODEL_LISTS.name: lambda c: _run(
        [
            PY,
            "scripts/extract_sglang_model_lists.py",
            str(c.src_root()),
            "-o",
            "autoconf/generated/sglang-model-lists.yaml",
        ]
    ),
    FUSION_AUTO_ON.name: lambda c: _run(
        [
            PY,
            "scripts/extract_sglang_fusion_auto_on.py",
            str(c.finals_root()),
            "-o",
            "rules/knowledge/sglang_fusion_auto_on.yaml",
        ]
    ),
    OP_TABLES.name: lambda c: _run(
        [
            PY,
            "scripts/extract_op_tables.py",
            "--wheels",
            str(c.folder(c.need(c.aic, "aiconfigurator_core/aisimulate"), "aic")),
        ]
    ),
    KERNEL_MATRIX.name: lambda c: _run(
        [
            PY,
            "scripts/extract_kernel_matrix.py",
            "--download",
            "--sglang-wheels",
            str(c.folder(c.sglang, "sglang")),
            "--wheels",
            str(c.scratch / "kernel-wheels"),
        ]
    ),
    REAL_PARSERS.name: lambda c: build_recordings(c),
    ORACLE.name: lambda c: build_oracle(c),
}


def build_flags(cache: Cache) -> None:
    # The extraction leaves the choices SGLang computes at run time unresolved; its own parser fills
    # them in.
    _run([PY, "scripts/extract_sglang_flags.py", *_wheel_args(cache.sglang)])
    _run(
        [
            PY,
            "scripts/check_sglang_parser.py",
            "--src-root",
            str(cache.src_root()),
            "--write-choices",
        ]
    )


def build_recordings(cache: Cache) -> None:
    argv = [
        PY,
        "scripts/dump_real_parsers.py",
        "--sglang-wheels",
        str(cache.folder(cache.sglang, "sglang")),
    ]
    if cache.dynamo:
        argv += ["--dynamo-wheels", str(cache.folder(cache.dynamo, "dynamo"))]
    # an SGLang release changes no Dynamo recording: dynamo-probes.json.xz is kept as committed
    else:
        print(
            "  no ai_dynamo wheel in the cache: tests/data/real_parsers/dynamo-probes.json.xz "
            "kept as committed"
        )
        argv += ["--only", "sglang-parsers,sglang-config,sglang-memory"]
    _run(argv)


def build_oracle(cache: Cache) -> None:
    # The launch grid takes about 38 minutes for every release: with --release only the new ones run
    # (merged).
    only = ["--only", *cache.new] if cache.new else []
    _run([PY, "scripts/sglang_oracle_regenerate.py", "--src-root", str(cache.src_root()), *only])
    _run([PY, "scripts/sglang_oracle/kernel_paths.py", "--src-root", str(cache.oracle_root())])


def source_of(item: Item, path: str, cache: Cache | None) -> str:
    """The wheel(s) a file was read from: the file's own record where it keeps one, else the
    cache's."""
    if path.startswith("rules/sglang/generated/") and item in (SGLANG_FLAGS, DYNAMO_FLAGS):
        with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
            source = json.load(handle)["source"]
        return f"{source['wheel']} sha256:{source['sha256']}"
    if cache is None:
        return "not recorded (manifest taken from the committed file)"
    wheels = (
        cache.aic
        if item is OP_TABLES
        else cache.sglang + (cache.dynamo if item is REAL_PARSERS else [])
    )
    return f"{len(wheels)} wheels: {wheels[0].name} .. {wheels[-1].name}" if wheels else "no wheel"


def record(items: list[Item], cache: Cache | None) -> None:
    """Write each item's files, sha256s, sources and generator digest into the manifest."""
    manifest = load_manifest()
    for item in items:
        manifest["files"] = {p: e for p, e in manifest["files"].items() if e["item"] != item.name}
        manifest["items"][item.name] = {
            "generator": list(item.generator),
            "generator_sha256": generator_digest(item),
            "rebuilt_from_wheels": cache is not None,
        }
        for path in files_of(item):
            manifest["files"][path] = {
                "item": item.name,
                "sha256": sha256_file(path),
                "source": source_of(item, path, cache),
            }
    manifest["files"] = dict(sorted(manifest["files"].items()))
    manifest["items"] = dict(sorted(manifest["items"].items()))
    with open(os.path.join(ROOT, MANIFEST), "w", encoding="utf-8") as handle:
        handle.write(json.dumps(manifest, indent=1) + "\n")
