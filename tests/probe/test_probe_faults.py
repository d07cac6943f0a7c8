"""Faults injected through the fake NVML binding, on the live code path (the real door, a live
Session)."""

from __future__ import annotations

import copy
import json

import pytest
from fakes.nvml import make_fake_pynvml
from fakes.session import SpecSession, installed
from fakes.systems import SYSTEMS

from topoctl.cli.app import main
from topoctl.core.errors import NoGpuError
from topoctl.probe.capture import Session
from topoctl.probe.collect import probe_capture, run_probe
from topoctl.probe.render_matrix import render


def system(name: str, **changes) -> dict:
    spec = copy.deepcopy(SYSTEMS[name]())
    spec["nvml"].update(changes)
    return spec


def probe(spec: dict, record: bool = False, with_torch: bool | None = None):
    """Live probe of `spec`: fake pynvml installed, sysfs/host/software from the spec. Returns
    (snapshot, fake, session)."""
    module = make_fake_pynvml(spec["nvml"])
    session = SpecSession(spec["world"], record=record)
    with installed(module):
        snapshot = run_probe(
            session, with_torch=spec["with_torch"] if with_torch is None else with_torch
        )
    return snapshot, module._fake, session


def no_gpu(spec: dict) -> NoGpuError:
    with pytest.raises(NoGpuError) as caught:
        probe(spec)
    return caught.value


# -- nothing to probe: exit 3 with a reason and a hint
# ------------------------------------------------------
def test_binding_missing_exits_3(capsys):
    with installed(None):  # `import pynvml` raises ImportError
        assert main(["probe"]) == 3
    err = capsys.readouterr().err
    assert err.startswith(
        "topoctl: error: no GPU visible: the NVML Python binding (nvidia-ml-py) is not installed"
    )
    assert "hint: pip install nvidia-ml-py" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 2


@pytest.mark.parametrize(
    "error, words",
    [
        ("LibraryNotFound", "libnvidia-ml.so"),
        ("DriverNotLoaded", "driver is not loaded"),
        ("NoPermission", "no permission"),
        ("LibRmVersionMismatch", "versions differ"),
        ("Unknown", "NVML could not start (Unknown)"),
    ],
)
def test_nvml_init_failures_exit_3(error, words, capsys):
    module = make_fake_pynvml({"init_error": error, "gpus": []})
    with installed(module):
        assert main(["probe", "--format", "json"]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 2 and words in lines[0] and lines[1].startswith("  hint: ")
    assert [call[0] for call in module._fake.calls] == ["nvmlInit"]


def test_zero_devices_exits_3_with_a_hint(capsys):
    module = make_fake_pynvml({"gpus": []})
    with installed(module):
        assert main(["probe"]) == 3
    err = capsys.readouterr().err
    assert "reports 0 devices" in err and "CUDA_VISIBLE_DEVICES" in err and "Traceback" not in err


def test_device_count_failure_exits_3():
    error = no_gpu(
        system(
            "l40s-4x-pcie-2numa",
            faults=[{"function": "nvmlDeviceGetCount", "error": "NoPermission"}],
        )
    )
    assert error.exit_code == 3 and "no permission" in error.message


# -- one field unknown, the probe goes on
# --------------------------------------------------------------------
def test_the_fault_free_probe_has_nothing_unknown():
    snapshot, fake, _ = probe(system("rtx-pro-6000-8x-pcie"))
    assert snapshot["unknown"] == {}
    assert snapshot["summary"]["all_pairs_p2p"] is True
    assert ("nvmlShutdown", ()) in fake.calls  # the live probe closes NVML


def test_not_supported_on_one_call_leaves_one_field_unknown():
    base, _, _ = probe(system("l40s-4x-pcie-2numa"))
    spec = system(
        "l40s-4x-pcie-2numa",
        faults=[
            {"function": "nvmlDeviceGetMaxPcieLinkGeneration", "device": 1, "error": "NotSupported"}
        ],
    )
    snapshot, _, _ = probe(spec)
    added = {key: value for key, value in snapshot["unknown"].items() if key not in base["unknown"]}
    assert added == {"gpus.1.pcie.max_gen": "NotSupported"}
    assert snapshot["gpus"][1]["pcie"]["max_gen"] is None
    assert (
        snapshot["gpus"][1]["pcie"]["gen_below_max"] is None
        and snapshot["gpus"][1]["pcie"]["slot_limited"] is None
    )
    assert snapshot["gpus"][0]["pcie"]["max_gen"] == 4
    # nothing else changed
    base["gpus"][1]["pcie"] = snapshot["gpus"][1]["pcie"]
    base["unknown"] = snapshot["unknown"]
    assert base == snapshot


@pytest.mark.parametrize("generation", ["r470"])
def test_old_driver_missing_functions(generation):
    snapshot, fake, _ = probe(system("h100-8x-nvswitch", driver_generation=generation))
    for gpu in snapshot["gpus"]:
        at = f"gpus.{gpu['index']}"
        assert gpu["fabric"] is None and snapshot["unknown"][f"{at}.fabric"] == "FunctionNotFound"
        assert gpu["pcie"]["gpu_max_gen"] is None
        assert snapshot["unknown"][f"{at}.pcie.gpu_max_gen"] == "FunctionNotFound"
        assert (
            gpu["architecture"] == "hopper"
        )  # from the compute capability when NVML lacks the call
        assert f"{at}.architecture" not in snapshot["unknown"]
    assert snapshot["summary"]["interconnect"] == "nvswitch"  # the probe went on
    # fabric and gpu_max_gen on 8 GPUs; the rest are the PCIe checks the h100 spec gives no answers
    # for
    assert (
        len(
            [
                key
                for key in snapshot["unknown"]
                if ".bar1" not in key
                and "pcie_counters" not in key
                and "pcie_acs" not in key
                and "iommu" not in key
            ]
        )
        == 16
    )


def test_architecture_unknown_when_both_sources_fail():
    spec = system(
        "l40s-4x-pcie-2numa",
        driver_generation="r470",
        faults=[
            {"function": "nvmlDeviceGetCudaComputeCapability", "device": 0, "error": "Unknown"}
        ],
    )
    snapshot, _, _ = probe(spec)
    gpu = snapshot["gpus"][0]
    assert gpu["architecture"] is None and gpu["compute_capability"] is None and gpu["sm"] is None
    assert snapshot["unknown"]["gpus.0.architecture"] == "FunctionNotFound"
    assert snapshot["unknown"]["gpus.0.compute_capability"] == "Unknown"
    assert snapshot["gpus"][1]["architecture"] == "ada"


def test_an_older_binding_without_the_fabric_struct():
    spec = system("h100-8x-nvswitch", absent=["c_nvmlGpuFabricInfoV_t", "c_nvmlGpuFabricInfo_t"])
    snapshot, _, _ = probe(spec)
    assert all(snapshot["unknown"][f"gpus.{i}.fabric"] == "FunctionNotFound" for i in range(8))


def test_a_binding_without_a_function_attribute():
    spec = system("l40s-4x-pcie-2numa", absent=["nvmlDeviceGetGpuMaxPcieLinkGeneration"])
    snapshot, _, _ = probe(spec)
    assert snapshot["unknown"]["gpus.0.pcie.gpu_max_gen"] == "FunctionNotFound"


def test_bytes_answers_from_an_old_binding_are_decoded():
    plain, _, _ = probe(system("rtx-4090-2x-pcie-no-p2p"))
    as_bytes, _, _ = probe(system("rtx-4090-2x-pcie-no-p2p", bytes_strings=True))
    assert as_bytes == plain
    assert as_bytes["gpus"][0]["name"] == "NVIDIA GeForce RTX 4090"


def test_nvlink_state_failure_other_than_not_supported_is_unknown():
    spec = system(
        "h100-8x-nvswitch",
        faults=[{"function": "nvmlDeviceGetNvLinkState", "device": 5, "error": "NoPermission"}],
    )
    snapshot, _, _ = probe(spec)
    assert snapshot["gpus"][5]["nvlink"]["active_links"] is None
    assert snapshot["unknown"]["gpus.5.nvlink.active_links"] == "NoPermission"
    assert (
        snapshot["summary"]["interconnect"] is None
    )  # not "nvswitch": one GPU's links are unknown


def test_p2p_unknown_on_one_pair_is_not_a_working_p2p():
    spec = system("rtx-pro-6000-8x-pcie", with_torch=False)
    spec["nvml"]["faults"] = [
        {"function": "nvmlDeviceGetP2PStatus", "device": 6, "error": "Unknown"}
    ]
    snapshot, _, _ = probe(spec, with_torch=False)
    pairs = {(p["src"], p["dst"]): p for p in snapshot["pairs"]}
    assert pairs[(3, 6)]["p2p"] == dict.fromkeys(
        ("read", "write", "nvlink", "atomics", "pci"), "unknown"
    )
    assert snapshot["unknown"]["pairs.3-6.p2p.read"] == "Unknown"
    assert snapshot["summary"]["all_pairs_p2p"] is None  # never True while a pair is unknown
    assert snapshot["summary"]["p2p_pairs_ok"] == 56 - 14
    assert "?" in render(snapshot)


def test_p2p_unknown_and_a_refusal_make_false():
    spec = system("rtx-pro-6000-8x-pcie")
    spec["nvml"]["p2p"]["read"][0][1] = 1  # CNS
    spec["nvml"]["faults"] = [
        {"function": "nvmlDeviceGetP2PStatus", "device": 7, "error": "Unknown"}
    ]
    snapshot, _, _ = probe(spec, with_torch=False)
    assert snapshot["summary"]["all_pairs_p2p"] is False


def test_one_gpu_lost():
    spec = system("rtx-pro-6000-8x-pcie", lost_gpus=[2])
    snapshot, _, _ = probe(spec, with_torch=False)
    lost = snapshot["gpus"][2]
    for field in (
        "name",
        "uuid",
        "pci_bus_id",
        "compute_capability",
        "memory_total_bytes",
        "mig_mode",
        "virtualization_mode",
    ):
        assert lost[field] is None
        assert snapshot["unknown"][f"gpus.2.{field}"] == "GpuIsLost"
    assert lost["numa_node"] is None and lost["root_complex"] is None
    assert lost["nvlink"]["active_links"] is None
    for pair in snapshot["pairs"]:
        if 2 in (pair["src"], pair["dst"]):
            assert set(pair["p2p"].values()) == {"unknown"}
            assert pair["pcie_ancestor"] is None and pair["link"] is None
        else:
            assert pair["p2p"]["read"] == "OK"
    assert not any(
        key.startswith("gpus.0.") or key.startswith("gpus.7.") for key in snapshot["unknown"]
    )
    summary = snapshot["summary"]
    assert summary["all_pairs_p2p"] is None and summary["p2p_pairs_ok"] == 42
    assert summary["interconnect"] is None and summary["gpu_count"] == 8
    text = render(snapshot)
    assert "GPU2: -" in text and "?" in text


def test_lost_gpu_with_torch_cross_check_maps_by_bus_id():
    spec = system("rtx-pro-6000-8x-pcie", lost_gpus=[2])
    snapshot, _, _ = probe(spec, with_torch=True)
    # torch still sees all eight; pairs between healthy GPUs keep their torch answer
    assert all(
        p["torch_can_access_peer"] is True
        for p in snapshot["pairs"]
        if 2 not in (p["src"], p["dst"])
    )


def test_torch_missing_makes_the_cross_check_unknown():
    spec = system("l40s-4x-pcie-2numa")
    snapshot, _, _ = probe(spec, with_torch=True)
    assert snapshot["unknown"]["torch"].startswith("torch not installed")
    assert all(p["torch_can_access_peer"] is None for p in snapshot["pairs"])


# -- record, replay, compare
# ----------------------------------------------------------------------------------
SCENARIOS = {
    "clean": ("l40s-4x-pcie-2numa", {}),
    "lost-gpu": ("rtx-pro-6000-8x-pcie", {"lost_gpus": [2]}),
    "r470": ("h100-8x-nvswitch", {"driver_generation": "r470"}),
    "not-supported": (
        "rtx-4090-2x-pcie-no-p2p",
        {
            "faults": [
                {"function": "nvmlDeviceGetCurrPcieLinkWidth", "device": 0, "error": "NotSupported"}
            ]
        },
    ),
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_record_replay_round_trip(scenario):
    name, changes = SCENARIOS[scenario]
    live, _, session = probe(system(name, **changes), record=True)
    capture = json.loads(json.dumps(session.capture_document("round trip")))
    with installed(None):  # a replay must never need the binding
        replayed = probe_capture(capture, name="x")
    replayed.pop("source")
    live.pop("source")
    assert json.loads(json.dumps(replayed)) == json.loads(json.dumps(live))


def test_record_replay_round_trip_through_the_cli(tmp_path, capsys):
    """`topoctl probe --record` on a live Session (this machine's sysfs, fake NVML), then
    --from-capture."""
    module = make_fake_pynvml(SYSTEMS["l40s-4x-pcie-2numa"]()["nvml"])
    capture, live_out, replay_out = (
        tmp_path / "cap.json",
        tmp_path / "live.json",
        tmp_path / "replay.json",
    )
    with installed(module):
        assert (
            main(["probe", "--record", str(capture), "--format", "json", "-o", str(live_out)]) == 0
        )
    with installed(None):
        assert (
            main(
                ["probe", "--from-capture", str(capture), "--format", "json", "-o", str(replay_out)]
            )
            == 0
        )
    live, replayed = json.loads(live_out.read_text()), json.loads(replay_out.read_text())
    assert live.pop("source")["kind"] == "live" and replayed.pop("source")["kind"] == "capture"
    assert live == replayed
    assert live["summary"]["downtrained_gpus"] == [2]
    recorded = json.loads(capture.read_text())
    assert recorded["capture_version"] == 1 and "nvmlDeviceGetP2PStatus|0|1|0" in recorded["nvml"]


def test_record_is_written_even_when_no_gpu(tmp_path):
    capture = tmp_path / "cap.json"
    with installed(make_fake_pynvml({"init_error": "DriverNotLoaded", "gpus": []})):
        assert main(["probe", "--record", str(capture)]) == 3
    recorded = json.loads(capture.read_text())
    assert recorded["nvml"]["nvmlInit"] == {"err": "DriverNotLoaded"}
    assert main(["probe", "--from-capture", str(capture)]) == 3


def test_live_session_on_this_machine_with_the_fake():
    """A plain Session(): NVML from the fake, sysfs/host/software from this machine (fields may be
    unknown)."""
    with installed(make_fake_pynvml(SYSTEMS["rtx-4090-2x-pcie-no-p2p"]()["nvml"])):
        snapshot = run_probe(Session())
    assert snapshot["summary"]["gpu_count"] == 2 and snapshot["summary"]["all_pairs_p2p"] is False
    assert {p["p2p"]["read"] for p in snapshot["pairs"]} == {"GNS"}


def test_timings_name_the_phases_and_the_costliest_questions(tmp_path, capsys):
    """`probe --timings` tells a user on a slow VM where the time goes: phases, then question kinds
    by cost."""
    module = make_fake_pynvml(SYSTEMS["h100-8x-nvswitch"]()["nvml"])
    with installed(module):
        assert main(["probe", "--timings", "--format", "json", "-o", str(tmp_path / "s.json")]) == 0
    err = capsys.readouterr().err
    phases = [line for line in err.splitlines() if line.startswith("topoctl: probe timing:")]
    calls = [line for line in err.splitlines() if line.startswith("topoctl: probe calls:")]
    assert any("ordered pairs" in line for line in phases) and any(
        "nvml shutdown" in line for line in phases
    )
    assert 1 <= len(calls) <= 8
    assert any("nvml nvmlDeviceGetP2PStatus" in line and " 280 x " in line for line in calls), calls


def test_without_timings_nothing_is_measured_or_printed(tmp_path, capsys):
    module = make_fake_pynvml(SYSTEMS["h100-8x-nvswitch"]()["nvml"])
    with installed(module):
        assert main(["probe", "--format", "json", "-o", str(tmp_path / "s.json")]) == 0
    assert "probe calls" not in capsys.readouterr().err
    assert Session().call_times is None


def test_common_ancestor_is_asked_once_per_unordered_pair_and_mirrored():
    spec = system("l40s-4x-pcie-2numa")
    module = make_fake_pynvml(spec["nvml"])
    session = SpecSession(spec["world"])
    session.call_times = {}
    with installed(module):
        snapshot = run_probe(session)
    assert session.call_times["nvml nvmlDeviceGetTopologyCommonAncestor"][0] == 4 * 3 // 2
    links = {(pair["src"], pair["dst"]): pair["pcie_ancestor"] for pair in snapshot["pairs"]}
    assert all(links[(i, j)] == links[(j, i)] for (i, j) in links)
    assert links[(0, 1)] == "NODE" and links[(0, 2)] == "SYS"


def test_an_unreadable_ancestor_is_unknown_in_both_directions():
    spec = system(
        "l40s-4x-pcie-2numa",
        faults=[
            {
                "function": "nvmlDeviceGetTopologyCommonAncestor",
                "device": None,
                "error": "NotSupported",
            }
        ],
    )
    snapshot, _, _ = probe(spec)
    assert snapshot["unknown"]["pairs.0-1.pcie_ancestor"] == "NotSupported"
    assert snapshot["unknown"]["pairs.1-0.pcie_ancestor"] == "NotSupported"
    assert all(pair["pcie_ancestor"] is None for pair in snapshot["pairs"])


def test_timings_charge_a_slow_call_to_itself_not_to_what_waited_for_it():
    """A slow handle lookup shows as nvmlDeviceGetHandleByIndex; questions that waited for it are
    not charged."""
    import time as clock

    spec = system("h100-8x-nvswitch")
    module = make_fake_pynvml(spec["nvml"])
    real_lookup = module.nvmlDeviceGetHandleByIndex

    def slow_lookup(index):
        clock.sleep(0.1)  # far above what 280 answers of the fake take, even on a loaded machine
        return real_lookup(index)

    module.nvmlDeviceGetHandleByIndex = slow_lookup
    session = SpecSession(spec["world"])
    session.call_times = {}
    with installed(module):
        run_probe(session)
    count, seconds = session.call_times["nvml nvmlDeviceGetHandleByIndex"]
    assert count == 8 and seconds >= 8 * 0.1
    p2p_count, p2p_seconds = session.call_times["nvml nvmlDeviceGetP2PStatus"]
    # the fake answers at once: the 280 P2P questions together took less than the handle lookups
    # they waited for
    assert p2p_count == 280 and p2p_seconds < seconds


# -- faults through the CLI: a partial snapshot with reasons, or one line and exit 3
# ----------------------------
def cli_probe(spec: dict, monkeypatch, capsys, tmp_path, *args: str, world: dict | None = None):
    """`topoctl probe --format json -o FILE ARGS` with the fake binding and the spec's world (sysfs,
    host, packages). Returns (exit code, snapshot or None, stderr, fake)."""
    import topoctl.probe.capture as capture_module

    module = make_fake_pynvml(spec["nvml"])
    used = spec["world"] if world is None else world
    monkeypatch.setattr(
        capture_module, "Session", lambda record=False: SpecSession(used, record=record)
    )
    out = tmp_path / "snapshot.json"
    try:
        with installed(module):
            code = main(["probe", "--format", "json", "-o", str(out), *args])
    finally:
        module._fake.release.set()  # let a "hung" call return, so no thread outlives the test
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    snapshot = json.loads(out.read_text()) if out.exists() else None
    return code, snapshot, err, module._fake


def test_cli_a_hung_nvml_call_is_named_by_the_watchdog(monkeypatch, capsys, tmp_path):
    """The deadline is far beyond what the fake needs to reach the hung call, even on a loaded CI
    machine, so the probe always stops *in* that call (a short deadline could pass before it and end
    in a partial snapshot instead); the grace after the deadline is cut so the test stays short."""
    import topoctl.probe.collect as collect_module

    monkeypatch.setattr(collect_module, "WATCHDOG_GRACE_S", 0.1)
    spec = system(
        "h100-8x-nvswitch",
        faults=[{"function": "nvmlDeviceGetP2PStatus", "device": 3, "hang": True}],
    )
    code, snapshot, err, fake = cli_probe(
        spec,
        monkeypatch,
        capsys,
        tmp_path,
        "--timeout",
        "2",
        "--record",
        str(tmp_path / "cap.json"),
    )
    assert code == 3 and snapshot is None  # no snapshot, never a verdict on what was not seen
    lines = err.strip().splitlines()
    assert lines[0].startswith(
        "topoctl: error: the probe did not finish within 2 s: NVML call nvmlDeviceGetP2PStatus(GPU "
    ), err
    assert (
        "GPU 3" in lines[0] and "has not returned" in lines[0] and lines[-1].startswith("  hint: ")
    )
    assert fake.hung and fake.hung[0][0] == "nvmlDeviceGetP2PStatus"
    recorded = json.loads(
        (tmp_path / "cap.json").read_text()
    )  # the raw answers up to the hang are kept
    assert recorded["nvml"]["nvmlDeviceGetCount"] == {"ok": 8}
    assert "nvmlDeviceGetP2PStatus|0|1|0" in recorded["nvml"]  # calls that returned are there
    assert "nvmlDeviceGetP2PStatus|0|3|0" not in recorded["nvml"]  # the hung one never answered


def test_cli_calls_past_the_deadline_are_unknown_with_reason_timeout(monkeypatch, capsys, tmp_path):
    """A call that is slow but returns (inside the watchdog's grace): the probe ends with a partial
    snapshot."""
    spec = system(
        "h100-8x-nvswitch",
        faults=[{"function": "nvmlDeviceGetP2PStatus", "device": 3, "hang": True, "hang_s": 0.5}],
    )
    code, snapshot, err, _ = cli_probe(spec, monkeypatch, capsys, tmp_path, "--timeout", "0.2")
    assert code == 0
    timed_out = [key for key, reason in snapshot["unknown"].items() if reason == "Timeout"]
    assert timed_out and "reached --timeout" in err
    assert (
        snapshot["summary"]["all_pairs_p2p"] is not True
    )  # what was not asked is not a working P2P


def test_cli_nvml_missing_is_one_line_exit_3(monkeypatch, capsys, tmp_path):
    with installed(None):
        code = main(["probe", "--format", "json", "-o", str(tmp_path / "s.json")])
    err = capsys.readouterr().err
    assert code == 3 and not (tmp_path / "s.json").exists()
    assert len(err.strip().splitlines()) == 2 and "nvidia-ml-py" in err


def test_cli_driver_without_the_versioned_fabric_call_falls_back_to_the_older_one(
    monkeypatch, capsys, tmp_path
):
    _, new, _, _ = cli_probe(system("h100-8x-nvswitch"), monkeypatch, capsys, tmp_path)
    code, old, _, fake = cli_probe(
        system("h100-8x-nvswitch", driver_generation="r535"), monkeypatch, capsys, tmp_path
    )
    assert code == 0
    assert [gpu["fabric"] for gpu in old["gpus"]] == [gpu["fabric"] for gpu in new["gpus"]]
    assert all(gpu["fabric"]["state"] == "completed" for gpu in old["gpus"])
    assert not any(key.endswith(".fabric") for key in old["unknown"])
    called = [name for name, _ in fake.calls]
    assert "nvmlDeviceGetGpuFabricInfoV" in called and "nvmlDeviceGetGpuFabricInfo" in called


def test_cli_not_supported_single_calls_in_a_vm(monkeypatch, capsys, tmp_path):
    faults = [
        {"function": "nvmlDeviceGetTopologyCommonAncestor", "error": "NotSupported"},
        {"function": "nvmlDeviceGetMaxPcieLinkGeneration", "error": "NotSupported"},
        {"function": "nvmlDeviceGetVirtualizationMode", "device": 1, "error": "NotSupported"},
    ]
    code, snapshot, _, _ = cli_probe(
        system("l40s-4x-pcie-2numa", faults=faults), monkeypatch, capsys, tmp_path
    )
    assert code == 0
    unknown = snapshot["unknown"]
    assert (
        unknown["pairs.0-1.pcie_ancestor"] == "NotSupported"
        and unknown["gpus.2.pcie.max_gen"] == "NotSupported"
    )
    assert (
        unknown["gpus.1.virtualization_mode"] == "NotSupported"
        and snapshot["gpus"][0]["virtualization_mode"]
    )
    assert all(pair["pcie_ancestor"] is None for pair in snapshot["pairs"])


def test_cli_one_gpu_of_eight_lost(monkeypatch, capsys, tmp_path):
    code, snapshot, _, _ = cli_probe(
        system("rtx-pro-6000-8x-pcie", lost_gpus=[5]), monkeypatch, capsys, tmp_path
    )
    assert code == 0 and snapshot["summary"]["gpu_count"] == 8
    assert snapshot["unknown"]["gpus.5.name"] == "GpuIsLost"
    assert (
        snapshot["summary"]["all_pairs_p2p"] is None and snapshot["summary"]["interconnect"] is None
    )
    assert main(["show", "--topology", str(tmp_path / "snapshot.json")]) == 0
    assert "?" in capsys.readouterr().out


@pytest.mark.parametrize(
    "failure", ["PermissionError", "FileNotFoundError"], ids=["unreadable", "absent"]
)
def test_cli_sysfs_unreadable_or_absent_in_a_container(failure, monkeypatch, capsys, tmp_path):
    spec = system("l40s-4x-pcie-2numa")
    world = copy.deepcopy(spec["world"])
    from topoctl.probe.capture import ProbeFailure

    world["files"] = {key: ProbeFailure(failure) for key in world.get("files", {})}
    code, snapshot, _, _ = cli_probe(spec, monkeypatch, capsys, tmp_path, world=world)
    assert code == 0
    for gpu in snapshot["gpus"]:
        at = f"gpus.{gpu['index']}"
        assert gpu["root_complex"] is None and gpu["numa_node"] is None and gpu["pcie_path"] == []
        assert snapshot["unknown"][f"{at}.root_complex"] == f"sysfs: {failure}"
        assert snapshot["unknown"][f"{at}.numa_node"] == "sysfs numa_node unreadable"
    assert snapshot["summary"]["numa_nodes_spanned"] is None
    clean, _, _ = probe(
        system("l40s-4x-pcie-2numa")
    )  # NVML still answered: what was seen stays seen
    assert [pair["p2p"] for pair in snapshot["pairs"]] == [pair["p2p"] for pair in clean["pairs"]]


def test_cli_mig_on_some_gpus(monkeypatch, capsys, tmp_path):
    spec = system("h100-8x-nvswitch")
    for index in (0, 1):
        spec["nvml"]["gpus"][index]["mig"] = [1, 1]
    # NVML answers P2P questions about a MIG-enabled GPU with NotSupported (as a VM or MIG does)
    spec["nvml"]["faults"] = [
        {"function": "nvmlDeviceGetP2PStatus", "device": 0, "error": "NotSupported"},
        {"function": "nvmlDeviceGetP2PStatus", "device": 1, "error": "NotSupported"},
    ]
    code, snapshot, _, _ = cli_probe(spec, monkeypatch, capsys, tmp_path)
    assert code == 0
    assert [gpu["mig_mode"] for gpu in snapshot["gpus"]] == ["enabled"] * 2 + ["disabled"] * 6
    assert snapshot["summary"]["mig_enabled"] is True
    assert snapshot["unknown"]["pairs.0-5.p2p.read"] == "NotSupported"
    assert (
        snapshot["summary"]["all_pairs_p2p"] is None
    )  # not True: pairs with the MIG GPUs were not seen


@pytest.mark.parametrize(
    "value, devices, hidden, ended",
    [
        ("2,3", [(0, 2), (1, 3)], [0, 1, 4, 5, 6, 7], None),
        ("7,0", [(0, 7), (1, 0)], [1, 2, 3, 4, 5, 6], None),
        ("0,2,-1,1", [(0, 0), (1, 2)], [1, 3, 4, 5, 6, 7], "-1"),  # the CUDA guide's own example
        ("", [], list(range(8)), None),
        ("UUID3", [(0, 3)], [0, 1, 2, 4, 5, 6, 7], None),
        (
            "1,1",
            [],
            None,
            None,
        ),  # a repeat: CUDA's documentation does not say what it does, so unknown
    ],
    ids=["2,3", "7,0", "invalid-ends", "empty", "uuid-prefix", "repeat"],
)
def test_cli_cuda_visible_devices_says_what_was_seen_and_the_cuda_ids(
    value, devices, hidden, ended, monkeypatch, capsys, tmp_path
):
    spec = system("h100-8x-nvswitch")
    if value == "UUID3":
        value = spec["nvml"]["gpus"][3]["uuid"][:12]
    world = copy.deepcopy(spec["world"])
    world.setdefault("host", {})["cuda_env"] = {
        "CUDA_VISIBLE_DEVICES": value,
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    }
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    code, snapshot, err, _ = cli_probe(
        spec, monkeypatch, capsys, tmp_path, "--record", str(tmp_path / "cap.json"), world=world
    )
    assert (
        code == 0 and len(snapshot["gpus"]) == 8
    )  # NVML sees every GPU; the snapshot lists them all
    visible = snapshot["cuda_visible_devices"]
    assert [(d["cuda"], d["gpu"]) for d in visible["cuda_devices"]] == devices
    assert visible["hidden"] == hidden and visible["ended_at"] == ended
    note = [
        line for line in err.splitlines() if line.startswith("topoctl: note: CUDA_VISIBLE_DEVICES=")
    ]
    assert len(note) == 1 and "saw all 8 GPUs" in note[0]
    assert all(f"GPU{gpu} as cuda:{cuda}" in note[0] for cuda, gpu in devices)
    monkeypatch.delenv(
        "CUDA_VISIBLE_DEVICES"
    )  # the replay answers from the capture, not from this process
    with installed(None):
        replayed = probe_capture(json.loads((tmp_path / "cap.json").read_text()), name="x")
    assert replayed["cuda_visible_devices"] == visible


def test_cuda_visible_devices_unset_adds_nothing(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    code, snapshot, err, _ = cli_probe(system("l40s-4x-pcie-2numa"), monkeypatch, capsys, tmp_path)
    assert (
        code == 0 and "cuda_visible_devices" not in snapshot and "CUDA_VISIBLE_DEVICES" not in err
    )
