"""autoconf internals: the settings table against the real flag data, model profiles, flag choice
per version."""

from __future__ import annotations

import pytest

from topoctl.autoconf import models
from topoctl.autoconf.evidence import config_text, normalise_config
from topoctl.deploy.sglang_launch import parse_args, split_command
from topoctl.rules.sglang import spelling as table
from topoctl.rules.sglang.flags import known_versions, load_flag_set


def test_every_flag_in_settings_yaml_exists_in_some_version():
    sets = [load_flag_set(v) for v in known_versions()]
    missing = [
        flag for flag in sorted(table.all_flag_names()) if not any(fs.has(flag) for fs in sets)
    ]
    assert missing == []


@pytest.mark.parametrize(
    "version,expected",
    [
        ("0.5.5", "--cuda-graph-max-bs"),
        ("0.5.12", "--cuda-graph-max-bs"),
        ("0.5.18", "--cuda-graph-max-bs-decode"),
        ("0.5.23", "--cuda-graph-max-bs-decode"),
    ],
)
def test_cuda_graph_flag_per_version(version, expected):
    out = table.render(
        {"cuda_graph_max_bs": 128, "custom_all_reduce": False},
        load_flag_set(version),
        {"custom_all_reduce"},
        version,
    )
    assert out.flat_args() == ["--disable-custom-all-reduce", expected, "128"]


def test_defaults_not_written_unless_decided():
    fs = load_flag_set("0.5.23")
    assert (
        table.render(
            {"custom_all_reduce": True, "torch_symm_mem": False}, fs, set(), "0.5.23"
        ).flat_args()
        == []
    )
    out = table.render({"pcie_ipc_allreduce": True}, fs, set(), "0.5.23")
    assert out.env == {"SGLANG_ENABLE_PCIE_IPC_ALLREDUCE": ("1", "pcie_ipc_allreduce")}
    assert table.render(
        {"pcie_ipc_allreduce": True}, load_flag_set("0.5.12"), set(), "0.5.12"
    ).problems


def _renamed(builtin, name):
    """The built-in profile's config.json values under another name: the same model by its
    properties."""
    return models.from_config(
        dict(models.builtin_models()[builtin]["config"]), name, source="test: renamed copy"
    )


def test_models():
    kimi = models.profile("kimi-k2.5")
    assert (
        kimi["allreduces_per_forward"] == 122
        and kimi["allreduce_bytes_per_token"] == 14336
        and kimi["moe"]
    )
    assert models.profile("llama-3.1-70b")["moe"] is False
    assert models.profile("qwen3-235b-a22b")["allreduces_per_forward"] == 188


def test_parse_args_prefix_and_aliases():
    fs = load_flag_set("0.5.12")
    env, args = split_command(
        [
            "NCCL_P2P_DISABLE=1",
            "python3",
            "-m",
            "sglang.launch_server",
            "--tp",
            "8",
            "--disable-custom-all",
            "--cuda-graph-max-bs=64",
        ]
    )
    parsed = parse_args(args, fs)
    assert env == {"NCCL_P2P_DISABLE": "1"}
    assert parsed.settings == {"tp_size": 8, "custom_all_reduce": False, "cuda_graph_max_bs": 64}
    assert parsed.problems == []


def test_evidence_config_mapping():
    config = {
        "speculative_algorithm": "EAGLE3",
        "custom_all_reduce": False,
        "allreduce": "nccl",
        "cuda_graph_max_bs": 512,
        "env:NCCL_ALGO": "Ring",
    }
    assert normalise_config(config) == (
        "nccl",
        {
            "speculative_algorithm": "eagle3",
            "custom_all_reduce": False,
            "cuda_graph_max_bs": 512,
            "env:NCCL_ALGO": "Ring",
        },
    )
    assert normalise_config(
        {"speculative_algorithm": None, "model": "kimi-k2.5", "message_kib": 42}
    ) == (None, {"speculative_algorithm": None, "model": "kimi-k2.5", "message_kib": 42})
    assert normalise_config({"custom_all_reduce": False, "speculative": "EAGLE3"}) == (
        None,
        {"custom_all_reduce": False, "speculative_algorithm": "eagle3"},
    )
    assert config_text(config) == (
        "speculative_algorithm=EAGLE3 custom_all_reduce=false allreduce=nccl "
        "cuda_graph_max_bs=512 env:NCCL_ALGO=Ring"
    )
    assert config_text({"speculative_algorithm": None}) == "speculative_algorithm=none"


def test_words_are_not_guessed():
    """A config in words is not read (the schema refuses it in a rule file): nothing is inferred
    from text."""
    from topoctl.autoconf.evidence import _normalise

    assert _normalise("EAGLE-3, NCCL allreduce") == (None, {}, ["config (not a mapping)"])
    assert _normalise({"cuda_graph_maxbs": 128})[2] == ["cuda_graph_maxbs"]
    assert _normalise({"allreduce": "carrier-pigeon"})[2] == ["allreduce=carrier-pigeon"]


def _builtin_numbers():
    from topoctl.rules.engine import load_rules

    for rule in load_rules().rules:
        for item in rule.evidence:
            for number in item.get("numbers") or []:
                yield rule.id, number


def test_builtin_evidence_configs_name_known_keys():
    from topoctl.autoconf.evidence import _normalise

    seen = 0
    for rule_id, number in _builtin_numbers():
        for config in (number.get("config"), (number.get("baseline") or {}).get("config")):
            if config is None:
                continue
            seen += 1
            assert isinstance(config, dict), (rule_id, config)
            _, _, unknown = _normalise(config)
            assert unknown == [], (rule_id, config)
    assert seen >= 10


def _finding(rule_id, numbers, level="measured"):
    from types import SimpleNamespace

    return SimpleNamespace(
        rule_id=rule_id,
        status="fired",
        evidence=[{"source": "field-report", "level": level, "numbers": numbers}],
    )


def test_evidence_matching_and_relative_numbers():
    from topoctl.autoconf.evidence import collect_evidence
    from topoctl.autoconf.search import Candidate, _throughput

    base = _finding(
        "base",
        [
            {
                "metric": "decode throughput",
                "kind": "throughput",
                "value": 54.1,
                "unit": "tok/s",
                "config": {
                    "speculative_algorithm": "eagle3",
                    "allreduce": "nccl",
                    "model": "kimi-k2.5",
                },
                "baseline": {
                    "value": 89.5,
                    "config": {
                        "speculative_algorithm": None,
                        "allreduce": "nccl",
                        "model": "kimi-k2.5",
                    },
                },
            }
        ],
    )
    rel = _finding(
        "rel",
        [
            {
                "metric": "decode throughput change",
                "kind": "relative",
                "value": 9,
                "unit": "%",
                "config": {
                    "cuda_graph_max_bs": 128,
                    "speculative_algorithm": None,
                    "allreduce": "nccl",
                },
                "baseline": {
                    "value": 0,
                    "config": {
                        "cuda_graph_max_bs": 512,
                        "speculative_algorithm": None,
                        "allreduce": "nccl",
                    },
                },
            }
        ],
    )
    evidence = collect_evidence([base, rel])
    nccl = {"tp_size": 8, "custom_all_reduce": False}
    kimi = models.profile("kimi-k2.5")
    # the path's own settings are named by allreduce=nccl
    plain = _throughput(Candidate("nccl", dict(nccl)), evidence, kimi)
    assert plain[0] == 89.5 and [ev.rule_id for ev in plain[2]] == ["base"]
    graphs = _throughput(Candidate("nccl", dict(nccl, cuda_graph_max_bs=128)), evidence, kimi)
    assert graphs[0] == pytest.approx(97.555) and [ev.rule_id for ev in graphs[2]] == [
        "base",
        "rel",
    ]
    # EAGLE-3 has its own measurement; the relative number speaks of no speculative decoding, so
    # EAGLE-3 with cuda_graph_max_bs=128 is a launch nobody measured
    eagle = _throughput(
        Candidate("nccl", dict(nccl, speculative_algorithm="eagle3")), evidence, kimi
    )
    assert eagle[0] == 54.1
    assert (
        _throughput(
            Candidate("nccl", dict(nccl, cuda_graph_max_bs=128, speculative_algorithm="eagle3")),
            evidence,
            kimi,
        )
        is None
    )
    # a setting the evidence names must agree: another path, another batch size, another model
    assert _throughput(Candidate("custom", {"tp_size": 8}), evidence, kimi) is None
    # a setting the candidate departs in and no number names: it is not the launch that was measured
    from topoctl.autoconf.cost import throughput_withheld

    other_bs = Candidate("nccl", dict(nccl, cuda_graph_max_bs=64))
    found, withheld = throughput_withheld(other_bs, evidence, kimi)
    assert found is None and _throughput(other_bs, evidence, kimi) is None
    assert "this launch sets cuda_graph_max_bs=64, which the measurement did not" in withheld[0]
    p2p_off = Candidate("nccl", dict(nccl, **{"env:NCCL_P2P_DISABLE": "1"}))
    found, withheld = throughput_withheld(p2p_off, evidence, kimi)
    assert found is None and _throughput(p2p_off, evidence, kimi) is None
    assert "env:NCCL_P2P_DISABLE=1" in withheld[0]
    # settings that do not change what decode throughput measures do not
    assert (
        _throughput(
            Candidate("nccl", dict(nccl, enable_p2p_check=True, model_path="/m")), evidence, kimi
        )[0]
        == 89.5
    )
    assert (
        _throughput(Candidate("nccl", dict(nccl)), evidence, models.profile("deepseek-v3")) is None
    )
    renamed = _renamed("kimi-k2.5", "moonshotai/Kimi-K2.5-local-copy")
    assert _throughput(Candidate("nccl", dict(nccl)), evidence, renamed)[0] == 89.5


def test_absolute_number_with_the_change_is_not_multiplied_again():
    from topoctl.autoconf.evidence import collect_evidence
    from topoctl.autoconf.search import Candidate, _throughput

    measured = _finding(
        "m",
        [
            {
                "metric": "decode throughput",
                "kind": "throughput",
                "value": 96,
                "unit": "tok/s",
                "config": {"cuda_graph_max_bs": 128, "allreduce": "nccl"},
            },
            {
                "metric": "decode throughput",
                "kind": "throughput",
                "value": 89.5,
                "unit": "tok/s",
                "config": {"allreduce": "nccl"},
            },
        ],
    )
    rel = _finding(
        "rel",
        [
            {
                "metric": "decode throughput change",
                "kind": "relative",
                "value": 9,
                "unit": "%",
                "config": {"cuda_graph_max_bs": 128},
                "baseline": {"value": 0, "config": {"cuda_graph_max_bs": 512}},
            }
        ],
    )
    evidence = collect_evidence([measured, rel])
    assert (
        _throughput(
            Candidate("nccl", {"custom_all_reduce": False, "cuda_graph_max_bs": 128}),
            evidence,
            None,
        )[0]
        == 96
    )


def test_unknown_key_leaves_the_number_out_with_a_note():
    from topoctl.autoconf.evidence import collect_evidence

    notes = []
    typo = _finding(
        "typo",
        [
            {
                "metric": "decode throughput",
                "kind": "throughput",
                "value": 1,
                "unit": "tok/s",
                "config": {"cuda_graph_maxbs": 128},
            }
        ],
    )
    evidence = collect_evidence([typo], notes)
    assert evidence == [] and "cuda_graph_maxbs" in notes[0]
