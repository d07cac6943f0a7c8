"""One compute-capability -> architecture table (topoctl/gpu_arch.py), read by the probe (when NVML cannot name
the architecture) and by the rules (when a snapshot lists SMs but no architecture names): they agree."""
from __future__ import annotations

import pytest

from topoctl.gpu_arch import ARCH_BY_CC, architecture_for_cc, architecture_for_sm
from topoctl.probe.topology import architecture_name
from topoctl.rules.facts import UNKNOWN, Context

CASES = [((7, 0), "volta"), ((7, 5), "turing"), ((8, 0), "ampere"), ((8, 6), "ampere"), ((8, 9), "ada"),
         ((9, 0), "hopper"), ((10, 0), "blackwell"), ((10, 3), "blackwell"), ((11, 0), "blackwell"),
         ((12, 0), "blackwell"), ((12, 1), "blackwell")]


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
    assert architecture_name(None, list(cc)) == name  # nvmlDeviceGetArchitecture missing (older drivers)


@pytest.mark.parametrize("cc,name", CASES)
def test_rules_name_it_from_the_sm(cc, name):
    assert rules_architectures([cc[0] * 10 + cc[1]]) == [name]


def test_ada_is_not_ampere_and_sm_110_is_blackwell_in_both_places():
    assert architecture_name(None, [8, 9]) == "ada" and rules_architectures([89]) == ["ada"]
    assert architecture_name(None, [11, 0]) == "blackwell" and rules_architectures([110]) == ["blackwell"]
    assert architecture_name(None, [12, 0]) == "blackwell" and rules_architectures([120]) == ["blackwell"]
    assert rules_architectures([80, 89, 120]) == ["ada", "ampere", "blackwell"]


def test_a_capability_not_in_the_table_is_unknown_not_guessed():
    assert architecture_for_cc(8, 8) is None and architecture_name(None, [8, 8]) is None
    assert rules_architectures([88]) is UNKNOWN and rules_architectures([90, 88]) is UNKNOWN
    assert architecture_for_sm(None) is None and architecture_for_sm(True) is None and architecture_for_sm(-1) is None


def test_nvml_wins_over_the_table():
    assert architecture_name(8, [8, 9]) == "ada" and architecture_name(9, [12, 0]) == "hopper"


def test_every_architecture_the_table_names_is_one_nvml_names():
    from topoctl.probe.nvml import ARCHITECTURE

    assert set(ARCH_BY_CC.values()) <= set(ARCHITECTURE.values())
