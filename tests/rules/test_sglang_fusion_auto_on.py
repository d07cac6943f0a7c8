"""scripts/extract_sglang_fusion_auto_on.py: SGLang's FlashInfer allreduce fusion auto-on, read from
the wheels.

The releases below are synthetic: two-file stand-ins written here, whose gate forms follow SGLang's
own (the `_handle_model_specific_adjustments` block of server_args.py in 0.5.10, the
`_flashinfer_allreduce_fusion_auto_enable` pass of arg_groups/overrides.py in 0.5.22, the
`partial(_check_cuda_device_version, device_capability_majors=...)` predicates of
srt/utils/common.py). The committed rules file is the script's output over the real wheels
0.5.5-0.5.23 (docs/sglang-oracle.md); the oracle comparison holds it to each release's own
ServerArgs.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import yaml

from topoctl.rules.engine import load_rules

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import extract_sglang_fusion_auto_on as extractor  # noqa: E402

UTILS = """
from functools import lru_cache, partial
is_blackwell_supported = is_blackwell = lru_cache(maxsize=1)(
    partial(_check_cuda_device_version, device_capability_majors=[10, 12], cuda_version=(12, 8)))
is_sm100_supported = lru_cache(maxsize=1)(
    partial(_check_cuda_device_version, device_capability_majors=[10], cuda_version=(12, 8)))
is_sm90_supported = lru_cache(maxsize=1)(
    partial(_check_cuda_device_version, device_capability_majors=[9], cuda_version=(12, 3)))
"""
SERVER_ARGS_0_5_10 = """
class ServerArgs:
    def _handle_model_specific_adjustments(self):
        model_arch = self.get_hf_config().architectures[0]
        if (
            not self.enable_flashinfer_allreduce_fusion
            and model_arch in ["Qwen3MoeForCausalLM", "GptOssForCausalLM"]
            and (is_sm90_supported() or is_sm100_supported())
            and self.tp_size > 1
            and not self.enable_dp_attention
            and self.nnodes == 1
            and not is_h20_device
            and self.moe_a2a_backend == "none"
        ):
            self.enable_flashinfer_allreduce_fusion = True

    def _handle_deprecated(self):
        if self.enable_flashinfer_allreduce_fusion and self.flashinfer_allreduce_fusion_backend is None:
            self.flashinfer_allreduce_fusion_backend = "auto"
"""
OVERRIDES_0_5_22 = """
_FLASHINFER_ALLREDUCE_FUSION_ARCHS = frozenset({"Qwen3MoeForCausalLM", "DeepseekV3ForCausalLM"})

def _flashinfer_allreduce_fusion_auto_enable(view):
    model_arch = model_config_of(view).hf_config.architectures[0]
    if (
        view.flashinfer_allreduce_fusion_backend is None
        and model_arch in _FLASHINFER_ALLREDUCE_FUSION_ARCHS
        and (get_platform().is_sm90 or get_platform().is_sm100)
        and view.tp_size > 1
        and not attn_dp_enabled_of(view)
        and (view.nnodes == 1 or get_platform().is_sm100)
        and view.moe_a2a_backend == "none"
    ):
        return {"flashinfer_allreduce_fusion_backend": "auto"}
    return {}
"""


def _release(root: Path, version: str, files: dict[str, str]) -> None:
    for relative, text in {"sglang/srt/utils/common.py": UTILS, **files}.items():
        path = root / version / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def _rules(tmp_path: Path, releases: dict[str, dict[str, str]]) -> list[dict]:
    for version, files in releases.items():
        _release(tmp_path / "src", version, files)
    out = tmp_path / "auto_on.yaml"
    assert extractor.main([str(tmp_path / "src"), "-o", str(out)]) == 0
    return yaml.safe_load(out.read_text(encoding="utf-8"))["rules"]


def test_each_gate_becomes_a_scoped_rule_with_the_release_s_own_tests(tmp_path):
    rules = _rules(
        tmp_path,
        {
            "0.5.10": {"sglang/srt/server_args.py": SERVER_ARGS_0_5_10},
            "0.5.11": {"sglang/srt/server_args.py": SERVER_ARGS_0_5_10},
            "0.5.22": {"sglang/srt/arg_groups/overrides.py": OVERRIDES_0_5_22},
        },
    )
    assert [rule["id"] for rule in rules] == [
        "sglang-fusion-auto-on-0.5.10",
        "sglang-fusion-auto-on-0.5.22",
    ]
    first, second = rules
    assert first["effect"] == {"defaults": {"flashinfer_allreduce_fusion": True}}
    version, unset, gate = first["when"]["all"]
    assert version == {"fact": "software.sglang", "version": ">=0.5.10,<0.5.22"}
    assert unset == {"not": {"fact": "launch.flashinfer_allreduce_fusion", "set": True}}
    assert gate["all"][0] == {
        "fact": "request.model.architecture",
        "in": ["GptOssForCausalLM", "Qwen3MoeForCausalLM"],
    }
    assert {"fact": "gpu.sm_majors", "any_in": [9, 10]} in gate[
        "all"
    ]  # from the predicates' own definitions
    assert {"fact": "request.tp_size", "gt": 1} in gate["all"]
    assert {"not": {"fact": "launch.dp_attention", "eq": True}} in gate[
        "all"
    ]  # the flag, before the dp 1 reset
    releases = first["evidence"][0]["releases"]
    assert releases["holds_from"] == {
        "release": "0.5.10",
        "at": "sglang/srt/server_args.py:15",
    }  # the assignment
    assert releases["last_holding"]["release"] == "0.5.11"
    assert releases["stops_at"]["release"] == "0.5.22"
    gate = second["when"]["all"][2]
    assert gate["all"][0]["in"] == [
        "DeepseekV3ForCausalLM",
        "Qwen3MoeForCausalLM",
    ]  # the module's frozenset
    assert {"fact": "request.attention_dp_size", "le": 1} in gate["all"]
    assert {
        "any": [{"fact": "request.nnodes", "eq": 1}, {"fact": "gpu.sm_majors", "any_in": [10]}]
    } in gate["all"]


def test_a_gate_test_the_table_does_not_know_stops_the_extraction(tmp_path, capsys):
    unknown = SERVER_ARGS_0_5_10.replace("and self.tp_size > 1", "and self.enable_new_thing")
    _release(tmp_path / "src", "0.5.10", {"sglang/srt/server_args.py": unknown})
    assert extractor.main([str(tmp_path / "src")]) == 1
    err = capsys.readouterr().err
    assert "'not enable_new_thing'" in err or "'enable_new_thing'" in err
    assert "server_args.py:" in err and "hint:" in err


def test_the_committed_rules_are_the_extractor_s_and_each_has_cases():
    text = (ROOT / "rules" / "knowledge" / "sglang_fusion_auto_on.yaml").read_text(encoding="utf-8")
    assert text.startswith("# Generated by scripts/extract_sglang_fusion_auto_on.py")
    rules = [rule for rule in load_rules().rules if rule.id.startswith("sglang-fusion-auto-on-")]
    assert len(rules) >= 10
    for rule in rules:
        assert rule.effect["defaults"] == {"flashinfer_allreduce_fusion": True}
        assert {case.expect for case in rule.tests} >= {"fire", "silent"}


def test_deterministic_inference_still_clears_the_auto_on_fusion():
    """SGLang clears the fusion under deterministic inference after its auto-on (0.5.12+): an
    `implies` beats a rule's `defaults`, so the launch is judged with the fusion off."""
    from topoctl.rules.engine import evaluate

    snapshot = {
        "gpus": [
            {"index": 0, "sm": 90, "name": "NVIDIA H200"},
            {"index": 1, "sm": 90, "name": "NVIDIA H200"},
        ]
    }
    request = {
        "tp_size": 2,
        "sglang_version": "0.5.12",
        "model": {"architecture": "Qwen3MoeForCausalLM"},
    }

    def fired(launch: dict) -> tuple[set[str], dict]:
        report = evaluate(load_rules(), snapshot, dict(request, launch=launch))
        return {
            finding.rule_id for finding in report.findings if finding.status == "fired"
        }, report.implied

    names, implied = fired({})
    assert "sglang-fusion-auto-on-0.5.12" in names and "flashinfer_allreduce_fusion" not in implied
    names, implied = fired({"deterministic_inference": True})
    assert (
        implied["flashinfer_allreduce_fusion"][0] is False
    )  # the launch as run names the fusion: off
    assert "sglang-fusion-auto-on-0.5.12" not in names
