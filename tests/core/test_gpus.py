"""GPU knowledge as data (topoctl/data/gpus.yaml through topoctl/core/gpus.py): one
compute-capability -> architecture table read by the probe (when NVML cannot name the architecture)
and by the rules (when a snapshot lists SMs but no architecture names), NVML's architecture ids, and
the GPU products the launch model reads."""

from __future__ import annotations

import pytest

from topoctl.core import gpus
from topoctl.core.gpus import architecture_for_cc, architecture_for_sm
from topoctl.probe.topology import architecture_name
from topoctl.rules.engine.facts import UNKNOWN, Context

CASES = [
    ((7, 0), "volta"),
    ((7, 5), "turing"),
    ((8, 0), "ampere"),
    ((8, 6), "ampere"),
    ((8, 9), "ada"),
    ((9, 0), "hopper"),
    ((10, 0), "blackwell"),
    ((10, 3), "blackwell"),
    ((11, 0), "blackwell"),
    ((12, 0), "blackwell"),
    ((12, 1), "blackwell"),
]


def rules_architectures(sms: list[int]) -> object:
    """gpu.architectures as the rules derive it from gpu.sm (no architecture names in the snapshot)."""
    gpus = [{"index": i, "sm": sm} for i, sm in enumerate(sms)]
    return Context({"gpus": gpus, "summary": {}}, {}).fact("gpu.architectures")


@pytest.mark.parametrize("cc,name", CASES)
def test_the_table(cc, name):
    assert architecture_for_cc(*cc) == name
    assert architecture_for_sm(cc[0] * 10 + cc[1]) == name


@pytest.mark.parametrize("cc,name", CASES)
def test_probe_names_it_from_the_compute_capability(cc, name):
    assert (
        architecture_name(None, list(cc)) == name
    )  # nvmlDeviceGetArchitecture missing (older drivers)


@pytest.mark.parametrize("cc,name", CASES)
def test_rules_name_it_from_the_sm(cc, name):
    assert rules_architectures([cc[0] * 10 + cc[1]]) == [name]


def test_ada_is_not_ampere_and_sm_110_is_blackwell_in_both_places():
    assert architecture_name(None, [8, 9]) == "ada" and rules_architectures([89]) == ["ada"]
    assert architecture_name(None, [11, 0]) == "blackwell" and rules_architectures([110]) == [
        "blackwell"
    ]
    assert architecture_name(None, [12, 0]) == "blackwell" and rules_architectures([120]) == [
        "blackwell"
    ]
    assert rules_architectures([80, 89, 120]) == ["ada", "ampere", "blackwell"]


def test_a_capability_not_in_the_table_is_unknown_not_guessed():
    assert architecture_for_cc(8, 8) is None and architecture_name(None, [8, 8]) is None
    assert rules_architectures([88]) is UNKNOWN and rules_architectures([90, 88]) is UNKNOWN
    assert (
        architecture_for_sm(None) is None
        and architecture_for_sm(True) is None
        and architecture_for_sm(-1) is None
    )


def test_nvml_wins_over_the_table():
    assert architecture_name(8, [8, 9]) == "ada" and architecture_name(9, [12, 0]) == "hopper"


def test_every_architecture_has_an_nvml_id_and_every_model_a_known_architecture():
    ids = gpus.nvml_architecture_ids()
    assert {arch.name for arch in gpus.architectures()} == set(ids.values())
    for model in gpus.models():
        major, minor = (int(part) for part in model.compute_capability.split("."))
        assert architecture_for_cc(major, minor) == model.architecture, model.key


def test_every_model_cites_a_source_and_has_positive_numbers():
    keys = [model.key for model in gpus.models()]
    assert len(keys) == len(set(keys))
    for model in gpus.models():
        assert model.sources and all(source.strip() for source in model.sources), model.key
        for value in (
            model.memory_gb,
            model.memory_bandwidth_gb_s,
            model.nvlink_links,
            model.pcie_generation,
        ):
            assert value is None or value > 0, model.key


@pytest.mark.parametrize(
    "name",
    sorted(
        {
            "NVIDIA H100 80GB HBM3",
            "NVIDIA H200",
            "NVIDIA L40S",
            "NVIDIA GeForce RTX 4090",
            "NVIDIA RTX PRO 6000 Blackwell Server Edition",
        }
    ),
)
def test_the_reference_systems_gpus_are_known(name):
    model = gpus.lookup(name)
    assert model is not None and model.matches(name)
    assert model.memory_bandwidth_gb_s and model.memory_gb


def test_every_reference_systems_gpu_is_in_the_data_and_agrees_with_the_snapshot():
    from topoctl.snapshot.catalogue import list_systems, system_snapshot

    for system in list_systems():
        for gpu in system_snapshot(system)["gpus"]:
            model = gpus.lookup(gpu["name"])
            assert model is not None, (system, gpu["name"])
            assert model.compute_capability == gpu["compute_capability"], system
            assert model.architecture == gpu["architecture"], system
            # the driver reports a little less than the datasheet (reserved memory), never more than
            # 10% off
            assert (
                0.9 * model.memory_bytes <= gpu["memory_total_bytes"] <= 1.1 * model.memory_bytes
            ), system


def test_lookup_never_guesses():
    assert gpus.lookup("NVIDIA H20") is None  # a prefix of H200 is not H200
    assert gpus.lookup("") is None and gpus.lookup() is None
    assert gpus.lookup(compute_capability="9.0") is None  # several products share 9.0
    for cc in {
        model.compute_capability for model in gpus.models()
    }:  # a capability alone names one product or none
        having = [model for model in gpus.models() if model.compute_capability == cc]
        assert gpus.lookup(compute_capability=cc) == (having[0] if len(having) == 1 else None)
    assert gpus.lookup("nvidia h200").key == "h200-sxm"  # NVML's case is not relied on


def test_malformed_data_is_refused():
    with pytest.raises(gpus.GpuDataError):
        gpus._parse({"schema_version": 2})
    with pytest.raises(gpus.GpuDataError):
        gpus._parse(
            {
                "schema_version": 1,
                "architectures": [],
                "gpus": [{"key": "x", "architecture": "nope"}],
            }
        )
    good_arch = [{"name": "hopper", "nvml_arch_id": 9, "compute_capabilities": ["9"]}]
    entry = {
        "key": "x",
        "names": ["X"],
        "architecture": "hopper",
        "compute_capability": "9.0",
        "sources": [],
    }
    with pytest.raises(gpus.GpuDataError):
        gpus._parse({"schema_version": 1, "architectures": good_arch, "gpus": [entry]})


NVIDIA_TABLE = "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-gpus.html"
NVIDIA_LISTED = {
    "a100-sxm4-80gb",
    "a100-sxm4-40gb",
    "h100-sxm",
    "h100-pcie",
    "h200-sxm",
    "h200-nvl",
    "b200",
    "gb200",
    "rtx-pro-6000-blackwell",
}  # the parts NVIDIA's "Supported GPUs" table lists


@pytest.mark.parametrize("key", sorted(NVIDIA_LISTED))
def test_memory_and_capability_agree_with_nvidias_own_table(key):
    """Where NVIDIA's own table covers a part, the memory size and compute capability here are the
    ones it states (the line quotes the row), and it is not the first source: the first names the
    bandwidth's origin."""
    model = next(model for model in gpus.models() if model.key == key)
    rows = [source for source in model.sources if source.startswith(NVIDIA_TABLE)]
    assert len(rows) == 1 and model.sources[0] != rows[0]
    assert f", {model.compute_capability}, {model.memory_gb:g}GB;" in rows[0]
