"""A decode step composed from per-operation latencies measured on real GPUs (issue 41, item 1).

step(T tokens) = sum over the layers of the ops the model's config describes, each looked up in the GPU's op
tables (op_tables.py: NVIDIA's aiconfigurator / AISimulate collections) at its shape (step_shapes.py):
  attention   GQA: QKV GEMM, decode attention, output GEMM; MLA: q_a+kv_a GEMM (replicated), q_b GEMM, the
              absorbed BMMs before and after, the MLA decode core, output GEMM
  MLP         MoE layers: router GEMM, the fused MoE block, shared-expert GEMMs; dense layers: gate_up, down
  allreduce   allreduces_per_forward calls of T x hidden x 2 bytes, on the launch's path: the snapshot's
              measurement first, else the GPU's table (nccl, custom) where the box is built like the table's
              system, else the launch model's allreduce table (Latencies); NCCL over the NICs when the TP group
              spans nodes (step_network.py)
  per step    lm_head GEMM, the logits' all-gather, the small kernels (norms, rotary, KV store, activation,
              sampling) from memory bandwidth with the GPU's shortest measured kernel as their floor, and SGLang's
              per-step overhead, the one term fitted end to end (on the training corpus: costs.yaml)
An EAGLE verify pass (StepCase.streams) reads each stream's context once for its T tokens. Each op says where its
time came from (ORIGINS); outside a table's grid, in a substituted weight format, from the bandwidth model and for
the fitted term the band widens (Step.band). The op records and the GEMM lookup are step_ops.py.

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from topoctl.autoconf import op_tables
from topoctl.autoconf.data_files import load
from topoctl.autoconf.measured_ops import MeasuredOps
from topoctl.autoconf.request import ModelProfile
from topoctl.autoconf.step_network import Fabric, cross_node
from topoctl.autoconf.step_ops import (  # noqa: F401 (the step's pieces, read as step_model.X by its callers)
    ASSUMED,
    BANDWIDTH,
    BASE_BAND,
    EXTRAPOLATED,
    FITTED,
    MEASURED,
    MODEL_WIDEN,
    ORIGINS,
    REFERENCE,
    Step,
    StepOp,
    gemm,
    priced,
    substitute,
)
from topoctl.autoconf.step_shapes import Shapes, shapes, wanted_formats

# topoctl/data/gpus.yaml keys -> op-table systems. The a100 40 GB, H100 PCIe and H200 NVL have other
# memory or clocks than the SXM parts measured; RTX PRO 6000 maps to the Server Edition, the card of
# the field report.
TABLE_SYSTEMS = {
    "a100-sxm4-80gb": "a100_sxm",
    "h100-sxm": "h100_sxm",
    "h200-sxm": "h200_sxm",
    "b200": "b200_sxm",
    "gb200": "gb200",
    "rtx-pro-6000-blackwell": "rtx_pro_6000_server",
    "l40s": "l40s",
}
PCIE_SYSTEMS = frozenset({"rtx_pro_6000_server", "l40s"})  # the others are NVSwitch boxes

# Small kernels a layer runs beside its GEMMs (SGLang's decoder layers): fused add + RMSNorm before
# attention and before the MLP, rotary, the KV cache store; MLA adds the q_a and kv_a norms; a dense
# or shared MLP its SiLU-and-mul. Per step: the embedding lookup, the final norm and the sampler
# (softmax/argmax over the vocab).
LAYER_KERNELS = 4
MLA_KERNELS = 2
STEP_KERNELS = 3


@dataclass(frozen=True)
class StepCase:
    """One decode step to compose: the model profile, TP, tokens in the pass (streams x tokens
    each), the mean KV length a stream attends to, the allreduce path, the GPU's datasheet bandwidth
    (bytes/s), the box's interconnect, the launch model's allreduce prices (launch_model.Latencies,
    or None) and CUDA graphs."""

    model: dict[str, Any]
    tp: int
    tokens: int
    context: float
    path: str
    bandwidth: float
    interconnect: str
    lat: Any = None
    cuda_graph: bool = True
    fused_allreduces: int = (
        0  # allreduces fused with the next RMSNorm (flashinfer fusion): one norm kernel fewer
    )
    nodes: int = 1  # nodes the TP group spans (tp counts every GPU of them)
    net: Fabric | None = None  # what joins the nodes (step_network.fabric), None where unknown
    overhead_us: float | None = (
        None  # SGLang's per-step overhead; None: costs.yaml `step_overhead`, 0: none (its fit)
    )
    streams: int = (
        0  # contexts the pass attends to (an EAGLE verify pass: streams x T tokens); 0: one a token
    )
    measured: MeasuredOps | None = None  # this box's bench rows, read before the tables


def table_system(gpu_key: str | None) -> str | None:
    """The op-table system of a gpus.yaml key, None when there is none (the caller falls back and
    says so)."""
    system = TABLE_SYSTEMS.get(gpu_key or "")
    return system if system in op_tables.known_systems() else None


def gpu_key(gpu: dict[str, Any]) -> str | None:
    from topoctl.core import gpus

    name = str(gpu.get("name") or "")
    found = gpus.lookup(name) if name else None
    if found is None:  # a gpus.yaml key given as the name (the benchmark scripts' GPUs)
        found = next((m for m in gpus.models() if m.key == name), None)
    return found.key if found else None


ATTENTION_KERNELS = ("fa3", "flashinfer", "trtllm_mha", "flash_attention", "triton")


def attention(
    tables: op_tables.SystemTables,
    sh: Shapes,
    tokens: int,
    context: float,
    bandwidth: float,
    streams: int = 0,
) -> list[StepOp]:
    """A verify pass's T tokens of one stream share its context: the core reads it once, the T
    queries folded into the heads (SGLang's flashmla_backend.py:221-224 in 0.5.23 plans
    target_verify as draft_tokens x q heads a sequence); `streams` 0 is one stream a token."""
    streams = streams or tokens
    if sh.mla:
        return _mla(tables, sh, tokens, context, streams)
    per = sh.formats["attention"]
    return [
        gemm(
            tables,
            "QKV projection",
            sh.layers,
            tokens,
            (sh.heads + 2 * sh.kv_heads) * sh.head_dim,
            sh.hidden,
            per,
        ),
        _gqa_core(tables, sh, streams, tokens // streams, context, bandwidth),
        gemm(tables, "attention output", sh.layers, tokens, sh.hidden, sh.heads * sh.head_dim, per),
    ]


def _gqa_core(
    tables: op_tables.SystemTables,
    sh: Shapes,
    streams: int,
    each: int,
    context: float,
    bandwidth: float,
) -> StepOp:
    """Decode attention from the first kernel with rows for the shape; else the KV bytes at the
    datasheet rate."""
    table = tables.table("attention_generation")
    shared = f", {each} query tokens a stream" if each > 1 else ""
    name = (
        f"decode attention ({sh.heads} heads, {sh.kv_heads} KV heads, head_dim "
        f"{sh.head_dim}{shared})"
    )
    for kernel in (k for k in ATTENTION_KERNELS if k in table.key_values("kernel_source")):
        try:
            core = table.query(
                kernel_source=kernel,
                attn_dtype="bfloat16",
                kv_cache_dtype="bfloat16",
                num_key_value_heads=sh.kv_heads,
                head_dim=sh.head_dim,
                window_size=0,
                num_heads=sh.heads * each,
                batch_size=streams,
                kv_len=max(context, 1.0),
            )
        except op_tables.OpTableError:
            continue
        return priced(f"{name}, {kernel}", sh.layers, core)
    kv = streams * context * sh.kv_heads * sh.head_dim * 2 * 2.0
    return StepOp(
        name,
        sh.layers,
        kv / bandwidth * 1e6,
        BANDWIDTH,
        f"no {tables.system} attention rows for the shape; {kv / 1e6:.1f} MB of K and V at the "
        f"datasheet {bandwidth / 1e9:.0f} GB/s",
        MODEL_WIDEN,
    )


def _mla(
    tables: op_tables.SystemTables, sh: Shapes, tokens: int, context: float, streams: int
) -> list[StepOp]:
    from topoctl.autoconf.step_shapes import MLA_NOPE_DIM, MLA_V_DIM

    per = sh.formats["attention"]
    bmm_dtype = (
        "fp8"
        if per < 1.5 and "fp8" in tables.table("mla_bmm").key_values("bmm_dtype")
        else "bfloat16"
    )
    core = tables.table("mla_generation")
    kernel = core.key_values("kernel_source")[0]
    ops = [
        gemm(
            tables,
            "MLA q_a+kv_a projection (replicated)",
            sh.layers,
            tokens,
            sh.q_lora + sh.kv_lora + sh.rope,
            sh.hidden,
            per,
        ),
        gemm(
            tables,
            "MLA q_b projection",
            sh.layers,
            tokens,
            sh.heads * (MLA_NOPE_DIM + sh.rope),
            sh.q_lora,
            per,
        ),
    ]
    for op_name, label in (
        ("mla_gen_pre", "MLA absorbed BMM before attention"),
        ("mla_gen_post", "MLA absorbed BMM after attention"),
    ):
        ops.append(
            priced(
                f"{label} ({bmm_dtype})",
                sh.layers,
                tables.query(
                    "mla_bmm",
                    op_name=op_name,
                    bmm_dtype=bmm_dtype,
                    num_heads=sh.heads,
                    num_tokens=tokens,
                ),
            )
        )
        if op_name == "mla_gen_pre":
            each = tokens // streams
            shared = f", {each} query tokens a stream" if each > 1 else ""
            ops.append(
                priced(
                    f"MLA decode core ({kernel}, {sh.heads} heads{shared})",
                    sh.layers,
                    core.query(
                        kernel_source=kernel,
                        mla_dtype="bfloat16",
                        kv_cache_dtype="bfloat16",
                        num_heads=sh.heads * each,
                        batch_size=streams,
                        kv_len=max(context, 1.0),
                    ),
                )
            )
    ops.append(
        gemm(tables, "attention output", sh.layers, tokens, sh.hidden, sh.heads * MLA_V_DIM, per)
    )
    return ops


MOE_KERNELS = (
    "sglang_fused_moe_triton",
    "sglang_marlin_moe",
    "sglang_flashinfer_trtllm_moe",
    "sglang_mxfp4_flashinfer_trtllm_moe",
    "sglang_flashinfer_cutlass_moe",
)


def moe_block(
    tables: op_tables.SystemTables, sh: Shapes, tokens: int, scheme: str | None
) -> StepOp:
    table = tables.table("moe")
    per = sh.formats["experts"]
    fmt = substitute(table.key_values("moe_dtype"), wanted_formats(per, True, scheme), per)
    for kernel in MOE_KERNELS:
        for distribution in ("power_law_1.01", "balanced"):
            try:
                answer = table.query(
                    kernel_source=kernel,
                    moe_dtype=fmt.dtype,
                    distribution=distribution,
                    num_experts=sh.experts,
                    topk=sh.topk,
                    moe_tp_size=sh.tp,
                    moe_ep_size=1,
                    hidden_size=sh.hidden,
                    inter_size=sh.moe_inter,
                    num_tokens=tokens,
                )
            except op_tables.OpTableError:
                continue
            return priced(
                f"MoE block ({sh.experts} experts, top {sh.topk}, {fmt.dtype}, {kernel}, "
                f"{distribution})",
                sh.moe_layers,
                answer,
                fmt.note,
                fmt.widen,
                fmt.scale,
            )
    raise op_tables.OpTableError(
        f"{tables.system}/moe: no rows for {sh.experts} experts, top {sh.topk}, TP {sh.tp}, "
        f"{fmt.dtype}"
    )


def mlp(tables: op_tables.SystemTables, sh: Shapes, case: StepCase) -> list[StepOp]:
    ops: list[StepOp] = []
    tokens = case.tokens
    if sh.moe_layers:
        ops.append(gemm(tables, "MoE router", sh.moe_layers, tokens, sh.experts, sh.hidden, 2.0))
        scheme = str((case.model.get("quantization") or {}).get("scheme") or "") or None
        try:
            ops.append(moe_block(tables, sh, tokens, scheme))
        except op_tables.OpTableError as err:
            ops.append(moe_bandwidth(sh, tokens, case.bandwidth, str(err)))
        if sh.shared_inter:
            per = sh.formats["shared_experts"]
            ops.append(
                gemm(
                    tables,
                    "shared experts gate_up",
                    sh.moe_layers,
                    tokens,
                    2 * sh.shared_inter // sh.tp,
                    sh.hidden,
                    per,
                )
            )
            ops.append(
                gemm(
                    tables,
                    "shared experts down",
                    sh.moe_layers,
                    tokens,
                    sh.hidden,
                    sh.shared_inter // sh.tp,
                    per,
                )
            )
    if sh.dense_layers and sh.dense_inter:
        per = sh.formats["dense_mlp"]
        ops.append(
            gemm(
                tables,
                "dense MLP gate_up",
                sh.dense_layers,
                tokens,
                2 * sh.dense_inter // sh.tp,
                sh.hidden,
                per,
            )
        )
        ops.append(
            gemm(
                tables,
                "dense MLP down",
                sh.dense_layers,
                tokens,
                sh.hidden,
                sh.dense_inter // sh.tp,
                per,
            )
        )
    return ops


def moe_bandwidth(sh: Shapes, tokens: int, bandwidth: float, why: str) -> StepOp:
    """A MoE block the tables have no rows for (expert count, top-k or TP), from the bandwidth
    model: the bytes of the experts the pass's tokens are routed to, each read once, at the
    datasheet rate."""
    one = 3 * sh.hidden * sh.moe_inter / sh.tp * sh.formats["experts"]
    routed = min(sh.experts, sh.topk * tokens)
    return StepOp(
        f"MoE block ({sh.experts} experts, top {sh.topk})",
        sh.moe_layers,
        routed * one / bandwidth * 1e6,
        BANDWIDTH,
        f"{why}; {routed} experts x {one / 1e6:.1f} MB per GPU at the datasheet "
        f"{bandwidth / 1e9:.0f} GB/s",
        MODEL_WIDEN,
    )


def small_kernel_floor(tables: op_tables.SystemTables) -> tuple[float, str]:
    """(us, source): the shortest kernel the GPU's GEMM table measured, the least any kernel of the
    step takes."""
    found = _FLOORS.get(tables.system)
    if found is None:  # a scan of every GEMM row: once per system, not once per candidate
        table = tables.table("gemm")
        lat = table.columns.index("latency_us")
        row = min(table.rows, key=lambda r: float(r[lat]))
        found = _FLOORS[tables.system] = (
            float(row[lat]),
            f"the shortest GEMM row of {tables.system}/gemm ({table.row_source(row).cite()})",
        )
    return found


_FLOORS: dict[str, tuple[float, str]] = {}


def small_kernels(tables: op_tables.SystemTables, sh: Shapes, case: StepCase) -> list[StepOp]:
    floor, floor_source = small_kernel_floor(tables)
    per_layer = (
        LAYER_KERNELS
        + (MLA_KERNELS if sh.mla else 0)
        + (1 if sh.shared_inter or sh.dense_inter else 0)
    )
    act = case.tokens * sh.hidden * 2.0 * 2  # read and write one activation row a token, bf16
    layer_us = max(floor, act / case.bandwidth * 1e6)
    count = max(0, sh.layers * per_layer - case.fused_allreduces)
    logits = case.tokens * sh.vocab * 4.0 * 2  # float32 logits read and written by the sampler
    step_us = max(floor, logits / case.bandwidth * 1e6)
    text = (
        f"bytes / datasheet {case.bandwidth / 1e9:.0f} GB/s, at least {floor:.2f} us "
        f"({floor_source})"
    )
    fused = (
        f"; {case.fused_allreduces} norms fused into the allreduce" if case.fused_allreduces else ""
    )
    return [
        StepOp(
            f"small kernels a layer ({per_layer}: norms, rotary, KV store, activation)",
            count,
            layer_us,
            BANDWIDTH,
            text + fused,
            MODEL_WIDEN,
        ),
        StepOp(
            f"small kernels a step ({STEP_KERNELS}: embedding, final norm, sampler)",
            STEP_KERNELS,
            step_us,
            BANDWIDTH,
            text,
            MODEL_WIDEN,
        ),
    ]


def allreduce(tables: op_tables.SystemTables, sh: Shapes, case: StepCase) -> list[StepOp]:
    calls = int(case.model.get("allreduces_per_forward") or 2 * sh.layers) if case.tp > 1 else 0
    if not calls:
        return []
    size = case.tokens * float(case.model["allreduce_bytes_per_token"])
    if case.nodes > 1:
        return [_across_nodes(tables, case, calls, size)]
    name = f"allreduce {case.path} ({size / 1024:g} KiB, {case.tp} GPUs)"
    measured = (
        case.lat.measured_curve(case.path, case.tp, case.cuda_graph)
        if case.lat is not None
        else None
    )
    if measured is not None:
        found = case.lat.lookup(case.path, size, case.tp, case.cuda_graph)
        return [StepOp(name, calls, found.us, MEASURED, found.source)]
    same_box = (case.interconnect == "pcie") == (tables.system in PCIE_SYSTEMS)
    cited = (
        case.lat.lookup(case.path, size, case.tp, case.cuda_graph) if case.lat is not None else None
    )
    if cited is not None and cited.origin.startswith(
        "field report"
    ):  # measured on a box like this one
        return [StepOp(name, calls, cited.us, REFERENCE, f"{cited.origin}: {cited.source}")]
    try:
        if same_box and case.path in ("nccl", "custom", "flashinfer_fusion"):
            answer = _allreduce_row(tables, case, size)
            op = priced(name, calls, answer)
            return [op if case.path != "flashinfer_fusion" else _related(op, case)]
    except op_tables.OpTableError:
        pass
    if cited is None:
        raise op_tables.OpTableError(
            f"{tables.system}: no allreduce row for {case.path} at {case.tp} GPUs"
        )
    found = cited
    origin = ASSUMED if found.origin.startswith("assumed") else REFERENCE
    return [
        StepOp(
            name,
            calls,
            found.us,
            origin,
            f"{found.origin}: {found.source}",
            MODEL_WIDEN if origin == ASSUMED else 1.0,
        )
    ]


def _across_nodes(
    tables: op_tables.SystemTables, case: StepCase, calls: int, size: float
) -> StepOp:
    """NCCL, whatever the launch asked (step_network.py says why): the in-node NCCL row of one
    node's GPUs plus the cross-node hop and bytes; modelled, so widened."""
    local = case.tp // case.nodes
    inner = priced("", calls, _allreduce_row(tables, replace(case, path="nccl", tp=local), size))
    if (
        case.net is None
    ):  # no NIC known: the hops alone, and the band says the bytes were not priced
        hop = cross_node(
            size, Fabric(case.nodes, float("inf"), "no NIC rate known: bytes not priced")
        )
    else:
        hop = cross_node(size, case.net)
    return StepOp(
        f"allreduce nccl across {case.nodes} nodes ({size / 1024:g} KiB, {case.tp} GPUs)",
        calls,
        inner.each_us + hop.us,
        BANDWIDTH,
        f"in-node NCCL at {local} GPUs {inner.each_us:.1f} us "
        f"({inner.source}) + {hop.us:.1f} us: {hop.source}",
        MODEL_WIDEN,
    )


def _related(op: StepOp, case: StepCase) -> StepOp:
    """The fused path priced as the custom allreduce it replaces, the relation's citation first
    (costs.yaml)."""
    relation = case.lat.relations.get(case.path) if case.lat is not None else None
    why = relation.source if relation is not None else "the custom allreduce it replaces"
    return StepOp(
        op.name,
        op.count,
        op.each_us,
        op.origin,
        f"priced as custom: {why}; custom: {op.source}",
        op.widen,
    )


def _allreduce_row(tables: op_tables.SystemTables, case: StepCase, size: float) -> op_tables.Answer:
    if case.path == "nccl":
        return tables.query(
            "nccl",
            op_name="all_reduce",
            nccl_dtype="half",
            kernel_source="NCCL",
            num_gpus=case.tp,
            message_bytes=size,
        )
    backend = "sglang_graph" if case.cuda_graph else "sglang_eager"
    return tables.query(
        "custom_allreduce",
        backend=backend,
        allreduce_dtype="bfloat16",
        num_gpus=case.tp,
        message_bytes=size,
    )


def lm_head(tables: op_tables.SystemTables, sh: Shapes, case: StepCase) -> list[StepOp]:
    ops = [
        gemm(
            tables,
            "lm_head",
            1,
            case.tokens,
            max(1, sh.vocab // sh.tp),
            sh.hidden,
            sh.formats["lm_head"],
        )
    ]
    if case.tp > 1:
        size = case.tokens * sh.vocab * 2.0
        try:
            answer = tables.query(
                "nccl",
                op_name="all_gather",
                nccl_dtype="half",
                kernel_source="NCCL",
                num_gpus=case.tp // case.nodes,
                message_bytes=size,
            )
            op = priced(f"logits all-gather ({size / 1024:g} KiB, NCCL)", 1, answer)
            if case.nodes > 1:
                hop = cross_node(
                    size,
                    case.net or Fabric(case.nodes, float("inf"), "no NIC rate known"),
                    "allgather",
                )
                op = StepOp(
                    op.name,
                    1,
                    op.each_us + hop.us,
                    BANDWIDTH,
                    f"{op.source} + {hop.source}",
                    MODEL_WIDEN,
                )
            ops.append(op)
        except op_tables.OpTableError as err:
            ops.append(
                StepOp(
                    "logits all-gather (NCCL)",
                    1,
                    size / case.bandwidth * 1e6,
                    BANDWIDTH,
                    str(err),
                    MODEL_WIDEN,
                )
            )
    return ops


def scheduler_overhead(case: StepCase) -> StepOp:
    """SGLang's time a decode iteration takes beyond its ops (host work the overlap scheduler does
    not hide, gaps between graph replays): costs.yaml `step_overhead`, one term fitted on the
    training corpus."""
    row = load("costs.yaml")["step_overhead"]
    us = float(row["us"]) if case.overhead_us is None else case.overhead_us
    return StepOp("SGLang per-step overhead", 1, us, FITTED, str(row["source"]), MODEL_WIDEN)


def compose(case: StepCase, system: str) -> Step:
    """The step of `case` on the op tables of `system` (table_system)."""
    tables = op_tables.load_system(system)
    if case.measured is not None:
        tables = replace(tables, measured=case.measured)
    if (
        case.nodes > 1
    ):  # no allreduce fusion across nodes (step_network.py): every norm runs on its own
        case = replace(case, fused_allreduces=0)
    sh = shapes(case.model, case.tp)
    ops = attention(tables, sh, case.tokens, case.context, case.bandwidth, case.streams)
    ops += mlp(tables, sh, case)
    ops += allreduce(tables, sh, case)
    ops += lm_head(tables, sh, case)
    ops += small_kernels(tables, sh, case)
    ops.append(scheduler_overhead(case))
    return Step(system, case.tokens, tuple(ops))


def gemm_shapes(
    model: ModelProfile, tp: int, gpu_name: str | None = None
) -> list[tuple[str, int, int, str]]:
    """The GEMMs (name, N, K, table dtype) the step of `model` at TP `tp` prices on `gpu_name`'s op
    tables (H200's when it has none), in step order, each once: what `topoctl bench --decode-step`
    times alone. Empty where no op tables are installed or the profile lacks what the step needs."""
    systems = op_tables.known_systems()
    system = table_system(gpu_key({"name": gpu_name})) if gpu_name else None
    if system not in systems:
        system = "h200_sxm" if "h200_sxm" in systems else (systems[0] if systems else None)
    if system is None:
        return []
    case = StepCase(model, tp, 1, 1024.0, "nccl", 1e12, "nvlink")
    try:  # the ops that hold GEMMs (the allreduce and per-step terms hold none)
        tables, sh = op_tables.load_system(system), shapes(model, tp)
        ops = attention(tables, sh, 1, 1024.0, 1e12) + mlp(tables, sh, case)
        ops += lm_head(tables, sh, case)
    except (op_tables.OpTableError, KeyError, TypeError, ValueError, ZeroDivisionError):
        return []
    return list(
        dict.fromkeys((*op.gemm, op.name.rsplit(" ", 1)[1]) for op in ops if op.gemm is not None)
    )
