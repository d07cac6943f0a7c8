"""A built-in model that loads on each built-in system (the memory model refuses one that does not):
tests about rules, flags and outputs use it where they are not about a model that does not fit."""

from __future__ import annotations

FITS = {
    "rtx-pro-6000-8x-pcie": "kimi-k2.5",  # the field report's model on its machine
    "h100-8x-nvswitch": "llama-3.1-70b",
    "h200-2x-nvswitch-vm": "llama-3.1-70b",
    "h200-4x-nvswitch-vm": "qwen3-235b-a22b",
    "l40s-4x-pcie-2numa": "qwen3-32b",
    "rtx-4090-2x-pcie-no-p2p": "gpt-oss-20b",
}


def fitting_model(system: str) -> str:
    return FITS.get(system, "llama-3.1-8b")
