"""Where SGLang's FlashInfer PCIe IPC allreduce can run, as its releases' source says
(rules/sglang/data/pcie-ipc-allreduce.yaml): the releases that read
SGLANG_ENABLE_PCIE_IPC_ALLREDUCE, the world sizes and dtypes it serves, one node only. The search
enumerates the `pcie_ipc` path only where this admits it, so a launch SGLang would run on NCCL
anyway is never offered as pcie_ipc.

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any

from topoctl.autoconf.data_files import read_yaml
from topoctl.autoconf.request import ModelProfile
from topoctl.core import knowledge_cache as cache
from topoctl.core.pep440 import parse

PATH = "pcie_ipc"
DATA = os.path.join("sglang", "data", "pcie-ipc-allreduce.yaml")


@functools.lru_cache(maxsize=None)
def data() -> dict[str, Any]:
    """The parsed source record, served from the knowledge cache when it is unchanged."""
    path = os.path.join(cache.package_dir("topoctl.rules"), DATA)
    return dict(cache.cached("rules-pcie-ipc-allreduce", [path, __file__], lambda: read_yaml(path)))


@dataclass(frozen=True)
class Scope:
    """What one launch offers the PCIe IPC allreduce: the SGLang release, the TP size, the model's
    activation dtype (None: no model given) and the number of nodes."""

    version: str | None
    world: int
    dtype: str | None = None
    nnodes: int = 1


def _before(version: str, first: str) -> bool:
    parsed, floor = parse(version), parse(first)
    return parsed is not None and floor is not None and parsed < floor


def refusal(scope: Scope) -> str | None:
    """Why SGLang would not run this launch's allreduce on the PCIe IPC kernels (None: it would). A
    release that cannot be placed (not PEP 440) is not refused on its version, as
    spelling.version_allows does."""
    record = data()
    first = str(record["releases"]["first"])
    if scope.version and _before(scope.version, first):
        return (
            f"SGLang {scope.version} does not read SGLANG_ENABLE_PCIE_IPC_ALLREDUCE (from {first})"
        )
    if scope.nnodes > 1 and record.get("single_node", True):
        return f"{scope.nnodes} nodes: CUDA IPC works within one host only"
    sizes = [int(size) for size in record["world_sizes"]]
    if scope.world not in sizes:
        return f"world size {scope.world}: SGLang serves {'/'.join(map(str, sizes))} only"
    dtypes = [str(name) for name in record["dtypes"]]
    if scope.dtype is not None and scope.dtype not in dtypes:
        return (
            f"activations in {scope.dtype}: SGLang serves {', '.join(dtypes)} only (other "
            "dtypes stay on NCCL)"
        )
    return None


def admits(path: str, scope: Scope) -> bool:
    """Whether the search may enumerate `path` for this launch: every path but pcie_ipc, and
    pcie_ipc where refusal() finds nothing."""
    return path != PATH or refusal(scope) is None


def model_dtype(model: ModelProfile | None) -> str | None:
    """The activation dtype SGLang runs a model in by default (--dtype auto: the config's
    torch_dtype, which topoctl's model profiles carry in their quantization record, bfloat16 when
    the config names none)."""
    if model is None:
        return None
    quant = model.get("quantization") or {}
    dtype = str(quant.get("dtype") or "bfloat16")
    # --dtype auto runs a float32 config in float16 (0.5.23 configs/model_config.py:2304-2319; gemma
    # aside)
    return {"float32": "float16", "float": "float16", "half": "float16"}.get(dtype, dtype)
