"""The model a launch serves, as ServerArgs' post-init reads it (get_model_config), without a
checkpoint.

Post-init asks the model's architecture (hf_config.architectures[0]) to pick defaults: FlashInfer
allreduce fusion turns itself on for some MoE architectures on SM90/SM100. The oracle serves a few
architectures and answers what a plain decoder of that family says; anything else is the stub
(falsy, zero). An architecture may name the checkpoint's quant_method after a `+`
("GptOssForCausalLM+mxfp4", "DeepseekV3ForCausalLM+fp8"): the config then carries that
quantization_config, which post-init reads to pick the MoE runner on SM100.
"""

from __future__ import annotations

from typing import Any

from sglang_flags.real_parser import _stub

ARCHITECTURES = {
    # name: (is MoE, hidden layers, experts)
    "LlamaForCausalLM": (False, 32, 0),
    "Qwen3MoeForCausalLM": (True, 48, 128),
    "GptOssForCausalLM": (True, 36, 128),
    "DeepseekV3ForCausalLM": (True, 61, 256),
    "Glm4MoeForCausalLM": (True, 92, 160),
    "KimiK25ForConditionalGeneration": (True, 61, 384),
    "MixtralForCausalLM": (True, 32, 8),
}
# A quant_method whose quantization_config post-init reads beyond quant_method: the built-in
# checkpoint's whole config (autoconf/data/models.yaml). Kimi-K2.5's int4 recipe picks
# flashinfer_trtllm on SM100 from 0.5.10 (0.5.19 arg_groups/overrides.py:792-798); KimiK25Config
# lifts it from text_config (configs/kimi_k25.py:158-159).
QUANTIZATION_CONFIGS = {
    "compressed-tensors": {
        "quant_method": "compressed-tensors",
        "format": "pack-quantized",
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "weights": {
                    "num_bits": 4,
                    "type": "int",
                    "group_size": 32,
                    "strategy": "group",
                    "symmetric": True,
                },
            }
        },
    },
}


class _Namespace:
    """A config whose unknown attributes are absent (getattr's default, hasattr False), as in a
    checkpoint that does not set them."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(name)


class _ModelConfig(_Namespace):
    """ModelConfig's own attributes, read without a default: an unknown `is_*`/`has_*` is False, a
    `get_*` method the stub (callable, zero), anything else None (an optional part this checkpoint
    lacks)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name.startswith(("is_", "has_")):
            return False
        if name.startswith("get_"):
            return _stub(f"model.{name}")
        return None


class FakeModelConfig(_ModelConfig):
    def __init__(self, arch: str) -> None:
        arch, _, quant = arch.partition("+")
        moe, layers, experts = ARCHITECTURES.get(arch, (False, 32, 0))
        hf = _Namespace(
            {
                "architectures": [arch],
                "model_type": arch.lower(),
                "num_hidden_layers": layers,
                "hidden_size": 4096,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
                "vocab_size": 151936,
                "max_position_embeddings": 32768,
                "torch_dtype": "bfloat16",
                "num_experts": experts or None,
                "num_local_experts": experts or None,
                "quantization_config": QUANTIZATION_CONFIGS.get(quant, {"quant_method": quant})
                if quant
                else None,
                "text_config": None,
                "vision_config": None,
                "tie_word_embeddings": False,
            }
        )
        super().__init__(
            {
                "hf_config": hf,
                "hf_text_config": hf,
                "is_multimodal": False,
                "is_generation": True,
                "is_multimodal_gen": False,
                "is_piecewise_cuda_graph_disabled_model": False,
                "context_len": 32768,
                "num_hidden_layers": layers,
                "num_attention_layers": layers,
                "hidden_size": 4096,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
                "head_dim": 128,
                "has_attention_sinks": arch == "GptOssForCausalLM",
                "is_hybrid": False,
                "is_hybrid_swa": False,
                "quantization": None,
                "dtype": "bfloat16",
                "model_path": "model",
                "is_encoder_decoder": False,
                "is_moe": moe,
                "attention_arch": "MHA",
            }
        )
