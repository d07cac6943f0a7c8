"""The decode step composed from the op tables (autoconf/step_model.py) and its place in recommend's
estimate."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from topoctl.autoconf import models, step_model
from topoctl.cli.app import cli as cli_group


def _kimi_case(**changes: object) -> step_model.StepCase:
    base: dict[str, object] = {
        "model": models.profile("kimi-k2.5"),
        "tp": 8,
        "tokens": 1,
        "context": 1000.0,
        "path": "nccl",
        "bandwidth": 1792e9,
        "interconnect": "pcie",
    }
    base.update(changes)
    return step_model.StepCase(**base)  # type: ignore[arg-type]


def test_the_step_is_the_sum_of_its_ops_over_the_layers() -> None:
    step = step_model.compose(_kimi_case(), "rtx_pro_6000_server")
    assert step.total_us == pytest.approx(sum(op.count * op.each_us for op in step.ops))
    by_name = {op.name.split(" (")[0].split(" GEMM")[0]: op for op in step.ops}
    assert by_name["MLA decode core"].count == 61  # every layer attends
    assert by_name["MoE block"].count == 60  # the first layer of Kimi-K2.5 is dense
    assert by_name["dense MLP gate_up"].count == 1
    assert by_name["allreduce nccl"].count == 122  # allreduces_per_forward of the profile
    wider = step_model.compose(_kimi_case(tokens=16), "rtx_pro_6000_server")
    assert wider.total_us > step.total_us  # more tokens never run faster


def test_every_op_says_where_its_time_came_from() -> None:
    step = step_model.compose(_kimi_case(), "rtx_pro_6000_server")
    assert {op.origin for op in step.ops} <= set(step_model.ORIGINS)
    gemms = [op for op in step.ops if "GEMM" in op.name]
    assert gemms and all(
        op.origin == step_model.REFERENCE and "gemm_perf.parquet" in op.source for op in gemms
    )
    small = [op for op in step.ops if op.name.startswith("small kernels")]
    assert small and all(op.origin == step_model.BANDWIDTH for op in small)


def test_extrapolation_is_marked_and_widens_the_band() -> None:
    inside = step_model.compose(_kimi_case(context=1000.0), "rtx_pro_6000_server")
    outside = step_model.compose(_kimi_case(context=1_000_000.0), "rtx_pro_6000_server")
    core = next(op for op in outside.ops if op.name.startswith("MLA decode core"))
    assert core.origin == step_model.EXTRAPOLATED and "kv_len" in core.source
    assert outside.band > inside.band


def test_a_quantization_without_a_table_is_scaled_by_bytes_and_extrapolated() -> None:
    # the A100 GEMM table holds bf16 rows only: a 4-bit weight reads them scaled by the bytes ratio
    op = step_model.gemm(
        step_model.op_tables.load_system("a100_sxm"), "test", 1, 1, 7168, 7168, 0.5625
    )
    ref = step_model.gemm(
        step_model.op_tables.load_system("a100_sxm"), "test", 1, 1, 7168, 7168, 2.0
    )
    assert op.origin == step_model.EXTRAPOLATED and "bytes scaling" in op.source
    assert op.each_us == pytest.approx(ref.each_us * 0.5625 / 2.0)


def _estimate(system: str, model: str) -> dict[str, object]:
    result = CliRunner().invoke(
        cli_group,
        [
            "recommend",
            "--system",
            system,
            "--model",
            model,
            "--sglang-version",
            "0.5.14",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    return dict(doc["chosen"]["estimate"])


def test_recommend_json_lists_each_op_with_its_origin() -> None:
    est = _estimate("rtx-pro-6000-8x-pcie", "kimi-k2.5")
    assert str(est["step_basis"]).startswith("composed from the rtx_pro_6000_server op tables")
    ops = est["step_ops"]
    assert isinstance(ops, list) and ops
    assert all(op["origin"] in step_model.ORIGINS for op in ops)
    assert sum(op["us"] for op in ops) / 1000 == pytest.approx(est["step_ms"], rel=1e-3)


def test_a_gpu_without_tables_falls_back_and_says_so() -> None:
    assert step_model.table_system("rtx-4090") is None
    est = _estimate("rtx-4090-2x-pcie-no-p2p", "llama-3.1-8b")
    assert str(est["step_basis"]).startswith("fitted launch model: no op tables for rtx-4090")
    assert est["step_ops"] == []


def test_the_step_model_imports_no_torch() -> None:
    code = (
        "import sys; import topoctl.autoconf.step_model, topoctl.autoconf.step_estimate; "
        "assert 'torch' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_bench_allreduce_row_on_the_box_replaces_the_table_row() -> None:
    # synthetic bench rows (the format `topoctl bench` writes) on the shipped 8x H100 NVSwitch
    # system: NCCL at 20 us a call in a CUDA graph, where the h100_sxm table holds about 19 us at 14
    # KiB
    import copy

    from topoctl.autoconf.launch_model import Latencies
    from topoctl.snapshot.catalogue import system_snapshot

    rows = [
        {
            "path": "nccl",
            "world_size": 8,
            "gpus": list(range(8)),
            "bytes": size,
            "dtype": "bfloat16",
            "cuda_graph": True,
            "latency_us": {"median": 20.0},
            "repetitions": 100,
            "status": "ok",
        }
        for size in (4096, 16384, 65536)
    ]
    snapshot = copy.deepcopy(system_snapshot("h100-8x-nvswitch"))
    snapshot["measurements"] = {
        "method": "synthetic (tests/autoconf/test_step_model.py)",
        "allreduce": rows,
    }
    case = step_model.StepCase(
        models.profile("llama-3.1-70b"),
        8,
        1,
        1000.0,
        "nccl",
        3.35e12,
        "nvswitch",
        Latencies(snapshot),
    )
    measured = next(
        op for op in step_model.compose(case, "h100_sxm").ops if op.name.startswith("allreduce")
    )
    assert measured.origin == step_model.MEASURED and measured.each_us == pytest.approx(20.0)
    plain = step_model.StepCase(
        models.profile("llama-3.1-70b"),
        8,
        1,
        1000.0,
        "nccl",
        3.35e12,
        "nvswitch",
        Latencies(system_snapshot("h100-8x-nvswitch")),
    )
    table = next(
        op for op in step_model.compose(plain, "h100_sxm").ops if op.name.startswith("allreduce")
    )
    assert table.origin == step_model.REFERENCE and "nccl_perf.parquet" in table.source


def _deepseek_h100(**changes: object) -> step_model.StepCase:
    base: dict[str, object] = {
        "model": models.profile("deepseek-v3"),
        "tp": 8,
        "tokens": 1,
        "context": 1000.0,
        "path": "custom",
        "bandwidth": 3350e9,
        "interconnect": "nvswitch",
    }
    base.update(changes)
    return step_model.StepCase(**base)  # type: ignore[arg-type]


def test_a_tp_group_across_nodes_runs_nccl_over_the_nics() -> None:
    from topoctl.autoconf import step_network

    net = step_network.Fabric(2, 8 * 400e9 / 8, "eight 400 Gb/s NICs (synthetic)")
    one = step_model.compose(_deepseek_h100(fused_allreduces=61), "h100_sxm")
    two = step_model.compose(
        _deepseek_h100(tp=16, nodes=2, net=net, fused_allreduces=61), "h100_sxm"
    )
    call = next(op for op in two.ops if op.name.startswith("allreduce"))
    assert call.name.startswith("allreduce nccl across 2 nodes")  # never custom across nodes
    hop, _ = step_network.inter_node_latency()
    in_node = next(op for op in one.ops if op.name.startswith("allreduce"))
    assert (
        call.each_us > hop + in_node.each_us
    )  # the in-node NCCL row is slower than custom, plus the hop
    assert call.widen > 1.0 and two.band > one.band
    norms = [op for op in two.ops if op.name.startswith("small kernels a layer")]
    assert norms[0].count == 61 * (
        step_model.LAYER_KERNELS + step_model.MLA_KERNELS + 1
    )  # no fusion across nodes
    slower = step_model.compose(
        _deepseek_h100(
            tp=16, nodes=2, net=step_network.Fabric(2, 12.5e9, "one 100 Gb/s NIC"), tokens=64
        ),
        "h100_sxm",
    )
    faster = step_model.compose(_deepseek_h100(tp=16, nodes=2, net=net, tokens=64), "h100_sxm")
    assert slower.total_us > faster.total_us  # the bytes go over the NICs


def test_the_per_step_overhead_is_the_fitted_term_of_costs_yaml() -> None:
    from topoctl.autoconf.data_files import load

    row = load("costs.yaml")["step_overhead"]
    step = step_model.compose(_kimi_case(), "rtx_pro_6000_server")
    op = next(op for op in step.ops if op.name == "SGLang per-step overhead")
    assert op.total_us == pytest.approx(float(row["us"])) and op.origin == step_model.FITTED
    assert (
        "public-decode.yaml" in op.source and "held-out" in op.source
    )  # its corpus, and that it is not the held-out
    bare = step_model.compose(_kimi_case(overhead_us=0.0), "rtx_pro_6000_server")
    assert step.total_us - bare.total_us == pytest.approx(float(row["us"]))


def test_a_verify_pass_reads_each_streams_context_once() -> None:
    # 16 streams x 4 verify tokens; at one stream the table's batch-1 row is slower than its batch-4
    # row (70.7 against 49.0 us at 8000 tokens on rtx_pro_6000_server), so the sharing shows where
    # the KV read dominates
    shared = step_model.compose(
        _kimi_case(tokens=64, streams=16, context=8000.0), "rtx_pro_6000_server"
    )
    apart = step_model.compose(_kimi_case(tokens=64, context=8000.0), "rtx_pro_6000_server")

    def core(step: step_model.Step) -> step_model.StepOp:
        return next(op for op in step.ops if op.name.startswith("MLA decode core"))

    assert "4 query tokens a stream" in core(shared).name
    assert core(shared).each_us < core(apart).each_us / 2  # 16 contexts of 8000 tokens read, not 64
    gemms = [(op.name, op.each_us) for op in shared.ops if "GEMM" in op.name]
    assert gemms == [
        (op.name, op.each_us) for op in apart.ops if "GEMM" in op.name
    ]  # the GEMMs see 64 tokens either way
