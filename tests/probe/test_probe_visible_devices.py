"""recommend and check follow what CUDA could see where the snapshot was taken: the probe records
`cuda_visible_devices` when CUDA_VISIBLE_DEVICES was set (probe/visible.py). recommend places
launches on those GPUs only and says so; check judges the launch's ranks as CUDA's devices, mapped
to the machine's GPUs.

Synthetic: the shipped L40S box (synthetic, see its README: GPUs 0,1 on one socket with P2P, 2,3 on
the other, no P2P across), with the record made by the probe's own function."""

from __future__ import annotations

import copy
import json
import os

from topoctl.probe.visible import cuda_visible
from topoctl.snapshot.catalogue import system_snapshot
from topoctl.snapshot.cuda_devices import pci_order
from topoctl.snapshot.document import load_snapshot
from topoctl.snapshot.view import SnapshotView
from topoctl.snapshot.visible_view import CudaDevice, CudaVisibleDevices

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _snapshot(tmp_path, value: str, order: str | None = "PCI_BUS_ID") -> str:
    snapshot = copy.deepcopy(system_snapshot("l40s-4x-pcie-2numa"))
    visible = cuda_visible(value, snapshot["gpus"], order)
    snapshot["cuda_visible_devices"] = visible
    path = tmp_path / f"l40s-{value.replace(',', '_') or 'none'}.json"
    path.write_text(json.dumps(snapshot))
    return str(path)


def _env(out: str) -> dict[str, str]:
    return dict(
        line.split("=", 1) for line in out.splitlines() if line and not line.startswith("#")
    )


def test_recommend_places_the_launch_on_the_gpus_cuda_sees(tmp_path, cli):
    topology = _snapshot(tmp_path, "2,3")
    code, out, err = cli(
        ["recommend", "--topology", topology, "--model", "llama-3.1-8b", "--tp-size", "2"]
    )
    assert code == 0, err
    env = _env(out)
    assert env["CUDA_VISIBLE_DEVICES"] == "'2,3'" and env["CUDA_DEVICE_ORDER"] == "'PCI_BUS_ID'"
    assert "CUDA sees 2 of the 4 GPUs" in out  # said in the file
    unseen = cli(
        ["recommend", "--system", "l40s-4x-pcie-2numa", "--model", "llama-3.1-8b", "--tp-size", "2"]
    )[1]
    assert (
        _env(unseen)["CUDA_VISIBLE_DEVICES"] == "'0,1'"
    )  # without the record: the best pair of the machine


def test_recommend_does_not_use_more_gpus_than_cuda_sees(tmp_path, cli):
    topology = _snapshot(tmp_path, "1,2,3")
    code, out, err = cli(
        ["recommend", "--topology", topology, "--model", "llama-3.1-8b", "--tp-size", "4"]
    )
    assert code == 2 and "CUDA sees" in err and "Traceback" not in err
    code, out, err = cli(
        ["recommend", "--topology", topology, "--model", "llama-3.1-8b", "--format", "json"]
    )
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc["placement"]["gpus"]) <= {1, 2, 3}
    assert any("CUDA sees 3 of the 4 GPUs" in note for note in doc["notes"])
    code, out, err = cli(
        ["recommend", "--topology", _snapshot(tmp_path, ""), "--model", "llama-3.1-8b"]
    )
    assert code == 2 and "no GPU to launch SGLang on" in err


def test_check_judges_cuda_devices_as_the_machine_gpus_they_are(tmp_path, cli):
    launch = ["--", "python", "-m", "sglang.launch_server", "--model-path", "/m", "--tp-size", "2"]
    # without the record, --tp-size 2 runs on GPUs 0,1 (one socket, P2P): clean
    code, out, err = cli(["check", "--system", "l40s-4x-pcie-2numa", *launch])
    assert code == 0, out + err
    # CUDA saw GPUs 0 and 2: cuda:0, cuda:1 are GPUs 0 and 2, across the sockets without P2P
    # (0.5.13: custom allreduce runs over PCIe; 0.5.12 serves only its NVLink-only V2 kernel)
    code, out, err = cli(
        [
            "check",
            "--topology",
            _snapshot(tmp_path, "0,2"),
            "--format",
            "json",
            "--sglang-version",
            "0.5.13",
            *launch,
        ]
    )
    items = json.loads(out)["results"][0]["findings"]
    assert code == 1, out + err
    group = next(item for item in items if item["id"] == "topoctl-gpu-group")
    assert "GPUs 0,2" in group["message"] and "CUDA sees 2 of the 4 GPUs" in group["message"]
    assert any(item["severity"] == "block" for item in items)
    # CUDA saw 2 and 3 (the other socket, P2P between them): clean, and judged there
    code, out, err = cli(
        ["check", "--topology", _snapshot(tmp_path, "2,3"), "--format", "json", *launch]
    )
    assert code == 0, out + err
    items = json.loads(out)["results"][0]["findings"]
    assert (
        "GPUs 2,3" in next(item for item in items if item["id"] == "topoctl-gpu-group")["message"]
    )


def test_check_blocks_ranks_past_the_devices_cuda_sees(tmp_path, cli):
    code, out, err = cli(
        [
            "check",
            "--topology",
            _snapshot(tmp_path, "1"),
            "--format",
            "json",
            "--",
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "/m",
            "--tp-size",
            "2",
        ]
    )
    assert code == 1, out + err
    ids = [item["id"] for item in json.loads(out)["results"][0]["findings"]]
    assert "topoctl-tp-exceeds-visible-gpus" in ids


def test_check_of_recommend_output_passes_where_cuda_sees_a_cross_socket_pair(tmp_path, cli):
    topology = _snapshot(tmp_path, "0,2")
    target = tmp_path / "launch.env"
    code, out, err = cli(
        [
            "recommend",
            "--topology",
            topology,
            "--model",
            "llama-3.1-8b",
            "--tp-size",
            "2",
            "--sglang-version",
            "0.5.13",
            "-o",
            str(target),
        ]
    )
    assert code == 0, err
    assert "NCCL_P2P_DISABLE='1'" in target.read_text()  # the only pair CUDA sees has no P2P
    code, out, err = cli(
        [
            "check",
            str(target),
            "--topology",
            topology,
            "--fail-on",
            "warn",
            "--sglang-version",
            "0.5.13",
        ]
    )
    assert code == 0, out + err


def test_a_launch_with_its_own_cuda_visible_devices_is_read_against_the_machine(tmp_path, cli):
    # the launch's own variable replaces the one the probe saw
    code, out, err = cli(
        [
            "check",
            "--topology",
            _snapshot(tmp_path, "0,2"),
            "--",
            "CUDA_VISIBLE_DEVICES=0,1",
            "CUDA_DEVICE_ORDER=PCI_BUS_ID",
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "/m",
            "--tp-size",
            "2",
        ]
    )
    assert code == 0, out + err


def test_recommend_on_a_snapshot_probed_with_integer_ids_in_the_default_order(tmp_path, cli):
    # probed with CUDA_VISIBLE_DEVICES=2,3 and no CUDA_DEVICE_ORDER: which two GPUs CUDA saw is
    # unknown (CUDA's default order is unspecified past the fastest GPU,
    # topoctl/snapshot/cuda_devices.py resolve_visible), so recommend does not claim them: it says
    # so and places the launch with its own CUDA_DEVICE_ORDER=PCI_BUS_ID
    topology = _snapshot(tmp_path, "2,3", order=None)
    record = json.loads(open(topology).read())["cuda_visible_devices"]
    assert record["unknown"] and [d["gpu"] for d in record["cuda_devices"]] == [None, None]
    code, out, err = cli(
        [
            "recommend",
            "--topology",
            topology,
            "--model",
            "llama-3.1-8b",
            "--tp-size",
            "2",
            "--format",
            "json",
        ]
    )
    assert code == 0, err
    doc = json.loads(out)
    assert any(
        "which GPUs CUDA sees is unknown" in note and "FASTEST_FIRST" in note
        for note in doc["notes"]
    )
    assert doc["placement"]["gpus"] == [
        0,
        1,
    ]  # the machine's best pair, written with PCI_BUS_ID ids


def test_a_replayed_capture_with_cuda_visible_devices_loads_and_is_followed(tmp_path, cli):
    """The real 2x H200 capture (fixtures/h200-2x-nvswitch-vm), with the answer a probe records when
    CUDA_VISIBLE_DEVICES=1 CUDA_DEVICE_ORDER=PCI_BUS_ID is set (host.cuda_env; the recording machine
    had it unset): the replayed snapshot's record meets the schema, reads typed, and recommend and
    check follow it."""
    with open(
        os.path.join(ROOT, "fixtures", "h200-2x-nvswitch-vm", "capture.json"), encoding="utf-8"
    ) as handle:
        capture = json.load(handle)
    assert "cuda_env" not in capture["host"]
    capture["host"]["cuda_env"] = {
        "ok": {"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    }
    (tmp_path / "capture.json").write_text(json.dumps(capture))
    topology = str(tmp_path / "snapshot.json")
    code, out, err = cli(
        [
            "probe",
            "--from-capture",
            str(tmp_path / "capture.json"),
            "--format",
            "json",
            "-o",
            topology,
        ]
    )
    assert code == 0, err
    snapshot = load_snapshot(topology)  # validated against the schema, the record with it
    first, second = pci_order(snapshot)  # CUDA devices 0 and 1 in PCI bus order
    assert SnapshotView(snapshot).cuda_visible_devices == CudaVisibleDevices(
        "1", "PCI_BUS_ID", (CudaDevice(0, second, "1"),), (first,), None, None, None
    )
    # the probe's note, written from the typed record
    assert f"a CUDA program sees GPU{second} as cuda:0; hidden from CUDA: GPU{first}" in err
    code, out, err = cli(
        ["recommend", "--topology", topology, "--model", "llama-3.1-8b", "--format", "json"]
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["placement"]["gpus"] == [second] and any(
        "CUDA sees 1 of the 2 GPUs" in note for note in doc["notes"]
    )
    code, out, err = cli(
        [
            "check",
            "--topology",
            topology,
            "--format",
            "json",
            "--",
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "/m",
            "--tp-size",
            "2",
        ]
    )
    assert code == 1, out + err
    ids = [item["id"] for item in json.loads(out)["results"][0]["findings"]]
    assert "topoctl-tp-exceeds-visible-gpus" in ids
