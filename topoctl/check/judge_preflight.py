"""What `topoctl preflight` runs for one launch, what its results say, and how check reads them back.

A preflight proves a launch on its own box before SGLang starts: NCCL init and an allreduce at the
launch's own message sizes (decode: 1 token and its largest CUDA-graph batch; prefill: its chunk),
eager and inside a CUDA graph, on exactly its GPUs (CUDA_VISIBLE_DEVICES as the launch sets it)
with its environment (NCCL_*, GLOO_*, TORCH_*, SGLANG_*); then one call of the kernels torch
offers. The probe side runs it (probe/bench, under the bench's watchdog and data check); this
module is pure: the plan from a ParsedLaunch, the verdict from the rows, the snapshot record, and
the check items a recorded failure gives a launch of the same path on the same GPUs.

Layer: judge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from topoctl.check.outcome import Item
from topoctl.core.vocab import Severity
from topoctl.rules.sglang import spelling
from topoctl.rules.sglang.settings import equal

if TYPE_CHECKING:
    from topoctl.deploy.sglang_launch import ParsedLaunch

ENV_PREFIXES = ("NCCL_", "GLOO_", "TORCH_", "SGLANG_", "CUDA_", "NVSHMEM_")
# without a model profile: one decode token of a 7168-wide bf16 model, the field report's 42 KB
# verify message, and a 16 MiB prefill chunk
GENERIC_SIZES = (14336, 43008, 16 << 20)
MAX_BYTES = 256 << 20
DEFAULT_GRAPH_BS = 160  # SGLang's cuda_graph_max_bs when the launch leaves it out (a common value)
DEFAULT_CHUNK = 8192
BENCH_PATHS = {"nccl": ("nccl",), "torch_symm_mem": ("nccl", "torch_symm_mem")}
# what avoids each failure, as SGLang and NCCL spell it
FIXES = {
    "nccl": "NCCL_P2P_DISABLE=1 (peer-to-peer over this box's PCIe does not complete), then "
    "preflight again",
    "torch_symm_mem": "drop --enable-torch-symm-mem (NCCL runs the allreduce)",
}
BLOCKING = ("hung", "wrong result", "crashed", "init failed")
RECORD_KEYS = ("launch", "path", "world_size", "visible", "status", "reason", "at")


@dataclass(frozen=True)
class PreflightPlan:
    origin: str  # the launch's file:line, or <command>
    world_size: int  # the GPUs of one node the allreduce spans
    visible: str | None  # CUDA_VISIBLE_DEVICES as the launch sets it
    env: Mapping[str, str]
    path: str  # the allreduce path the launch runs on (spelling.yaml allreduce_paths)
    sizes: tuple[int, ...]
    size_source: str
    bench_paths: tuple[str, ...]  # the paths the probe drives itself
    not_driven: str = ""  # the launch's own path when the probe cannot drive it, and why


@dataclass(frozen=True)
class Result:
    what: str
    status: str  # ok | not run | one of BLOCKING
    reason: str = ""
    fix: str = ""
    path: str = ""

    @property
    def blocking(self) -> bool:
        return self.status in BLOCKING


@dataclass
class Verdict:
    plan: PreflightPlan
    results: list[Result] = field(default_factory=list)

    @property
    def blocked(self) -> bool:
        return any(r.blocking for r in self.results)


def launch_path(settings: Mapping[str, object]) -> str:
    """The allreduce path whose every setting the launch has, the most specific first (custom
    where it writes none: SGLang's default)."""
    paths = spelling.table()["allreduce_paths"]
    for name, wanted in sorted(paths.items(), key=lambda item: (-len(item[1]), item[0])):
        if all(_has(settings, key, value) for key, value in wanted.items()):
            return str(name)
    return "custom"


def _has(settings: Mapping[str, object], key: str, value: object) -> bool:
    """A path setting as the launch runs it: what it writes, else SGLang's default (custom
    allreduce on, every other path switch off)."""
    return equal(key, settings.get(key, key == "custom_all_reduce"), value)


def _int(settings: Mapping[str, object], key: str, default: int) -> int:
    value = settings.get(key)
    return (
        value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default
    )


def message_sizes(
    settings: Mapping[str, object], per_token: int | None
) -> tuple[tuple[int, ...], str]:
    """The launch's allreduce messages: 1 token and its largest CUDA-graph batch (decode), its
    prefill chunk; generic sizes without the model's bytes per token."""
    if not per_token:
        return GENERIC_SIZES, "generic sizes (no model profile: give --model for the launch's own)"
    graph_bs = _int(settings, "cuda_graph_max_bs", DEFAULT_GRAPH_BS)
    chunk = _int(settings, "chunked_prefill_size", DEFAULT_CHUNK)
    sizes = sorted({per_token, per_token * graph_bs, min(per_token * chunk, MAX_BYTES)})
    return tuple(sizes), (
        f"decode at 1 and {graph_bs} tokens, prefill at {chunk} tokens x {per_token} bytes a token"
    )


def plan_for(parsed: ParsedLaunch, per_token: int | None) -> PreflightPlan:
    settings = parsed.settings
    nnodes = _int(settings, "nnodes", 1)
    world = max(1, _int(settings, "tp_size", 1) // nnodes)
    env = {k: v for k, v in parsed.env.items() if k.startswith(ENV_PREFIXES)}
    path = launch_path(settings)
    sizes, source = message_sizes(settings, per_token)
    driven = BENCH_PATHS.get(path, ("nccl",))
    not_driven = (
        ""
        if path in BENCH_PATHS
        else f"SGLang's {path} allreduce runs inside SGLang's process groups; preflight drives "
        "NCCL (its fallback) and names this path not run"
    )
    return PreflightPlan(
        parsed.where or parsed.origin or "<command>",
        world,
        parsed.env.get("CUDA_VISIBLE_DEVICES"),
        env,
        path,
        sizes,
        source,
        driven,
        not_driven,
    )


def _row_result(row: Mapping[str, object]) -> Result | None:
    status, path = str(row.get("status")), str(row.get("path"))
    what = f"allreduce {path} {row.get('bytes')} B{' in a CUDA graph' if row.get('cuda_graph') else ''}"
    path = "nccl" if path == "gloo" else path  # the CPU harness's stand-in for NCCL
    if status == "ok":
        return None
    if status == "failed" and "wrong result" in str(row.get("reason")):
        return Result(what, "wrong result", str(row.get("reason")), FIXES.get(path, ""), path)
    if status == "failed":
        return Result(what, "crashed", str(row.get("reason")), FIXES.get(path, ""), path)
    return Result(what, "not run", str(row.get("reason")), path=path)


def _problem_result(text: str, plan: PreflightPlan) -> Result:
    fix = FIXES.get(plan.bench_paths[-1], "")
    if "timeout after" in text or "timed out" in text.lower():  # the watchdog's, or the group's
        return Result("allreduce", "hung", text, fix, plan.bench_paths[-1])
    if "init failed" in text:
        return Result(
            "process group start-up",
            "init failed",
            text,
            "check NCCL_SOCKET_IFNAME / NCCL_IB_HCA against the probed interfaces "
            "(topoctl check LAUNCH)",
            "nccl",
        )
    return Result("allreduce", "crashed", text, fix, plan.bench_paths[-1])


def collective_results(
    plan: PreflightPlan, rows: Iterable[Mapping[str, object]], problems: Iterable[str]
) -> list[Result]:
    """One result per failing or skipped row, one per problem the runner reported, and an ok line
    for what passed."""
    rows = list(rows)
    results = [r for r in (_row_result(row) for row in rows) if r is not None]
    seen: set[str] = set()
    for text in problems:  # one line per kind: every rank reports the same failure its own way
        result = _problem_result(text, plan)
        if result.status not in seen:
            seen.add(result.status)
            results.append(result)
    passed = [row for row in rows if row.get("status") == "ok"]
    if passed and not any(r.blocking for r in results):
        paths = sorted({str(row.get("path")) for row in passed})
        modes = "eager and in a CUDA graph" if any(r.get("cuda_graph") for r in passed) else "eager"
        results.insert(
            0,
            Result(
                f"allreduce {', '.join(paths)} at {len(plan.sizes)} sizes, {modes}",
                "ok",
                f"{len(passed)} checked calls, every sum right",
            ),
        )
    if plan.not_driven:
        results.append(Result(f"allreduce {plan.path}", "not run", plan.not_driven, path=plan.path))
    return results


def record(verdict: Verdict, when: str) -> list[dict[str, object]]:
    """The snapshot's measurements.preflight rows of this run (one per result with a path)."""
    plan = verdict.plan
    return [
        {
            "launch": plan.origin,
            "path": r.path or plan.path,
            "world_size": plan.world_size,
            "visible": plan.visible,
            "status": r.status,
            "reason": r.reason,
            "what": r.what,
            "at": when,
        }
        for r in verdict.results
    ]


def recorded_items(parsed: ParsedLaunch, rows: Iterable[object], nnodes: int = 1) -> list[Item]:
    """check's items for a launch whose path failed a preflight on the same GPUs at the same
    world size (snapshot measurements.preflight): a block naming when and the fix."""
    plan = plan_for(parsed, None)
    items = []
    for row in rows:
        if not isinstance(row, dict) or row.get("status") not in BLOCKING:
            continue
        same = (
            row.get("path") in (plan.path, *plan.bench_paths)
            and row.get("world_size") == plan.world_size
            and row.get("visible") == plan.visible
        )
        if same:
            path = str(row.get("path"))
            items.append(
                Item(
                    "topoctl-preflight-failed",
                    Severity.BLOCK,
                    f"preflight: {row.get('what')} {row.get('status')} on these GPUs",
                    f"topoctl preflight at {row.get('at')} ({row.get('launch')}): "
                    f"{row.get('reason')}",
                    FIXES.get(path, "rerun topoctl preflight after the fix"),
                    parsed.where,
                )
            )
    return items[:1]
