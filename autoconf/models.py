"""A model is its properties, not its name.

A profile is read the way SGLang takes a model: from a model folder (`--model-path DIR`: its
config.json, and the exact weight bytes from model.safetensors.index.json `metadata.total_size`, or
the tensor bytes of the .safetensors files, when present; a Hugging Face cache folder
`models--org--name` resolves to its snapshot), from a config.json alone, or from a built-in profile
(data/models.yaml holds config.json values, so both go through `from_config`).

What the launch model reads from a profile: architecture and model_type, layers, hidden size,
attention and KV heads, head dim, MLA ranks (kv_lora_rank, qk_rope_head_dim), experts and active
experts, vocabulary, dtype and quantization, and the parameters and bytes of each part of the model
(embeddings, lm_head, attention, dense MLP, routed experts, shared experts, router, norms), total
and active per token.

Parameter counts are computed from the config (linear weights only; biases and small scales are left
out); weight bytes follow the quantization the config declares (`quantization_bytes`). Under tensor
parallelism each layer issues two allreduces per forward pass (after attention and after the
MLP/MoE), each of hidden_size x 2 bytes (bf16 activations) per token.

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import struct
from typing import Any

from topoctl.autoconf.data_files import load
from topoctl.core.errors import TopoctlError, one_line

MOE_KEYS = ("n_routed_experts", "num_experts", "num_local_experts")
ACTIVE_KEYS = ("num_experts_per_tok", "experts_per_token", "moe_topk")
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4, "float8_e4m3fn": 1}
ACTIVATION_BYTES = (
    2  # SGLang runs these models with bf16/fp16 activations and KV cache by default (auto)
)
# What a real transformer config holds; outside these the file is not a model config (or is
# corrupt).
PLAUSIBLE = {"num_hidden_layers": (1, 1000), "hidden_size": (1, 1_000_000)}
# A module name that stands for each part, as checkpoints name them; a quantization config's ignore
# list (compressed-tensors `ignore`, mxfp4 `modules_to_not_convert`) is matched against these.
PART_MODULES = {
    "attention": "model.layers.1.self_attn.o_proj",
    "dense_mlp": "model.layers.0.mlp.gate_proj",
    "experts": "model.layers.1.mlp.experts.0.gate_proj",
    "shared_experts": "model.layers.1.mlp.shared_experts.gate_proj",
}
LINEAR_PARTS = tuple(PART_MODULES)
PART_ORDER = (
    "embed",
    "lm_head",
    "attention",
    "dense_mlp",
    "experts",
    "shared_experts",
    "router",
    "norms",
)


# -------------------------------------------------------------------------------------------
# built-ins


def builtin_models() -> dict[str, dict[str, Any]]:
    return dict(load("models.yaml")["models"])


def profile(name: str) -> dict[str, Any]:
    """A built-in profile by its exact id; a near miss (other case, a prefix, a typo) gets "did you
    mean"."""
    models = builtin_models()
    if name not in models:
        import difflib

        lowered = {key.lower(): key for key in models}
        close = [lowered[name.strip().lower()]] if name.strip().lower() in lowered else []
        close += [
            key
            for key in sorted(models)
            if key.startswith(name.strip().lower()) and key not in close
        ]
        close += [
            lowered[key]
            for key in difflib.get_close_matches(
                name.strip().lower(), list(lowered), n=3, cutoff=0.6
            )
            if lowered[key] not in close
        ]
        mean = f"; did you mean {' or '.join(close[:3])}?" if close else ""
        raise TopoctlError(
            f"unknown model {name!r}{mean}",
            hint=f"built-in models: {', '.join(sorted(models))} (--list-models); "
            "or pass --model-path DIR or --model-config config.json",
        )
    entry = models[name]
    return from_config(
        dict(entry["config"]), name, source=f"built-in profile ({entry.get('source')})"
    )


def list_models_text() -> str:
    """One line per built-in profile: id, architecture, size, quantization, weight bytes, source."""
    lines = []
    for name in sorted(builtin_models()):
        prof = profile(name)
        kind = (
            f"MoE {prof['experts']} experts, {prof['active_experts']} active"
            if prof["moe"]
            else "dense"
        )
        lines.append(
            f"{name}\t{prof['architecture']}, {prof['layers']} layers, {kind}, "
            f"{prof['attention']}, {prof['quantization']['label']}, "
            f"{prof['total_params'] / 1e9:.1f}B params ({prof['active_params'] / 1e9:.1f}B "
            f"active), {prof['weight_bytes'] / 1e9:.1f} GB "
            f"weights\t{builtin_models()[name].get('source')}"
        )
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------ reading
# files


def _read_json(path: str, what: str) -> Any:
    from topoctl.core import safe_read as limits

    try:  # within the limits of topoctl/core/safe_read.py: size, depth, integer size
        return limits.loads_json(
            limits.read_file(path, limits.MAX_MODEL_CONFIG_BYTES).decode("utf-8"), path
        )
    except FileNotFoundError:
        raise TopoctlError(f"no such file: {path}", hint=f"pass the model's {what}") from None
    except IsADirectoryError:
        raise TopoctlError(
            f"{path} is a folder", hint="pass the config.json inside it, or use --model-path DIR"
        ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TopoctlError(
            f"{path}: not valid JSON: {first}", hint=f"pass a Hugging Face {what}"
        ) from None
    except OSError as exc:
        raise TopoctlError(
            f"cannot read {path}: {exc.strerror or exc}", hint="check the path"
        ) from None


def from_hf_config(path: str) -> dict[str, Any]:
    """A profile from a Hugging Face config.json; one-line TopoctlError for anything unreadable."""
    data = _read_json(path, "config.json")
    if not isinstance(data, dict):
        raise TopoctlError(
            f"{path}: a config.json must be a JSON object", hint="pass a Hugging Face config.json"
        )
    name = (
        data.get("_name_or_path")
        or os.path.basename(os.path.dirname(os.path.abspath(path)))
        or data.get("model_type")
    )
    return from_config(data, str(name), source=path)


def resolve_model_dir(path: str) -> str:
    """The folder holding config.json: the folder itself, or the snapshot a Hugging Face cache
    folder (models--org--name, with refs/ and snapshots/) points to."""
    if not os.path.isdir(path):
        raise TopoctlError(
            f"{path} is not a folder" if os.path.exists(path) else f"no such folder: {path}",
            hint="--model-path takes the model folder SGLang is given (with config.json); "
            "--model-config takes a config.json",
        )
    if os.path.lexists(
        os.path.join(path, "config.json")
    ):  # a FIFO or device too: the reader refuses it by name
        return path
    snapshots = os.path.join(path, "snapshots")
    if os.path.isdir(snapshots):
        ref = os.path.join(path, "refs", "main")
        if os.path.lexists(ref):
            commit = _ref_commit(ref)
            if os.path.isfile(os.path.join(snapshots, commit, "config.json")):
                return os.path.join(snapshots, commit)
        found = sorted(
            entry
            for entry in os.listdir(snapshots)
            if os.path.isfile(os.path.join(snapshots, entry, "config.json"))
        )
        if len(found) == 1:
            return os.path.join(snapshots, found[0])
        if found:
            raise TopoctlError(
                f"{path}: {len(found)} snapshots and no refs/main to choose one",
                hint=f"pass one snapshot folder: {os.path.join(snapshots, found[0])}",
            )
    raise TopoctlError(
        f"{path}: no config.json in this folder",
        hint="pass the model folder (the one holding config.json), "
        "or a Hugging Face cache folder models--org--name",
    )


def _ref_commit(ref: str) -> str:
    """The snapshot name a Hugging Face cache's refs/main holds. Anything else there (a folder, a
    link to nothing, no permission, a FIFO, bytes that are not a commit name) is exit 2 naming
    refs/main: a wrong snapshot would size the wrong model, and a name with `..` could reach outside
    the cache."""
    from topoctl.core import safe_read as limits

    hint = "refs/main holds the name of one folder under snapshots/"
    try:
        commit = limits.read_text(
            ref, 4096, hint="refs/main holds the commit hash of a snapshot"
        ).strip()
    except OSError as exc:  # a folder, a link to nothing, no permission, an I/O error
        raise TopoctlError(f"{ref}: cannot read it: {exc.strerror or exc}", hint=hint) from None
    if not re.fullmatch(r"[0-9A-Za-z][0-9A-Za-z._-]{0,127}", commit) or ".." in commit:
        raise TopoctlError(f"{ref}: not a commit name ({one_line(commit, 40)})", hint=hint)
    return commit


# safetensors (https://github.com/huggingface/safetensors, README "Format"): 8 bytes little-endian
# header length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]},
# "__metadata__": {str: str}}, then the tensor bytes, offsets relative to their start. The format
# caps N at 100,000,000; topoctl reads headers up to MAX_SAFETENSORS_HEADER (real ones are a few
# hundred KB) and no tensor byte.
MAX_SAFETENSORS_HEADER = 16 * 1024 * 1024
SAFETENSORS_DTYPE_BYTES = {
    "BOOL": 1,
    "U8": 1,
    "I8": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "F8_E8M0": 1,
    "F4": 0.5,
    "F6_E2M3": 0.75,
    "F6_E3M2": 0.75,
    "I16": 2,
    "U16": 2,
    "F16": 2,
    "BF16": 2,
    "I32": 4,
    "U32": 4,
    "F32": 4,
    "I64": 8,
    "U64": 8,
    "F64": 8,
    "C64": 8,
}
# A git-lfs pointer (https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md): what a clone
# without `git lfs pull` (or with GIT_LFS_SKIP_SMUDGE=1) leaves in place of each weight file.
LFS_POINTER = b"version https://git-lfs.github.com/spec/v1"
MAX_LFS_POINTER_BYTES = 1024  # the spec: "Pointer files must be stored ... less than 1024 bytes"


def _not_a_checkpoint(where: str, why: str) -> TopoctlError:
    return TopoctlError(
        f"{where}: {why}",
        hint="pass the model folder as downloaded (huggingface-cli download), "
        "or --model-config config.json to compute the weight bytes from the config",
    )


def _index_total(index: str) -> int | None:
    """model.safetensors.index.json's metadata.total_size: a positive integer, absent (None), or
    exit 2."""
    data = _read_json(index, "model.safetensors.index.json")
    if not isinstance(data, dict):
        raise _not_a_checkpoint(index, "an index must be a JSON object")
    weight_map = data.get("weight_map", {})
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise _not_a_checkpoint(index, "weight_map must map tensor names to file names")
    metadata = data.get("metadata", {})
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        raise _not_a_checkpoint(
            index, f"metadata must be a mapping, not {json.dumps(metadata)[:40]}"
        )
    total = metadata.get("total_size")
    if total is None:
        return None
    if not isinstance(total, int) or isinstance(total, bool) or total <= 0:
        raise _not_a_checkpoint(
            index,
            f"metadata.total_size must be a positive integer number of bytes, "
            f"not {json.dumps(total)[:40]}",
        )
    return total


def _lfs_pointer_size(path: str) -> int:
    """The `size` a git-lfs pointer file names: the bytes of the weight file it stands for."""
    from topoctl.core import safe_read as limits

    text = limits.read_text(path, MAX_LFS_POINTER_BYTES, hint="a git-lfs pointer is UTF-8 text")
    found = re.search(r"^size (\d{1,20})$", text, re.M)
    if found is None or int(found.group(1)) <= 0:
        raise _not_a_checkpoint(path, "a git-lfs pointer without a positive `size` line")
    return int(found.group(1))


def _tensor_bytes(where: str, name: str, entry: Any, data_bytes: int) -> int:
    """One header entry's byte count, every field checked against the format."""
    if not isinstance(entry, dict):
        raise _not_a_checkpoint(where, f"header entry {name!r} is not a mapping")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    width = SAFETENSORS_DTYPE_BYTES.get(dtype) if isinstance(dtype, str) else None
    if width is None:
        raise _not_a_checkpoint(where, f"tensor {name!r}: unknown dtype {json.dumps(dtype)[:40]}")
    if not isinstance(shape, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise _not_a_checkpoint(where, f"tensor {name!r}: shape must be a list of sizes")
    if not (
        isinstance(offsets, list)
        and len(offsets) == 2
        and all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
        and 0 <= offsets[0] <= offsets[1] <= data_bytes
    ):
        raise _not_a_checkpoint(
            where, f"tensor {name!r}: data_offsets must be [begin, end] within the file"
        )
    elements = 1
    for size in shape:
        elements *= size
    if offsets[1] - offsets[0] != elements * width:
        raise _not_a_checkpoint(
            where,
            f"tensor {name!r}: data_offsets hold {offsets[1] - offsets[0]} bytes, "
            f"its shape and dtype {elements * width:g}",
        )
    return int(offsets[1] - offsets[0])


def safetensors_bytes(path: str) -> tuple[int, bool]:
    """(tensor bytes, whether they come from a git-lfs pointer) of one *.safetensors file, its
    header checked entry by entry; a truncated, zero or inconsistent header is exit 2 naming the
    file and the entry."""
    from topoctl.core import safe_read as limits

    head, size = limits.read_head(path, len(LFS_POINTER))
    if head == LFS_POINTER:
        return _lfs_pointer_size(path), True
    if len(head) < 8:
        raise _not_a_checkpoint(
            path, f"not a safetensors file ({size} bytes, shorter than its 8-byte header length)"
        )
    (length,) = struct.unpack("<Q", head[:8])
    if not 2 <= length <= min(MAX_SAFETENSORS_HEADER, size - 8):
        raise _not_a_checkpoint(
            path, f"not a safetensors file (a header of {length:,} bytes in a file of {size:,})"
        )
    raw = limits.read_at(path, 8, length)
    try:
        header = limits.loads_json(raw.decode("utf-8").rstrip(" "), path)
    except (ValueError, UnicodeDecodeError):
        raise _not_a_checkpoint(path, "the safetensors header is not JSON") from None
    if not isinstance(header, dict):
        raise _not_a_checkpoint(path, "the safetensors header is not a JSON object")
    data_bytes = size - 8 - length
    total = sum(
        _tensor_bytes(path, str(name), entry, data_bytes)
        for name, entry in header.items()
        if name != "__metadata__"
    )
    return total, False


def _file_bytes(path: str) -> tuple[int, bool]:
    try:
        return safetensors_bytes(path)
    except OSError as exc:  # a folder named *.safetensors, no permission, an I/O error
        raise _not_a_checkpoint(path, f"cannot read it: {exc.strerror or exc}") from None


def checkpoint_bytes(folder: str) -> tuple[int, str] | None:
    """Exact weight bytes of a checkpoint folder: model.safetensors.index.json's
    metadata.total_size, else the tensor bytes of its .safetensors files (from each file's header; a
    git-lfs pointer's `size` where the weights were not pulled); None when neither is there.
    Anything malformed is exit 2 naming the file and field."""
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.lexists(index):
        total = _index_total(index)
        if total is not None:
            return total, f"{index} metadata.total_size"
    files = sorted(name for name in os.listdir(folder) if name.endswith(".safetensors"))
    if not files:
        return None
    counted = [_file_bytes(os.path.join(folder, name)) for name in files]
    pointers = sum(1 for _, pointer in counted if pointer)
    how = f"tensor bytes of {len(files)} .safetensors file(s) in {folder}"
    if pointers:
        how += (
            f" ({pointers} of them git-lfs pointers, counted at the size they name, headers "
            "included)"
        )
    return sum(count for count, _ in counted), how


def from_model_dir(path: str) -> dict[str, Any]:
    """A profile from a model folder (config.json, and the exact weight bytes when the folder has
    them)."""
    folder = resolve_model_dir(path)
    config_path = os.path.join(folder, "config.json")
    data = _read_json(config_path, "config.json")
    if not isinstance(data, dict):
        raise TopoctlError(
            f"{config_path}: a config.json must be a JSON object",
            hint="pass a Hugging Face model folder",
        )
    name = data.get("_name_or_path") or os.path.basename(os.path.normpath(path))
    return from_config(data, str(name), source=config_path, exact_bytes=checkpoint_bytes(folder))


# ----------------------------------------------------------------------------------- config ->
# profile

# The range each count of a config.json may take (far past any real model: DeepSeek-V3 has 61
# layers, 7168 hidden, 128 heads, 256 routed experts, a 129,280 vocabulary). A value outside, or of
# another type (a string, a bool, a fraction), is exit 2 naming the field: a count read as a default
# would make a model small enough to "fit" anywhere. null is the same as absent (Hugging Face writes
# unset fields as null).
COUNT_RANGES: dict[str, tuple[int, int]] = {
    "num_attention_heads": (1, 65_536),
    "num_key_value_heads": (1, 65_536),
    "head_dim": (1, 65_536),
    "vocab_size": (0, 100_000_000),
    "kv_lora_rank": (0, 1_000_000),
    "qk_rope_head_dim": (0, 65_536),
    "qk_nope_head_dim": (0, 65_536),
    "v_head_dim": (0, 65_536),
    "q_lora_rank": (0, 1_000_000),
    "intermediate_size": (0, 100_000_000),
    "moe_intermediate_size": (0, 100_000_000),
    "shared_expert_intermediate_size": (0, 100_000_000),
    "n_shared_experts": (0, 65_536),
    "first_k_dense_replace": (0, 1000),
    "max_position_embeddings": (0, 2**40),
    **{key: (0, 65_536) for key in MOE_KEYS + ACTIVE_KEYS},
}


def _in_range(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


class _Counts:
    """The counts of one config mapping, each checked for type and range the first time it is read."""

    def __init__(self, text: dict[str, Any], where: str) -> None:
        self.text, self.where = text, where

    def __call__(self, key: str, default: int | None = None) -> int | None:
        value = self.text.get(key)
        if value is None:
            return default
        low, high = COUNT_RANGES.get(key, (0, 2**53))
        if isinstance(value, list) and value and all(_in_range(item, low, high) for item in value):
            return max(
                value
            )  # per-layer counts (Hunyuan's moe_topk, OpenELM's heads): the largest, conservatively
        if not _in_range(value, low, high):
            raise TopoctlError(
                f"{self.where}: {key} must be an integer from {low} to {high:,}, "
                f"not {one_line(json.dumps(value), 40)}",
                hint="pass the config.json of the model itself (or fix that field)",
            )
        return value


def _validate(text: dict[str, Any], where: str) -> None:
    missing = [key for key in PLAUSIBLE if key not in text]
    if missing:
        raise TopoctlError(
            f"{where}: missing {', '.join(missing)}",
            hint="a Hugging Face config.json has integer num_hidden_layers and hidden_size",
        )
    for key, (low, high) in PLAUSIBLE.items():
        value = text[key]
        if not isinstance(value, int) or isinstance(value, bool):
            raise TopoctlError(
                f"{where}: {key} must be an integer, not {json.dumps(value)[:40]}",
                hint=f"a Hugging Face config.json has an integer {key} ({low}..{high})",
            )
        if not low <= value <= high:
            raise TopoctlError(
                f"{where}: {key} = {value} is not plausible (expected {low}..{high})",
                hint="pass the config.json of the model itself",
            )


class _QuantFields:
    """The fields of a quantization_config, each checked for type and range where it is read."""

    def __init__(self, config: dict[str, Any], where: str) -> None:
        self.config, self.where = config, where

    def _bad(self, key: str, value: Any, wanted: str) -> TopoctlError:
        return TopoctlError(
            f"{self.where}.{key} must be {wanted}, not {one_line(json.dumps(value), 40)}",
            hint="pass the config.json of the model itself (or fix that field)",
        )

    def text(self, source: dict[str, Any], key: str, prefix: str = "") -> str:
        value = source.get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self._bad(prefix + key, value, "a string")
        return value

    def number(
        self, source: dict[str, Any], key: str, low: int, high: int, prefix: str = ""
    ) -> int | None:
        """A count in [low, high]; -1 (GPTQ's "one group per channel") and null read as none."""
        value = source.get(key)
        if (
            value is None
            or value == -1
            and not isinstance(value, bool)
            and key.endswith("group_size")
        ):
            return None
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise self._bad(prefix + key, value, f"an integer from {low} to {high:,}")
        return value

    def names(self, key: str) -> list[str]:
        value = self.config.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self._bad(key, value, "a list of module names")
        return list(value)

    def weights(self) -> dict[str, Any]:
        groups = self.config.get("config_groups")
        if groups is None:
            return {}
        if not isinstance(groups, dict):
            raise self._bad("config_groups", groups, "a mapping")
        for name, group in groups.items():
            if isinstance(group, dict) and isinstance(group.get("weights"), dict):
                return {"prefix": f"config_groups.{name}.weights.", **group["weights"]}
        return {}


def _quant_numbers(
    fields: _QuantFields, config: dict[str, Any], weights: dict[str, Any]
) -> tuple[int | None, int | None]:
    """(bits, group size): the compressed-tensors weights' first, else the config's own spellings."""
    prefix = str(weights.get("prefix", ""))
    bits = (
        fields.number(weights, "num_bits", 1, 64, prefix)
        or fields.number(config, "bits", 1, 64)
        or fields.number(config, "w_bit", 1, 64)
    )
    group = (
        fields.number(weights, "group_size", 1, 2**20, prefix)
        or fields.number(config, "group_size", 1, 2**20)
        or fields.number(config, "q_group_size", 1, 2**20)
    )
    return bits, group


def quantization(
    text: dict[str, Any], outer: dict[str, Any], where: str = "config.json"
) -> dict[str, Any]:
    """The declared quantization: method, bits, group size, which linear parts it leaves alone, and
    a label. Every field read is checked for type and range (exit 2 naming it), never read as a
    default."""
    config = text.get("quantization_config") or outer.get("quantization_config") or {}
    dtype = str(
        text.get("torch_dtype") or outer.get("torch_dtype") or text.get("dtype") or "bfloat16"
    )
    if not isinstance(config, dict):
        raise TopoctlError(
            f"{where}: quantization_config must be a mapping, not "
            f"{one_line(json.dumps(config), 40)}",
            hint="pass the config.json of the model itself (or fix that field)",
        )
    fields = _QuantFields(config, f"{where}: quantization_config")
    method = fields.text(config, "quant_method").lower()
    if not method:
        return {
            "method": None,
            "label": dtype,
            "bits": 8 * DTYPE_BYTES.get(dtype, 2),
            "group_size": None,
            "ignored": [],
            "dtype": dtype,
        }
    weights = fields.weights()
    fmt = fields.text(config, "format").lower()
    bits, group_size = _quant_numbers(fields, config, weights)
    kind = fields.text(weights, "type", str(weights.get("prefix", "")))
    ignored = fields.names("ignore") or fields.names("modules_to_not_convert")
    algo = fields.text(config, "quant_algo").upper()
    if method in ("fp8", "fbgemm_fp8") or (
        method == "compressed-tensors" and bits == 8 and kind == "float"
    ):
        scheme, bits = "fp8", 8
    elif method == "mxfp4" or "mxfp4" in fmt:
        scheme, bits, group_size = "mxfp4", 4, 32
    elif method == "mxfp8" or "mxfp8" in fmt:
        scheme, bits, group_size = "mxfp8", 8, 32
    elif "nvfp4" in fmt or method in ("modelopt_fp4", "nvfp4") or algo == "NVFP4":
        scheme, bits, group_size = "nvfp4", 4, 16
    elif method in ("awq", "gptq", "awq_marlin", "gptq_marlin"):
        scheme, bits, group_size = method.split("_")[0], bits or 4, group_size or 128
    elif method == "compressed-tensors" and bits:
        scheme = f"int{bits}" if kind in ("int", "") else f"{kind}{bits}"
    else:
        scheme = method
    label = scheme if not group_size else f"{scheme} (group {group_size})"
    if method == "compressed-tensors":
        label = f"compressed-tensors {label}"
    return {
        "method": method,
        "scheme": scheme,
        "label": label,
        "bits": bits,
        "group_size": group_size,
        "ignored": ignored,
        "dtype": dtype,
    }


def quantization_bytes(quant: dict[str, Any]) -> float:
    """Bytes per weight of a quantized linear layer, scales included: fp8 1 (+ a float32 scale per
    128x128 block); mxfp4 0.5 + 1/32 (an 8-bit scale per 32); mxfp8 1 + 1/32 (e4m3 weights, a UE8M0
    scale per 32: SGLang 0.5.23 layers/quantization/mxfp8_block_convert.py:5, :19); nvfp4 0.5 + 1/16
    (an fp8 scale per 16); int4 with a 16-bit scale per group (+ a 4-bit zero point for AWQ/GPTQ);
    otherwise the dtype's width."""
    scheme = quant.get("scheme")
    group = quant.get("group_size")
    if quant.get("method") is None:
        return float(DTYPE_BYTES.get(quant["dtype"], 2))
    if scheme == "fp8":
        return 1.0 + 4.0 / (128 * 128)
    if scheme == "mxfp4":
        return 0.5 + 1.0 / 32
    if scheme == "mxfp8":
        return 1.0 + 1.0 / 32
    if scheme == "nvfp4":
        return 0.5 + 1.0 / 16
    bits = quant.get("bits") or 16
    per = bits / 8.0
    if group:
        per += 2.0 / group
        if scheme in ("awq", "gptq"):
            per += 0.5 / group
    return per


def _ignored(pattern_list: list[Any], module: str) -> bool:
    for pattern in pattern_list:
        text = str(pattern)
        if text.startswith("re:"):
            if re.match(text[3:], module):
                return True
        elif (
            fnmatch.fnmatch(module, text)
            or fnmatch.fnmatch(module, text + ".*")
            or module.startswith(text + ".")
        ):
            return True
    return False


def parameter_parts(text: dict[str, Any], where: str = "config.json") -> dict[str, Any]:
    """Parameters of each part of the model, whole and active per token (the experts a token is
    routed to)."""
    count = _Counts(text, where)
    for key in COUNT_RANGES:  # every count is checked, also one that another key makes unread
        count(key)
    hidden = int(text["hidden_size"])
    layers = int(text["num_hidden_layers"])
    heads = count("num_attention_heads", 1) or 1
    kv_heads = count("num_key_value_heads", heads) or heads
    head_dim = count("head_dim") or hidden // heads
    if head_dim < 1:
        raise TopoctlError(
            f"{where}: num_attention_heads = {heads} is more than hidden_size = {hidden} and "
            "there is "
            "no head_dim",
            hint="pass the config.json of the model itself (or fix that field)",
        )
    vocab = count("vocab_size", 0) or 0
    experts = next((count(key) for key in MOE_KEYS if count(key)), None)
    active = next((count(key) for key in ACTIVE_KEYS if count(key)), None) or (
        2 if experts else None
    )
    kv_lora = count("kv_lora_rank")
    if kv_lora:
        rope = count("qk_rope_head_dim", 64) or 64
        nope = count("qk_nope_head_dim", 128) or 128
        v_dim = count("v_head_dim", 128) or 128
        q_lora = count("q_lora_rank")
        q = (
            hidden * q_lora + q_lora * heads * (nope + rope)
            if q_lora
            else hidden * heads * (nope + rope)
        )
        replicated = hidden * (
            (q_lora or 0) + kv_lora + rope
        )  # q_a / kv_a projections (not split by TP)
        per_layer = (
            q
            + hidden * (kv_lora + rope)
            + kv_lora * heads * (nope + v_dim)
            + heads * v_dim * hidden
        )
    else:
        replicated = 0
        per_layer = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2
    dense_layers = layers
    moe_inter = count("moe_intermediate_size") or count("intermediate_size", 0) or 0
    shared = count("n_shared_experts", 0) or 0
    shared_inter = count("shared_expert_intermediate_size")
    if experts:
        dense_layers = min(layers, count("first_k_dense_replace", 0) or 0)
    moe_layers = layers - dense_layers if experts else 0
    expert_params = 3 * hidden * moe_inter
    whole = {
        "embed": vocab * hidden,
        "lm_head": 0 if text.get("tie_word_embeddings") else vocab * hidden,
        "attention": layers * per_layer,
        "dense_mlp": dense_layers * 3 * hidden * (count("intermediate_size", 0) or 0),
        "experts": moe_layers * (experts or 0) * expert_params,
        "shared_experts": moe_layers
        * (3 * hidden * shared_inter if shared_inter else shared * expert_params),
        "router": moe_layers * hidden * (experts or 0),
        "norms": (2 * layers + 1) * hidden,
    }
    active_parts = dict(whole, embed=hidden, experts=moe_layers * (active or 0) * expert_params)
    return {
        "whole": whole,
        "active": active_parts,
        "replicated_attention": layers * replicated,
        "hidden": hidden,
        "layers": layers,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "vocab": vocab,
        "experts": experts,
        "active_experts": active,
        "shared_experts": shared,
        "kv_lora_rank": kv_lora,
        "qk_rope_head_dim": count("qk_rope_head_dim") if kv_lora else None,
        "moe_layers": moe_layers,
        "dense_layers": dense_layers,
    }


def part_bytes(params: dict[str, int], quant: dict[str, Any]) -> dict[str, float]:
    """Bytes of each part: quantized linear parts at the scheme's width, the rest (and what the
    config's ignore list names) in the model's dtype."""
    plain = float(DTYPE_BYTES.get(quant["dtype"], 2))
    packed = quantization_bytes(quant)
    out = {}
    for part, count in params.items():
        quantized = (
            quant.get("method") is not None
            and part in LINEAR_PARTS
            and not _ignored(quant.get("ignored") or [], PART_MODULES[part])
        )
        out[part] = count * (packed if quantized else plain)
    return out


# How far a checkpoint's own byte count may stray from the bytes computed from its config
# (parameters x the declared quantization's width) before it is taken for a wrong or broken file: a
# multimodal checkpoint carries a vision tower the text config does not count (Qwen2.5-VL-7B: about
# 1.1x), an undeclared int4 or fp8 checkpoint is 0.27x or 0.5x of bf16; 8x either way is far past
# those and well short of "a 1T-parameter model fits one GPU" (a total_size of 0.5 or a truncated
# header).
BYTES_FACTOR = 8


def _checked_scale(exact_bytes: tuple[int, str], computed: float, where: str) -> float:
    scale = exact_bytes[0] / computed
    if not 1 / BYTES_FACTOR <= scale <= BYTES_FACTOR:
        raise TopoctlError(
            f"{exact_bytes[1]}: {exact_bytes[0]:,} bytes of weights, but {where} describes "
            f"{computed / 1e9:,.1f} GB ({scale:.3g}x, more than {BYTES_FACTOR}x off)",
            hint="the checkpoint and its config.json do not match (a partial download, a wrong "
            "index?); pass --model-config config.json to size the model from the config alone",
        )
    return scale


def from_config(
    data: dict[str, Any], name: str, source: str, exact_bytes: tuple[int, str] | None = None
) -> dict[str, Any]:
    """The profile of a config.json's content (multimodal configs keep the language model in
    text_config)."""
    nested = data.get("text_config")
    text: dict[str, Any] = nested if isinstance(nested, dict) else data
    where = f"{source}: text_config" if isinstance(nested, dict) else source
    _validate(text, where)
    parts = parameter_parts(text, where)
    quant = quantization(text, data, where)
    whole_bytes = part_bytes(parts["whole"], quant)
    active_bytes = part_bytes(parts["active"], quant)
    computed = sum(whole_bytes.values())
    bytes_source = (
        "computed from the config (parameters x bytes per weight of the declared quantization)"
    )
    if exact_bytes and computed > 0:
        # The checkpoint's own bytes replace the computed total; each part keeps its computed share.
        scale = _checked_scale(exact_bytes, computed, where)
        whole_bytes = {k: v * scale for k, v in whole_bytes.items()}
        active_bytes = {k: v * scale for k, v in active_bytes.items()}
        bytes_source = exact_bytes[1]
    mla = bool(parts["kv_lora_rank"])
    if mla:
        kv_per_token_layer = (
            parts["kv_lora_rank"] + (parts["qk_rope_head_dim"] or 0)
        ) * ACTIVATION_BYTES
    else:
        kv_per_token_layer = 2 * parts["kv_heads"] * parts["head_dim"] * ACTIVATION_BYTES
    architectures = data.get("architectures") or text.get("architectures") or []
    if not isinstance(
        architectures, list
    ):  # a hand-edited config: {"architectures": {...}} is no list of names
        architectures = []
    layers, hidden = parts["layers"], parts["hidden"]
    replicated_attention_bytes = parts["replicated_attention"] * (
        whole_bytes["attention"] / parts["whole"]["attention"] if parts["whole"]["attention"] else 2
    )
    return {
        "name": name,
        "source": source,
        "architecture": str(architectures[0])
        if architectures
        else str(text.get("model_type") or "unknown"),
        "model_type": str(text.get("model_type") or data.get("model_type") or "unknown"),
        "layers": layers,
        "hidden_size": hidden,
        "heads": parts["heads"],
        "kv_heads": parts["kv_heads"],
        "head_dim": parts["head_dim"],
        "attention": "mla" if mla else ("mha" if parts["kv_heads"] == parts["heads"] else "gqa"),
        "kv_lora_rank": parts["kv_lora_rank"],
        "qk_rope_head_dim": parts["qk_rope_head_dim"],
        "moe": parts["experts"] is not None,
        "experts": parts["experts"],
        "active_experts": parts["active_experts"],
        "shared_experts": parts["shared_experts"],
        "vocab_size": parts["vocab"],
        "max_context": _Counts(text, where)("max_position_embeddings"),
        "quantization": quant,
        "dtype_bytes": ACTIVATION_BYTES,
        "parts_params": parts["whole"],
        "parts_bytes": whole_bytes,
        "active_parts_bytes": active_bytes,
        "replicated_attention_bytes": replicated_attention_bytes,
        "total_params": sum(parts["whole"].values()),
        "active_params": sum(parts["active"].values()),
        "weight_bytes": sum(whole_bytes.values()),
        "active_weight_bytes": sum(active_bytes.values()),
        "weight_bytes_source": bytes_source,
        "kv_bytes_per_token_layer": kv_per_token_layer,
        "allreduces_per_forward": 2 * layers,
        "allreduce_bytes_per_token": hidden * ACTIVATION_BYTES,
        # what SGLang reads to decide whether the model is multimodal and how much memory its ViT
        # takes (autoconf/memory.py, sglang-memory.yaml section multimodal)
        "architectures": [str(a) for a in architectures],
        "has_text_config": isinstance(nested, dict),
        "has_audio_config": isinstance(data.get("audio_config"), dict),
        "vision_config": _vision(data.get("vision_config")),
    }


def _vision(config: Any) -> dict[str, int | None] | None:
    """The ViT size SGLang's adjust_mem_fraction_for_vlm reads from config.json's vision_config."""
    if not isinstance(config, dict):
        return None
    out: dict[str, int | None] = {}
    for key in ("num_hidden_layers", "hidden_size"):
        value = config.get(key)
        out[key] = (
            value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
        )
    return out


IDENTITY_KEYS = (
    "architecture",
    "model_type",
    "layers",
    "hidden_size",
    "heads",
    "kv_heads",
    "head_dim",
    "kv_lora_rank",
    "experts",
    "active_experts",
    "vocab_size",
)


def identity(model: dict[str, Any]) -> tuple:
    """What makes two profiles the same model for a measurement: its properties and quantization,
    not its name."""
    quant = model.get("quantization") or {}
    return tuple(model.get(key) for key in IDENTITY_KEYS) + (
        quant.get("scheme") or quant.get("dtype"),
    )


def same_model(builtin_name: str, model: dict[str, Any] | None) -> bool:
    """Whether `model` is the built-in profile `builtin_name` by its properties (a measurement's
    `model=`)."""
    if model is None:
        return False
    wanted = str(builtin_name).strip().lower().rsplit("/", 1)[-1]
    models = builtin_models()
    if wanted not in models:
        return False
    return identity(profile(wanted)) == identity(model)
