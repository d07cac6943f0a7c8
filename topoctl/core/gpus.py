"""GPU knowledge, read from one data file (topoctl/data/gpus.yaml): architectures and GPU products.

The probe names a GPU's architecture from NVML's architecture id (or from its compute capability on
older drivers), the rules derive architectures from SM numbers, and the launch model reads memory
size and bandwidth; all of them ask this module, so a new GPU generation is one entry in gpus.yaml
and a fixture.

    >>> from topoctl import gpus
    >>> gpus.lookup("NVIDIA H200").memory_bandwidth_gb_s     # by the name NVML reports
    4800
    >>> gpus.lookup(compute_capability="8.0")                 # None: A100 40 GB and 80 GB share 8.0
    >>> gpus.architecture_for_cc(8, 9)
    'ada'

The file is parsed once per process, on first use (the C YAML loader when PyYAML has it), and kept
in the knowledge cache (topoctl/core/knowledge_cache.py), so a warm start does not import PyYAML for
it.

Layer: core types and data (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from typing import Any, Mapping

DATA_FILE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "gpus.yaml"
)


@dataclass(frozen=True)
class Architecture:
    name: str
    nvml_arch_id: int | None
    compute_capabilities: tuple[str, ...]  # "M" (every M.x) or "M.m"


@dataclass(frozen=True)
class GpuModel:
    """One GPU product, with its datasheet numbers (None where no source gives one)."""

    key: str
    names: tuple[
        str, ...
    ]  # regular expressions, matched whole and case-insensitive against NVML's name
    architecture: str
    compute_capability: str
    memory_gb: float | None
    memory_bandwidth_gb_s: float | None
    nvlink_generation: int | None
    nvlink_links: int | None
    pcie_generation: int | None
    sources: tuple[str, ...]

    @property
    def memory_bytes(self) -> int | None:
        return None if self.memory_gb is None else int(self.memory_gb * 10**9)

    def matches(self, name: str) -> bool:
        return any(
            re.fullmatch(pattern, name.strip(), flags=re.IGNORECASE) for pattern in self.names
        )


class GpuDataError(ValueError):
    """gpus.yaml is malformed (a packaging or editing mistake, caught by the tests)."""


def _read_yaml(path: str) -> object:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    from topoctl.core import safe_read as limits

    text = limits.read_text(
        path, limits.MAX_DATA_FILE_BYTES
    )  # shipped data, through the one reading layer
    return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader


def _load_yaml(path: str) -> object:
    """The parsed file, through topoctl's knowledge cache (a warm start of recommend does not import
    PyYAML)."""
    from topoctl.core import knowledge_cache as cache

    return cache.cached("gpus", [path, __file__], lambda: _read_yaml(path))


def _number(entry: Mapping[str, object], key: str) -> float | None:
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise GpuDataError(f"gpus.yaml: {entry.get('key')}.{key} must be a number or null")
    return value


def _sources(entry: dict[str, Any]) -> tuple[str, ...]:
    sources = entry.get("sources") or []
    if not sources or not all(isinstance(source, str) for source in sources):
        raise GpuDataError(
            f"gpus.yaml: {entry.get('key')}: sources must be a non-empty list of strings"
        )
    return tuple(sources)


def _parse(doc: object) -> tuple[tuple[Architecture, ...], tuple[GpuModel, ...]]:
    if not isinstance(doc, dict) or doc.get("schema_version") != 1:
        raise GpuDataError("gpus.yaml: expected a mapping with schema_version: 1")
    archs = []
    for entry in doc.get("architectures") or []:
        ccs = tuple(str(cc) for cc in entry.get("compute_capabilities") or [])
        for cc in ccs:
            if not re.fullmatch(r"\d{1,3}(\.\d{1,3})?", cc):
                raise GpuDataError(
                    f"gpus.yaml: architecture {entry.get('name')}: bad compute capability {cc!r}"
                )
        archs.append(Architecture(str(entry["name"]), entry.get("nvml_arch_id"), ccs))
    known = {arch.name for arch in archs}
    models = []
    for entry in doc.get("gpus") or []:
        if entry.get("architecture") not in known:
            raise GpuDataError(
                f"gpus.yaml: {entry.get('key')}: unknown architecture {entry.get('architecture')!r}"
            )
        nvlink = entry.get("nvlink") or {}
        models.append(
            GpuModel(
                key=str(entry["key"]),
                names=tuple(entry["names"]),
                architecture=entry["architecture"],
                compute_capability=str(entry["compute_capability"]),
                memory_gb=_number(entry, "memory_gb"),
                memory_bandwidth_gb_s=_number(entry, "memory_bandwidth_gb_s"),
                nvlink_generation=nvlink.get("generation"),
                nvlink_links=nvlink.get("links"),
                pcie_generation=entry.get("pcie_generation"),
                sources=_sources(entry),
            )
        )
    return tuple(archs), tuple(models)


@functools.lru_cache(maxsize=None)
def _data() -> tuple[tuple[Architecture, ...], tuple[GpuModel, ...]]:
    return _parse(_load_yaml(DATA_FILE))


def architectures() -> tuple[Architecture, ...]:
    return _data()[0]


def models() -> tuple[GpuModel, ...]:
    return _data()[1]


@functools.lru_cache(maxsize=None)
def _arch_by_cc() -> dict[str, str]:
    return {cc: arch.name for arch in architectures() for cc in arch.compute_capabilities}


def architecture_for_cc(major: int, minor: int) -> str | None:
    """Architecture name of compute capability major.minor (8, 9 -> "ada"), or None when no entry
    covers it."""
    table = _arch_by_cc()
    return table.get(f"{major}.{minor}") or table.get(str(major))


def architecture_for_sm(sm: object) -> str | None:
    """Architecture of an SM number as the snapshot writes it (major*10+minor: 89 -> "ada"), else
    None."""
    if not isinstance(sm, int) or isinstance(sm, bool) or sm < 0:
        return None
    return architecture_for_cc(sm // 10, sm % 10)


def architecture_for_nvml_id(arch_id: object) -> str | None:
    """Architecture name of NVML's nvmlDeviceGetArchitecture answer (9 -> "hopper"), or None."""
    for arch in architectures():
        if arch.nvml_arch_id is not None and arch.nvml_arch_id == arch_id:
            return arch.name
    return None


def nvml_architecture_ids() -> dict[int, str]:
    return {
        arch.nvml_arch_id: arch.name for arch in architectures() if arch.nvml_arch_id is not None
    }


def lookup(name: str | None = None, *, compute_capability: str | None = None) -> GpuModel | None:
    """The GPU product for the name NVML reports (first entry whose pattern matches), else — when
    only a compute capability is known — the one product with that capability; None when nothing (or
    more than one product, for a capability alone) matches. Never guesses."""
    if name:
        for model in models():
            if model.matches(name):
                return model
        return None
    if compute_capability:
        found = [model for model in models() if model.compute_capability == compute_capability]
        return found[0] if len(found) == 1 else None
    return None
