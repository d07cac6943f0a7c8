"""Check `topoctl bench` against an independent measurement of the same figures, in the same run.

Usage:  python benchmarks/bench_interconnect.py SNAPSHOT [--out results.json] [--iters 200]

SNAPSHOT is what `topoctl bench -o SNAPSHOT` wrote. For every NCCL and torch symmetric-memory
allreduce row it measured (eager and CUDA graph), every local copy and every healthy P2P pair, this
script measures the same thing with none of topoctl's code: a plain torch.distributed loop between
two CUDA events (or one CUDA graph of the same loop, replayed between events), a plain `copy_`
between events for bandwidth, and prints bench / independent per figure. Goals (issue 11): bandwidth
within 10%, allreduce latency within 15%. Needs GPUs and torch.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")


def _events_ms(torch, fn, count):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(count):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def _median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _allreduce_rank(rank, world, port, rows, iters, out_path):
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group(
        "nccl",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        device_id=torch.device("cuda", rank),
    )
    results = []
    for row in rows:
        count = row["bytes"] // 2
        if row["path"] == "nccl":
            buffer = (
                torch.randn(count, dtype=torch.float32, device="cuda").to(torch.bfloat16) * 1e-3
            )
            call = functools.partial(dist.all_reduce, buffer)
        else:  # torch symmetric memory, called directly
            import torch.distributed._symmetric_memory as symm_mem

            world_group = dist.group.WORLD
            assert world_group is not None  # init_process_group above made it
            group = world_group.group_name
            buffer = symm_mem.empty(count, dtype=torch.bfloat16, device=torch.device("cuda"))
            symm_mem.rendezvous(buffer, group)
            buffer.normal_(0, 1e-3)
            op = (
                torch.ops.symm_mem.one_shot_all_reduce
                if row.get("variant") == "one_shot"
                else torch.ops.symm_mem.two_shot_all_reduce_
            )
            call = functools.partial(op, buffer, "sum", group)

        for _ in range(20):
            call()
        torch.cuda.synchronize()
        inner = 20
        if row["cuda_graph"]:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                call()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for _ in range(inner):
                    call()
            graph.replay()
            torch.cuda.synchronize()
            samples = [
                _events_ms(torch, graph.replay, 1) * 1000 / inner
                for _ in range(max(5, iters // inner))
            ]
        else:
            samples = [
                _events_ms(torch, call, inner) * 1000 / inner for _ in range(max(5, iters // inner))
            ]
        tensor = torch.tensor(samples, dtype=torch.float64, device="cuda")
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        results.append({"median_us": _median(tensor.tolist())})
    if rank == 0:
        with open(out_path, "w", encoding="utf-8") as handle:
            json.dump(results, handle)
    dist.destroy_process_group()


def _copy_gbps(torch, src, dst, nbytes, iters=10):
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    samples = []
    for _ in range(5):
        torch.cuda.synchronize()
        ms = _events_ms(torch, lambda: dst.copy_(src), iters)
        torch.cuda.synchronize()
        samples.append(nbytes * iters / (ms / 1000) / 1e9)
    return _median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot")
    parser.add_argument("--out", default=None)
    parser.add_argument("--iters", type=int, default=200)
    options = parser.parse_args()
    import socket
    import tempfile

    import torch
    import torch.multiprocessing as mp

    with open(options.snapshot, encoding="utf-8") as handle:
        text = handle.read()
    if text.lstrip().startswith("{"):
        snapshot = json.loads(text)
    else:
        import yaml

        snapshot = yaml.safe_load(text)
    m = snapshot["measurements"]
    figures = []
    rows = [
        row
        for row in m["allreduce"]
        if row.get("status") == "ok" and row.get("path") in ("nccl", "torch_symm_mem")
    ]
    world = m["allreduce"][0]["world_size"] if m["allreduce"] else 1
    if rows:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        with tempfile.TemporaryDirectory() as folder:
            out_path = os.path.join(folder, "ar.json")
            mp.spawn(
                _allreduce_rank,
                args=(world, port, rows, options.iters, out_path),
                nprocs=world,
                join=True,
            )
            with open(out_path, encoding="utf-8") as handle:
                independent = json.load(handle)
        for row, mine in zip(rows, independent, strict=False):
            name = row["path"] + (f"/{row['variant']}" if row.get("variant") else "")
            figures.append(
                {
                    "figure": f"allreduce {name} {row['bytes']} "
                    f"B{' graph' if row['cuda_graph'] else ''} (us)",
                    "bench": row["latency_us"]["median"],
                    "independent": round(mine["median_us"], 3),
                    "goal": 0.15,
                }
            )
    for row in m.get("local_copy") or []:
        gpu = row["gpu"]
        count = row["bytes"] // 4
        src = torch.randint(0, 1 << 30, (count,), dtype=torch.int32, device=f"cuda:{gpu}")
        dst = torch.empty_like(src)
        figures.append(
            {
                "figure": f"local copy GPU {gpu} (GB/s)",
                "bench": row["bandwidth_gbps"]["median"],
                "independent": round(_copy_gbps(torch, src, dst, row["bytes"]), 1),
                "goal": 0.10,
            }
        )
    for row in m.get("p2p") or []:
        if not row.get("healthy") or not row.get("bandwidth_gbps"):
            continue
        count = row["bytes"] // 4
        src = torch.randint(0, 1 << 30, (count,), dtype=torch.int32, device=f"cuda:{row['src']}")
        dst = torch.empty(count, dtype=torch.int32, device=f"cuda:{row['dst']}")
        figures.append(
            {
                "figure": f"P2P {row['src']}->{row['dst']} one way (GB/s)",
                "bench": row["bandwidth_gbps"]["one_way"],
                "independent": round(_copy_gbps(torch, src, dst, row["bytes"]), 1),
                "goal": 0.10,
            }
        )
    print(f"{'figure':58} {'bench':>10} {'independent':>12} {'ratio':>7}  goal")
    for figure in figures:
        ratio = figure["bench"] / figure["independent"] if figure["independent"] else float("nan")
        figure["ratio"] = round(ratio, 3)
        figure["within_goal"] = abs(ratio - 1) <= figure["goal"]
        print(
            f"{figure['figure']:58} {figure['bench']:>10} {figure['independent']:>12} "
            f"{ratio:>7.3f}  +-{figure['goal']:.0%} {'ok' if figure['within_goal'] else 'MISSED'}"
        )
    if options.out:
        with open(options.out, "w", encoding="utf-8") as handle:
            json.dump(
                {
                    "device": torch.cuda.get_device_name(0),
                    "torch": str(torch.__version__),
                    "figures": figures,
                },
                handle,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
