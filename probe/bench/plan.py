"""What `topoctl bench` measures and how long each item may take: the size sweep and the time
budget.

Pure functions (no torch): the CLI and the tests share them.

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

from topoctl.core.errors import TopoctlError

# Sizes every run sweeps (bytes): 4 KiB to 64 MiB by factors of 4; the model's message sizes are
# added.
DEFAULT_SIZES = (4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
# Tokens per step whose allreduce message sizes are added for a model (decode batch sizes, EAGLE
# verify).
DEFAULT_TOKENS = (1, 4, 16, 64, 256)
# Tokens of the coalescing question: 3 tokens of Kimi-K2.5 (hidden 7168, bf16) are the field
# report's ~42 KB messages (7168 x 2 x 3 = 43008 bytes), 122 of them per verify pass.
COALESCE_TOKENS = 3
COALESCE_DEFAULT = {"n": 122, "bytes_each": 43008}  # without a model: the field report's numbers
DEFAULT_BUDGET_S = 60.0
# A peer copy slower than this is "crawling": PCIe Gen3 x1 moves about 1 GB/s, and any GPU pair a
# launch would use moves ten times that; ACS redirect through an IOMMU, or a staged copy through
# host memory, lands below it.
CRAWL_GBPS = 1.0
BUDGET_SHARE = {"p2p": 0.3, "allreduce": 0.6, "coalescing": 0.1}
T = TypeVar("T")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)(i?)[bB]?\s*$")


def parse_size(text: str) -> int:
    """`4096`, `42K`, `2.5M`, `1GiB` -> bytes (K/M/G are powers of 1024)."""
    match = _SIZE.match(text)
    if not match:
        raise TopoctlError(
            f"--sizes: {text!r} is not a size",
            hint="give bytes, or K/M/G suffixes: --sizes 4K,42K,2.5M",
        )
    number, unit = float(match.group(1)), match.group(2).upper()
    value = int(number * {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[unit])
    if value < 4 or value > 8 * 1024**3:
        raise TopoctlError(
            f"--sizes: {text!r} is outside 4 B .. 8 GiB", hint="e.g. --sizes 4K,64K,1M"
        )
    return value


def parse_list(text: str | None, option: str, convert: Callable[[str], T]) -> list[T] | None:
    if text is None:
        return None
    items = [item for item in text.split(",") if item.strip()]
    if not items:
        raise TopoctlError(
            f"{option} is empty", hint=f"give a comma-separated list, or leave {option} out"
        )
    return [convert(item) for item in items]


def parse_tokens(text: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise TopoctlError(
            f"--tokens: {text!r} is not a whole number", hint="e.g. --tokens 1,4,16"
        ) from None
    if not 1 <= value <= 1_000_000:
        raise TopoctlError(f"--tokens: {value} is outside 1..1000000", hint="e.g. --tokens 1,4,16")
    return value


def model_messages(model: dict[str, Any] | None, tokens: list[int]) -> list[int]:
    """Allreduce message bytes of one step: hidden_size x tokens x dtype bytes, per token count."""
    if not model:
        return []
    per_token = int(model["allreduce_bytes_per_token"])
    return [per_token * count for count in tokens]


def coalescing_question(
    model: dict[str, Any] | None, tokens: int = COALESCE_TOKENS
) -> dict[str, int]:
    """N allreduces of s bytes (one verify pass) against 2 of N x s / 2."""
    if not model:
        return dict(COALESCE_DEFAULT)
    return {
        "n": int(model["allreduces_per_forward"]),
        "bytes_each": int(model["allreduce_bytes_per_token"]) * tokens,
    }


@dataclass
class Plan:
    """Everything a run does, decided before any process starts."""

    world_size: int
    sizes: list[int]
    model_sizes: list[int]
    coalescing: dict[str, int]
    budget_s: float
    timeout_s: float
    p2p_pairs: list[tuple[int, int]] = field(default_factory=list)
    backend: str = "nccl"  # nccl (GPUs) or gloo (CPU: tests and machines without a GPU)
    dtype: str = "bfloat16"
    paths: list[str] = field(default_factory=lambda: ["nccl", "torch_symm_mem", "custom"])
    faults: dict[str, str] = field(
        default_factory=dict
    )  # CPU fake only: "src-dst" -> hang|corrupt|crawl; "init" -> fail; "allreduce" -> hang|die|corrupt
    p2p_bytes: int = 256 * 1024**2
    crawl_gbps: float = 1.0  # a peer copy slower than this is "crawling" (CPU back end: far lower)
    model_name: str | None = None

    def all_sizes(self) -> list[int]:
        return sorted(set(self.sizes) | set(self.model_sizes))

    def slice_s(self, phase: str, items: int) -> float:
        """Seconds each of `items` measurements of `phase` may take."""
        return self.budget_s * BUDGET_SHARE[phase] / max(items, 1)

    def to_dict(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in self.__dataclass_fields__}


def build_plan(
    world_size: int,
    model: dict[str, Any] | None,
    sizes: list[int] | None,
    tokens: list[int] | None,
    budget_s: float | None,
    timeout_s: float,
    backend: str = "nccl",
) -> Plan:
    if world_size < 1:
        raise TopoctlError(
            "no GPU to benchmark", hint="run topoctl bench on the machine with the GPUs"
        )
    budget = DEFAULT_BUDGET_S if budget_s is None else budget_s
    if budget <= 0:
        raise TopoctlError("--budget-s must be more than 0", hint="e.g. --budget-s 60")
    if timeout_s <= 0:
        raise TopoctlError("--timeout must be more than 0", hint="e.g. --timeout 30")
    pairs = [(i, j) for i in range(world_size) for j in range(world_size) if i != j]
    return Plan(
        world_size=world_size,
        sizes=list(sizes) if sizes else list(DEFAULT_SIZES),
        model_sizes=model_messages(model, list(tokens) if tokens else list(DEFAULT_TOKENS)),
        coalescing=coalescing_question(model),
        budget_s=float(budget),
        timeout_s=float(timeout_s),
        p2p_pairs=pairs,
        backend=backend,
        dtype="bfloat16" if backend == "nccl" else "float32",
        model_name=model.get("name") if model else None,
        p2p_bytes=256 * 1024**2 if backend == "nccl" else 1024**2,
        crawl_gbps=CRAWL_GBPS if backend == "nccl" else 0.002,
    )


def repetitions(seconds_per_op: float, slice_s: float, max_samples: int = 100) -> tuple[int, int]:
    """(inner, samples) for one measurement: each sample times `inner` back-to-back operations (at
    least about a millisecond of work, so timer resolution does not matter), and as many samples as
    the slice allows (at least 5, at most max_samples)."""
    per_op = max(seconds_per_op, 1e-7)
    inner = max(1, min(100, int(1e-3 / per_op)))
    samples = int(slice_s / (inner * per_op))
    return inner, max(5, min(max_samples, samples))
