"""The resolve stage of check, nodes: how many nodes a launch spans, and how many of its ranks each
node runs, so that check judges a multi-node launch per node, against the target snapshot as one
node's.

SGLang places its ranks with `--nnodes` alone (nothing else tells the server it is one of several):
each node runs `tp_size // max(nnodes // pp_size, 1)` TP ranks, on local GPUs base_gpu_id + tp_rank
% tp_size_per_node (sglang/srt/entrypoints/engine.py: in `_launch_subprocesses` in 0.5.5, in
`_calculate_rank_ranges` from 0.5.12 to 0.5.23; the same formula in every release from 0.5.5 to
0.5.23 read). What starts the launch may say how many nodes there are when the flag's value is
written elsewhere: `srun -N`, `torchrun --nnodes`, a LeaderWorkerSet's `size` (its
`$(LWS_GROUP_SIZE)`), Dynamo's `multinode.nodeCount` (its operator adds `--nnodes`). A count that
cannot be known is a note naming what was assumed, never a block.

Layer: judge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from topoctl.check.parse import raw_int, written_value
from topoctl.core.errors import one_line

if TYPE_CHECKING:
    from topoctl.deploy.launchers import Nodes
    from topoctl.deploy.sglang_launch import ParsedLaunch


@dataclass
class NodeSpan:
    """The nodes a launch spans and its TP ranks per node; `notes` say where the count came from."""

    nodes: int | None  # None: more than one, how many not known here
    tp_per_node: int
    source: str = ""
    notes: list[tuple[str, str]] = field(default_factory=list)  # (message, where)
    assumed: bool = False  # the count is an assumption: a size that does not fit is not a block


def _outside(parsed: ParsedLaunch) -> Nodes | None:
    return getattr(parsed, "nodes", None)


def node_span(parsed: ParsedLaunch, tp: int, pp: int, gpus_per_node: int) -> NodeSpan:
    """The launch's nodes: SGLang's `--nnodes` (default 1); when its value is not written in what
    topoctl reads, the count its launcher gives; else assumed, said so."""
    written, where = written_value(parsed, "nnodes")
    outside = _outside(parsed)
    tp_written, _ = written_value(parsed, "tp_size")
    tp_known = tp_written is None or tp_written.isdigit()
    if written is None:
        return _no_flag(parsed, tp, outside, where)
    if written.isdigit() and int(written) >= 1:
        return _span(int(written), f"--nnodes {written}", tp, pp, where, tp_known)
    if outside is not None and outside.count:
        span = _span(outside.count, outside.source, tp, pp, where, tp_known)
        span.notes.insert(
            0,
            (
                f"--nnodes {written}: not written in the file; taken as {outside.count}, the nodes "
                f"{outside.source} starts",
                where,
            ),
        )
        return span
    return _assumed(written, tp, pp, gpus_per_node, where)


def _no_flag(parsed: ParsedLaunch, tp: int, outside: Nodes | None, where: str) -> NodeSpan:
    launcher = str(getattr(parsed, "launcher", ""))
    if (
        outside is not None
        and outside.count
        and outside.count > 1
        and launcher == "dynamo.sglang"
        and "multinode" in outside.source
    ):
        span = _span(outside.count, outside.source, tp, 1, where)
        span.notes.insert(
            0,
            (
                f"{outside.source}: the Dynamo operator adds --nnodes {outside.count} and the node "
                "rank to each worker",
                where,
            ),
        )
        return span
    span = NodeSpan(1, tp)
    if outside is not None and (outside.count is None or outside.count > 1):
        span.notes.append(
            (
                f"{outside.source} starts the command on several nodes, but without --nnodes each "
                f"runs its own one-node server (TP {tp} on each)",
                where,
            )
        )
    return span


def _span(nodes: int, source: str, tp: int, pp: int, where: str, tp_known: bool = True) -> NodeSpan:
    per_group = max(nodes // max(pp, 1), 1)
    tp_per_node = max(tp // per_group, 1)
    span = NodeSpan(nodes, tp_per_node, source)
    if nodes > 1:
        placed = (
            f"TP {tp} places {tp_per_node} ranks on each node (SGLang: tp_size // (nnodes // "
            "pp_size))"
            if tp_known
            else "the TP size is not known here, so neither is how many ranks each node runs"
        )
        span.notes.append(
            (
                f"spans {nodes} nodes ({source}): {placed}; GPU and P2P verdicts are per node, "
                "against "
                "the target as one node",
                where,
            )
        )
    return span


def _assumed(written: str, tp: int, pp: int, gpus_per_node: int, where: str) -> NodeSpan:
    """`--nnodes $NNODES` with nothing saying the count: assume the fewest nodes that hold TP on the
    target's GPUs (one when it fits on one), and say so."""
    nodes = max(-(-tp // max(gpus_per_node, 1)), 1)
    span = _span(nodes, f"assumed for --nnodes {written}", tp, pp, where)
    span.assumed = True
    span.notes.insert(
        0,
        (
            one_line(
                f"--nnodes {written}: not known from the file; assumed {nodes} node(s) of "
                f"{gpus_per_node} GPUs like the target, the fewest that hold TP {tp}"
            ),
            where,
        ),
    )
    return span


def node_request(parsed: ParsedLaunch, span: NodeSpan, tp_all: int) -> dict[str, object]:
    """What the rules about a launch over several nodes read (rules/engine/node_facts.py): the node
    count when it is known (an assumed one is left out, so that it never blocks), the TP size over
    every node (None when the file leaves it to run time), the pipeline size and
    --elastic-ep-join-mode as written."""
    tp_written, _ = written_value(parsed, "tp_size")
    out: dict[str, object] = {
        "tp_size_all": tp_all if tp_written is None or tp_written.isdigit() else None,
        "pp_size": raw_int(parsed, ("pp_size", "pipeline_parallel_size"), 1),
    }
    if span.nodes is not None and not span.assumed:
        out["nnodes"] = span.nodes
    join_mode, _ = written_value(parsed, "ep_join_mode")
    if join_mode is not None:
        out["elastic_ep_join_mode"] = join_mode
    return out
