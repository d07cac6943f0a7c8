"""What `topoctl preflight` plans for a launch (its path, GPUs, environment, message sizes), how the
harness's rows and problems become results, and the check items a recorded failure gives. Pure: the
runs themselves are tests/integration/test_preflight_runs.py."""

from __future__ import annotations

from topoctl.check import judge_preflight as preflight
from topoctl.deploy.sglang_launch import ParsedLaunch


def _launch(settings: dict, env: dict | None = None) -> ParsedLaunch:
    return ParsedLaunch(settings=settings, env=env or {}, where="launch.env:3", origin="launch.env")


def test_the_path_is_sglang_s_default_unless_the_launch_switches_it():
    assert preflight.launch_path({"tp_size": 8}) == "custom"
    assert preflight.launch_path({"custom_all_reduce": False}) == "nccl"
    assert (
        preflight.launch_path({"custom_all_reduce": False, "torch_symm_mem": True})
        == "torch_symm_mem"
    )
    assert (
        preflight.launch_path({"custom_all_reduce": False, "pcie_ipc_allreduce": True})
        == "pcie_ipc"
    )


def test_the_plan_takes_the_launch_s_gpus_environment_and_one_node_s_share():
    parsed = _launch(
        {"tp_size": 16, "nnodes": 2, "cuda_graph_max_bs": 32, "chunked_prefill_size": 4096},
        {"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7", "NCCL_P2P_DISABLE": "1", "HF_HOME": "/x"},
    )
    plan = preflight.plan_for(parsed, 14336)
    assert plan.world_size == 8 and plan.visible == "0,1,2,3,4,5,6,7"
    assert dict(plan.env) == {"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7", "NCCL_P2P_DISABLE": "1"}
    assert plan.sizes == (14336, 14336 * 32, 14336 * 4096)
    assert plan.path == "custom" and plan.bench_paths == ("nccl",) and plan.not_driven
    generic = preflight.plan_for(_launch({"tp_size": 2}), None)
    assert generic.sizes == preflight.GENERIC_SIZES and "give --model" in generic.size_source


def test_a_sum_that_is_wrong_a_hang_and_a_failed_init_block_with_their_fix():
    plan = preflight.plan_for(_launch({"tp_size": 2, "custom_all_reduce": False}), None)
    rows = [
        {"path": "nccl", "bytes": 4096, "cuda_graph": False, "status": "ok"},
        {
            "path": "nccl",
            "bytes": 65536,
            "cuda_graph": True,
            "status": "failed",
            "reason": "wrong result: the allreduce did not sum the ranks' values",
        },
    ]
    problems = [
        "timeout after 5 s: allreduce nccl 65536 B made no progress",
        "RuntimeError: Timed out waiting 5000ms for recv",  # the same hang from another rank
        "NCCL init failed: RuntimeError: x",
    ]
    results = preflight.collective_results(plan, rows, problems)
    statuses = [r.status for r in results]
    assert statuses == ["wrong result", "hung", "init failed"]  # no "ok" line beside a failure
    assert all(r.blocking and r.fix for r in results)
    assert "NCCL_P2P_DISABLE=1" in results[1].fix and "NCCL_SOCKET_IFNAME" in results[2].fix


def test_every_sum_right_is_one_ok_line_and_an_undriven_path_is_named_not_run():
    plan = preflight.plan_for(_launch({"tp_size": 2}), None)
    rows = [
        {"path": "nccl", "bytes": b, "cuda_graph": g, "status": "ok"}
        for b in (1, 2)
        for g in (0, 1)
    ]
    results = preflight.collective_results(plan, rows, [])
    assert [r.status for r in results] == ["ok", "not run"]
    assert "in a CUDA graph" in results[0].what and "custom" in results[1].what
    assert not preflight.Verdict(plan, results).blocked


def test_check_blocks_only_the_same_path_on_the_same_gpus_after_a_failed_preflight():
    failed = preflight.Verdict(
        preflight.plan_for(_launch({"tp_size": 2}, {"CUDA_VISIBLE_DEVICES": "0,1"}), None),
        [preflight.Result("allreduce", "hung", "timeout after 60 s", "fix", "nccl")],
    )
    rows = preflight.record(failed, "2026-12-08T00:00:00Z")
    same = _launch({"tp_size": 2}, {"CUDA_VISIBLE_DEVICES": "0,1"})
    items = preflight.recorded_items(same, rows)
    assert [i.id for i in items] == ["topoctl-preflight-failed"] and items[0].severity == "block"
    other_gpus = _launch({"tp_size": 2}, {"CUDA_VISIBLE_DEVICES": "2,3"})
    wider = _launch({"tp_size": 4}, {"CUDA_VISIBLE_DEVICES": "0,1"})
    assert preflight.recorded_items(other_gpus, rows) == []
    assert preflight.recorded_items(wider, rows) == []
    passed = [dict(rows[0], status="ok")]
    assert preflight.recorded_items(same, passed) == []
