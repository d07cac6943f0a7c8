"""Model profiles: the built-in ones (data/models.yaml) or one read from a Hugging Face config.json.

What the allreduce cost model needs is small: layer count, hidden size, MoE or dense, and bytes per
activation element. Under tensor parallelism each layer issues two allreduces per forward pass (after
attention and after the MLP/MoE), each of hidden_size x dtype_bytes per token.
"""
from __future__ import annotations

import json
import os
from typing import Any

from topoctl.autoconf.data_files import load
from topoctl.errors import TopoctlError

MOE_KEYS = ("n_routed_experts", "num_experts", "num_local_experts")


def builtin_models() -> dict[str, dict[str, Any]]:
    return dict(load("models.yaml")["models"])


def profile(name: str) -> dict[str, Any]:
    """A built-in profile by its exact id; a near miss (other case, a prefix, a typo) gets "did you mean"."""
    models = builtin_models()
    if name not in models:
        import difflib

        lowered = {key.lower(): key for key in models}
        close = [lowered[name.strip().lower()]] if name.strip().lower() in lowered else []
        close += [key for key in sorted(models) if key.startswith(name.strip().lower()) and key not in close]
        close += [lowered[key] for key in difflib.get_close_matches(name.strip().lower(), list(lowered), n=3, cutoff=0.6)
                  if lowered[key] not in close]
        mean = f"; did you mean {' or '.join(close[:3])}?" if close else ""
        raise TopoctlError(f"unknown model {name!r}{mean}",
                           hint=f"built-in models: {', '.join(sorted(models))}; or pass --model-config config.json")
    return _complete(name, models[name], source="built-in")


# What a real transformer config holds; outside these the file is not a model config (or is corrupt).
PLAUSIBLE = {"num_hidden_layers": (1, 1000), "hidden_size": (1, 1_000_000)}


def from_hf_config(path: str) -> dict[str, Any]:
    """A profile from a Hugging Face config.json; one-line TopoctlError for anything unreadable."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise TopoctlError(f"no such file: {path}", hint="pass the model's config.json") from None
    except IsADirectoryError:
        raise TopoctlError(f"{path} is a folder", hint="pass the config.json inside it") from None
    except (ValueError, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TopoctlError(f"{path}: not valid JSON: {first}", hint="pass a Hugging Face config.json") from None
    except OSError as exc:
        raise TopoctlError(f"cannot read {path}: {exc.strerror or exc}", hint="check the path") from None
    if not isinstance(data, dict):
        raise TopoctlError(f"{path}: a config.json must be a JSON object", hint="pass a Hugging Face config.json")
    # Multimodal configs (Kimi-K2.5, Llama 4) keep the language model under text_config.
    text: dict[str, Any] = data["text_config"] if isinstance(data.get("text_config"), dict) else data
    missing = [key for key in PLAUSIBLE if key not in text]
    if missing:
        raise TopoctlError(f"{path}: missing {', '.join(missing)}",
                           hint="a Hugging Face config.json has integer num_hidden_layers and hidden_size")
    for key, (low, high) in PLAUSIBLE.items():
        value = text[key]
        if not isinstance(value, int) or isinstance(value, bool):
            raise TopoctlError(f"{path}: {key} must be an integer, not {json.dumps(value)[:40]}",
                               hint=f"a Hugging Face config.json has an integer {key} ({low}..{high})")
        if not low <= value <= high:
            raise TopoctlError(f"{path}: {key} = {value} is not plausible (expected {low}..{high})",
                               hint="pass the config.json of the model itself")
    experts = None
    for key in MOE_KEYS:
        value = text.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            experts = value
            break
    name = data.get("_name_or_path") or data.get("model_type") or os.path.basename(os.path.dirname(os.path.abspath(path)))
    entry = {"layers": text["num_hidden_layers"], "hidden_size": text["hidden_size"],
             "moe": experts is not None, "experts": experts, "dtype_bytes": 2,
             "description": f"from {os.path.basename(path)}"}
    architectures = data.get("architectures")
    if isinstance(architectures, list) and architectures and isinstance(architectures[0], str):
        entry["architecture"] = architectures[0]  # what SGLang's per-model gates read (hf_config.architectures[0])
    return _complete(str(name), entry, source=path)


def _complete(name: str, entry: dict[str, Any], source: str) -> dict[str, Any]:
    layers = int(entry["layers"])
    hidden = int(entry["hidden_size"])
    width = int(entry.get("dtype_bytes") or 2)
    return {
        "name": name,
        "layers": layers,
        "hidden_size": hidden,
        "moe": bool(entry.get("moe")),
        "experts": entry.get("experts"),
        "architecture": entry.get("architecture"),
        "dtype_bytes": width,
        "allreduces_per_forward": 2 * layers,
        "allreduce_bytes_per_token": hidden * width,
        "source": source,
    }
