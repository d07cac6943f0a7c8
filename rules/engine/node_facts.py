"""The facts of a launch over several nodes that SGLang's own checks read (`request.pp_size`,
`request.nodes_divide_tp_pp`, `request.elastic_ep_join_mode`): the parallel sizes against the node
count, as `topoctl check` resolves them (request.nnodes is rules/engine/network_facts.py's).

The SGLang checks each fact stands for are cited in rules/knowledge/sglang_nodes.yaml, with file and
line in every release read.

Layer: knowledge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, TypeVar, cast


class Context(Protocol):
    """What these facts read of rules.facts.Context (not imported: rules.facts imports this module)."""

    @property
    def request(self) -> Mapping[str, object]: ...


FactContext = TypeVar("FactContext", bound=Context)
FactValue = TypeVar("FactValue")


def _size(value: object) -> int | None:
    """A parallel size or node count given as a plain int of at least 1, else None."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    return None


def _pp_size(context: Context) -> object:
    return _size((context.request or {}).get("pp_size")) or 1


def _nodes_divide_tp_pp(context: Context) -> object:
    """Whether tp_size x pp_size is a multiple of the node count, SGLang's first parallel-size
    assertion. `tp_size_all` is the TP size over every node (check's request.tp_size is one node's
    ranks); without it request.tp_size is the whole group, as recommend passes it."""
    request = context.request or {}
    nodes = _size(request.get("nnodes")) or 1
    tp = _size(request["tp_size_all"] if "tp_size_all" in request else request.get("tp_size"))
    if tp is None:  # not asked (check's tp_size_all None: the file leaves --tp-size to run time)
        return None
    return (tp * (_size(request.get("pp_size")) or 1)) % nodes == 0


def _elastic_ep_join_mode(context: Context) -> object:
    value = (context.request or {}).get("elastic_ep_join_mode")
    return value.strip().lower() if isinstance(value, str) and value.strip() else None


NODE_FACTS: dict[str, tuple[str, str, Callable[[Context], object]]] = {
    "request.pp_size": ("int", "pipeline parallel size (--pp-size; 1 when not given)", _pp_size),
    "request.nodes_divide_tp_pp": (
        "bool",
        "tp_size x pp_size is a multiple of request.nnodes (tp_size over every node; None when "
        "the TP size is not known)",
        _nodes_divide_tp_pp,
    ),
    "request.elastic_ep_join_mode": (
        "str",
        "--elastic-ep-join-mode as the launch writes it (None: not given)",
        _elastic_ep_join_mode,
    ),
}


def register(facts: dict[str, tuple[str, str, Callable[[FactContext], FactValue]]]) -> None:
    """Add the node facts to rules.facts.FACTS (each is known whenever asked: a request fact)."""
    for name, (kind, text, resolve) in NODE_FACTS.items():
        facts[name] = (kind, text, cast(Callable[[FactContext], FactValue], resolve))
