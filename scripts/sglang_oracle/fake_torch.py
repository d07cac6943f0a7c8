"""A torch that answers SGLang's hardware queries from a Hardware record, stubs for everything else.

SGLang decides from `torch.cuda.is_available()`, `torch.version.cuda`,
`torch.cuda.get_device_capability()`, `torch.cuda.device_count()`, `torch.cuda.get_device_name()`
and the memory queries; those are answered here from the machine being judged (set with `use`).
Every other attribute is the parser check's stub (callable, falsy, zero), so importing SGLang's
modules works without a GPU.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from sglang_flags.real_parser import (
    _StubModule,
)  # the parser check's stubs: one kind of stub for both

from .hardware import Hardware

CURRENT: dict[str, Hardware] = {}


def machine() -> Hardware:
    return CURRENT["hw"]


class _Props:
    """What torch.cuda.get_device_properties returns, for the fields SGLang reads."""

    def __init__(self, hw: Hardware) -> None:
        self.name = hw.name
        self.major, self.minor = hw.sm // 10, hw.sm % 10
        self.total_memory = hw.memory_mib << 20
        self.multi_processor_count = 132
        self.gcnArchName = ""


def _cuda_module() -> types.ModuleType:
    cuda = _StubModule("torch.cuda")
    cuda.__path__ = []  # type: ignore[attr-defined]
    answers: dict[str, Any] = {
        "is_available": lambda: machine().gpu_count > 0,
        "device_count": lambda: machine().gpu_count,
        "get_device_capability": lambda *a, **k: (machine().sm // 10, machine().sm % 10),
        "get_device_name": lambda *a, **k: machine().name,
        "get_device_properties": lambda *a, **k: _Props(machine()),
        "mem_get_info": lambda *a, **k: (machine().memory_mib << 20, machine().memory_mib << 20),
        "current_device": lambda: 0,
        "is_initialized": lambda: False,
        "set_device": lambda *a, **k: None,
        "can_device_access_peer": lambda a, b: machine().p2p,
    }
    for name, answer in answers.items():
        setattr(cuda, name, answer)
    return cuda


class _Device:
    """torch.device for `cuda:N` strings and indices (the communicators check isinstance and
    .index)."""

    def __init__(self, spec: Any = "cuda", index: int | None = None) -> None:
        text = str(spec)
        self.type, _, number = text.partition(":")
        self.index = index if index is not None else (int(number) if number else 0)

    def __repr__(self) -> str:
        return f"device(type='{self.type}', index={self.index})"


class _Torch(_StubModule):
    """torch of a CUDA build: no other vendor's device module (SGLang tests them with hasattr)."""

    def __getattr__(self, name: str) -> Any:
        if name in ("npu", "hpu", "xpu", "musa", "mlu"):
            raise AttributeError(name)
        return super().__getattr__(name)


def install() -> None:
    """Put the fake torch into sys.modules before anything imports the real name."""
    torch = _Torch("torch")
    torch.__path__ = []  # type: ignore[attr-defined]
    torch.__version__ = "2.8.0+cu128"  # type: ignore[attr-defined]
    version = _StubModule("torch.version")
    version.cuda = "12.8"  # type: ignore[attr-defined]
    version.hip = None  # type: ignore[attr-defined]
    version.__version__ = "2.8.0+cu128"  # type: ignore[attr-defined]
    version.git_version = ""  # type: ignore[attr-defined]
    cuda = _cuda_module()
    torch.cuda = cuda  # type: ignore[attr-defined]
    torch.version = version  # type: ignore[attr-defined]
    torch.device = _Device  # type: ignore[attr-defined]
    for dtype, size in (
        ("bfloat16", 2),
        ("float16", 2),
        ("float32", 4),
        ("uint8", 1),
        ("int32", 4),
    ):
        setattr(torch, dtype, type(dtype, (), {"itemsize": size}))
    sys.modules["torch"] = torch
    sys.modules["torch.cuda"] = cuda
    sys.modules["torch.version"] = version


def use(hw: Hardware) -> None:
    CURRENT["hw"] = hw
