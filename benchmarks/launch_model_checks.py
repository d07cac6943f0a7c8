"""Predicted vs published: the launch model against the field report (fitted) and public results (not fitted).

    .venv/bin/python benchmarks/launch_model_checks.py

Prints the table quoted in docs/launch-model.md."""
from __future__ import annotations

from topoctl.autoconf import launch_model, memory, models
from topoctl.autoconf.gpu_specs import target_gpu
from topoctl.snapshot import system_snapshot

EAGLE3 = {"speculative_algorithm": "eagle3", "speculative_num_steps": 3, "speculative_eagle_topk": 1,
          "speculative_num_draft_tokens": 4}
# Qwen3-8B, from its config.json (https://huggingface.co/Qwen/Qwen3-8B/blob/main/config.json)
QWEN3_8B = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 4096,
            "intermediate_size": 12288, "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
            "head_dim": 128, "vocab_size": 151936, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}


def predict(system: str, model: dict, tp: int, path: str, spec: bool, version: str = "0.5.12") -> float:
    snap = system_snapshot(system)
    gpu = target_gpu(snap)
    fit = memory.fit(model, gpu["memory_bytes"], tp, version, spec)
    launch = dict({"tp_size": tp}, **(EAGLE3 if spec else {}))
    est = launch_model.estimate(model, launch, path, gpu, launch_model.Latencies(snap), fit)
    assert est is not None
    return est.tokens_per_s


def main() -> None:
    kimi = models.profile("kimi-k2.5")
    llama = models.profile("llama-3.1-8b")
    qwen = models.from_config(QWEN3_8B, "qwen3-8b", "Qwen/Qwen3-8B config.json")
    rows = [
        ("fitted", "Kimi-K2.5 TP8, 8x RTX PRO 6000 PCIe, NCCL, no speculation", 89.5,
         predict("rtx-pro-6000-8x-pcie", kimi, 8, "nccl", False)),
        ("fitted", "Kimi-K2.5 TP8, 8x RTX PRO 6000 PCIe, NCCL, EAGLE-3", 54.1,
         predict("rtx-pro-6000-8x-pcie", kimi, 8, "nccl", True)),
        ("fitted", "Kimi-K2.5 TP8, 8x RTX PRO 6000 PCIe, custom allreduce, EAGLE-3", 38.0,
         predict("rtx-pro-6000-8x-pcie", kimi, 8, "custom", True)),
    ]
    plain_h100 = predict("h100-8x-nvswitch", llama, 1, "nccl", False)
    eagle_h100 = predict("h100-8x-nvswitch", llama, 1, "nccl", True)
    plain_h200 = predict("h200-2x-nvswitch-vm", qwen, 1, "nccl", False)
    eagle_h200 = predict("h200-2x-nvswitch-vm", qwen, 1, "nccl", True)
    rows += [
        ("check", "Llama-3.1-8B-Instruct, 1x H100, SGLang, no speculation (tok/s)", 158.34, plain_h100),
        ("check", "Llama-3.1-8B-Instruct, 1x H100, SGLang, EAGLE-3 speedup (x)", 373.25 / 158.34, eagle_h100 / plain_h100),
        ("check", "Qwen3-8B, 1x H200, SGLang, no speculation (tok/s)", 187.0, plain_h200),
        ("check", "Qwen3-8B, 1x H200, SGLang, EAGLE-3 speedup (x)", 365.0 / 187.0, eagle_h200 / plain_h200),
    ]
    print("| kind | configuration | published / measured | predicted | error |")
    print("|---|---|---|---|---|")
    for kind, label, published, predicted in rows:
        print(f"| {kind} | {label} | {published:.3g} | {predicted:.3g} | {100 * (predicted / published - 1):+.1f}% |")


if __name__ == "__main__":
    main()
