"""Every fixture replays through the CLI, its committed snapshot.json equals the replay, and the
synthetic captures are exactly what their specs produce."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, ROOT, fixture_dirs

from topoctl.cli.app import cli, main

P2P_STATUSES = {"OK", "CNS", "GNS", "TNS", "DR", "NS", "U", "unknown"}
LINKS = {"PIX", "PXB", "PHB", "NODE", "SYS"}
TOP_KEYS = {
    "schema_version",
    "topoctl_version",
    "source",
    "host",
    "gpus",
    "pairs",
    "nvlink",
    "pcie",
    "software",
    "summary",
    "unknown",
}
GPU_KEYS = {
    "index",
    "name",
    "uuid",
    "pci_bus_id",
    "compute_capability",
    "sm",
    "architecture",
    "memory_total_bytes",
    "mig_mode",
    "virtualization_mode",
    "numa_node",
    "root_complex",
    "pcie_path",
    "pcie",
    "nvlink",
    "fabric",
}
PAIR_KEYS = {"src", "dst", "p2p", "link", "nvlinks", "pcie_ancestor"}
SOFTWARE_KEYS = {
    "driver",
    "cuda_driver",
    "cuda_runtime",
    "nccl",
    "torch",
    "sglang",
    "sgl_kernel",
    "flashinfer",
    "vllm",
    "nvidia_ml_py",
}
SUMMARY_KEYS = {
    "gpu_count",
    "gpu_names",
    "compute_capabilities",
    "architectures",
    "interconnect",
    "all_pairs_p2p",
    "p2p_pairs_ok",
    "p2p_pairs_total",
    "nvlink_all_pairs",
    "numa_nodes_spanned",
    "root_complex_groups",
    "downtrained_gpus",
    "virtualized",
}
HOST_KEYS = {
    "hostname",
    "kernel",
    "os",
    "cpu_model",
    "cpu_cores_logical",
    "cpu_cores_physical",
    "numa_nodes",
    "memory_bytes",
    "virtualized",
    "hypervisor",
}

GPU_FIXTURES = [name for name in fixture_dirs() if name != "no-gpu"]
# a synthetic system is a fixture folder with a spec.json (scripts/make_synthetic_fixtures.py); the
# others are real
SYNTHETIC = [
    name for name in fixture_dirs() if os.path.isfile(os.path.join(FIXTURES, name, "spec.json"))
]


def path_of(name: str) -> str:
    return os.path.join(FIXTURES, name)


def check_shape(snapshot: dict) -> None:
    assert TOP_KEYS <= set(snapshot), TOP_KEYS - set(snapshot)
    assert snapshot["schema_version"] == 1
    assert HOST_KEYS <= set(snapshot["host"])
    assert SOFTWARE_KEYS <= set(snapshot["software"])
    assert SUMMARY_KEYS <= set(snapshot["summary"])
    n = len(snapshot["gpus"])
    assert n >= 1 and snapshot["summary"]["gpu_count"] == n
    for position, gpu in enumerate(snapshot["gpus"]):
        assert GPU_KEYS <= set(gpu), GPU_KEYS - set(gpu)
        assert gpu["index"] == position
        assert {"current_gen", "max_gen", "current_width", "max_width", "downtrained"} <= set(
            gpu["pcie"]
        )
        assert {"links_supported", "active_links", "version", "version_name", "remote"} <= set(
            gpu["nvlink"]
        )
    keys = [(pair["src"], pair["dst"]) for pair in snapshot["pairs"]]
    assert len(keys) == n * (n - 1) == len(set(keys))
    assert set(keys) == {(i, j) for i in range(n) for j in range(n) if i != j}
    for pair in snapshot["pairs"]:
        assert PAIR_KEYS <= set(pair)
        assert set(pair["p2p"]) == {"read", "write", "nvlink", "atomics", "pci"}
        assert set(pair["p2p"].values()) <= P2P_STATUSES
        link = pair["link"]
        assert (
            link is None
            or link in LINKS
            or (link.startswith("NV") and int(link[2:]) == pair["nvlinks"] > 0)
        )
    assert {"present", "nvswitch", "switch_hidden"} <= set(snapshot["nvlink"])
    assert {"virtual", "root_complexes"} <= set(snapshot["pcie"])
    for dotted, reason in snapshot["unknown"].items():
        assert isinstance(dotted, str) and isinstance(reason, str) and reason


def test_all_expected_fixtures_exist():
    names = set(fixture_dirs())
    assert (
        {
            "h100-8x-nvswitch",
            "l40s-4x-pcie-2numa",
            "no-gpu",
            "rtx-4090-2x-pcie-no-p2p",
            "rtx-pro-6000-8x-pcie",
        }
        <= set(SYNTHETIC)
        <= names
    )  # the field report's system among them
    assert "h200-4x-nvswitch-vm" in names and "h200-4x-nvswitch-vm" not in SYNTHETIC


@pytest.mark.parametrize("name", GPU_FIXTURES)
def test_replay_through_main(name, tmp_path, capsys):
    out = tmp_path / "snap.json"
    assert main(["probe", "--from-capture", path_of(name), "--format", "json", "-o", str(out)]) == 0
    snapshot = json.loads(out.read_text())
    check_shape(snapshot)
    assert snapshot["source"]["kind"] == "capture"
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("name", GPU_FIXTURES)
def test_replay_through_click_runner(name):
    result = CliRunner().invoke(
        cli,
        [
            "probe",
            "--from-capture",
            os.path.join(path_of(name), "capture.json"),
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    check_shape(json.loads(result.output))


@pytest.mark.parametrize("name", GPU_FIXTURES)
def test_replay_yaml_equals_json(name):
    import yaml

    as_json = CliRunner().invoke(
        cli, ["probe", "--from-capture", path_of(name), "--format", "json"]
    )
    as_yaml = CliRunner().invoke(cli, ["probe", "--from-capture", path_of(name)])
    assert yaml.safe_load(as_yaml.output) == json.loads(as_json.output)


def test_replay_in_a_real_subprocess(tmp_path):
    out = tmp_path / "snap.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "topoctl",
            "probe",
            "--from-capture",
            path_of("rtx-pro-6000-8x-pcie"),
            "--format",
            "json",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    snapshot = json.loads(out.read_text())
    check_shape(snapshot)
    assert snapshot["summary"]["p2p_pairs_ok"] == 56


def test_no_gpu_exits_3_in_a_real_subprocess(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "topoctl", "probe", "--from-capture", path_of("no-gpu")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(tmp_path),
    )
    assert result.returncode == 3
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0].startswith("topoctl: error: no GPU visible:") and "libnvidia-ml" in lines[0]
    assert lines[1].startswith("  hint: ")
    assert len(lines) == 2 and "Traceback" not in result.stderr


def test_no_gpu_exits_3_through_main(capsys):
    assert main(["probe", "--from-capture", path_of("no-gpu")]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    assert (
        "Traceback" not in captured.err
        and "no GPU visible" in captured.err
        and "hint:" in captured.err
    )


def test_no_gpu_exits_3_through_click_runner():
    result = CliRunner().invoke(cli, ["probe", "--from-capture", path_of("no-gpu")])
    assert result.exit_code == 3, result.output
    assert "no GPU visible" in result.output and "hint:" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.parametrize("name", GPU_FIXTURES)
def test_committed_snapshot_equals_replay(name):
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    try:
        from build_fixture_snapshots import snapshot_for
    finally:
        sys.path.remove(os.path.join(ROOT, "scripts"))
    with open(os.path.join(path_of(name), "snapshot.json"), encoding="utf-8") as handle:
        committed = json.load(handle)
    replayed = json.loads(json.dumps(snapshot_for(path_of(name))))
    assert committed == replayed, f"{name}: run python scripts/build_fixture_snapshots.py"


def test_no_gpu_fixture_has_no_snapshot_and_is_no_system():
    from topoctl.snapshot.catalogue import list_systems

    assert not os.path.exists(os.path.join(path_of("no-gpu"), "snapshot.json"))
    assert "no-gpu" not in list_systems()
    assert set(GPU_FIXTURES) <= set(list_systems())


@pytest.mark.parametrize("name", SYNTHETIC)
def test_synthetic_fixtures_say_so(name):
    with open(os.path.join(path_of(name), "capture.json"), encoding="utf-8") as handle:
        capture = json.load(handle)
    assert capture["synthetic"] is True
    assert capture["description"].startswith("SYNTHETIC")
    readme = open(os.path.join(path_of(name), "README.md"), encoding="utf-8").read()
    assert "SYNTHETIC" in readme


@pytest.mark.parametrize("name", SYNTHETIC)
def test_synthetic_capture_is_what_its_spec_produces(name):
    """Regenerating a synthetic capture from its spec gives the committed file: specs and fixtures
    agree."""
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    try:
        from make_synthetic_fixtures import capture_for
    finally:
        sys.path.remove(os.path.join(ROOT, "scripts"))
    with open(os.path.join(path_of(name), "capture.json"), encoding="utf-8") as handle:
        committed = json.load(handle)
    assert json.loads(json.dumps(capture_for(name))) == committed


@pytest.mark.parametrize("name", [n for n in GPU_FIXTURES if n not in SYNTHETIC])
def test_real_captures_are_not_marked_synthetic(name):
    with open(os.path.join(path_of(name), "capture.json"), encoding="utf-8") as handle:
        assert json.load(handle).get("synthetic") is False


def load_system(name: str) -> dict:
    from topoctl.snapshot.catalogue import system_snapshot

    return system_snapshot(name)


def test_rtx_pro_6000_facts():
    s = load_system("rtx-pro-6000-8x-pcie")
    summary = s["summary"]
    assert summary["gpu_count"] == 8 and summary["compute_capabilities"] == ["12.0"]
    assert summary["architectures"] == ["blackwell"] and summary["interconnect"] == "pcie"
    assert (
        summary["all_pairs_p2p"] is True
        and summary["p2p_pairs_ok"] == 56 == summary["p2p_pairs_total"]
    )
    assert summary["nvlink_all_pairs"] is False and summary["numa_nodes_spanned"] == 2
    assert summary["root_complex_groups"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert summary["virtualized"] is False and summary["downtrained_gpus"] == []
    assert all(p["torch_can_access_peer"] is True for p in s["pairs"])
    assert all(p["p2p"]["nvlink"] == "NS" and p["nvlinks"] == 0 for p in s["pairs"])
    for p in s["pairs"]:
        assert p["link"] == ("PXB" if p["src"] // 4 == p["dst"] // 4 else "SYS")
    assert all(
        g["nvlink"]["active_links"] == 0 and g["memory_total_bytes"] == 97887 * 2**20
        for g in s["gpus"]
    )
    assert s["software"]["cuda_driver"] == "12.9" and s["software"]["sglang"] == "0.5.12"
    assert s["software"]["vllm"] is None and s["software"]["torch"].startswith("2.8")
    assert s["unknown"] == {}


def test_h100_facts():
    s = load_system("h100-8x-nvswitch")
    assert s["summary"]["interconnect"] == "nvswitch" and s["summary"]["nvlink_all_pairs"] is True
    assert s["summary"]["all_pairs_p2p"] is True and s["summary"]["compute_capabilities"] == ["9.0"]
    assert all(p["link"] == "NV18" for p in s["pairs"])
    for p in s["pairs"]:
        assert p["pcie_ancestor"] == ("NODE" if p["src"] // 4 == p["dst"] // 4 else "SYS")
    assert all(
        g["nvlink"]["version_name"] == "4.0" and g["nvlink"]["remote"]["switch"] == 18
        for g in s["gpus"]
    )
    assert s["nvlink"]["nvswitch"] is True and s["nvlink"]["switch_hidden"] is False
    assert s["summary"]["virtualized"] is False


def test_rtx_4090_facts():
    s = load_system("rtx-4090-2x-pcie-no-p2p")
    assert s["summary"]["all_pairs_p2p"] is False and s["summary"]["p2p_pairs_ok"] == 0
    assert all(
        p["p2p"]["read"] == "GNS" == p["p2p"]["write"] and p["link"] == "PHB" for p in s["pairs"]
    )
    assert s["summary"]["compute_capabilities"] == ["8.9"] and s["summary"]["architectures"] == [
        "ada"
    ]
    assert s["summary"]["numa_nodes_spanned"] == 1


def test_l40s_facts():
    s = load_system("l40s-4x-pcie-2numa")
    assert s["summary"]["downtrained_gpus"] == [2]
    gpu3 = s["gpus"][3]["pcie"]
    assert gpu3["gen_below_max"] is True and gpu3["downtrained"] is False
    for p in s["pairs"]:
        same = (p["src"] < 2) == (p["dst"] < 2)
        assert p["link"] == ("NODE" if same else "SYS")
        assert p["p2p"]["read"] == ("OK" if same else "CNS")
    assert s["summary"]["all_pairs_p2p"] is False and s["summary"]["p2p_pairs_ok"] == 4
