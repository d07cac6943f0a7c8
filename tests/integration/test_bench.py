"""topoctl bench on CPU: the harness, sweep, result format and statistics over gloo with 2 and 4
processes.

GPU-only parts (CUDA graphs, symmetric memory, peer copies) sit behind Device/PeerCopies; here the
CPU back end and the fake peers (with hang/corrupt/crawl faults) stand in for them. Each run spawns
real processes, so these tests take seconds each; they assert on what was measured and how it is
reported, never on timings.
"""

from __future__ import annotations

import json
import os

import pytest

from topoctl.probe.bench import plan as planning
from topoctl.probe.bench.stats import percentile, spread

pytestmark = pytest.mark.slow  # minutes: its own step of .ci/run (setup.cfg, "markers")

torch = pytest.importorskip("torch")

FIXTURES = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "fixtures"
)


# ------------------------------------------------------------------------------------------- pure
# parts


def test_percentiles_interpolate_between_ranks():
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([10.0], 90) == 10.0
    assert percentile(list(range(11)), 10) == pytest.approx(1.0)
    assert spread([1e-6, 2e-6, 3e-6], 1e6) == {"median": 2.0, "p10": 1.2, "p90": 2.8}
    with pytest.raises(ValueError):
        percentile([], 50)


def test_sizes_and_the_models_messages():
    assert planning.parse_size("42K") == 43008 and planning.parse_size("2.5M") == int(2.5 * 1024**2)
    assert planning.parse_size("4096") == 4096 and planning.parse_size("1GiB") == 1024**3
    from topoctl.core.errors import TopoctlError

    for bad in ("", "x", "-4K", "1T", "2"):
        with pytest.raises(TopoctlError):
            planning.parse_size(bad)
    from topoctl.autoconf.models import profile

    kimi = profile("kimi-k2.5")
    assert planning.model_messages(kimi, [1, 3]) == [14336, 43008]  # hidden 7168 x bf16 x tokens
    assert planning.coalescing_question(kimi) == {
        "n": 122,
        "bytes_each": 43008,
    }  # the field report's question
    plan = planning.build_plan(4, kimi, [4096], [3], 60, 30)
    assert plan.all_sizes() == [4096, 43008] and len(plan.p2p_pairs) == 12


def test_repetitions_fit_the_slice():
    inner, samples = planning.repetitions(20e-6, 0.5)
    assert inner == 50 and samples == 100  # ~1 ms per sample, capped at 100 samples
    assert planning.repetitions(0.5, 0.1) == (1, 5)  # a slow op still gets 5 samples


# ------------------------------------------------------------------------------------------ real
# runs


def _plan(world: int, **overrides):
    plan = planning.build_plan(world, None, [4096, 65536], [], 1.5, 20, backend="gloo")
    plan.coalescing = {"n": 6, "bytes_each": 4096}
    for key, value in overrides.items():
        setattr(plan, key, value)
    return plan


def _run(plan, on_update=None):
    from topoctl.probe.bench.runner import Progress, run_bench

    updates = []
    outcome = run_bench(
        plan,
        {"torch": torch.__version__},
        list(range(plan.world_size)),
        on_update or (lambda m: updates.append(json.loads(json.dumps(m)))),
        progress=Progress(1, enabled=False),
    )
    return outcome, updates


def test_four_processes_name_the_hung_corrupt_and_crawling_pairs():
    plan = _plan(4, faults={"0-1": "hang", "1-2": "corrupt", "2-3": "crawl"}, timeout_s=6)
    outcome, updates = _run(plan)
    m = outcome.measurements
    rows = {(row["src"], row["dst"]): row for row in m["p2p"]}
    assert len(rows) == 12  # the hang did not cost the other pairs: a fresh worker went on
    assert rows[(0, 1)]["healthy"] is False and rows[(0, 1)]["reason"].startswith(
        "timeout after 6 s"
    )
    assert rows[(1, 2)]["healthy"] is False and rows[(1, 2)]["reason"].startswith("data mismatch")
    assert rows[(2, 3)]["healthy"] is False and rows[(2, 3)]["reason"].startswith("crawl")
    healthy = [row for key, row in rows.items() if key not in ((0, 1), (1, 2), (2, 3))]
    for row in healthy:
        assert row["healthy"] and row["bandwidth_gbps"]["one_way"] > 0 and row["latency_us"] > 0, (
            row
        )
    ok = [row for row in m["allreduce"] if row["status"] == "ok"]
    assert {row["bytes"] for row in ok} == {4096, 65536} and all(
        row["world_size"] == 4 for row in ok
    )
    assert all(
        row["latency_us"]["p10"] <= row["latency_us"]["median"] <= row["latency_us"]["p90"]
        for row in ok
    )
    assert all(row["repetitions"] >= 5 and row["cuda_graph"] is False for row in ok)
    graph_rows = [row for row in m["allreduce"] if row["cuda_graph"] is True]
    assert graph_rows and all(
        row["status"] == "unavailable" and "GPU" in row["reason"] for row in graph_rows
    )
    reasons = {
        row["path"]: row["reason"] for row in m["allreduce"] if row["status"] == "unavailable"
    }
    assert (
        "torch_symm_mem" in reasons and "custom" in reasons
    )  # recorded with the reason, not skipped
    (coalescing,) = m["coalescing"]
    assert (
        coalescing["n"] == 6 and coalescing["many_small_us"] > 0 and coalescing["two_large_us"] > 0
    )
    assert m["complete"] is False  # the hang is a stop of the P2P phase, said so
    assert updates and len(updates[-1]["p2p"]) == 12  # every row reached the output as it came


def test_interrupt_keeps_what_was_measured():
    plan = _plan(2)
    seen = []

    def on_update(measurements):
        seen.append(len(measurements["allreduce"]))
        if measurements["allreduce"] and any(
            r["status"] == "ok" for r in measurements["allreduce"]
        ):
            raise KeyboardInterrupt

    outcome, _ = _run(plan, on_update)
    assert outcome.interrupted and outcome.measurements["complete"] is False
    assert any(row["status"] == "ok" for row in outcome.measurements["allreduce"])
    assert len(outcome.measurements["p2p"]) == 2
    assert "interrupted" in outcome.measurements["problems"][-1]


def test_process_group_failure_is_a_clear_problem():
    outcome, _ = _run(_plan(2, faults={"init": "fail"}))
    assert outcome.measurements["complete"] is False
    assert any("init failed" in problem and "simulated" in problem for problem in outcome.problems)
    assert len(outcome.measurements["p2p"]) == 2  # measured before the collectives are kept


def test_cli_two_processes_write_a_snapshot_show_displays(tmp_path):
    from click.testing import CliRunner

    from topoctl.cli.app import cli
    from topoctl.snapshot.document import load_snapshot

    out = tmp_path / "machine.json"
    result = CliRunner().invoke(
        cli,
        [
            "bench",
            "--topology",
            os.path.join(FIXTURES, "h200-2x-nvswitch-vm", "snapshot.json"),
            "--backend",
            "gloo",
            "--model",
            "kimi-k2.5",
            "--tokens",
            "3",
            "--sizes",
            "4K",
            "--budget-s",
            "1",
            "--format",
            "json",
            "-o",
            str(out),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    snapshot = load_snapshot(str(out))
    m = snapshot["measurements"]
    assert m["backend"] == "gloo" and m["model"] == "kimi-k2.5" and m["model_bytes"] == [43008]
    assert {row["bytes"] for row in m["allreduce"] if row["status"] == "ok"} == {4096, 43008}
    assert m["coalescing"][0]["n"] == 122 and m["coalescing"][0]["bytes_each"] == 43008
    shown = CliRunner().invoke(cli, ["show", "--topology", str(out), "--no-color"])
    assert shown.exit_code == 0 and "Measured (topoctl bench" in shown.output
    assert "42K" in shown.output and "122 x 42K" in shown.output


def test_cli_bad_options_exit_2_before_any_process(tmp_path):
    from topoctl.cli.app import main

    snapshot = os.path.join(FIXTURES, "h200-2x-nvswitch-vm", "snapshot.json")
    assert main(["bench", "--topology", snapshot, "--backend", "gloo", "--sizes", "lots"]) == 2
    assert main(["bench", "--topology", snapshot, "--backend", "gloo", "--budget-s", "0"]) == 2
    assert main(["bench", "--topology", snapshot, "--model", "kimi-k2.5", "--model-path", "x"]) == 2
    assert (
        main(
            [
                "bench",
                "--topology",
                snapshot,
                "--backend",
                "gloo",
                "-o",
                str(tmp_path / "no" / "x.json"),
            ]
        )
        == 2
    )


def test_parse_size_round_trips_every_plain_and_suffixed_size():
    from hypothesis import given
    from hypothesis import strategies as st

    @given(st.integers(min_value=4, max_value=8 * 1024**3), st.sampled_from(["", "B"]))
    def plain(value, suffix):
        assert planning.parse_size(f"{value}{suffix}") == value

    @given(
        st.integers(min_value=1, max_value=1024),
        st.sampled_from([("K", 1024), ("M", 1024**2), ("Ki", 1024), ("MiB", 1024**2), ("k", 1024)]),
    )
    def suffixed(value, unit):
        assert planning.parse_size(f"{value}{unit[0]}") == value * unit[1]

    plain()
    suffixed()


def test_rows_are_written_in_snapshot_gpu_numbers():
    """Workers count GPUs in torch's order; the snapshot in NVML's: rows are mapped by PCI bus id."""
    from topoctl.cli.commands.bench import _gpu_map
    from topoctl.probe.bench.runner import Progress, Runner, empty_measurements

    snapshot = {
        "gpus": [
            {"index": 0, "pci_bus_id": "00000000:18:00.0"},
            {"index": 1, "pci_bus_id": "00000000:3B:00.0"},
        ]
    }
    mapping = _gpu_map(snapshot)
    assert mapping(["00000000:3b:00.0", "00000000:18:00.0"]) == [1, 0]  # torch 0 is NVML 1
    plan = _plan(2)
    runner = Runner(
        plan,
        empty_measurements(plan, {}, [0, 1]),
        lambda m: None,
        Progress(1, enabled=False),
        mapping,
    )
    runner.index_map = [1, 0]
    assert runner.translate("p2p", {"src": 0, "dst": 1})["src"] == 1
    assert runner.translate("local_copy", {"gpu": 0})["gpu"] == 1
    assert runner.translate("allreduce", {"gpus": [0, 1]})["gpus"] == [1, 0]


def test_a_busy_gpu_is_named_before_measuring():
    from fakes.nvml import make_fake_pynvml
    from fakes.session import installed
    from fakes.systems import SYSTEMS

    from topoctl.probe.bench.busy import busy_gpus

    spec = SYSTEMS["rtx-4090-2x-pcie-no-p2p"]()["nvml"]
    spec["gpus"][1]["processes"] = [4242]
    spec["gpus"][1]["utilization"] = 97
    with installed(make_fake_pynvml(spec)):
        lines = busy_gpus([0, 1])
    assert lines == [
        "GPU 1 is busy (1 compute process(es) running, 97% utilised): its figures measure the "
        "contention too"
    ]
