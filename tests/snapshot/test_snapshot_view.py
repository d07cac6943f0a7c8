"""The typed view of a snapshot (topoctl/snapshot/view.py) answers from the validated data, and a
partial snapshot (a rule's test case) reads as unknown where it says nothing."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from topoctl.core.p2p import pair_p2p_ok
from topoctl.core.vocab import INTERCONNECTS, SOFTWARE_KEYS
from topoctl.probe.visible import cuda_visible
from topoctl.snapshot.catalogue import list_systems, system_snapshot
from topoctl.snapshot.document import SCHEMA_VERSION, validate_snapshot
from topoctl.snapshot.view import SnapshotView
from topoctl.snapshot.visible_view import CudaDevice, CudaVisibleDevices, read_record


@pytest.mark.parametrize("name", list_systems())
def test_view_agrees_with_the_snapshot(name):
    data = system_snapshot(name)
    view = SnapshotView(data)
    assert view.gpu_count == data["summary"]["gpu_count"] == len(data["gpus"])
    assert view.interconnect == data["summary"]["interconnect"]
    everyone = [gpu["index"] for gpu in data["gpus"]]
    assert len(view.pairs_of(everyone)) == view.gpu_count * (view.gpu_count - 1)
    assert view.pairs_of(everyone[:1]) == []
    assert view.software("sglang") == data["software"].get("sglang")
    assert view.measurements == data.get(
        "measurements"
    )  # h200-1x-vm ships what topoctl bench measured there
    ok = [
        row
        for row in (data.get("measurements") or {}).get("allreduce") or []
        if row.get("status") == "ok"
    ]
    assert view.allreduce_measurements() == ok


def test_pairs_of_a_group_and_their_p2p():
    view = SnapshotView(system_snapshot("l40s-4x-pcie-2numa"))
    pairs = view.pairs_of([0, 1])
    assert {(p.src, p.dst) for p in pairs} == {(0, 1), (1, 0)}
    assert all(p.p2p_ok is True for p in pairs)
    assert any(p.p2p_ok is False for p in view.pairs_of([0, 2]))  # across the sockets: CNS


def test_software_keys_are_the_vocabulary_and_measurements_rows_filter():
    data = system_snapshot("h200-2x-nvswitch-vm")
    with pytest.raises(KeyError):
        SnapshotView(data).software("sglangg")
    data["measurements"] = {
        "allreduce": [
            {"path": "nccl", "status": "ok", "latency_us": {"median": 20.0}},
            {"path": "custom", "status": "unavailable"},
        ]
    }
    view = SnapshotView(data)
    assert [row["path"] for row in view.allreduce_measurements()] == ["nccl"]
    assert view.allreduce_measurements("custom") == []


# ------------------------------------------------------------------- any valid snapshot: the view
# agrees
P2P_STATUSES = ["OK", "CNS", "GNS", "TNS", "DR", "NS", "U", "unknown"]
VERSIONS = st.one_of(
    st.none(), st.sampled_from(["0.5.12", "2.8.0+cu128", "570.133.20", "12.8", ""])
)


@st.composite
def valid_snapshots(draw):
    """Snapshots built to the schema (topoctl/snapshot/schema/snapshot.schema.json) and its
    cross-field rules: GPU indices 0..n-1 in any order, every ordered pair once, summary.gpu_count
    equal to the GPUs listed."""
    count = draw(st.integers(1, 5))
    order = draw(st.permutations(range(count)))
    names = st.sampled_from(
        ["NVIDIA H200", "NVIDIA L40S", "NVIDIA RTX PRO 6000 Blackwell Server Edition"]
    )
    gpus = []
    for index in order:
        gpu = {"index": index, "name": draw(names)}
        if draw(st.booleans()):
            gpu["pci_bus_id"] = (
                f"00000000:{0x18 + 0x10 * draw(st.integers(0, 15)) + index:02X}:00.0"
            )
        gpus.append(gpu)
    pairs = []
    for src, dst in draw(
        st.permutations([(i, j) for i in range(count) for j in range(count) if i != j])
    ):
        pair = {
            "src": src,
            "dst": dst,
            "p2p": {
                key: draw(st.sampled_from(P2P_STATUSES))
                for key in ("read", "write", "nvlink", "atomics", "pci")
            },
        }
        if draw(st.booleans()):
            pair["link"] = draw(st.sampled_from(["NV18", "PIX", "PXB", "PHB", "NODE", "SYS"]))
        pairs.append(pair)
    summary = {
        "gpu_count": count,
        "interconnect": draw(st.sampled_from([*INTERCONNECTS, None])),
        "iommu_mode": draw(st.sampled_from(["translated", "passthrough", None])),
    }
    if draw(st.booleans()):
        summary["gpu_names"] = sorted({gpu["name"] for gpu in gpus})
    software = {key: draw(VERSIONS) for key in SOFTWARE_KEYS if draw(st.booleans())}
    data = {
        "schema_version": SCHEMA_VERSION,
        "gpus": gpus,
        "pairs": pairs,
        "software": software,
        "summary": summary,
    }
    if draw(st.booleans()):
        data["host"] = {
            "hostname": draw(st.sampled_from(["node-1", "gpu.example"])),
            "cpu_model": "AMD EPYC 9654",
            "numa_nodes": draw(st.integers(1, 8)),
        }
    validate_snapshot(data, origin="generated")  # the strategy only builds what the loader accepts
    return data


@settings(max_examples=examples(200), deadline=None)
@given(data=valid_snapshots(), group_size=st.integers(0, 5))
def test_any_valid_snapshot_reads_the_same_through_the_view(data, group_size):
    view = SnapshotView(data)
    assert view.gpu_count == data["summary"]["gpu_count"] == len(data["gpus"])
    assert view.summary_gpu_count == data["summary"]["gpu_count"]
    assert view.interconnect == data["summary"]["interconnect"]
    assert view.summary_value("iommu_mode") == data["summary"]["iommu_mode"]
    assert view.summary_says("gpu_names") == ("gpu_names" in data["summary"])
    assert view.gpu_names == sorted({gpu["name"] for gpu in data["gpus"]})
    assert view.gpu_model_names == sorted(gpu["name"] for gpu in data["gpus"])
    assert view.gpus is data["gpus"] and view.indexed_gpus == data["gpus"]
    assert view.first_gpu is data["gpus"][0]
    assert view.gpus_by_index == {gpu["index"]: gpu for gpu in data["gpus"]}
    assert all(view.gpu(gpu["index"]) is gpu for gpu in data["gpus"])
    assert view.pci_bus_ids == {
        gpu["pci_bus_id"]: gpu["index"] for gpu in data["gpus"] if "pci_bus_id" in gpu
    }
    assert view.pairs == data["pairs"]
    group = [gpu["index"] for gpu in data["gpus"]][:group_size]
    expected = [p for p in data["pairs"] if p["src"] in group and p["dst"] in group]
    got = view.pairs_of(group)
    assert [(p.src, p.dst, p.p2p, p.link) for p in got] == [
        (p["src"], p["dst"], p["p2p"], p.get("link")) for p in expected
    ]
    assert len(got) == len(group) * (len(group) - 1)
    assert view.pair_p2p_ok == {(p["src"], p["dst"]): pair_p2p_ok(p["p2p"]) for p in data["pairs"]}
    for key in SOFTWARE_KEYS:
        assert view.software(key) == data["software"].get(key)
    assert view.hostname == data.get("host", {}).get("hostname")
    assert view.host_value("numa_nodes") == data.get("host", {}).get("numa_nodes")
    assert view.measurements is None and view.allreduce_measurements() == []


SECTIONS = (
    "gpus",
    "pairs",
    "summary",
    "software",
    "host",
    "nvlink",
    "pcie",
    "source",
    "measurements",
)


@settings(max_examples=examples(200), deadline=None)
@given(
    data=valid_snapshots(),
    left_out=st.sets(st.sampled_from(SECTIONS)),
    junk=st.sampled_from([None, "x", 3, [], {}]),
)
def test_a_partial_snapshot_answers_none_never_raises(data, left_out, junk):
    """A rule's test case gives only the sections it needs (or nonsense): what is missing reads as
    unknown."""
    partial = {key: value for key, value in data.items() if key not in left_out}
    for key in sorted(left_out)[:1]:
        partial[key] = junk  # one section given as nonsense instead of left out
    view = SnapshotView(partial)
    listed = partial.get("gpus") if isinstance(partial.get("gpus"), list) else None
    assert view.gpus == listed
    if isinstance(partial.get("summary"), dict) and "gpu_count" in partial["summary"]:
        assert view.gpu_count == partial["summary"]["gpu_count"]
    else:
        assert view.gpu_count == (len(listed) if listed is not None else None)
        assert view.summary_gpu_count is None and view.interconnect is None
    if not isinstance(partial.get("pairs"), list):
        assert view.pairs is None and view.pairs_of(range(5)) == [] and view.pair_p2p_ok == {}
    if not isinstance(partial.get("software"), dict) or not partial["software"]:
        assert all(view.software(key) is None for key in SOFTWARE_KEYS)
    assert view.nvlink_value("present") is None and view.pcie_value("virtual") is None
    view.gpu_names, view.first_gpu, view.hostname, view.system_name, view.measurements  # noqa: B018


def test_a_view_of_nothing():
    view = SnapshotView(None)
    assert (view.gpus, view.gpu_count, view.pairs, view.interconnect) == (None, None, None, None)
    assert view.indexed_gpus == [] and view.gpu_names == [] and view.first_gpu == {}


# -------------------------------------------------------------- the CUDA_VISIBLE_DEVICES record,
# typed
def _as_record(visible: CudaVisibleDevices) -> dict:
    """The typed record written back in the probe's form: the round trip the view keeps."""
    return {
        "value": visible.value,
        "device_order": visible.device_order,
        "cuda_devices": [
            {"cuda": device.cuda, "gpu": device.gpu, "id": device.id}
            for device in visible.cuda_devices
        ],
        "hidden": None if visible.hidden is None else list(visible.hidden),
        "ended_at": visible.ended_at,
        "why": visible.why,
        "unknown": visible.unknown,
    }


def test_the_cuda_visible_devices_record_reads_as_a_frozen_dataclass():
    data = system_snapshot("h200-2x-nvswitch-vm")  # GPU0 on bus 00:06.0, GPU1 on 00:07.0
    assert SnapshotView(data).cuda_visible_devices is None  # CUDA_VISIBLE_DEVICES was not set
    data["cuda_visible_devices"] = cuda_visible("1,0", data["gpus"], "PCI_BUS_ID")
    visible = SnapshotView(data).cuda_visible_devices
    assert visible == CudaVisibleDevices(
        "1,0", "PCI_BUS_ID", (CudaDevice(0, 1, "1"), CudaDevice(1, 0, "0")), (), None, None, None
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        visible.value = "0"  # type: ignore[misc]
    # integer ids without CUDA_DEVICE_ORDER=PCI_BUS_ID: which GPUs is unknown, and the record says
    # why
    data["cuda_visible_devices"] = cuda_visible("0", data["gpus"], None)
    unknown = SnapshotView(data).cuda_visible_devices
    assert unknown.cuda_devices == (CudaDevice(0, None, "0"),) and unknown.hidden is None
    assert "FASTEST_FIRST" in unknown.unknown
    # a record from before device_order and unknown were written reads them as None
    old = {
        "value": "1",
        "cuda_devices": [{"cuda": 0, "gpu": 1, "id": "1"}],
        "hidden": [0],
        "ended_at": None,
        "why": None,
    }
    assert read_record(old) == CudaVisibleDevices(
        "1", None, (CudaDevice(0, 1, "1"),), (0,), None, None, None
    )


ENTRIES = st.one_of(
    st.integers(-2, 9).map(str),
    st.sampled_from(["", " 1 ", "x", "1.0", "GPU-", "MIG-1", "gpu-"]),
    st.text(max_size=4),
)


@settings(max_examples=examples(300), deadline=None)
@given(
    name=st.sampled_from(list_systems()),
    entries=st.lists(ENTRIES, max_size=5),
    uuid_cut=st.integers(0, 12),
    order=st.sampled_from([None, "PCI_BUS_ID", "pci_bus_id", "FASTEST_FIRST", ""]),
    data=st.data(),
)
def test_any_record_the_probe_writes_is_valid_and_reads_back_field_for_field(
    name, entries, uuid_cut, order, data
):
    """Whatever CUDA_VISIBLE_DEVICES holds (ids, UUID prefixes, MIG instances, text CUDA ends the
    list at), the record probe/visible.py writes meets the schema and the loader's checks, and the
    view gives it back field for field: every GPU is either one CUDA device or hidden, unless which
    is unknown."""
    snapshot = system_snapshot(name)
    uuids = [gpu["uuid"][: 4 + uuid_cut] for gpu in snapshot["gpus"] if gpu.get("uuid")]
    if uuids and data.draw(st.booleans()):
        entries = [*entries, data.draw(st.sampled_from(uuids))]
    record = cuda_visible(",".join(data.draw(st.permutations(entries))), snapshot["gpus"], order)
    snapshot["cuda_visible_devices"] = record
    validate_snapshot(snapshot, origin=name)
    visible = SnapshotView(snapshot).cuda_visible_devices
    assert _as_record(visible) == record
    indices = sorted(gpu["index"] for gpu in snapshot["gpus"])
    if visible.hidden is None:
        assert all(device.gpu is None for device in visible.cuda_devices)
    else:
        assert (
            sorted([device.gpu for device in visible.cuda_devices] + list(visible.hidden))
            == indices
        )
    assert [device.cuda for device in visible.cuda_devices] == list(
        range(len(visible.cuda_devices))
    )


JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 3),
        st.floats(allow_nan=False),
        st.text(max_size=3),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
FIELDS = ("value", "device_order", "cuda_devices", "hidden", "ended_at", "why", "unknown")


@settings(max_examples=examples(300), deadline=None)
@given(
    record=st.one_of(
        JSON,
        st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=7),
        st.fixed_dictionaries(
            {"value": st.text(max_size=3)},
            optional={
                "cuda_devices": st.lists(
                    st.one_of(JSON, st.fixed_dictionaries({"cuda": JSON, "gpu": JSON, "id": JSON})),
                    max_size=3,
                ),
                "hidden": JSON,
                "device_order": JSON,
            },
        ),
    )
)
def test_a_record_no_loader_checked_reads_as_typed_or_none_never_raises(record):
    """A rule's test case or a hand-made dict is not validated: what is there reads with the
    record's types (a wrong one as unknown), and no string value is no record."""
    visible = SnapshotView({"cuda_visible_devices": record}).cuda_visible_devices
    if not isinstance(record, dict) or not isinstance(record.get("value"), str):
        assert visible is None
        return
    assert visible.value == record["value"]
    assert all(
        isinstance(field, (str, type(None)))
        for field in (visible.device_order, visible.ended_at, visible.why, visible.unknown)
    )
    for device in visible.cuda_devices:
        assert type(device.cuda) is int and device.cuda >= 0 and isinstance(device.id, str)
        assert device.gpu is None or (type(device.gpu) is int and device.gpu >= 0)
    assert visible.hidden is None or all(
        type(index) is int and index >= 0 for index in visible.hidden
    )
