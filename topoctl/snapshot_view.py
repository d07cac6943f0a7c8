"""A small typed view of a snapshot, for readers: one way to ask for the GPU count, the interconnect, the GPUs,
the pairs of a group of GPUs, a summary line, a software version or the measurements.

    view = SnapshotView(load_snapshot("machine.yaml"))
    view.gpu_count, view.interconnect, view.software("sglang"), view.pairs_of([0, 1])

A command makes one view of the snapshot it reads and passes it down; a reader takes a SnapshotLike and asks
view_of(snapshot), which returns a view it is given as it is and makes one only from a plain dict (a test's
or a rule case's snapshot). tests/test_snapshot_view_once.py counts the views each command makes.

A snapshot that passed topoctl.snapshot.validate_snapshot (every loader does that) has every section the
view reads. A partial snapshot (a rule's test case, `snapshot: {pairs: [...]}`) may leave any section out:
then the view answers None (or an empty list where it says so), which readers take as "not known", never
a crash. What the probe could not read is None too. Only this module reads the snapshot's raw shape for
readers; probe/ writes it, topoctl/snapshot.py validates it. Snapshot (with the TypedDicts of its sections)
is that shape for mypy: what the loaders return and the view takes, at no cost and with no copy at run time.

Layer: snapshot (docs/architecture.md, "Layers").
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, NamedTuple, Required, TypeAlias, TypedDict, Union, cast

from topoctl.p2p import pair_p2p_ok
from topoctl.vocab import SOFTWARE_KEYS

if TYPE_CHECKING:
    from topoctl.network_view import NetworkView


class GpuEntry(TypedDict, total=False):
    """One entry of snapshot.gpus as topoctl/schema/snapshot.schema.json gives it (readers' view of the JSON:
    a TypedDict, so the loaded dict is the value; the nested sections stay mappings). `index` is the one key
    a validated snapshot always has."""

    index: Required[int]
    name: str | None
    uuid: str | None
    pci_bus_id: str | None
    compute_capability: str | None
    sm: int | None
    architecture: str | None
    memory_total_bytes: int | None
    mig_mode: str | None
    virtualization_mode: str | None
    pcie: dict[str, Any] | None
    nvlink: dict[str, Any] | None
    fabric: dict[str, Any] | None
    numa_node: int | None
    root_complex: str | None
    pcie_path: list[str] | None
    pcie_bridges: list[dict[str, Any]] | None
    bar1: dict[str, Any] | None
    pcie_counters: dict[str, int | None] | None
    iommu_group: int | None
    iommu_group_type: str | None


class PairEntry(TypedDict, total=False):
    """One entry of snapshot.pairs (the schema's `pairs[]`): an ordered pair of GPUs and its P2P statuses."""

    src: Required[int]
    dst: Required[int]
    p2p: Required[dict[str, str]]
    pcie_ancestor: str | None
    nvlinks: int | None
    link: str | None
    torch_can_access_peer: bool | None
    pcie_acs_redirect: bool | None


class SnapshotSource(TypedDict, total=False):
    """snapshot.source: where the snapshot came from (live probe, capture or built-in system)."""

    kind: str | None
    name: str | None
    captured_at: str | None
    synthetic: bool | None


class SnapshotHost(TypedDict, total=False):
    """snapshot.host: the machine around the GPUs."""

    hostname: str | None
    kernel: str | None
    os: str | None
    machine: str | None
    cpu_model: str | None
    cpu_cores_logical: int | None
    cpu_cores_physical: int | None
    numa_nodes: int | None
    memory_bytes: int | None
    virtualized: bool | None
    hypervisor: str | None


class SnapshotNvlink(TypedDict, total=False):
    """snapshot.nvlink: NVLink across the machine; switch_links_per_gpu is keyed by GPU index as a string."""

    present: bool | None
    nvswitch: bool | None
    switch_hidden: bool | None
    switch_links_per_gpu: dict[str, int | None] | None


class SnapshotPcie(TypedDict, total=False):
    """snapshot.pcie: the PCIe tree (root_complexes' entries stay mappings: id, numa_node, gpus)."""

    virtual: bool | None
    root_complexes: list[dict[str, Any]] | None


class SnapshotSummary(TypedDict, total=False):
    """snapshot.summary: what the probe concluded (the loader re-derives the P2P verdicts from the pairs).
    `gpu_count` is the one key the schema requires."""

    gpu_count: Required[int]
    gpu_names: list[str] | None
    compute_capabilities: list[str] | None
    architectures: list[str] | None
    interconnect: str | None
    all_pairs_p2p: bool | None
    p2p_pairs_ok: int | None
    p2p_pairs_total: int | None
    nvlink_all_pairs: bool | None
    numa_nodes_spanned: int | None
    root_complex_groups: list[list[int]] | None
    downtrained_gpus: list[int] | None
    virtualized: bool | None
    mig_enabled: bool | None
    acs_redirect_pairs: list[list[int]] | None
    bar1_small_gpus: list[int] | None
    iommu_mode: str | None
    p2p_failed_health_check: list[list[int]] | None


class SnapshotMeasurements(TypedDict, total=False):
    """snapshot.measurements: what `topoctl bench` measured; the rows stay mappings (readers treat their
    fields as optional, see the schema's description)."""

    method: str | None
    topoctl_version: str | None
    measured_at: str | None
    versions: dict[str, str | None] | None
    gpus: list[int] | None
    p2p: list[dict[str, Any]] | None
    allreduce: list[dict[str, Any]] | None
    coalescing: list[dict[str, Any]] | None
    local_copy: list[dict[str, Any]] | None
    decode_step: list[dict[str, Any]] | None
    backend: str | None
    complete: bool | None
    problems: list[str] | None
    model: str | None
    model_bytes: list[int] | None
    budget_s: float | None
    timeout_s: float | None


class SnapshotIommu(TypedDict, total=False):
    """snapshot.iommu: the IOMMU as the kernel shows it."""

    present: bool | None
    units: list[str] | None
    groups: int | None
    mode: str | None
    cmdline: dict[str, str] | None


class SnapshotNetwork(TypedDict, total=False):
    """snapshot.network: NICs as NCCL sees them (topoctl/network_view.py reads it); `network_version` is the
    one key the schema requires."""

    network_version: Required[int]
    rdma: list[dict[str, Any]] | None
    interfaces: list[dict[str, Any]] | None
    gpu_nic: list[dict[str, Any]] | None
    gpudirect: dict[str, Any] | None


class Snapshot(TypedDict, total=False):
    """A validated snapshot as topoctl/schema/snapshot.schema.json publishes it: the loaded dict is the value
    (a TypedDict costs nothing at run time and copies nothing), so mypy sees the JSON's shape on the path from
    the loader to the view and the commands. The schema's required keys are Required here; the rest may be
    absent. tests/test_snapshot_types.py holds these keys to the schema's properties."""

    schema_version: Required[int]
    topoctl_version: str | None
    source: SnapshotSource | None
    host: SnapshotHost | None
    gpus: Required[list[GpuEntry]]
    pairs: Required[list[PairEntry]]
    nvlink: SnapshotNvlink | None
    pcie: SnapshotPcie | None
    software: Required[dict[str, str | None]]
    summary: Required[SnapshotSummary]
    measurements: SnapshotMeasurements | None
    iommu: SnapshotIommu | None
    network: SnapshotNetwork | None
    unknown: dict[str, str | None] | None


class Pair(NamedTuple):  # not a dataclass: this class is made on every start-up path, 10x cheaper so
    src: int
    dst: int
    p2p: dict[str, str]
    link: str | None
    nvlinks: int | None

    @property
    def p2p_ok(self) -> bool | None:
        """Read and write both OK (topoctl/p2p.py): True, False, or None when unknown."""
        return pair_p2p_ok(self.p2p)


def _section(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class SnapshotView:
    """The snapshot's typed reading; `data` is the validated dict itself, for the code that hands it on whole
    (a document that quotes it, the rules' partial snapshots)."""

    def __init__(self, data: Snapshot | dict[str, Any] | None) -> None:
        self.data: dict[str, Any] = cast("dict[str, Any]", data) if isinstance(data, dict) else {}

    # ------------------------------------------------------------------------------------------ GPUs
    @property
    def gpus(self) -> list[Any] | None:
        """snapshot.gpus as listed, or None when the snapshot has no GPU list (only a partial one lacks it)."""
        gpus = self.data.get("gpus")
        return gpus if isinstance(gpus, list) else None

    @property
    def indexed_gpus(self) -> list[GpuEntry]:
        """The GPU entries that carry an index (every one in a validated snapshot), in the snapshot's order."""
        return [cast(GpuEntry, gpu) for gpu in self.gpus or [] if isinstance(gpu, dict) and _is_int(gpu.get("index"))]

    @property
    def gpus_by_index(self) -> dict[int, GpuEntry]:
        return {gpu["index"]: gpu for gpu in self.indexed_gpus}

    @property
    def gpu_count(self) -> int | None:
        """summary.gpu_count (the loader holds it to len(gpus)); without one, the GPUs listed; else None."""
        count = self.summary_value("gpu_count")
        if _is_int(count):
            return int(count)
        gpus = self.gpus
        return len(gpus) if gpus is not None else None

    @property
    def summary_gpu_count(self) -> int | None:
        """summary.gpu_count alone (a partial snapshot may give a count and no GPU list)."""
        count = self.summary_value("gpu_count")
        return int(count) if _is_int(count) else None

    @property
    def gpu_names(self) -> list[str]:
        """summary.gpu_names (distinct, sorted), else the distinct names of the GPUs listed."""
        names = self.summary_value("gpu_names")
        return list(names) if names else sorted({str(gpu.get("name")) for gpu in self.gpus or []
                                                 if isinstance(gpu, dict)})

    @property
    def gpu_model_names(self) -> list[str]:
        """One name per GPU (sorted, repeats kept): what a change of GPU model is judged by."""
        return sorted(str(gpu.get("name")) for gpu in self.gpus or [] if isinstance(gpu, dict))

    @property
    def first_gpu(self) -> dict[str, Any]:
        """The first GPU listed ({} when none): a launch runs on GPUs of one model."""
        gpus = self.gpus
        return gpus[0] if gpus and isinstance(gpus[0], dict) else {}

    def gpu(self, index: int) -> GpuEntry:
        return next(gpu for gpu in self.indexed_gpus if gpu["index"] == index)

    @property
    def pci_bus_ids(self) -> dict[str, int]:
        """pci_bus_id -> GPU index, for the GPUs whose bus id the probe read."""
        return {bus: gpu["index"] for gpu in self.indexed_gpus if (bus := gpu.get("pci_bus_id"))}

    # ----------------------------------------------------------------------------------------- pairs
    @property
    def pairs(self) -> list[PairEntry] | None:
        """The pair entries (mappings) of snapshot.pairs, or None when the snapshot has no pair list."""
        pairs = self.data.get("pairs")
        return [cast(PairEntry, pair) for pair in pairs if isinstance(pair, dict)] if isinstance(pairs, list) else None

    def pairs_of(self, group: Iterable[int]) -> list[Pair]:
        """Every ordered pair within `group` (GPU indices), in the snapshot's order."""
        members = set(group)
        return [Pair(p["src"], p["dst"], p["p2p"], p.get("link"), p.get("nvlinks")) for p in self.pairs or []
                if p.get("src") in members and p.get("dst") in members]

    @property
    def pair_p2p_ok(self) -> dict[tuple[int, int], bool | None]:
        """(src, dst) -> read and write both OK (True, False, or None when unknown), for every pair listed."""
        return {(p["src"], p["dst"]): pair_p2p_ok(p.get("p2p")) for p in self.pairs or []}

    # --------------------------------------------------------------------------------------- summary
    @property
    def interconnect(self) -> str | None:
        """summary.interconnect: one of topoctl.vocab.INTERCONNECTS, or None when unknown."""
        return self.summary_value("interconnect")

    def summary_value(self, field: str) -> Any:
        """summary.<field>, or None when the summary does not say."""
        return _section(self.data, "summary").get(field)

    def summary_says(self, field: str) -> bool:
        """Whether the summary has the line at all (a null there is the probe's "unknown")."""
        return field in _section(self.data, "summary")

    def host_value(self, field: str) -> Any:
        """host.<field> (hostname, cpu_model, numa_nodes, virtualized, hypervisor, ...), or None."""
        return _section(self.data, "host").get(field)

    def nvlink_value(self, field: str) -> Any:
        """nvlink.<field> (present, nvswitch, switch_hidden, ...), or None."""
        return _section(self.data, "nvlink").get(field)

    def pcie_value(self, field: str) -> Any:
        """pcie.<field> (virtual, root_complexes), or None."""
        return _section(self.data, "pcie").get(field)

    # -------------------------------------------------------------------------------- software, host
    def software(self, key: str) -> str | None:
        """A version from software.*; `key` must be one of topoctl.vocab.SOFTWARE_KEYS."""
        if key not in SOFTWARE_KEYS:
            raise KeyError(f"software key {key!r} is not one of {', '.join(SOFTWARE_KEYS)}")
        return _section(self.data, "software").get(key)

    @property
    def system_name(self) -> str | None:
        return _section(self.data, "source").get("name")

    @property
    def source_kind(self) -> str | None:
        return _section(self.data, "source").get("kind")

    @property
    def unknown(self) -> dict[str, Any]:
        """snapshot.unknown: dotted path -> why the probe could not read it ({} when all was read)."""
        return _section(self.data, "unknown")

    @property
    def cuda_visible_devices(self) -> dict[str, Any] | None:
        """snapshot.cuda_visible_devices: what CUDA_VISIBLE_DEVICES was at probe time, or None when unset."""
        recorded = self.data.get("cuda_visible_devices")
        return recorded if isinstance(recorded, dict) else None

    @property
    def hostname(self) -> str | None:
        return _section(self.data, "host").get("hostname")

    # ---------------------------------------------------------------------------------- measurements
    @property
    def measurements(self) -> dict[str, Any] | None:
        """snapshot.measurements (topoctl bench), or None when nothing was measured."""
        return self.data.get("measurements") or None

    @property
    def gpu_measurements(self) -> dict[str, Any] | None:
        """The measurements when they are the GPUs' own: None for `topoctl bench --backend gloo`, which ran on
        CPU processes (a check of the harness). Everything that judges or ranks a launch reads through this;
        `show` prints the gloo block, marked as not GPU figures."""
        measured = self.measurements
        return None if isinstance(measured, dict) and measured.get("backend") == "gloo" else measured

    def measurement_rows(self, kind: str) -> list[Any]:
        """The rows of measurements.<kind> (p2p, allreduce, coalescing, decode_step) as written, of the GPUs
        only (gpu_measurements); [] when none."""
        measured = self.gpu_measurements
        rows = measured.get(kind) if isinstance(measured, dict) else None
        return rows if isinstance(rows, list) else []

    def allreduce_measurements(self, path: str | None = None) -> list[dict[str, Any]]:
        """The allreduce rows with status ok (optionally of one path): the ones readers may rely on."""
        rows = self.measurement_rows("allreduce")
        return [row for row in rows if isinstance(row, dict) and row.get("status") == "ok"
                and (path is None or row.get("path") == path)]

    # -------------------------------------------------------------------------------------- network
    @property
    def network(self) -> "NetworkView":
        """The NICs (topoctl/network_view.py); `.present` is False on a snapshot made before NICs were probed."""
        from topoctl.network_view import NetworkView

        return NetworkView(self.data.get("network"))


# What a reader of a snapshot accepts: the command's one view, or a plain dict (tests, a rule's case).
SnapshotLike: TypeAlias = Union[SnapshotView, Snapshot, "dict[str, Any]", None]


def view_of(snapshot: SnapshotLike) -> SnapshotView:
    """The view of `snapshot`: the one a command made and passed down, as it is; a new one only for a dict."""
    return snapshot if isinstance(snapshot, SnapshotView) else SnapshotView(snapshot)
