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
    models = builtin_models()
    if name not in models:
        raise TopoctlError(f"unknown model {name!r}",
                           hint=f"built-in models: {', '.join(sorted(models))}; or pass --model-config config.json")
    return _complete(name, models[name], source="built-in")


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
    text = data.get("text_config") if isinstance(data.get("text_config"), dict) else data
    missing = [key for key in ("num_hidden_layers", "hidden_size") if not isinstance(text.get(key), int)
               or isinstance(text.get(key), bool) or text.get(key) <= 0]
    if missing:
        raise TopoctlError(f"{path}: missing or invalid {', '.join(missing)}",
                           hint="a Hugging Face config.json has integer num_hidden_layers and hidden_size")
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
        "dtype_bytes": width,
        "allreduces_per_forward": 2 * layers,
        "allreduce_bytes_per_token": hidden * width,
        "source": source,
    }
