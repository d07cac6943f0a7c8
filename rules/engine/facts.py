"""The facts namespace: the names rule conditions may match on, and how each is read from a snapshot
and a request.

Rules never read the snapshot's raw shape; they name facts (`gpu.sm_majors`, `interconnect`,
`software.sglang`, `pair.p2p.read`, `launch.custom_all_reduce`). That keeps rule files short, lets
the snapshot evolve, and gives one place where "the probe could not read it" becomes UNKNOWN: a null
value, a missing key, or a P2P status of "unknown"/"U". Request facts are always known (None there
means "not asked for"). docs/rules.md lists every name; `topoctl rules facts` prints them.

Layer: knowledge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Callable, TypeAlias, cast

from topoctl.core.p2p import UNKNOWN_P2P_STATUSES, measured_health, pair_p2p_ok
from topoctl.snapshot.cuda_devices import pci_order
from topoctl.snapshot.view import SnapshotLike, SnapshotView

if TYPE_CHECKING:
    from topoctl.snapshot.shape import PairEntry
from topoctl.core.vocab import NVLINK_INTERCONNECTS
from topoctl.rules.sglang import settings as launch_settings

from .network_facts import register as register_network_facts
from .node_facts import register as register_node_facts


class _Unknown:
    """The third truth value's input: a fact the probe could not read."""

    _instance = None

    def __new__(cls) -> "_Unknown":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:  # never let UNKNOWN pass as a truth value by accident
        raise TypeError("UNKNOWN has no truth value; use the three-valued helpers")


UNKNOWN = _Unknown()
_MISSING = object()

# A fact's value: a scalar or a list of them as the snapshot or request gives it, None (a request
# fact not asked for) or UNKNOWN; which one a name holds is its declared type (FACTS, PAIR_FACTS).
FactValue: TypeAlias = "bool | int | float | str | Sequence[object] | _Unknown | None"
PairFacts: TypeAlias = "dict[str, FactValue]"
Resolver: TypeAlias = "Callable[[Context], FactValue]"
# The facts cache callers keep per snapshot: fact values, the view, the pair table and lists, memos.
SharedCache: TypeAlias = "dict[str, object]"

# P2P answers that say nothing about whether P2P works.
UNKNOWN_P2P = {*UNKNOWN_P2P_STATUSES, None}
VERSION_FACT_TYPE = "version"
SOFTWARE_PACKAGES = (
    "driver",
    "cuda_driver",
    "cuda_runtime",
    "nccl",
    "torch",
    "sgl_kernel",
    "flashinfer",
    "vllm",
    "nvidia_ml_py",
)


def _known(value: object) -> FactValue:
    """A snapshot value as a fact: what the snapshot leaves out or gives as null is UNKNOWN."""
    return (
        UNKNOWN if value is None else cast("FactValue", value)
    )  # a validated snapshot's value is JSON


def _sm_of_gpu(gpu: object) -> int | _Unknown:
    if not isinstance(gpu, dict):
        return UNKNOWN
    sm = gpu.get("sm")
    if isinstance(sm, int) and not isinstance(sm, bool):
        return sm
    return _sm_from_capability(gpu.get("compute_capability"))


def _sm_from_capability(capability: object) -> int | _Unknown:
    if isinstance(capability, str) and "." in capability:
        major, _, minor = capability.partition(".")
        if major.isdigit() and minor.isdigit():
            return int(major) * 10 + int(minor)
    return UNKNOWN


def _all_known(values: list[int | _Unknown]) -> FactValue:
    return UNKNOWN if any(value is UNKNOWN for value in values) else values


# the SnapshotView in a shared facts cache (rules/engine/evaluation.py evaluate's facts_cache)
_VIEW_KEY = "view\0"


class Context:
    """One evaluation's view of a snapshot and a request; facts are computed on first use and
    cached.

    `shared`: a dict the caller keeps across evaluations of the same snapshot (engine.evaluate's
    facts_cache); facts that depend on the snapshot alone, and the pair facts, are computed once
    into it.
    """

    __slots__ = (
        "snapshot",
        "view",
        "request",
        "launch",
        "_cache",
        "_pairs",
        "_shared",
        "pair",
        "pair_label",
        "unknown_seen",
        "_group",
    )

    def __init__(
        self,
        snapshot: SnapshotLike,
        request: Mapping[str, object] | None,
        shared: SharedCache | None = None,
    ) -> None:
        self._shared = shared
        # every read of the snapshot's shape goes through the view: the command's own when it passed
        # one
        self.view = self._view_of(snapshot, shared)
        self.snapshot = self.view.data
        self.request = request if isinstance(request, dict) else {}
        launch = self.request.get("launch")
        self.launch: Mapping[str, object] = launch if isinstance(launch, dict) else {}
        self._cache: dict[str, FactValue] = {}
        self._pairs: list[tuple[str, PairFacts]] | None = None
        self._group: tuple[tuple[int, ...], ...] | None | object = _MISSING
        self.pair: PairFacts | None = None
        self.pair_label = ""
        self.unknown_seen: list[str] = []

    @staticmethod
    def _view_of(snapshot: SnapshotLike, shared: SharedCache | None) -> SnapshotView:
        """The snapshot's view: the one the caller passed (a command makes one per run), else the
        one made for every evaluation that shares a facts cache (recommend judges each candidate
        launch on the same snapshot), else one for this evaluation (a rule's test case, a plain
        dict)."""
        if isinstance(snapshot, SnapshotView):
            view = snapshot
        else:
            found = shared.get(_VIEW_KEY) if shared is not None else None
            data = snapshot if isinstance(snapshot, dict) else {}
            if isinstance(found, SnapshotView) and found.data is data:
                return found
            view = SnapshotView(data)
        if shared is not None:
            shared[_VIEW_KEY] = view
        return view

    def fact(self, name: str) -> FactValue:
        """The value of a non-pair fact, or UNKNOWN."""
        value = self._cache.get(name, cast("FactValue", _MISSING))
        if value is _MISSING:
            shared = (
                self._shared
                if name in SNAPSHOT_FACTS and (name not in GROUP_FACTS or self.scope() is None)
                else None
            )
            if shared is not None:
                value = cast("FactValue", shared.get(name, _MISSING))
            if value is _MISSING:
                resolver = FACTS.get(name)
                if resolver is not None:
                    value = resolver[2](self)
                elif name.startswith("launch."):
                    value = cast("FactValue", launch_value(self, name[len("launch.") :])[1])
                else:
                    value = UNKNOWN
                if shared is not None:
                    shared[name] = value
            self._cache[name] = value
        return value

    def pair_fact(self, name: str) -> FactValue:
        """The value of a `pair.*` fact for the pair a quantifier is visiting."""
        pair = self.pair
        if pair is None:
            return UNKNOWN
        return pair.get(name, UNKNOWN)

    def pairs(self) -> list[tuple[str, PairFacts]]:
        """(label, pair facts) for every ordered pair inside one TP group of the launch (scope()),
        computed once.

        The launch's group is the default scope of every pair quantifier: a rule about "any pair"
        judges the pairs the launch's allreduces run over, not the GPUs it leaves alone (nor pairs
        across data-parallel replicas, which do not allreduce together)."""
        if self._pairs is None:
            shared = self._shared if self._shared is not None else {}
            scope = self.scope()
            if scope is None:
                if _PAIRS_KEY not in shared:
                    known = _known_pairs(self, shared)
                    shared[_PAIRS_KEY] = [
                        known.facts(position) for position in range(len(known.entries))
                    ]
                self._pairs = cast("list[tuple[str, PairFacts]]", shared[_PAIRS_KEY])
            else:
                key = f"{_PAIRS_KEY}{scope}"
                if key not in shared:
                    shared[key] = _known_pairs(self, shared).inside(scope)
                self._pairs = cast("list[tuple[str, PairFacts]]", shared[key])
        return self._pairs

    def memo(self, name: str) -> dict[object, object] | None:
        """A dict kept across the evaluations that share this snapshot (None without a shared
        cache)."""
        if self._shared is None:
            return None
        found = self._shared.get(f"{name}\0")
        if found is None:
            found = self._shared[f"{name}\0"] = {}
        return cast("dict[object, object]", found)

    def scope(self) -> tuple[tuple[int, ...], ...] | None:
        """The launch's TP groups (one per data-parallel replica), or None for one group of every
        GPU."""
        if self._group is _MISSING:
            self._group = _launch_scope(self)
        return cast("tuple[tuple[int, ...], ...] | None", self._group)

    def group(self) -> tuple[int, ...] | None:
        """The launch's GPUs as snapshot GPU indices (PCI bus order), or None for every GPU in one
        group.

        request["gpus"] when given (recommend's placement; check's CUDA_VISIBLE_DEVICES), in rank
        order, else the first tp_size x dp_size GPUs (CUDA devices 0.. in PCI bus order, where a
        launch without CUDA_VISIBLE_DEVICES runs), else every GPU. With dp_size > 1 the GPUs in rank
        order are cut into replicas of tp_size (SGLang gives replica d the devices d*tp ...
        d*tp+tp-1)."""
        scope = self.scope()
        if scope is None:
            return None
        members = {index for replica in scope for index in replica}
        return tuple(index for index in _machine_gpus(self) if index in members)

    def pairs_known(self) -> bool:
        """False when the snapshot has no pair list at all (then pair quantifiers are unknown)."""
        return isinstance(
            self.snapshot.get("pairs"), list
        )  # what view.pairs tests, without copying the list


class _PairTable:
    """The snapshot's pair list with its pair facts made on first use, and each pair's position by
    (src, dst): a launch's groups read only the pairs inside them, O(sum of k^2) for groups of k
    GPUs instead of a pass over all n^2 pairs per group layout (recommend on 128 GPUs judges
    dozens)."""

    def __init__(
        self, entries: list[PairEntry], health: dict[tuple[int, int], tuple[bool, object]]
    ) -> None:
        self.entries, self.health = entries, health
        self.made: list[tuple[str, PairFacts] | None] = [None] * len(entries)
        self.where: dict[tuple[int, int], list[int]] = {}
        for position, entry in enumerate(entries):
            src, dst = _int_value(entry.get("src")), _int_value(entry.get("dst"))
            if src is not None and dst is not None:
                self.where.setdefault((src, dst), []).append(position)

    def facts(self, position: int) -> tuple[str, PairFacts]:
        made = self.made[position]
        if made is None:
            made = self.made[position] = _pair_facts(self.entries[position], self.health)
        return made

    def inside(self, scope: tuple[tuple[int, ...], ...]) -> list[tuple[str, PairFacts]]:
        """The pairs whose two GPUs are in one replica of `scope`, in the pair list's order."""
        positions: list[int] = []
        for replica in scope:
            for src in replica:
                for dst in replica:
                    positions.extend(self.where.get((src, dst), ()))
        return [self.facts(position) for position in sorted(set(positions))]


def _known_pairs(context: Context, shared: SharedCache) -> _PairTable:
    table = shared.get(_TABLE_KEY)
    if not isinstance(table, _PairTable):
        table = shared[_TABLE_KEY] = _PairTable(
            context.view.pairs or [], measured_health(context.snapshot)
        )
    return table


def _machine_gpus(context: Context) -> list[int]:
    """Snapshot GPU indices in PCI bus order; without a GPU list, the indices the pair list names."""
    order = pci_order(context.view)
    if order:
        return order
    named: set[int] = set()
    for entry in context.view.pairs or []:
        for end in ("src", "dst"):
            index = _int_value(entry.get(end))
            if index is not None:
                named.add(index)
    return sorted(named)


def _int_value(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _launch_scope(context: Context) -> tuple[tuple[int, ...], ...] | None:
    machine = _machine_gpus(context)
    known = set(machine)
    tp = _int_value(context.request.get("tp_size")) or _int_value(context.launch.get("tp_size"))
    dp = (
        _int_value(context.request.get("dp_size")) or _int_value(context.launch.get("dp_size")) or 1
    )
    wanted = context.request.get("gpus")
    if isinstance(wanted, (list, tuple)) and all(_int_value(index) is not None for index in wanted):
        ranked = list(dict.fromkeys(index for index in wanted if index in known))
    elif tp is None or tp < 1 or dp < 1 or tp * dp >= len(machine) and dp == 1:
        return None
    else:
        ranked = machine[: tp * dp]
    if tp is not None and tp >= 1 and dp > 1 and len(ranked) >= tp * dp:
        replicas = tuple(tuple(ranked[start : start + tp]) for start in range(0, tp * dp, tp))
    else:
        replicas = (tuple(ranked),)
    if len(replicas) == 1 and known <= set(replicas[0]):
        return None
    return replicas


def _group_facts(context: Context) -> list[PairFacts] | None:
    """The pair facts of the launch's group when it is narrower than the machine, else None."""
    return None if context.group() is None else [facts for _, facts in context.pairs()]


def launch_value(context: Context, setting: str) -> tuple[bool, object]:
    """(explicitly set?, value) of a launch setting; a setting the launch does not name is (False,
    None)."""
    if setting in context.launch:
        return True, launch_settings.normalize(setting, context.launch[setting])
    return False, None


def _p2p_status(value: object) -> str | _Unknown:
    return value if isinstance(value, str) and value not in UNKNOWN_P2P else UNKNOWN


def _pair_facts(
    entry: PairEntry, health: dict[tuple[int, int], tuple[bool, object]] | None = None
) -> tuple[str, PairFacts]:
    p2p: dict[str, str] = entry["p2p"] if isinstance(entry.get("p2p"), dict) else {}
    facts: PairFacts = {
        "pair.src": entry.get("src", UNKNOWN) if entry.get("src") is not None else UNKNOWN,
        "pair.dst": entry.get("dst", UNKNOWN) if entry.get("dst") is not None else UNKNOWN,
    }
    for capability in ("read", "write", "nvlink", "atomics", "pci"):
        facts[f"pair.p2p.{capability}"] = _p2p_status(p2p.get(capability))
    p2p_ok = pair_p2p_ok(
        p2p
    )  # topoctl/core/p2p.py: read and write OK; "unknown" and NVML's U are unknown
    src, dst = entry.get("src"), entry.get("dst")
    measured = (
        (health or {}).get((src, dst)) if isinstance(src, int) and isinstance(dst, int) else None
    )
    facts["pair.p2p_measured_healthy"] = measured[0] if measured is not None else UNKNOWN
    if measured is not None and measured[0] is False:
        # `topoctl bench` saw this pair hang, corrupt or crawl: no working P2P, whatever NVML says
        p2p_ok = False
    facts["pair.p2p_ok"] = UNKNOWN if p2p_ok is None else p2p_ok
    acs = entry.get("pcie_acs_redirect")
    facts["pair.pcie_acs_redirect"] = acs if isinstance(acs, bool) else UNKNOWN
    link = entry.get("link")
    facts["pair.link"] = link if isinstance(link, str) else UNKNOWN
    nvlinks = entry.get("nvlinks")
    facts["pair.nvlinks"] = (
        nvlinks if isinstance(nvlinks, int) and not isinstance(nvlinks, bool) else UNKNOWN
    )
    if isinstance(link, str) and link.upper().startswith("NV"):
        facts["pair.nvlink"] = True
    elif isinstance(nvlinks, int) and not isinstance(nvlinks, bool):
        facts["pair.nvlink"] = nvlinks > 0
    elif isinstance(link, str):
        facts["pair.nvlink"] = False
    else:
        facts["pair.nvlink"] = UNKNOWN
    ancestor = entry.get("pcie_ancestor")
    facts["pair.pcie_ancestor"] = ancestor if isinstance(ancestor, str) else UNKNOWN
    peer = entry.get("torch_can_access_peer")
    facts["pair.torch_can_access_peer"] = peer if isinstance(peer, bool) else UNKNOWN
    label = f"pairs[{entry.get('src')}->{entry.get('dst')}]"
    return label, facts


# ----------------------------------------------------------------------------------------------
# resolvers
def _gpus(context: Context) -> list[object] | _Unknown:
    gpus = context.view.gpus
    return UNKNOWN if gpus is None else gpus


def _sms(context: Context) -> list[int] | _Unknown:
    """gpu.sm, of the type FACTS declares for it (_gpu_sms makes it)."""
    return cast("list[int] | _Unknown", context.fact("gpu.sm"))


def _gpu_count(context: Context) -> FactValue:
    return _known(context.view.gpu_count)


def _gpu_sms(context: Context) -> FactValue:
    gpus = _gpus(context)
    if not isinstance(gpus, _Unknown):
        return _all_known([_sm_of_gpu(gpu) for gpu in gpus])
    capabilities = _known(context.view.summary_value("compute_capabilities"))
    if isinstance(capabilities, list):
        return _all_known([_sm_from_capability(capability) for capability in capabilities])
    return UNKNOWN


def _from_sms(transform: Callable[[list[int]], FactValue]) -> Resolver:
    def resolve(context: Context) -> FactValue:
        sms = _sms(context)
        return UNKNOWN if isinstance(sms, _Unknown) else transform(sms)

    return resolve


def _per_gpu(
    field: str, summary_field: str | None = None, derive: Resolver | None = None
) -> Resolver:
    def resolve(context: Context) -> FactValue:
        gpus = _gpus(context)
        if not isinstance(gpus, _Unknown) and all(
            isinstance(gpu, dict) and gpu.get(field) is not None for gpu in gpus
        ):
            return [cast("dict[str, object]", gpu)[field] for gpu in gpus]
        if summary_field:
            listed = _known(context.view.summary_value(summary_field))
            if isinstance(listed, list) and None not in listed:
                return list(listed)
        return derive(context) if derive else UNKNOWN

    return resolve


def _architectures_from_sm(context: Context) -> FactValue:
    from topoctl.core.gpus import (
        architecture_for_sm,
    )  # the GPU table: only when the snapshot names no architecture

    sms = _sms(context)
    if isinstance(sms, _Unknown):
        return UNKNOWN
    names = [architecture_for_sm(sm) for sm in sms]  # topoctl/data/gpus.yaml
    known = [name for name in names if name is not None]
    return UNKNOWN if len(known) != len(names) else sorted(set(known))


def _capabilities_from_sm(context: Context) -> FactValue:
    sms = _sms(context)
    return UNKNOWN if isinstance(sms, _Unknown) else [f"{sm // 10}.{sm % 10}" for sm in sms]


def _first_gpu_name(context: Context) -> FactValue:
    names = context.fact("gpu.names")
    return names[0] if isinstance(names, list) and names and isinstance(names[0], str) else UNKNOWN


def _memory_min(context: Context) -> FactValue:
    gpus = _gpus(context)
    if isinstance(gpus, _Unknown) or not gpus:
        return UNKNOWN
    sizes = [gpu.get("memory_total_bytes") if isinstance(gpu, dict) else None for gpu in gpus]
    known = [size for size in sizes if isinstance(size, int)]
    return UNKNOWN if len(known) != len(sizes) else min(known)


def _mig_enabled(context: Context) -> FactValue:
    gpus = _gpus(context)
    if isinstance(gpus, _Unknown):
        return UNKNOWN
    modes = [gpu.get("mig_mode") if isinstance(gpu, dict) else None for gpu in gpus]
    if "enabled" in modes:
        return True
    return UNKNOWN if None in modes else False


def _summary(field: str, kind: type | tuple[type, ...]) -> Resolver:
    def resolve(context: Context) -> FactValue:
        value = _known(context.view.summary_value(field))
        return value if isinstance(value, kind) else UNKNOWN

    return resolve


def _nvlink_present(context: Context) -> FactValue:
    value = _known(context.view.nvlink_value("present"))
    if isinstance(value, bool):
        return value
    interconnect = context.fact("interconnect")
    if interconnect is UNKNOWN:
        return UNKNOWN
    return interconnect in NVLINK_INTERCONNECTS


def _bar1_small(context: Context) -> FactValue:
    small = _known(context.view.summary_value("bar1_small_gpus"))
    return len(small) if isinstance(small, list) else UNKNOWN


def _all_pairs_p2p(context: Context) -> FactValue:
    group = _group_facts(context)
    if group is not None:
        oks = [facts["pair.p2p_ok"] for facts in group]
        if False in oks:
            return False
        return UNKNOWN if UNKNOWN in oks or not oks else True
    if any(healthy is False for healthy, _ in measured_health(context.snapshot).values()):
        # a pair failed `topoctl bench`'s check (a summary written before it may still say true)
        return False
    value = _known(context.view.summary_value("all_pairs_p2p"))
    if isinstance(value, bool):
        return value
    if not context.pairs_known() or context.view.summary_says("all_pairs_p2p"):
        return UNKNOWN  # the probe said null, or there is nothing to derive it from
    oks = [facts["pair.p2p_ok"] for _, facts in context.pairs()]
    if False in oks:
        return False
    return UNKNOWN if UNKNOWN in oks else True


def _group_or_summary(
    field: str, from_group: Callable[[list[PairFacts]], FactValue], kind: type
) -> Resolver:
    """A pair summary: of the launch's group when it is narrower than the machine, else the probe's
    summary."""

    def resolve(context: Context) -> FactValue:
        group = _group_facts(context)
        if group is not None:
            return from_group(group)
        value = _known(context.view.summary_value(field))
        if kind is bool:
            return value if isinstance(value, bool) else UNKNOWN
        return value if isinstance(value, kind) and not isinstance(value, bool) else UNKNOWN

    return resolve


def _group_nvlink_all(group: list[PairFacts]) -> FactValue:
    links = [facts["pair.nvlink"] for facts in group]
    if False in links:
        return False
    return UNKNOWN if UNKNOWN in links or not links else True


def _group_gpus(context: Context) -> FactValue:
    group = context.group()
    return list(group) if group is not None else _machine_gpus(context) or UNKNOWN


def _group_size(context: Context) -> FactValue:
    group = context.group()
    return len(group) if group is not None else context.fact("gpu.count")


def _virtualized(context: Context) -> FactValue:
    value = _known(context.view.summary_value("virtualized"))
    if isinstance(value, bool):
        return value
    value = _known(context.view.host_value("virtualized"))
    return value if isinstance(value, bool) else UNKNOWN


def _cpu_vendor(context: Context) -> FactValue:
    model = _known(context.view.host_value("cpu_model"))
    if not isinstance(model, str):
        return UNKNOWN
    lowered = model.lower()
    for needle, vendor in (
        ("amd", "amd"),
        ("intel", "intel"),
        ("xeon", "intel"),
        ("neoverse", "arm"),
        ("grace", "arm"),
        ("ampere", "arm"),
    ):
        if needle in lowered:
            return vendor
    return "other"


def _root_complex_count(context: Context) -> FactValue:
    complexes = _known(context.view.pcie_value("root_complexes"))
    if isinstance(complexes, list):
        return len(complexes)
    groups = _known(context.view.summary_value("root_complex_groups"))
    return len(groups) if isinstance(groups, list) else UNKNOWN


def _downtrained(context: Context) -> FactValue:
    listed = _known(context.view.summary_value("downtrained_gpus"))
    return len(listed) if isinstance(listed, list) else UNKNOWN


def _software(package: str) -> Resolver:
    def resolve(context: Context) -> FactValue:
        value = _known(context.view.software(package))
        return (
            str(value)
            if isinstance(value, (str, int, float)) and not isinstance(value, bool)
            else UNKNOWN
        )

    return resolve


def _target_sglang(context: Context) -> FactValue:
    wanted = context.request.get("sglang_version")
    if isinstance(wanted, (str, int, float)) and not isinstance(wanted, bool) and str(wanted):
        return str(wanted)
    return context.fact("software.sglang_installed")


def _target_flashinfer(context: Context) -> FactValue:
    """The FlashInfer the target SGLang runs with: the snapshot's when the target is the SGLang
    installed there (or no other target is asked for), else the version the target release pins
    (rules/sglang/releases)."""
    from topoctl.rules.sglang.releases import flashinfer_pin

    installed = context.fact("software.sglang_installed")
    target = context.fact("software.sglang")
    reported = context.fact("software.flashinfer")
    if reported is not UNKNOWN and (target is UNKNOWN or target == installed):
        return reported
    if target is UNKNOWN:
        return UNKNOWN
    pin = flashinfer_pin(str(target))
    return pin if pin is not None else UNKNOWN


def _model(field: str) -> Resolver:
    def resolve(context: Context) -> FactValue:
        model = context.request.get("model")
        return model.get(field) if isinstance(model, dict) else None

    return resolve


def _model_quant_method(context: Context) -> FactValue:
    """The checkpoint's quantization_config.quant_method (lower case), None for an unquantized
    checkpoint or when no model is given: SGLang takes it as --quantization for some architectures
    and GPUs."""
    model = context.request.get("model")
    quant = model.get("quantization") if isinstance(model, dict) else None
    method = quant.get("method") if isinstance(quant, dict) else None
    return str(method).lower() if method else None


def _model_name(context: Context) -> FactValue:
    model = context.request.get("model")
    if isinstance(model, str):
        return model
    return model.get("name") if isinstance(model, dict) else None


def _speculative(context: Context) -> FactValue:
    value = context.request.get("speculative")
    if value is None:
        value = context.launch.get("speculative_algorithm")
    return str(value).lower() if value else None


def _parallel_size(field: str, fallback: Resolver) -> Resolver:
    def resolve(context: Context) -> FactValue:
        for value in (context.request.get(field), context.launch.get(field)):
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return fallback(context)

    return resolve


def _attention_dp_size(context: Context) -> int:
    """The attention-DP width SGLang resolves: --attn-dp-size when above 1 (0.5.22+), else --dp-size
    with --enable-dp-attention, else 1. SGLang turns DP attention off by itself at --dp-size 1 (the
    data-parallelism hook of every release read), so a width of 1 means no attention DP."""
    launch = context.launch
    width = launch.get("attn_dp_size")
    if isinstance(width, int) and not isinstance(width, bool) and width > 1:
        return width
    if launch.get("dp_attention") is True:
        dp_size = launch.get("dp_size")
        return (
            dp_size
            if isinstance(dp_size, int) and not isinstance(dp_size, bool) and dp_size > 0
            else 1
        )
    return 1


def _attention_dp_whole_tp(context: Context) -> FactValue:
    tp_size = context.fact("request.tp_size")
    if not isinstance(tp_size, int) or isinstance(tp_size, bool):
        return UNKNOWN
    width = _attention_dp_size(context)
    return width > 1 and width == tp_size


def _sglang_request(context: Context) -> FactValue:
    value = context.request.get("sglang_version")
    return str(value) if value not in (None, "") else None


# name -> (type, documentation, resolver). Types: int, bool, str, version, list[int], list[str].
FACTS: dict[str, tuple[str, str, Resolver]] = {
    "gpu.count": ("int", "number of GPUs (summary.gpu_count, else len(gpus))", _gpu_count),
    "gpu.sm": (
        "list[int]",
        "every GPU's SM number, major*10+minor (120 for compute capability 12.0)",
        _gpu_sms,
    ),
    "gpu.sm_majors": (
        "list[int]",
        "distinct SM majors (9 Hopper, 10 B200/GB200, 12 RTX Blackwell)",
        _from_sms(lambda sms: sorted({sm // 10 for sm in sms})),
    ),
    "gpu.sm_min": (
        "int",
        "lowest SM number among the GPUs",
        _from_sms(lambda sms: min(sms) if sms else UNKNOWN),
    ),
    "gpu.sm_max": (
        "int",
        "highest SM number among the GPUs",
        _from_sms(lambda sms: max(sms) if sms else UNKNOWN),
    ),
    "gpu.compute_capabilities": (
        "list[str]",
        'every GPU\'s compute capability, "12.0"',
        _per_gpu("compute_capability", "compute_capabilities", _capabilities_from_sm),
    ),
    "gpu.architectures": (
        "list[str]",
        "architecture names (hopper, blackwell, ...)",
        _per_gpu("architecture", "architectures", _architectures_from_sm),
    ),
    "gpu.names": ("list[str]", "GPU product names", _per_gpu("name", "gpu_names")),
    "gpu.name": (
        "str",
        "the first GPU's product name (the device SGLang asks torch.cuda.get_device_name() of)",
        _first_gpu_name,
    ),
    "gpu.memory_min_bytes": ("int", "smallest GPU memory in bytes", _memory_min),
    "gpu.mig_enabled": ("bool", "MIG enabled on any GPU", _mig_enabled),
    "interconnect": (
        "str",
        "nvswitch | nvlink | nvlink-partial | pcie | mixed | single | none",
        _summary("interconnect", str),
    ),
    "nvlink.present": ("bool", "any NVLink between the GPUs", _nvlink_present),
    "nvswitch": (
        "bool",
        "GPUs reach each other through NVSwitch (null in VMs that hide the switch)",
        lambda context: _bool(context.view.nvlink_value("nvswitch")),
    ),
    "nvlink.switch_hidden": (
        "bool",
        "a VM hides the remote end of NVLinks",
        lambda context: _bool(context.view.nvlink_value("switch_hidden")),
    ),
    "nvlink.all_pairs": (
        "bool",
        "every pair of the launch's GPU group has NVLink",
        _group_or_summary("nvlink_all_pairs", _group_nvlink_all, bool),
    ),
    "all_pairs_p2p": (
        "bool",
        "P2P read and write OK for every pair of the launch's GPU group (unknown if any is "
        "unknown and none fails)",
        _all_pairs_p2p,
    ),
    "p2p_pairs_ok": (
        "int",
        "pairs of the launch's GPU group with P2P read and write OK",
        _group_or_summary(
            "p2p_pairs_ok",
            lambda group: sum(1 for facts in group if facts["pair.p2p_ok"] is True),
            int,
        ),
    ),
    "p2p_pairs_total": (
        "int",
        "ordered pairs of the launch's GPU group",
        _group_or_summary("p2p_pairs_total", len, int),
    ),
    "group.gpus": (
        "list[int]",
        "the launch's GPU group, snapshot GPU indices in PCI bus order: request.gpus "
        "(recommend's placement, check's CUDA_VISIBLE_DEVICES), else the first "
        "tp_size x dp_size GPUs, else every GPU",
        _group_gpus,
    ),
    "group.size": ("int", "GPUs in the launch's group", _group_size),
    "virtualized": (
        "bool",
        "running in a VM (summary.virtualized, else host.virtualized)",
        _virtualized,
    ),
    "iommu.mode": (
        "str",
        "translated | passthrough | mixed | off, from the GPUs' IOMMU groups (probe/pcie_checks.py)",
        lambda context: _str(context.view.summary_value("iommu_mode")),
    ),
    "bar1.small_gpu_count": (
        "int",
        "GPUs whose BAR1 is smaller than their memory (NVML)",
        _bar1_small,
    ),
    "hypervisor": (
        "str",
        "the hypervisor's name when known",
        lambda context: _str(context.view.host_value("hypervisor")),
    ),
    "numa_nodes_spanned": (
        "int",
        "NUMA nodes the GPUs sit on",
        _summary("numa_nodes_spanned", int),
    ),
    "host.numa_nodes": (
        "int",
        "NUMA nodes of the host",
        lambda context: _int(context.view.host_value("numa_nodes")),
    ),
    "host.cpu_vendor": ("str", "amd | intel | arm | other, from the CPU model", _cpu_vendor),
    "pcie.virtual": (
        "bool",
        "the PCIe tree is a VM's virtual one",
        lambda context: _bool(context.view.pcie_value("virtual")),
    ),
    "pcie.root_complex_count": ("int", "PCIe root complexes holding GPUs", _root_complex_count),
    "pcie.downtrained_gpu_count": (
        "int",
        "GPUs whose PCIe link runs below its maximum",
        _downtrained,
    ),
    "software.sglang": (
        VERSION_FACT_TYPE,
        "the TARGET SGLang version: request.sglang_version, else the installed one",
        _target_sglang,
    ),
    "software.sglang_installed": (
        VERSION_FACT_TYPE,
        "the SGLang installed where the snapshot was taken",
        _software("sglang"),
    ),
    "software.flashinfer_target": (
        VERSION_FACT_TYPE,
        "the FlashInfer the target SGLang runs with: the snapshot's "
        "when the target is the installed SGLang, else the one the target release pins",
        _target_flashinfer,
    ),
    "request.model.name": ("str", "requested model name (None: none given)", _model_name),
    "request.model.moe": ("bool", "requested model is a mixture of experts", _model("moe")),
    "request.model.layers": ("int", "requested model's transformer layers", _model("layers")),
    "request.model.architecture": (
        "str",
        "requested model's architecture (config.json architectures[0])",
        _model("architecture"),
    ),
    "request.model.model_type": (
        "str",
        "requested model's model_type (of text_config for multimodal models)",
        _model("model_type"),
    ),
    "request.model.quant_method": (
        "str",
        "requested model's checkpoint quantization_config.quant_method, lower "
        "case (None: unquantized or no model given)",
        _model_quant_method,
    ),
    "request.model.experts": (
        "int",
        "requested model's routed experts (None: dense)",
        _model("experts"),
    ),
    "request.model.attention": (
        "str",
        "requested model's attention: mla | gqa | mha",
        _model("attention"),
    ),
    "request.speculative": (
        "str",
        "speculative algorithm, lower case (request.speculative, else launch.speculative_algorithm)",
        _speculative,
    ),
    "request.tp_size": (
        "int",
        "tensor parallel size: request, else launch, else gpu.count",
        _parallel_size("tp_size", lambda context: context.fact("gpu.count")),
    ),
    "request.ep_size": (
        "int",
        "expert parallel size: request, else launch, else 1",
        _parallel_size("ep_size", lambda context: 1),
    ),
    "request.attention_dp_size": (
        "int",
        "attention-DP width SGLang resolves: --attn-dp-size when above 1, else "
        "--dp-size with --enable-dp-attention, else 1 (no attention DP)",
        _attention_dp_size,
    ),
    "request.attention_dp_whole_tp": (
        "bool",
        "attention DP over the whole TP group: request.attention_dp_size "
        "above 1 and equal to request.tp_size",
        _attention_dp_whole_tp,
    ),
    "request.sglang_version": (
        VERSION_FACT_TYPE,
        "the SGLang version the user asked for (None: not given)",
        _sglang_request,
    ),
}
for _package in SOFTWARE_PACKAGES:
    FACTS[f"software.{_package}"] = (
        VERSION_FACT_TYPE,
        f"{_package} version from the snapshot",
        _software(_package),
    )
_UNKNOWN_VALUE: FactValue = UNKNOWN  # as a FactValue, so register's resolvers answer FactValue
register_network_facts(
    FACTS, _UNKNOWN_VALUE
)  # network.*, request.nnodes (rules/engine/network_facts.py)
register_node_facts(FACTS)  # request.pp_size & co. (rules/engine/node_facts.py)

# Facts read from the snapshot alone (not from the request: software.sglang is the requested target
# version when one is given), so one evaluation's value holds for every request on the same
# snapshot.
SNAPSHOT_FACTS = frozenset(
    name
    for name in FACTS
    if not name.startswith(("request.", "group."))
    and name not in ("software.sglang", "software.flashinfer_target")
)
# Facts of the launch's GPU group: shared across evaluations only while the group is the whole
# machine.
GROUP_FACTS = frozenset({"all_pairs_p2p", "p2p_pairs_ok", "p2p_pairs_total", "nvlink.all_pairs"})
_PAIRS_KEY = "pairs\0"  # the pair facts' entry in a shared cache (no fact name holds a NUL)
_TABLE_KEY = "pair-table\0"

PAIR_FACTS: dict[str, tuple[str, str]] = {
    "pair.src": ("int", "source GPU index"),
    "pair.dst": ("int", "destination GPU index"),
    "pair.p2p.read": ("str", "P2P read status: OK CNS GNS TNS DR NS (unknown/U: unknown)"),
    "pair.p2p.write": ("str", "P2P write status"),
    "pair.p2p.nvlink": ("str", "P2P over NVLink status"),
    "pair.p2p.atomics": ("str", "P2P atomics status"),
    "pair.p2p.pci": ("str", "P2P over PCIe status"),
    "pair.p2p_ok": (
        "bool",
        "read and write both OK (what NCCL needs for its P2P transport), and not failed in "
        "topoctl bench's health check",
    ),
    "pair.p2p_measured_healthy": (
        "bool",
        "topoctl bench's P2P health check (a real, checked copy): false when the "
        "pair hung, corrupted or crawled; unknown when not measured",
    ),
    "pair.pcie_acs_redirect": (
        "bool",
        "PCIe ACS request/completion redirect on a bridge between the two GPUs "
        "(unknown when the config space was not readable)",
    ),
    "pair.link": ("str", "NV<n> | PIX | PXB | PHB | NODE | SYS"),
    "pair.nvlinks": ("int", "bonded NVLinks between the two"),
    "pair.nvlink": ("bool", "the pair talks over NVLink"),
    "pair.pcie_ancestor": ("str", "PCIe common ancestor: PIX | PXB | PHB | NODE | SYS"),
    "pair.torch_can_access_peer": (
        "bool",
        "torch.cuda.can_device_access_peer (only with --with-torch)",
    ),
}


def _bool(value: object) -> bool | _Unknown:
    return value if isinstance(value, bool) else UNKNOWN


def _str(value: object) -> str | _Unknown:
    return value if isinstance(value, str) else UNKNOWN


def _int(value: object) -> int | _Unknown:
    return value if isinstance(value, int) and not isinstance(value, bool) else UNKNOWN


def fact_type(name: str) -> str | None:
    """The declared type of a fact name, or None if the name is not in the namespace."""
    if name in FACTS:
        return FACTS[name][0]
    if name in PAIR_FACTS:
        return PAIR_FACTS[name][0]
    if name.startswith("launch."):
        setting = name[len("launch.") :]
        return (
            launch_settings.setting_type(setting)
            if launch_settings.is_known_setting(setting)
            else None
        )
    return None
