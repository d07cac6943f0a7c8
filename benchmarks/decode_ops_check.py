"""An independent check of the per-GEMM rows `topoctl bench --decode-step` writes (snapshot
measurements.decode_ops): the same products, built and timed another way, in the same run.

    python benchmarks/decode_ops_check.py SNAPSHOT --out check.json

For every bf16 GEMM shape of the snapshot's decode_ops rows (N, K, each M) this script allocates
torch.nn.Linear(K, N, bias=False) modules until they hold CHECK_BYTES (twice the bench's 256 MiB,
so a different number of copies), and times one call of each over an [M, K] activation:
  - graphed: the calls captured with torch.cuda.graph, replays timed by torch.utils.benchmark.Timer
    (its own synchronisation and repeat count), divided by the modules;
  - eager: the same calls without a graph, timed the same way (launch-bound for small products: it
    shows how far a decode step outside a CUDA graph is from the kernels' own time).
It shares no code with probe/bench/decode_ops.py (not the weights, not the copies, not the timing).
fp8 rows are listed, not rebuilt (nn.Linear has no fp8 weights).

Needs torch and a CUDA GPU; prints one line per shape and writes the comparison as JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

CHECK_BYTES = 512 << 20


def _modules(torch: Any, n: int, k: int) -> list[Any]:
    count = max(1, min(128, math.ceil(CHECK_BYTES / (n * k * 2))))
    built = []
    for _ in range(count):
        module = torch.nn.Linear(k, n, bias=False, dtype=torch.bfloat16, device="cuda")
        torch.nn.init.normal_(module.weight, std=0.02)
        built.append(module)
    return built


def _calls(built: list[Any], x: Any) -> None:
    for module in built:
        module(x)


def _graphed_us(torch: Any, benchmark: Any, built: list[Any], x: Any) -> float:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        _calls(built, x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        _calls(built, x)
    timed = benchmark.Timer(stmt="graph.replay()", globals={"graph": graph}).blocked_autorange(
        min_run_time=0.1
    )
    del graph
    return float(timed.median * 1e6) / len(built)


def check_shape(torch: Any, n: int, k: int, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from torch.utils import benchmark

    built = _modules(torch, n, k)
    out = []
    with torch.no_grad():
        for row in sorted(rows, key=lambda r: int(r["m"])):
            m = int(row["m"])
            x = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
            graphed = _graphed_us(torch, benchmark, built, x)
            eager = benchmark.Timer(
                stmt="calls(built, x)", globals={"calls": _calls, "built": built, "x": x}
            ).blocked_autorange(min_run_time=0.05)
            eager_us = float(eager.median * 1e6) / len(built)
            out.append(
                {
                    "op": row.get("op"),
                    "m": m,
                    "n": n,
                    "k": k,
                    "modules": len(built),
                    "bench_us": float(row["us"]),
                    "graphed_us": graphed,
                    "eager_us": eager_us,
                    "bench_over_graphed": float(row["us"]) / graphed,
                    "weight_gb_s": n * k * 2 / graphed / 1e3,
                }
            )
    del built
    torch.cuda.empty_cache()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("decode_ops_check: no CUDA GPU here", file=sys.stderr)
        return 1
    with open(args.snapshot, encoding="utf-8") as handle:
        rows = (json.load(handle).get("measurements") or {}).get("decode_ops") or []
    shapes: dict[tuple[int, int], dict[int, dict[str, Any]]] = {}
    skipped = []
    for row in rows:
        if row.get("status") != "ok" or row.get("kind") != "gemm":
            continue
        if row.get("gemm_dtype") != "bfloat16":
            skipped.append({"op": row.get("op"), "gemm_dtype": row.get("gemm_dtype")})
            continue
        shapes.setdefault((int(row["n"]), int(row["k"])), {})[int(row["m"])] = row
    out: dict[str, Any] = {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "rows": [],
        "not_checked": skipped,
    }
    for (n, k), by_m in sorted(shapes.items()):
        checked = check_shape(torch, n, k, list(by_m.values()))
        out["rows"] += checked
        worst = max(checked, key=lambda r: abs(math.log(r["bench_over_graphed"])))
        print(
            f"[{n}x{k}] {checked[0]['op']}: bench/independent graphed "
            f"{min(r['bench_over_graphed'] for r in checked):.3f}-"
            f"{max(r['bench_over_graphed'] for r in checked):.3f} over {len(checked)} M "
            f"(worst M={worst['m']}: {worst['bench_us']:.2f} vs {worst['graphed_us']:.2f} us; "
            f"eager {worst['eager_us']:.2f} us)"
        )
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(out, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
