"""The NVML constants topoctl hard-codes (probe/nvml.py) and the fake binding's equal the installed
nvidia-ml-py binding's. If NVIDIA renumbers anything, this fails before a user sees a wrong P2P
verdict."""

from __future__ import annotations

import importlib
import sys

import pytest
from fakes import nvml as fake

from topoctl.probe import nvml


@pytest.fixture(scope="module")
def real():
    saved = sys.modules.pop("pynvml", None)
    try:
        module = importlib.import_module("pynvml")
    except ImportError:
        pytest.skip("nvidia-ml-py is not installed")
    finally:
        if saved is not None:
            sys.modules["pynvml"] = saved
    assert not getattr(module, "_fake", None), "the real binding, not the fake"
    return module


def number(value):
    """nvidia-ml-py 13.x defines `NVML_P2P_CAPS_INDEX_READ = 0,` (a stray comma makes it the tuple
    (0,)): passing the binding's constant would fail, which is why the door keeps its own integers.
    """
    if isinstance(value, tuple) and len(value) == 1:
        return value[0]
    return value


def test_p2p_capability_indices(real):
    assert nvml.P2P_CAPS == {
        "read": number(real.NVML_P2P_CAPS_INDEX_READ),
        "write": number(real.NVML_P2P_CAPS_INDEX_WRITE),
        "nvlink": number(real.NVML_P2P_CAPS_INDEX_NVLINK),
        "atomics": number(real.NVML_P2P_CAPS_INDEX_ATOMICS),
        "pci": number(real.NVML_P2P_CAPS_INDEX_PCI),
    }
    assert all(isinstance(value, int) for value in nvml.P2P_CAPS.values())


def test_p2p_statuses(real):
    assert nvml.P2P_STATUS == {
        real.NVML_P2P_STATUS_OK: "OK",
        real.NVML_P2P_STATUS_CHIPSET_NOT_SUPPORED: "CNS",  # sic: the binding's spelling
        real.NVML_P2P_STATUS_GPU_NOT_SUPPORTED: "GNS",
        real.NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED: "TNS",
        real.NVML_P2P_STATUS_DISABLED_BY_REGKEY: "DR",
        real.NVML_P2P_STATUS_NOT_SUPPORTED: "NS",
        real.NVML_P2P_STATUS_UNKNOWN: "U",
    }


def test_topology_levels(real):
    assert nvml.TOPOLOGY_LEVEL == {
        real.NVML_TOPOLOGY_INTERNAL: "PIX",
        real.NVML_TOPOLOGY_SINGLE: "PIX",
        real.NVML_TOPOLOGY_MULTIPLE: "PXB",
        real.NVML_TOPOLOGY_HOSTBRIDGE: "PHB",
        real.NVML_TOPOLOGY_NODE: "NODE",
        real.NVML_TOPOLOGY_SYSTEM: "SYS",
    }


def test_architectures(real):
    from topoctl.core.gpus import nvml_architecture_ids

    architecture = nvml_architecture_ids()  # topoctl/data/gpus.yaml
    for code, name in architecture.items():
        assert getattr(real, f"NVML_DEVICE_ARCH_{name.upper()}") == code, name
    named = {
        value
        for key, value in vars(real).items()
        if key.startswith("NVML_DEVICE_ARCH_")
        and key[17:].lower()
        in {
            "kepler",
            "maxwell",
            "pascal",
            "volta",
            "turing",
            "ampere",
            "ada",
            "hopper",
            "blackwell",
            "rubin",
        }
    }
    assert named == set(architecture)


def test_max_nvlinks_is_the_bindings(real):
    assert nvml.MAX_NVLINKS == real.NVML_NVLINK_MAX_LINKS


def test_nvlink_versions(real):
    for code, name in nvml.NVLINK_VERSION_NAME.items():
        assert getattr(real, f"NVML_NVLINK_VERSION_{name.replace('.', '_')}") == code, name


def test_nvlink_remote_types(real):
    for code, name in nvml.NVLINK_REMOTE_TYPE.items():
        assert getattr(real, f"NVML_NVLINK_DEVICE_TYPE_{name.upper()}") == code, name


def test_virtualization_modes(real):
    for code, name in nvml.VIRTUALIZATION_MODE.items():
        assert getattr(real, f"NVML_GPU_VIRTUALIZATION_MODE_{name.upper()}") == code, name


def test_fabric_states(real):
    for code, name in nvml.FABRIC_STATE.items():
        assert getattr(real, f"NVML_GPU_FABRIC_STATE_{name.upper()}") == code, name


def test_fake_binding_matches_the_real_one(real):
    module = fake.make_fake_pynvml({"gpus": []})
    for name, value in fake.CONSTANTS.items():
        assert number(getattr(real, name)) == value, name
    for name, code in fake.ERROR_CODES.items():
        real_class = getattr(real, f"NVMLError_{name}")
        assert getattr(module, f"NVMLError_{name}")().value == code
        assert isinstance(real.NVMLError(code), real_class), name
        assert isinstance(module.NVMLError(code), getattr(module, f"NVMLError_{name}")), name
        assert issubclass(getattr(module, f"NVMLError_{name}"), module.NVMLError)
    fields = [name for name, _ in real.c_nvmlGpuFabricInfoV_t._fields_]
    assert fields[:5] == [name for name, _ in fake.c_nvmlGpuFabricInfoV_t._fields_][:5]


def test_door_error_names_match_the_binding(real):
    """The door names an error by its binding class (NVMLError_NotSupported -> NotSupported)."""
    assert nvml._error_name(real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)) == "NotSupported"
    assert nvml._error_name(real.NVMLError(real.NVML_ERROR_GPU_IS_LOST)) == "GpuIsLost"
    assert (
        nvml._error_name(real.NVMLError(real.NVML_ERROR_FUNCTION_NOT_FOUND)) == "FunctionNotFound"
    )
    assert nvml._error_name(real.NVMLError(real.NVML_ERROR_LIBRARY_NOT_FOUND)) == "LibraryNotFound"
