"""Host facts from /proc/cpuinfo: read once, parsed in one pass, and only the parsed facts recorded
(the whole file was 96 KB of the 120 KB 4x H200 capture). Captures made before keep replaying to the
same snapshot."""

from __future__ import annotations

import builtins
import copy
import json
import os

import pytest
from conftest import FIXTURES
from fakes.systems import SYSTEMS, _cpuinfo

from topoctl.probe.capture import Session
from topoctl.probe.collect import probe_capture
from topoctl.probe.files import Files
from topoctl.probe.host import collect_host, parse_cpuinfo

REAL = ["h200-2x-nvswitch-vm", "h200-4x-nvswitch-vm"]


def _recorded_with_whole_cpuinfo(name: str) -> bool:
    with open(os.path.join(FIXTURES, name, "capture.json"), encoding="utf-8") as handle:
        return "read:/proc/cpuinfo" in json.load(handle).get("files", {})


# Real captures recorded before the probe kept only the parsed CPU facts; they must keep replaying.
OLD_REAL = [name for name in REAL if _recorded_with_whole_cpuinfo(name)]
NEW_REAL = [name for name in REAL if not _recorded_with_whole_cpuinfo(name)]


def test_both_capture_generations_are_covered_by_real_fixtures():
    assert OLD_REAL and NEW_REAL


def capture(name: str) -> dict:
    with open(os.path.join(FIXTURES, name, "capture.json"), encoding="utf-8") as handle:
        return json.load(handle)


def test_parse_bare_metal_with_smt():
    facts = parse_cpuinfo(_cpuinfo("AMD EPYC 9354 32-Core Processor", logical=128, sockets=2))
    assert facts == {
        "model": "AMD EPYC 9354 32-Core Processor",
        "hypervisor_flag": False,
        "cores_physical": 64,
    }


def test_parse_vm_without_core_ids():
    text = "".join(
        f"processor\t: {i}\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu sse2 "
        "hypervisor avx\n\n"
        for i in range(4)
    )
    assert parse_cpuinfo(text) == {
        "model": "Intel(R) Xeon(R) Processor",
        "hypervisor_flag": True,
        "cores_physical": None,
    }


def test_parse_without_model_or_flags():
    """Arm's /proc/cpuinfo names neither a model name nor flags: unknown, not guessed."""
    text = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\n\n"
    assert parse_cpuinfo(text) == {"model": None, "hypervisor_flag": None, "cores_physical": None}
    assert parse_cpuinfo("") == {"model": None, "hypervisor_flag": None, "cores_physical": None}


def test_only_the_first_flags_line_counts_and_hypervisor_is_a_whole_word():
    text = "flags\t: fpu hypervisor_like\n\nflags\t: fpu hypervisor\n"
    assert parse_cpuinfo(text)["hypervisor_flag"] is False


@pytest.mark.parametrize("name", [n for n in sorted(SYSTEMS) if n != "no-gpu"])
def test_synthetic_specs_cpu_answer_is_what_their_cpuinfo_says(name):
    """Each spec holds /proc/cpuinfo's text and the parsed "cpu" answer: they agree."""
    world = SYSTEMS[name]()["world"]
    assert parse_cpuinfo(world["files"]["read:/proc/cpuinfo"]) == world["host"]["cpu"]


@pytest.mark.skipif(not os.path.isfile("/proc/cpuinfo"), reason="no /proc/cpuinfo here")
def test_live_probe_reads_cpuinfo_once_and_records_only_the_facts(monkeypatch):
    opened: list[str] = []
    real_open = builtins.open

    def counting_open(file, *args, **kwargs):
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    session = Session(record=True)
    host, _ = collect_host(session, Files(session))
    assert opened.count("/proc/cpuinfo") == 1
    document = session.capture_document()
    assert "read:/proc/cpuinfo" not in document["files"]
    recorded = document["host"]["cpu"]["ok"]
    assert set(recorded) == {"model", "hypervisor_flag", "cores_physical"}
    assert len(json.dumps(recorded)) < 300
    assert host["cpu_model"] == recorded["model"]
    assert isinstance(host["cpu_cores_physical"], int) and host["cpu_cores_physical"] >= 1


@pytest.mark.parametrize("name", OLD_REAL)
def test_real_capture_recorded_the_new_way_gives_the_same_snapshot(name):
    """The real H200 captures hold the whole file (recorded before the "cpu" question); the same
    machine answering the "cpu" question gives the same snapshot, in a much smaller capture."""
    old = capture(name)
    new = copy.deepcopy(old)
    text = new["files"].pop("read:/proc/cpuinfo")["ok"]
    counts = new["host"].pop("counts", None) or new["host"].pop("psutil")
    physical = counts["ok"].pop("cpu_cores_physical")
    new["host"]["counts"] = counts
    new["host"]["cpu"] = {"ok": {**parse_cpuinfo(text), "cores_physical": physical}}
    assert probe_capture(new, name=name) == probe_capture(old, name=name)
    assert len(json.dumps(new)) < len(json.dumps(old)) - 40_000


@pytest.mark.parametrize("name", OLD_REAL)
def test_old_capture_without_the_file_leaves_the_cpu_unknown(name):
    old = capture(name)
    old["files"].pop("read:/proc/cpuinfo")
    snapshot = probe_capture(old, name=name)
    assert (
        snapshot["host"]["cpu_model"] is None
        and snapshot["unknown"]["host.cpu_model"] == "NotRecorded"
    )
    assert (
        snapshot["host"]["cpu_cores_physical"]
        == capture(name)["host"].get("counts", capture(name)["host"].get("psutil"))["ok"][
            "cpu_cores_physical"
        ]
    )


def test_a_bad_cpu_answer_is_ignored_not_trusted():
    document = capture("h200-2x-nvswitch-vm")
    document["host"]["cpu"] = {
        "ok": {"model": 7, "hypervisor_flag": "yes", "cores_physical": "many"}
    }
    snapshot = probe_capture(document, name="edited")
    host = snapshot["host"]
    assert host["cpu_model"] is None and host["cpu_cores_physical"] == 32
    assert (
        host["virtualized"] is None
    )  # this VM's DMI names no hypervisor: only the (now unreadable) flag did
    assert snapshot["unknown"]["host.virtualized"] == "no CPU flags or DMI data"


@pytest.mark.parametrize("name", NEW_REAL)
def test_a_new_real_capture_holds_only_the_parsed_cpu_facts(name):
    document = capture(name)
    assert "read:/proc/cpuinfo" not in document["files"]
    assert set(document["host"]["cpu"]["ok"]) == {"model", "hypervisor_flag", "cores_physical"}
    snapshot = probe_capture(document, name=name)
    assert snapshot["host"]["cpu_model"] and snapshot["host"]["virtualized"] is True


def test_no_cpuinfo_and_no_counts_leaves_the_counts_unknown():
    document = capture(OLD_REAL[0])
    document["files"].pop("read:/proc/cpuinfo")
    document["host"] = {
        "platform": document["host"]["platform"],
        "cpu": {"err": "FileNotFoundError"},
        "counts": {"err": "psutil missing"},
    }
    snapshot = probe_capture(document, name="bare")
    assert snapshot["host"]["cpu_cores_physical"] is None
    assert snapshot["unknown"]["host.cpu_cores_physical"] == "psutil missing"
    assert snapshot["unknown"]["host.cpu_model"] == "FileNotFoundError"
