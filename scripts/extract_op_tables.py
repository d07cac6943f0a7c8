#!/usr/bin/env python3
"""Extract the per-operation latency tables a decode step needs from NVIDIA's aiconfigurator/AISimulate wheels.

The wheels (Apache-2.0) ship parquet tables measured per GPU system under
``<pkg>/systems/data/<system>/<op>/<framework>/<version>/``.  This script reads them straight out of
the wheel files in a cache folder (``pip download --no-deps ... -d DIR``) and writes one gzipped JSON
per system to ``autoconf/generated/op-tables/``: SGLang rows only (the newest SGLang release that
measured each curve), NCCL rows (the newest NCCL release that measured each curve), batch 1..512.
Every table lists its sources (wheel, path inside the wheel, framework version, collector ref, dates)
and every row points at one of them.

    python scripts/extract_op_tables.py --wheels /tmp/wheels/aic            # write
    python scripts/extract_op_tables.py --wheels /tmp/wheels/aic --check    # compare with committed files

Needs pyarrow and pyyaml (script only; the reader autoconf/op_tables.py needs neither pyarrow nor this).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import math
import re
import sys
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "topoctl-op-tables/1"
MAX_TOKENS = 512  # a decode step of batch 1..512 runs GEMM/MoE at M = batch tokens
MAX_MOE_GPUS = 8  # moe_tp_size * moe_ep_size inside one 8-GPU node
# AISimulate prices MoE with power_law alpha 1.01 (sdk/config.py:122, sdk/models/deepseek.py:234);
# balanced is the floor.
MOE_DISTRIBUTIONS = ("balanced", "power_law_1.01")
ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "autoconf" / "generated" / "op-tables"


@dataclass(frozen=True)
class WheelSpec:
    dist: str
    version: str
    filename: str
    data_prefix: str
    priority: int  # lower wins when two wheels hold the same file at the same framework version


# The AISimulate dev build is newer than aiconfigurator-core 0.12.0 and holds every sglang/nccl file
# of it (some re-collected), so it wins ties; byte-identical copies in the release are listed as
# also_in.
WHEELS = (
    WheelSpec(
        "aisimulate",
        "0.13.0.dev202610270000000085",
        "aisimulate-0.13.0.dev202610270000000085-cp311-abi3-manylinux_2_28_x86_64.whl",
        "aisimulate_core/systems/data/",
        0,
    ),
    WheelSpec(
        "aiconfigurator-core",
        "0.12.0",
        "aiconfigurator_core-0.12.0-cp311-abi3-manylinux_2_28_x86_64.whl",
        "aiconfigurator_core/systems/data/",
        1,
    ),
)

Row = dict[str, Any]
BYTES_PER_ELEMENT = {
    "half": 2,
    "bfloat16": 2,
    "float16": 2,
    "fp16": 2,
    "int8": 1,
    "fp8": 1,
    "float32": 4,
}


@dataclass(frozen=True)
class TableSpec:
    name: str
    op_dir: str  # path part after the system: e.g. "gemm"
    framework: str  # "sglang" or "nccl"
    filename: str
    keys: tuple[str, ...]  # matched exactly by the reader
    axes: tuple[str, ...]  # interpolated by the reader; the last one is the swept axis of a curve
    info: tuple[str, ...] = ()  # kept per row, not used to match
    derive: Callable[[Row], Row] = field(default=lambda r: r)
    defaults: tuple[
        tuple[str, Any], ...
    ] = ()  # columns older files lack, with the value their loader assumed
    accept: Callable[[Row], bool] = field(default=lambda r: True)  # raw-row filter, before derive
    keep: Callable[[Row], bool] = field(default=lambda r: True)


def _kv_len(r: Row) -> Row:
    # Decode rows carry isl (prompt, 1 here) and step (tokens generated); the KV length attended is
    # isl + step.
    return {**r, "kv_len": int(r["isl"]) + int(r["step"])}


def _message_bytes(dtype_col: str) -> Callable[[Row], Row]:
    def derive(r: Row) -> Row:
        # Upstream message_size counts elements (aisimulate_core/sdk/perf_database.py:30-31).
        return {**r, "message_bytes": int(r["message_size"]) * BYTES_PER_ELEMENT[str(r[dtype_col])]}

    return derive


TABLES = (
    TableSpec(
        "gemm",
        "gemm",
        "sglang",
        "gemm_perf.parquet",
        keys=("gemm_dtype",),
        axes=("n", "k", "m"),
        info=("kernel_source",),
        keep=lambda r: r["m"] <= MAX_TOKENS,
    ),
    TableSpec(
        "attention_generation",
        "attention",
        "sglang",
        "generation_attention_perf.parquet",
        # kernel_source is a key: on Blackwell the same point was measured with flashinfer and
        # trtllm_mha.
        keys=(
            "kernel_source",
            "attn_dtype",
            "kv_cache_dtype",
            "num_key_value_heads",
            "head_dim",
            "window_size",
        ),
        axes=("num_heads", "batch_size", "kv_len"),
        derive=_kv_len,
        keep=lambda r: r["batch_size"] <= MAX_TOKENS,
        # aiconfigurator 0.4.0 sdk/perf_database.py:514-516 reads a missing window_size as 0 (full
        # attention).
        defaults=(("window_size", 0),),
    ),
    TableSpec(
        "mla_generation",
        "mla",
        "sglang",
        "generation_mla_perf.parquet",
        keys=("kernel_source", "mla_dtype", "kv_cache_dtype"),
        axes=("num_heads", "batch_size", "kv_len"),
        info=("tp_size",),
        derive=_kv_len,
        keep=lambda r: r["batch_size"] <= MAX_TOKENS,
    ),
    TableSpec(
        "mla_bmm",
        "mla_bmm",
        "sglang",
        "mla_bmm_perf.parquet",
        keys=("op_name", "bmm_dtype"),
        axes=("num_heads", "num_tokens"),
        info=("kernel_source",),
        keep=lambda r: r["num_tokens"] <= MAX_TOKENS,
    ),
    TableSpec(
        "moe",
        "moe",
        "sglang",
        "moe_perf.parquet",
        # kernel_source is a key: triton, flashinfer and marlin runners were measured on the same
        # shapes.
        keys=(
            "kernel_source",
            "moe_dtype",
            "distribution",
            "num_experts",
            "topk",
            "moe_tp_size",
            "moe_ep_size",
        ),
        axes=("hidden_size", "inter_size", "num_tokens"),
        keep=lambda r: (
            r["num_tokens"] <= MAX_TOKENS
            and r["moe_tp_size"] * r["moe_ep_size"] <= MAX_MOE_GPUS
            and r["distribution"] in MOE_DISTRIBUTIONS
        ),
    ),
    TableSpec(
        "custom_allreduce",
        "comm",
        "sglang",
        "custom_allreduce_perf.parquet",
        keys=("backend", "allreduce_dtype", "num_gpus"),
        axes=("message_bytes",),
        info=("kernel_source",),
        derive=_message_bytes("allreduce_dtype"),
        # Some sglang/ folders (0.5.6.post2, l40s 0.5.9) hold TRT-LLM kernel rows; only SGLang's own
        # kernel counts here.
        accept=lambda r: str(r.get("kernel_source", "")).startswith("SGLang_CustomAllReduce"),
    ),
    TableSpec(
        "nccl",
        "comm",
        "nccl",
        "nccl_perf.parquet",
        # kernel_source is a key: "NCCL" rows (nccl-tests style, TRT-LLM image) and eager
        # "torch.distributed.nccl.all_reduce" rows (2.30.7) measure different things.
        keys=("op_name", "nccl_dtype", "kernel_source", "num_gpus"),
        axes=("message_bytes",),
        derive=_message_bytes("nccl_dtype"),
    ),
)


@dataclass(frozen=True)
class Candidate:
    wheel: WheelSpec
    system: str
    version: str
    member: str  # path of the parquet inside the wheel


def version_key(text: str) -> tuple[int, ...] | None:
    """Release versions only (0.5.14, 0.5.6.post2, 2.29.2); dev-<sha> drops are not releases."""
    m = re.fullmatch(r"(\d+(?:\.\d+)*)(?:\.post(\d+))?", text)
    if not m:
        return None
    return tuple(int(p) for p in m.group(1).split(".")) + (int(m.group(2) or 0),)


def find_wheels(folder: Path) -> list[tuple[WheelSpec, zipfile.ZipFile, str]]:
    found = []
    for spec in WHEELS:
        path = folder / spec.filename
        if not path.is_file():
            sys.exit(
                f"missing {path}: pip download --no-deps --pre {spec.dist}=={spec.version} -d "
                f"{folder}"
            )
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        found.append((spec, zipfile.ZipFile(path), sha))
    return found


def candidates(
    wheels: list[tuple[WheelSpec, zipfile.ZipFile, str]], table: TableSpec
) -> dict[str, list[Candidate]]:
    out: dict[str, list[Candidate]] = {}
    for spec, zf, _ in wheels:
        for member in zf.namelist():
            if not member.startswith(spec.data_prefix) or not member.endswith("/" + table.filename):
                continue
            parts = member[len(spec.data_prefix) :].split("/")
            # <system>/<op_dir...>/<framework>/<version>/<file>
            system, version, framework = parts[0], parts[-2], parts[-3]
            if (
                "/".join(parts[1:-3]) != table.op_dir
                or framework != table.framework
                or version_key(version) is None
            ):
                continue
            out.setdefault(system, []).append(Candidate(spec, system, version, member))
    return out


def read_parquet(zf: zipfile.ZipFile, member: str) -> list[Row]:
    import pyarrow.parquet as pq  # script-only dependency

    return list(pq.read_table(io.BytesIO(zf.read(member))).to_pylist())


def read_meta(zf: zipfile.ZipFile, member: str, table_name: str) -> dict[str, Any]:
    import yaml

    meta_path = member.rsplit("/", 1)[0] + "/collection_meta.yaml"
    if meta_path not in zf.namelist():
        return {"collection_meta": None}
    meta = yaml.safe_load(zf.read(meta_path)) or {}
    runtime = meta.get("runtime") or {}
    entry = (meta.get("tables") or {}).get(table_name) or {}
    collections = [entry, *(entry.get("collections") or [])]
    dates = sorted({str(c["collected_at"]) for c in collections if c.get("collected_at")})
    refs = sorted({str(c["collector_ref"]) for c in collections if c.get("collector_ref")})
    return {
        "collection_meta": meta_path,
        "meta_provenance": meta.get("provenance"),
        "runtime_image": runtime.get("image"),
        "runtime_source_commit": runtime.get("source_commit"),
        "collector_refs": refs,
        "collected_at": dates,
        "table_status": entry.get("status"),
    }


def rank(c: Candidate) -> tuple[tuple[int, ...], int]:
    key = version_key(c.version)
    assert key is not None
    return key, -c.wheel.priority


def curve_key(table: TableSpec, row: Row) -> tuple[Any, ...]:
    return tuple(row[c] for c in table.keys + table.axes[:-1])


def usable_rows(table: TableSpec, raw: Iterable[Row]) -> tuple[list[Row], int, int]:
    """Measured rows in scope, the count of unmeasured rows, and the count of repeated grid points
    dropped.

    A repeated point keeps its first row, as aiconfigurator's own loaders did
    (aiconfigurator 0.4.0 sdk/perf_database.py:257-264, 295-299, 336-340).
    """
    rows, dropped, seen, repeats = [], 0, set(), 0
    for r in raw:
        lat = r.get("latency")
        if lat is None or not math.isfinite(float(lat)) or float(lat) <= 0.0:
            dropped += 1  # unmeasured (zero or NaN) rows carry no latency
            continue
        if not table.accept(r):
            continue
        r = table.derive({**dict(table.defaults), **r})
        missing = [c for c in table.keys + table.axes + table.info if c not in r]
        if missing:
            raise KeyError(f"{table.name}: row lacks {missing}: {sorted(r)}")
        if not table.keep(r):
            continue
        point = tuple(r[c] for c in table.keys + table.axes)
        if point in seen:
            repeats += 1
            continue
        seen.add(point)
        rows.append(r)
    return rows, dropped, repeats


def extract_table(
    table: TableSpec, cands: list[Candidate], zips: dict[str, zipfile.ZipFile]
) -> dict[str, Any] | None:
    """Each curve (keys + all axes but the last) comes whole from the newest release that measured
    it."""
    chosen: dict[tuple[Any, ...], Candidate] = {}
    loaded: dict[str, tuple[list[Row], int, int]] = {}
    digests: dict[str, str] = {}
    for cand in sorted(cands, key=rank, reverse=True):
        data = zips[cand.wheel.dist].read(cand.member)
        digests[cand.wheel.dist + ":" + cand.member] = hashlib.sha256(data).hexdigest()
        loaded[cand.wheel.dist + ":" + cand.member] = usable_rows(
            table, read_parquet(zips[cand.wheel.dist], cand.member)
        )
        for r in loaded[cand.wheel.dist + ":" + cand.member][0]:
            chosen.setdefault(curve_key(table, r), cand)
    used = sorted({c for c in chosen.values()}, key=lambda c: (c.version, c.wheel.dist, c.member))
    if not used:
        return None
    sources, index = [], {}
    for i, cand in enumerate(used):
        ident = cand.wheel.dist + ":" + cand.member
        index[ident] = i
        also = [
            {"wheel": o.wheel.dist, "wheel_version": o.wheel.version, "path": o.member}
            for o in cands
            if o is not cand
            and o.version == cand.version
            and digests[o.wheel.dist + ":" + o.member] == digests[ident]
        ]
        sources.append(
            {
                "wheel": cand.wheel.dist,
                "wheel_version": cand.wheel.version,
                "path": cand.member,
                "framework": table.framework,
                "framework_version": cand.version,
                "parquet_sha256": digests[ident],
                "dropped_unmeasured_rows": loaded[ident][1],
                "dropped_repeated_points": loaded[ident][2],
                **read_meta(
                    zips[cand.wheel.dist], cand.member, table.filename.removesuffix(".parquet")
                ),
                "also_in": also,
            }
        )
    columns = [*table.keys, *table.axes, *table.info, "latency_us", "src"]
    rows = []
    for cand in used:
        ident = cand.wheel.dist + ":" + cand.member
        for r in loaded[ident][0]:
            if chosen[curve_key(table, r)] is cand:
                lat_us = round(float(r["latency"]) * 1000.0, 3)  # upstream latency is in ms
                rows.append(
                    [*(r[c] for c in table.keys + table.axes + table.info), lat_us, index[ident]]
                )
    rows.sort(
        key=lambda row: [(0, v, "") if isinstance(v, int | float) else (1, 0, str(v)) for v in row]
    )
    devices = sorted(
        {str(r["device"]) for ident in index for r in loaded[ident][0] if r.get("device")}
    )
    return {
        "columns": columns,
        "keys": list(table.keys),
        "axes": list(table.axes),
        "devices": devices,
        "sources": sources,
        "rows": rows,
    }


def build(wheel_dir: Path) -> dict[str, bytes]:
    wheels = find_wheels(wheel_dir)
    zips = {spec.dist: zf for spec, zf, _ in wheels}
    per_system: dict[str, dict[str, Any]] = {}
    for table in TABLES:
        for system, cands in sorted(candidates(wheels, table).items()):
            extracted = extract_table(table, cands, zips)
            if extracted is not None:
                per_system.setdefault(system, {})[table.name] = extracted
    header_wheels = [
        {"wheel": s.dist, "version": s.version, "file": s.filename, "sha256": sha}
        for s, _, sha in wheels
    ]
    out = {}
    for system, tables in sorted(per_system.items()):
        doc = {
            "format": FORMAT,
            "system": system,
            "latency_unit": "us",
            "generated_by": "scripts/extract_op_tables.py",
            "license": "Apache-2.0 (NVIDIA aiconfigurator-core / AISimulate wheels); figures "
            "extracted, not copied code",
            "scope": {
                "max_tokens": MAX_TOKENS,
                "max_moe_gpus": MAX_MOE_GPUS,
                "frameworks": ["sglang", "nccl"],
            },
            "wheels": header_wheels,
            "tables": dict(sorted(tables.items())),
        }
        out[f"{system}.json.gz"] = (
            json.dumps(doc, sort_keys=False, separators=(",", ":")) + "\n"
        ).encode()
    return out


def gzip_bytes(raw: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(raw)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--wheels",
        type=Path,
        default=Path("/tmp/wheels/aic"),
        help="folder holding the downloaded wheels",
    )
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    ap.add_argument(
        "--check", action="store_true", help="verify the files in --out equal what the wheels give"
    )
    args = ap.parse_args(argv)
    files = build(args.wheels)
    if args.check:
        # Compare decompressed JSON: gzip bytes may differ between zlib builds, the content may not.
        present = {p.name for p in args.out.glob("*.json.gz")}
        bad = sorted(present ^ set(files))
        bad += [
            n
            for n in sorted(set(files) & present)
            if gzip.decompress((args.out / n).read_bytes()) != files[n]
        ]
        for name in bad:
            print(f"differs: {args.out / name}", file=sys.stderr)
        print(f"{len(files) - len(bad)}/{len(files)} op-table files match the wheels")
        return 1 if bad else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for stale in args.out.glob("*.json.gz"):
        if stale.name not in files:
            stale.unlink()
    for name, raw in files.items():
        (args.out / name).write_bytes(gzip_bytes(raw))
        print(f"{name}: {len(raw)} bytes json, {(args.out / name).stat().st_size} bytes gz")
    return 0


if __name__ == "__main__":
    sys.exit(main())
