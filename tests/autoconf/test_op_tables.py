"""The reference op tables (autoconf/generated/op-tables) load, carry provenance, and interpolate
honestly."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autoconf.op_tables import DEFAULT_DIR, OpTable, OpTableError, known_systems, load_system

ROOT = Path(__file__).resolve().parents[2]
# Systems the brief requires, all present in aiconfigurator-core 0.12.0 / AISimulate 0.13.0.dev
# wheels.
REQUIRED = {
    "h100_sxm",
    "h200_sxm",
    "b200_sxm",
    "b300_sxm",
    "gb200",
    "gb300",
    "rtx_pro_6000_server",
    "l40s",
    "a100_sxm",
}
DECODE_TABLES = {"gemm", "attention_generation", "moe", "nccl", "custom_allreduce", "mla_bmm"}


def _sample(rows: tuple, n: int = 60) -> list:
    step = max(1, len(rows) // n)
    return list(rows[::step])


def test_every_required_system_loads_with_the_decode_tables() -> None:
    assert REQUIRED <= set(known_systems())
    for system in known_systems():
        tables = load_system(system)
        assert DECODE_TABLES <= set(tables.tables), (system, sorted(tables.tables))
        assert tables.max_tokens == 512
    # MLA decode was measured everywhere except the A100 (SGLang 0.5.10 data has no MLA table).
    assert {s for s in known_systems() if "mla_generation" not in load_system(s).tables} == {
        "a100_sxm"
    }


def test_every_row_names_a_wheel_file_and_a_framework_version() -> None:
    for system in known_systems():
        raw = json.loads(gzip.decompress((DEFAULT_DIR / f"{system}.json.gz").read_bytes()))
        wheels = {(w["wheel"], w["version"]) for w in raw["wheels"]}
        for name, table in load_system(system).tables.items():
            src = table.columns.index("src")
            assert {int(r[src]) for r in table.rows} == set(range(len(table.sources))), (
                system,
                name,
            )
            for source in table.sources:
                assert (source.wheel, source.wheel_version) in wheels
                assert source.path.startswith(
                    ("aisimulate_core/systems/data/", "aiconfigurator_core/systems/data/")
                )
                assert f"/{system}/" in source.path and source.path.endswith(".parquet")
                assert source.framework in {"sglang", "nccl"} and source.framework_version
                assert f"/{source.framework}/{source.framework_version}/" in source.path
                assert all(len(d) == 10 and d[4] == "-" for d in source.collected_at)
            lat = table.columns.index("latency_us")
            assert all(float(r[lat]) > 0 for r in table.rows), (system, name)


def test_only_sglang_rows_where_backends_differ() -> None:
    for system in known_systems():
        for name, table in load_system(system).tables.items():
            frameworks = {s.framework for s in table.sources}
            assert frameworks == ({"nccl"} if name == "nccl" else {"sglang"}), (
                system,
                name,
                frameworks,
            )


def test_grid_points_come_back_exactly_with_their_own_source() -> None:
    for system in ("h200_sxm", "rtx_pro_6000_server", "b300_sxm"):
        for table in load_system(system).tables.values():
            for row in _sample(table.rows):
                params = {c: row[table.columns.index(c)] for c in table.keys + table.axes}
                answer = table.query(**params)
                assert answer.origin == "reference" and answer.extrapolations == ()
                assert answer.latency_us == float(row[table.columns.index("latency_us")])
                assert answer.sources == (table.row_source(row),)
                assert answer.grid_rows == 1


def _neighbours(table: OpTable) -> list[tuple[dict, float, float]]:
    """Pairs of adjacent points on the swept (last) axis of a curve, as a midpoint query and its two
    latencies."""
    axis, lat = table.columns.index(table.axes[-1]), table.columns.index("latency_us")
    curves: dict[tuple, list] = {}
    for row in table.rows:
        head = tuple(row[table.columns.index(c)] for c in table.keys + table.axes[:-1])
        curves.setdefault(head, []).append(row)
    out = []
    for head, rows in sorted(curves.items(), key=lambda kv: str(kv[0]))[
        :: max(1, len(curves) // 40)
    ]:
        rows = sorted(rows, key=lambda r: r[axis])
        for a, b in zip(rows, rows[1:], strict=False):
            if b[axis] - a[axis] >= 2:
                params = dict(zip(table.keys + table.axes[:-1], head, strict=True))
                params[table.axes[-1]] = (a[axis] + b[axis]) // 2
                out.append((params, float(a[lat]), float(b[lat])))
    return out


def test_between_grid_points_the_answer_lies_between_the_neighbours() -> None:
    checked = 0
    for system in ("h200_sxm", "b200_sxm", "rtx_pro_6000_server"):
        for table in load_system(system).tables.values():
            for params, lo, hi in _neighbours(table):
                answer = table.query(**params)
                assert answer.origin == "reference"
                assert min(lo, hi) <= answer.latency_us <= max(lo, hi), (system, table.name, params)
                assert answer.grid_rows == 2
                checked += 1
    assert checked > 500


def test_off_grid_on_two_axes_stays_inside_the_four_corners() -> None:
    h200 = load_system("h200_sxm")
    corners = [
        h200.query("gemm", gemm_dtype="bfloat16", n=n, k=k, m=8).latency_us
        for n in (4096, 5120)
        for k in (4096, 5120)
    ]
    answer = h200.query("gemm", gemm_dtype="bfloat16", n=4500, k=4600, m=8)
    assert answer.origin == "reference" and answer.grid_rows == 4
    assert min(corners) <= answer.latency_us <= max(corners)


def test_outside_the_grid_is_flagged_with_how_far() -> None:
    h200 = load_system("h200_sxm")
    key: dict[str, str | int] = {
        "mla_dtype": "bfloat16",
        "kv_cache_dtype": "bfloat16",
        "num_heads": 16,
        "batch_size": 1,
    }
    edge = h200.query("mla_generation", **key, kv_len=131072)
    above = h200.query("mla_generation", **key, kv_len=262144)
    assert edge.origin == "reference"
    assert above.origin == "extrapolated"
    assert [(e.axis, e.edge, e.factor) for e in above.extrapolations] == [("kv_len", 131072.0, 2.0)]
    assert above.latency_us >= edge.latency_us
    below = h200.query(
        "custom_allreduce",
        backend="sglang_graph",
        allreduce_dtype="bfloat16",
        num_gpus=8,
        message_bytes=64,
    )
    assert below.origin == "extrapolated" and below.extrapolations[0].factor == 4.0
    floor = h200.query(
        "custom_allreduce",
        backend="sglang_graph",
        allreduce_dtype="bfloat16",
        num_gpus=8,
        message_bytes=256,
    )
    assert below.latency_us == floor.latency_us  # held at the smallest measured size


def test_synthetic_fixture_interpolates_linearly_and_never_extrapolates_downward() -> None:
    # Synthetic fixture, not measured data: one key, one axis, a falling last segment.
    raw = {
        "columns": ["k", "x", "latency_us", "src"],
        "keys": ["k"],
        "axes": ["x"],
        "rows": [["a", 2, 10.0, 0], ["a", 4, 30.0, 0], ["a", 8, 20.0, 0], ["b", 2, 5.0, 0]],
        "sources": [
            {
                "wheel": "synthetic",
                "wheel_version": "0",
                "path": "synthetic.parquet",
                "framework": "sglang",
                "framework_version": "0",
            }
        ],
    }
    table = OpTable.from_json("synthetic", "t", raw)
    assert table.query(k="a", x=3).latency_us == 20.0
    assert table.query(k="a", x=6).latency_us == 25.0
    assert table.query(k="a", x=16).latency_us == 20.0  # falling slope held flat above the grid
    assert table.query(k="a", x=1).latency_us == 10.0
    assert (
        table.query(k="b", x=4).latency_us == 5.0
        and table.query(k="b", x=4).origin == "extrapolated"
    )
    with pytest.raises(OpTableError, match="give k"):
        table.query(x=3)


def test_unknown_system_table_or_key_is_a_clear_error() -> None:
    with pytest.raises(
        OpTableError, match=r"no op tables for system 'h300_sxm'; known: .*h200_sxm"
    ):
        load_system("h300_sxm")
    h200 = load_system("h200_sxm")
    with pytest.raises(OpTableError, match="no table 'rmsnorm'"):
        h200.query("rmsnorm", m=1)
    with pytest.raises(OpTableError, match="no rows for .*gemm_dtype.*nvfp4"):
        h200.query("gemm", gemm_dtype="nvfp4", n=4096, k=4096, m=1)
    with pytest.raises(OpTableError, match="give the axes"):
        h200.query("gemm", gemm_dtype="bfloat16", n=4096, k=4096)
    with pytest.raises(OpTableError, match="unknown parameters"):
        h200.query("gemm", gemm_dtype="bfloat16", n=4096, k=4096, m=1, batch=3)


def test_committed_tables_stay_small() -> None:
    total = sum(p.stat().st_size for p in DEFAULT_DIR.glob("*.json.gz"))
    assert 1 << 20 < total < 8 << 20


WHEELS = Path(os.environ.get("OP_TABLE_WHEELS", "/tmp/wheels/aic"))
AISIMULATE_WHEEL = "aisimulate-0.13.0.dev202610270000000085-cp311-abi3-manylinux_2_28_x86_64.whl"


@pytest.mark.skipif(
    not (WHEELS / AISIMULATE_WHEEL).is_file(), reason="wheels not downloaded (OP_TABLE_WHEELS)"
)
def test_committed_tables_equal_what_the_wheels_give() -> None:
    pytest.importorskip("pyarrow")
    wheels = str(WHEELS)
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/extract_op_tables.py"), "--wheels", wheels, "--check"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
