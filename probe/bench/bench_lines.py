"""`topoctl show`'s lines for a snapshot's `measurements` (what `topoctl bench` wrote) and its PCIe
checks.

Plain text, no torch: show imports this for every snapshot that holds measurements.

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from typing import Any

from topoctl.snapshot.view import SnapshotLike, view_of


def _clean(value: object) -> str:
    text = "-" if value is None else str(value)
    return "".join(ch if ch.isprintable() else "?" for ch in text)


def size_text(nbytes: object) -> str:
    if not isinstance(nbytes, int):
        return "-"
    for unit, scale in (("M", 1024**2), ("K", 1024)):
        if nbytes >= scale:
            value = nbytes / scale
            return f"{value:.4g}{unit}"
    return f"{nbytes}B"


def _us(value: object) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    return f"{value:.1f}" if value < 1000 else f"{value:.0f}"


def render_pcie_checks(snapshot: SnapshotLike) -> list[str]:
    """One line: ACS redirect, IOMMU mode, BAR1, as far as the probe saw them."""
    view = view_of(snapshot)
    if all(
        view.summary_value(key) is None
        for key in ("acs_redirect_pairs", "bar1_small_gpus", "iommu_mode")
    ):
        return []  # nothing seen (an older capture, or a machine that answers none of it)
    acs = view.summary_value("acs_redirect_pairs")
    acs_text = (
        "unknown"
        if acs is None
        else ("redirect on " + ", ".join(f"{a}->{b}" for a, b in acs) if acs else "no redirect")
    )
    bar1 = view.summary_value("bar1_small_gpus")
    bar1_text = (
        "unknown"
        if bar1 is None
        else (
            f"smaller than memory on GPU {', '.join(map(str, bar1))}"
            if bar1
            else "covers GPU memory"
        )
    )
    sizes = {
        size
        for gpu in view.indexed_gpus
        if isinstance(size := (gpu.get("bar1") or {}).get("total_bytes"), int)
    }
    if len(sizes) == 1:
        bar1_text += f" ({next(iter(sizes)) / 1024**3:.4g} GiB)"
    return [
        f"PCIe checks: ACS {acs_text}; IOMMU "
        f"{_clean(view.summary_value('iommu_mode') or 'unknown')}; BAR1 {bar1_text}"
    ]


def render_measurements(snapshot: SnapshotLike) -> list[str]:
    m = view_of(snapshot).measurements
    if not isinstance(m, dict):
        return []
    versions = m.get("versions") or {}
    state = "complete" if m.get("complete") else "INCOMPLETE (see problems)"
    lines = [
        f"Measured ({_clean(m.get('method'))}, {_clean(m.get('measured_at'))}, backend "
        f"{_clean(m.get('backend'))}, torch {_clean(versions.get('torch'))}, NCCL "
        f"{_clean(versions.get('nccl'))}; GPUs "
        f"{','.join(_clean(g) for g in m.get('gpus') or [])}; {state}):"
    ]
    if m.get("backend") == "gloo":  # CPU processes: the harness was checked, not these GPUs
        lines[0] = lines[0].replace("; GPUs ", "; CPU processes ", 1)
        lines.append(
            "  NOT GPU figures: --backend gloo ran on CPU processes (a check of the harness); "
            "run `topoctl bench` on the GPUs for their P2P and allreduce numbers"
        )
    p2p = [row for row in m.get("p2p") or [] if isinstance(row, dict)]
    if p2p:
        healthy = [row for row in p2p if row.get("healthy")]
        one_way: list[float] = [
            float(value)
            for row in healthy
            if isinstance(value := (row.get("bandwidth_gbps") or {}).get("one_way"), (int, float))
        ]
        text = f"  P2P: {len(healthy)}/{len(p2p)} ordered pairs healthy"
        if one_way:
            text += f"; one way {min(one_way):g}..{max(one_way):g} GB/s"
        lines.append(text)
        for row in p2p:
            if not row.get("healthy"):
                lines.append(
                    f"  P2P {_clean(row.get('src'))}->{_clean(row.get('dst'))} FAILED: "
                    f"{_clean(row.get('reason'))}"
                )
    elif m.get("gpus") is not None and len(m.get("gpus") or []) < 2:
        lines.append("  P2P: one GPU, no pairs")
    for row in m.get("local_copy") or []:
        bandwidth = (row.get("bandwidth_gbps") or {}).get("median")
        lines.append(f"  local copy on GPU {_clean(row.get('gpu'))}: {_clean(bandwidth)} GB/s")
    lines.extend(_allreduce_table(m.get("allreduce") or []))
    for row in m.get("coalescing") or []:
        if row.get("status") == "ok":
            lines.append(
                f"  coalescing ({_clean(row.get('path'))}, "
                f"{'CUDA graph' if row.get('cuda_graph') else 'eager'}): {_clean(row.get('n'))} "
                f"x {size_text(row.get('bytes_each'))} = {_us(row.get('many_small_us'))} us; 2 x "
                f"{size_text(row.get('bytes_large'))} = {_us(row.get('two_large_us'))} us"
            )
        else:
            lines.append(f"  coalescing: {_clean(row.get('status'))}: {_clean(row.get('reason'))}")
    for problem in m.get("problems") or []:
        lines.append(f"  problem: {_clean(problem)}")
    return lines


def _allreduce_table(rows: list[Any]) -> list[str]:
    ok = [row for row in rows if isinstance(row, dict) and row.get("status") == "ok"]
    lines: list[str] = []
    if ok:
        sizes = sorted({row["bytes"] for row in ok if isinstance(row.get("bytes"), int)})
        keys: list[tuple[str, bool]] = []
        for row in ok:
            label = row.get("path", "?") + (f"/{row['variant']}" if row.get("variant") else "")
            key = (label, bool(row.get("cuda_graph")))
            if key not in keys:
                keys.append(key)
        lines.append(
            f"  allreduce latency, median us (world size {_clean(ok[0].get('world_size'))}):"
        )
        lines.append(
            "    " + "path".ljust(30) + "".join(size_text(size).rjust(8) for size in sizes)
        )
        for label, graph in keys:
            cells = []
            for size in sizes:
                match = next(
                    (
                        row
                        for row in ok
                        if row.get("bytes") == size
                        and bool(row.get("cuda_graph")) == graph
                        and row.get("path", "?")
                        + (f"/{row['variant']}" if row.get("variant") else "")
                        == label
                    ),
                    None,
                )
                cells.append(_us(((match or {}).get("latency_us") or {}).get("median")).rjust(8))
            lines.append(
                "    " + _clean(f"{label}{' graph' if graph else ''}").ljust(30) + "".join(cells)
            )
    seen: set[tuple[str, str]] = set()
    for row in rows:
        if not isinstance(row, dict) or row.get("status") == "ok":
            continue
        label = f"{row.get('path')}{'/' + row['variant'] if row.get('variant') else ''}"
        text = f"  {_clean(row.get('status'))}: {_clean(label)}"
        if row.get("status") != "failed" and row.get("bytes") is not None and row.get("cuda_graph"):
            text += " graph"
        reason = _clean(row.get("reason"))
        if (label, reason) in seen:  # one line per path and reason
            continue
        seen.add((label, reason))
        lines.append(f"{text}: {reason}")
    return lines
