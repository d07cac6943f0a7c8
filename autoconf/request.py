"""What a user asks of a launch beyond the machine and the model: the search's Request.

It lives apart from search.py, which imports the whole search (rules engine, placement, launch
model), so that `topoctl recommend` can hold the request its options fill without importing the
search: `--list-systems`, `--list-models` and the usage errors found before the target is read
answer without it (tests/cli/test_startup_imports.py).

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

# One SGLang setting's value as a launch writes it (server_args' field types: flags, sizes,
# fractions, names).
SettingValue: TypeAlias = str | int | float | bool | None
# A launch: SGLang setting (server_args' field name) -> value. Every stage of the search reads and
# writes it.
Launch: TypeAlias = dict[str, SettingValue]
# A model profile as autoconf/models.py reads it (built-in YAML, config.json or a model folder): a
# dict until models.py gives it a record; the alias is the one place that says so.
ModelProfile: TypeAlias = dict[str, Any]
# The target GPU's facts as gpu_specs.target_gpu reads them from the snapshot (name, memory_bytes,
# bandwidth).
GpuFacts: TypeAlias = dict[str, Any]


@dataclass(frozen=True)
class Request:
    """What the user asked for beyond the machine and the model (recommend's options hold one)."""

    speculative: str | None = None
    draft_model: str | None = None
    force_speculative: bool = False
    tp_size: int | None = None
    ep_size: int | None = None
    dp_size: int | None = None
    objective: str = "latency"
    context_length: int | None = None
    max_running_requests: int | None = None
    accept_length: float | None = None
    decode_context: int | None = (
        None  # mean tokens in the KV cache while a request decodes (both objectives)
    )
    draft: ModelProfile | None = (
        None  # the draft model's profile, when --draft-model is a model folder
    )
    # nodes of the launch (recommend --nnodes): paths that run within one node only are left out
    nodes: int = 1
