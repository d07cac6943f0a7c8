"""autoconf internals: the settings table against the real flag data, model profiles, flag choice per version."""
from __future__ import annotations

import pytest

from topoctl.autoconf import models, settings as table
from topoctl.autoconf.launch import parse_args, split_command
from topoctl.autoconf.search import normalise_config
from topoctl.rules.flags import known_versions, load_flag_set


def test_every_flag_in_settings_yaml_exists_in_some_version():
    sets = [load_flag_set(v) for v in known_versions()]
    missing = [flag for flag in sorted(table.all_flag_names()) if not any(fs.has(flag) for fs in sets)]
    assert missing == []


@pytest.mark.parametrize("version,expected", [("0.5.5", "--cuda-graph-max-bs"), ("0.5.12", "--cuda-graph-max-bs"),
                                              ("0.5.18", "--cuda-graph-max-bs-decode"),
                                              ("0.5.23", "--cuda-graph-max-bs-decode")])
def test_cuda_graph_flag_per_version(version, expected):
    out = table.render({"cuda_graph_max_bs": 128, "custom_all_reduce": False}, load_flag_set(version),
                       {"custom_all_reduce"}, version)
    assert out.flat_args() == ["--disable-custom-all-reduce", expected, "128"]


def test_defaults_not_written_unless_decided():
    fs = load_flag_set("0.5.23")
    assert table.render({"custom_all_reduce": True, "torch_symm_mem": False}, fs, set(), "0.5.23").flat_args() == []
    out = table.render({"pcie_ipc_allreduce": True}, fs, set(), "0.5.23")
    assert out.env == {"SGLANG_ENABLE_PCIE_IPC_ALLREDUCE": ("1", "pcie_ipc_allreduce")}
    assert table.render({"pcie_ipc_allreduce": True}, load_flag_set("0.5.12"), set(), "0.5.12").problems


def test_models():
    kimi = models.profile("kimi-k2.5")
    assert kimi["allreduces_per_forward"] == 122 and kimi["allreduce_bytes_per_token"] == 14336 and kimi["moe"]
    assert models.profile("llama-3.1-70b")["moe"] is False
    assert models.profile("qwen3-235b-a22b")["allreduces_per_forward"] == 188


def test_parse_args_prefix_and_aliases():
    fs = load_flag_set("0.5.12")
    env, args = split_command(["NCCL_P2P_DISABLE=1", "python3", "-m", "sglang.launch_server", "--tp", "8",
                               "--disable-custom-all", "--cuda-graph-max-bs=64"])
    parsed = parse_args(args, fs)
    assert env == {"NCCL_P2P_DISABLE": "1"}
    assert parsed.settings == {"tp_size": 8, "custom_all_reduce": False, "cuda_graph_max_bs": 64}
    assert parsed.problems == []


def test_evidence_config_text():
    assert normalise_config("EAGLE-3, NCCL allreduce") == ("nccl", {"speculative_algorithm": "eagle3"})
    assert normalise_config("no speculative decoding, NCCL allreduce")[1] == {"speculative_algorithm": None}
    assert normalise_config("12 KiB, FlashInfer PCIe IPC allreduce")[0] == "pcie_ipc"
    assert normalise_config("--cuda-graph-max-bs 128") == (None, {"cuda_graph_max_bs": 128})
    assert normalise_config({"custom_all_reduce": False, "speculative": "EAGLE3"}) == ("nccl", {"speculative_algorithm": "eagle3"})
