"""Snapshot validation: nonsense in a snapshot file is one line naming the field, exit 2, never a
traceback and never believed (an empty pair list once read as "every pair has working P2P")."""

from __future__ import annotations

import copy
import json
import os
import tempfile

import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topoctl.core.errors import TopoctlError
from topoctl.probe.visible import cuda_visible
from topoctl.snapshot.catalogue import list_systems, system_snapshot
from topoctl.snapshot.document import validate_snapshot

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "fixtures")


def fixture(name: str) -> dict:
    with open(os.path.join(FIXTURES, name, "snapshot.json"), encoding="utf-8") as handle:
        return json.load(handle)


def rejects(data, contains):
    with pytest.raises(TopoctlError) as caught:
        validate_snapshot(data, origin="s.json")
    assert caught.value.exit_code == 2
    assert "\n" not in caught.value.message
    assert contains in caught.value.message, caught.value.message
    return caught.value.message


@pytest.mark.parametrize(
    "name",
    sorted(
        n
        for n in os.listdir(FIXTURES)
        if os.path.isfile(os.path.join(FIXTURES, n, "snapshot.json"))
    ),
)
def test_every_reference_snapshot_is_valid(name):
    validate_snapshot(fixture(name), origin=name)


def _set(path, value):
    def change(data):
        *parents, last = path
        target = data
        for key in parents:
            target = target[key]
        if value is DELETE:
            del target[last]
        else:
            target[last] = value

    return change


DELETE = object()

MUTATIONS = {
    "schema-bool": (_set(["schema_version"], True), "schema_version"),
    "schema-float": (_set(["schema_version"], 1.0), "schema_version"),
    "schema-2": (_set(["schema_version"], 2), "schema_version 2"),
    "gpus-empty": (lambda d: d.update(gpus=[], pairs=[]), "gpus is empty"),
    "gpu-not-mapping": (_set(["gpus", 0], "GPU0"), "gpus[0]"),
    "gpu-index-bool": (_set(["gpus", 0, "index"], False), "gpus[0].index"),
    "gpu-index-duplicate": (_set(["gpus", 1, "index"], 0), "appears twice"),
    "gpu-index-out-of-range": (_set(["gpus", 1, "index"], 7), "out of range"),
    "gpu-name-int": (_set(["gpus", 0, "name"], 4090), "gpus[0].name"),
    "gpu-cc-float": (_set(["gpus", 0, "compute_capability"], 8.9), "gpus[0].compute_capability"),
    "gpu-cc-garbage": (
        _set(["gpus", 0, "compute_capability"], "eight"),
        "gpus[0].compute_capability",
    ),
    "gpu-sm-string": (_set(["gpus", 1, "sm"], "89"), "gpus[1].sm"),
    "gpu-sm-bool": (_set(["gpus", 1, "sm"], True), "gpus[1].sm"),
    "gpu-pcie-list": (_set(["gpus", 0, "pcie"], [4, 16]), "gpus[0].pcie"),
    "gpu-pcie-width-string": (
        _set(["gpus", 0, "pcie", "current_width"], "x16"),
        "gpus[0].pcie.current_width",
    ),
    "gpu-pcie-downtrained-string": (
        _set(["gpus", 0, "pcie", "downtrained"], "no"),
        "gpus[0].pcie.downtrained",
    ),
    "gpu-nvlink-string": (_set(["gpus", 0, "nvlink"], "none"), "gpus[0].nvlink"),
    "gpu-numa-string": (_set(["gpus", 0, "numa_node"], "0"), "gpus[0].numa_node"),
    "gpu-root-complex-int": (_set(["gpus", 0, "root_complex"], 0), "gpus[0].root_complex"),
    "gpu-memory-float": (
        _set(["gpus", 0, "memory_total_bytes"], 2.5e10),
        "gpus[0].memory_total_bytes",
    ),
    "too-many-gpus": (lambda d: d.update(gpus=[{"index": i} for i in range(129)]), "more than 128"),
    "pairs-empty": (_set(["pairs"], []), "pairs lists 0 ordered pairs"),
    "pairs-one-missing": (lambda d: d["pairs"].pop(), "pairs lists 1 ordered pairs"),
    "pair-duplicate": (
        lambda d: d["pairs"].__setitem__(1, copy.deepcopy(d["pairs"][0])),
        "appears twice",
    ),
    "pair-self": (_set(["pairs", 0, "dst"], 0), "with itself"),
    "pair-out-of-range": (_set(["pairs", 0, "dst"], 5), "out of range"),
    "pair-src-string": (_set(["pairs", 0, "src"], "0"), "pairs[0].src"),
    "pair-extra": (
        lambda d: d["pairs"].append({**copy.deepcopy(d["pairs"][0]), "src": 1, "dst": 0}),
        "appears twice",
    ),
    "p2p-list": (_set(["pairs", 0, "p2p"], ["OK"]), "pairs[0].p2p"),
    "p2p-status-garbage": (_set(["pairs", 0, "p2p", "read"], "YES"), "pairs[0].p2p.read"),
    "p2p-status-null": (_set(["pairs", 0, "p2p", "write"], None), "pairs[0].p2p.write"),
    "p2p-status-missing": (
        _set(["pairs", 0, "p2p", "atomics"], DELETE),
        "pairs[0].p2p.atomics is missing",
    ),
    "pair-link-int": (_set(["pairs", 0, "link"], 18), "pairs[0].link"),
    "pair-nvlinks-negative": (_set(["pairs", 0, "nvlinks"], -1), "pairs[0].nvlinks"),
    "pair-nvlinks-string": (_set(["pairs", 0, "nvlinks"], "4"), "pairs[0].nvlinks"),
    "gpu-count-missing": (_set(["summary", "gpu_count"], DELETE), "summary.gpu_count"),
    "gpu-count-wrong": (_set(["summary", "gpu_count"], 8), "summary.gpu_count is 8"),
    "gpu-count-bool": (_set(["summary", "gpu_count"], True), "summary.gpu_count"),
    "interconnect-garbage": (
        _set(["summary", "interconnect"], "infiniband"),
        "summary.interconnect",
    ),
    "all-pairs-p2p-string": (_set(["summary", "all_pairs_p2p"], "false"), "summary.all_pairs_p2p"),
    "downtrained-out-of-range": (
        _set(["summary", "downtrained_gpus"], [9]),
        "summary.downtrained_gpus[0]",
    ),
    "software-int": (_set(["software", "sglang"], 0.5), "software.sglang"),
    "host-string": (_set(["host"], "node-1"), "host must be a mapping"),
    "host-cores-string": (_set(["host", "cpu_cores_logical"], "128"), "host.cpu_cores_logical"),
    "root-complexes-string": (
        _set(["pcie", "root_complexes"], "pci0000:00"),
        "pcie.root_complexes",
    ),
}


def _visible(change):
    """The CUDA_VISIBLE_DEVICES record the probe writes for `CUDA_VISIBLE_DEVICES=1`
    (probe/visible.py), then `change` made to it."""

    def apply(data):
        data["cuda_visible_devices"] = cuda_visible("1", data["gpus"], "PCI_BUS_ID")
        change(data)

    return apply


MUTATIONS.update(
    {
        "visible-string": (
            _visible(_set(["cuda_visible_devices"], "1")),
            "cuda_visible_devices must be a mapping or null",
        ),
        "visible-value-missing": (
            _visible(_set(["cuda_visible_devices", "value"], DELETE)),
            "cuda_visible_devices.value is missing",
        ),
        "visible-value-list": (
            _visible(_set(["cuda_visible_devices", "value"], [1])),
            "cuda_visible_devices.value must be a string, got a list",
        ),
        "visible-order-int": (
            _visible(_set(["cuda_visible_devices", "device_order"], 1)),
            "cuda_visible_devices.device_order must be a string or null",
        ),
        "visible-devices-missing": (
            _visible(_set(["cuda_visible_devices", "cuda_devices"], DELETE)),
            "cuda_visible_devices.cuda_devices is missing",
        ),
        "visible-devices-null": (
            _visible(_set(["cuda_visible_devices", "cuda_devices"], None)),
            "cuda_visible_devices.cuda_devices must be a list, got null",
        ),
        "visible-device-string": (
            _visible(_set(["cuda_visible_devices", "cuda_devices", 0], "cuda:0")),
            "cuda_visible_devices.cuda_devices[0] must be a mapping",
        ),
        "visible-device-gpu-string": (
            _visible(_set(["cuda_visible_devices", "cuda_devices", 0, "gpu"], "1")),
            "cuda_visible_devices.cuda_devices[0].gpu must be an integer or null, got a string",
        ),
        "visible-device-gpu-out-of-range": (
            _visible(_set(["cuda_visible_devices", "cuda_devices", 0, "gpu"], 2)),
            "cuda_visible_devices.cuda_devices[0].gpu must be a GPU index (0..1)",
        ),
        "visible-device-cuda-negative": (
            _visible(_set(["cuda_visible_devices", "cuda_devices", 0, "cuda"], -1)),
            "cuda_visible_devices.cuda_devices[0].cuda must be >= 0",
        ),
        "visible-device-id-missing": (
            _visible(_set(["cuda_visible_devices", "cuda_devices", 0, "id"], DELETE)),
            "cuda_visible_devices.cuda_devices[0].id is missing",
        ),
        "visible-hidden-string": (
            _visible(_set(["cuda_visible_devices", "hidden"], "0")),
            "cuda_visible_devices.hidden must be a list or null",
        ),
        "visible-hidden-out-of-range": (
            _visible(_set(["cuda_visible_devices", "hidden"], [0, 9])),
            "cuda_visible_devices.hidden[1] must be a GPU index (0..1)",
        ),
        "visible-unknown-bool": (
            _visible(_set(["cuda_visible_devices", "unknown"], True)),
            "cuda_visible_devices.unknown must be a string or null",
        ),
    }
)


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_nonsense_is_rejected_naming_the_field(name):
    change, contains = MUTATIONS[name]
    data = fixture("rtx-4090-2x-pcie-no-p2p")
    change(data)
    rejects(data, contains)


@pytest.mark.parametrize(
    "name",
    sorted(
        n
        for n in os.listdir(FIXTURES)
        if os.path.isfile(os.path.join(FIXTURES, n, "snapshot.json"))
    ),
)
@pytest.mark.parametrize(
    "value, order",
    [("1", "PCI_BUS_ID"), ("0", None), ("", None), ("MIG-1", None), ("0,x,1", "PCI_BUS_ID")],
)
def test_the_cuda_visible_devices_record_the_probe_writes_is_valid(name, value, order):
    """Every reference snapshot with the record probe/visible.py writes for a value (known GPUs, an
    unknown order, none, a MIG instance, a list CUDA ends early) still meets the schema and the
    checks across fields."""
    data = fixture(name)
    data["cuda_visible_devices"] = cuda_visible(value, data["gpus"], order)
    validate_snapshot(data, origin=name)


def test_a_cuda_visible_devices_record_from_before_device_order_and_unknown_is_valid():
    """topoctl's first record (before it read CUDA_DEVICE_ORDER) had value, cuda_devices, hidden,
    ended_at and why only: the schema declares what it has, so a snapshot probed then stays valid
    (schema_version 1)."""
    data = fixture("h200-2x-nvswitch-vm")
    data["cuda_visible_devices"] = {
        "value": "1",
        "cuda_devices": [{"cuda": 0, "gpu": 1, "id": "1"}],
        "hidden": [0],
        "ended_at": None,
        "why": None,
    }
    validate_snapshot(data, origin="old.json")


@pytest.mark.parametrize(
    "name", ["visible-device-gpu-string", "visible-device-gpu-out-of-range", "visible-value-list"]
)
def test_a_malformed_cuda_visible_devices_record_is_one_line_error_and_hint(cli, tmp_path, name):
    """Before the schema declared it, a malformed record passed loading and its readers dropped it
    unsaid; now show, recommend and check refuse the file: one error naming the field, the hint,
    exit 2."""
    change, contains = MUTATIONS[name]
    data = fixture("h200-2x-nvswitch-vm")
    change(data)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    for argv in (
        ["show", "--topology", str(path)],
        ["recommend", "--topology", str(path), "--model", "llama-3.1-8b"],
        [
            "check",
            "--topology",
            str(path),
            "--",
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "M",
        ],
    ):
        code, out, err = cli(argv)
        assert code == 2, (argv[0], code, err)
        assert err.splitlines() == [
            f"topoctl: error: {path}: {contains}",
            "  hint: regenerate it with `topoctl probe -o FILE`",
        ], (argv[0], err)


def test_values_from_the_file_are_not_echoed():
    data = fixture("rtx-4090-2x-pcie-no-p2p")
    data["schema_version"] = "root:$6$secret:19000:0:99999:7:::"
    message = rejects(data, "schema_version")
    assert "secret" not in message


def test_an_empty_pair_list_is_not_working_p2p(cli, tmp_path):
    """The no-P2P machine with its pairs removed must not get custom allreduce switched back on."""
    data = fixture("rtx-4090-2x-pcie-no-p2p")
    data["pairs"] = []
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    for argv in (
        ["recommend", "--topology", str(path)],
        ["show", "--topology", str(path)],
        [
            "check",
            "--topology",
            str(path),
            "--",
            "python",
            "-m",
            "sglang.launch_server",
            "--tp",
            "2",
        ],
    ):
        code, out, err = cli(argv)
        assert code == 2 and out == "", err
        assert "pairs lists 0 ordered pairs" in err


def test_a_summary_claiming_p2p_the_pairs_deny_is_not_believed(cli, tmp_path):
    honest = fixture("rtx-4090-2x-pcie-no-p2p")
    lying = copy.deepcopy(honest)
    lying["summary"].update(all_pairs_p2p=True, p2p_pairs_ok=2)
    paths = []
    for name, data in (("honest", honest), ("lying", lying)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(data))
    _, expected, _ = cli(["recommend", "--topology", str(paths[0]), "--format", "args"])
    code, got, err = cli(["recommend", "--topology", str(paths[1]), "--format", "args"])
    assert code == 0, err
    assert got == expected and "--disable-custom-all-reduce" in got


@pytest.mark.parametrize(
    "content, contains",
    [
        (b"", "is empty"),
        (b"   \n\n", "is empty"),
        (b"# just a comment\n", "is empty"),
        (b"\xff\xfe\x00s\x00c\x00h\x00", "is not UTF-8 text"),
        (bytes(range(128, 256)), "is not UTF-8 text"),
    ],
)
def test_empty_and_binary_files_say_so(cli, tmp_path, content, contains):
    path = tmp_path / "machine.yaml"
    path.write_bytes(content)
    code, out, err = cli(["show", "--topology", str(path)])
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 2 and contains in lines[0], err
    assert "permission" not in err and "topoctl probe" in lines[1]


@pytest.mark.parametrize(
    "content",
    [
        "root:x:0:0:root:/root:/bin/bash\ndaemon:SECRET-LINE\n  bad: [indent\n",
        "password: hunter2-SECRET-LINE\n  - oops\n",
        '{"password": "SECRET-LINE",\n',
        "key: 'SECRET-LINE\n",
        "a: !!python/object/apply:os.system ['SECRET-LINE']\n",
    ],
)
def test_parse_errors_never_echo_the_file(cli, tmp_path, content):
    path = tmp_path / "shadow"
    path.write_text(content)
    for argv in (
        ["show", "--topology", str(path)],
        ["check", "x.env", "--system", "h200-2x-nvswitch-vm", "--expect", str(path)],
    ):
        code, _, err = cli(argv)
        assert code == 2, err
        assert "SECRET" not in err and "hunter2" not in err, err


@pytest.mark.parametrize(
    "content, contains",
    [
        ("[1, 2]", "not a topoctl capture (a JSON list)"),
        ('"text"', "not a topoctl capture (a JSON string)"),
        ("", "is empty"),
    ],
)
def test_from_capture_of_the_wrong_json(cli, tmp_path, content, contains):
    path = tmp_path / "cap.json"
    path.write_text(content)
    code, out, err = cli(["probe", "--from-capture", str(path)])
    assert code == 2 and out == ""
    assert contains in err.splitlines()[0], err


def test_from_capture_errors_never_echo_the_file(cli, tmp_path):
    path = tmp_path / "cap.json"
    path.write_text('{"capture_version": "SECRET-LINE"}')
    code, _, err = cli(["probe", "--from-capture", str(path)])
    assert code == 2 and "SECRET" not in err
    path.write_bytes(b"\xff\xfeSECRET")
    code, _, err = cli(["probe", "--from-capture", str(path)])
    assert code == 2 and "not UTF-8 text" in err and "SECRET" not in err


# -- property: any mutation of a valid snapshot loads, or is one line with exit 2
# ---------------------------

BASE = fixture("rtx-4090-2x-pcie-no-p2p")


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for position, item in enumerate(value):
            yield from _paths(item, (*prefix, position))


PATHS = [path for path in _paths(BASE) if path]
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 2**70),
    st.floats(allow_nan=True),
    st.sampled_from(["OK", "NS", "unknown", "NV18", "pcie", "9.0", "", "x\ny\x1b[31m", "0"]),
    st.text(max_size=8),
    st.lists(st.integers(-1, 3), max_size=3),
    st.dictionaries(st.sampled_from(["read", "index", "gpu"]), st.integers(0, 2), max_size=2),
)


@st.composite
def mutated(draw):
    data = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(PATHS))
        parent = data
        try:
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue
        if not isinstance(parent, (dict, list)):
            # an earlier mutation made a list a string: "abc"[0] reads, but cannot be assigned to
            continue
        action = draw(st.sampled_from(["replace", "replace", "delete", "duplicate"]))
        if action == "delete":
            del parent[path[-1]]
        elif action == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[path[-1]]))
        else:
            parent[path[-1]] = draw(VALUES)
    return data


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=mutated())
def test_mutated_snapshots_load_or_fail_cleanly(cli, data):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "s.json")
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        for argv in (
            ["show", "--topology", path],
            ["recommend", "--topology", path],
            [
                "check",
                "--topology",
                path,
                "--",
                "python",
                "-m",
                "sglang.launch_server",
                "--tp",
                "2",
            ],
        ):
            code, out, err = cli(argv)
            assert "Traceback" not in err and "internal error" not in err, (argv, err)
            assert code in (0, 1, 2), (argv, code, err)
            if code == 2:
                lines = err.splitlines()
                assert lines and lines[0].startswith("topoctl: error: ") and len(lines) <= 2, err


def test_list_systems_are_all_valid():
    for name in list_systems():
        system_snapshot(name)


@pytest.mark.parametrize("pairs", [[0], [[0]], [[0, 1, 2]], [["0", 1]], [[0, -1]], 7])
def test_summary_pair_lists_must_be_pairs_of_gpu_indices(cli, tmp_path, pairs):
    """Regression: `summary.acs_redirect_pairs: [0]` met the schema (an array of anything) and
    `topoctl show` crashed unpacking it (exit 70). Now it is one line naming the field, exit 2."""
    for key in ("acs_redirect_pairs", "p2p_failed_health_check"):
        data = fixture("h200-4x-nvswitch-vm")
        data["summary"][key] = pairs
        path = tmp_path / "s.json"
        path.write_text(json.dumps(data))
        code, out, err = cli(["show", "--topology", str(path)])
        assert code == 2, (key, pairs, code, err)
        assert f"summary.{key}" in err and "Traceback" not in err


def test_acs_redirect_pairs_show_as_pairs(cli, tmp_path):
    data = fixture("h200-4x-nvswitch-vm")
    data["summary"]["acs_redirect_pairs"] = [[0, 1], [1, 0]]
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    code, out, err = cli(["show", "--topology", str(path)])
    assert code == 0, err
    assert "ACS redirect on 0->1, 1->0" in out
