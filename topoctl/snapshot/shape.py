"""The snapshot's JSON shape for mypy: Snapshot and the TypedDicts of its sections and entries, key
for key the published schema's (topoctl/snapshot/schema/snapshot.schema.json;
tests/snapshot/test_snapshot_types.py holds them to it).

Only type checking reads this module: the product imports it under TYPE_CHECKING, because making
these classes costs about 1 ms at every start of show, check and recommend while a TypedDict checks
nothing at run time (the loaded dict is the value; the loaders validate it against the schema).

Layer: snapshot (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from typing import Required, TypedDict


class GpuEntry(TypedDict, total=False):
    """One entry of snapshot.gpus as topoctl/snapshot/schema/snapshot.schema.json gives it (readers'
    view of the JSON: a TypedDict, so the loaded dict is the value; the nested sections stay
    mappings). `index` is the one key a validated snapshot always has."""

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
    pcie: dict[str, object] | None
    nvlink: dict[str, object] | None
    fabric: dict[str, object] | None
    numa_node: int | None
    root_complex: str | None
    pcie_path: list[str] | None
    pcie_bridges: list[dict[str, object]] | None
    bar1: dict[str, object] | None
    pcie_counters: dict[str, int | None] | None
    iommu_group: int | None
    iommu_group_type: str | None


class PairEntry(TypedDict, total=False):
    """One entry of snapshot.pairs (the schema's `pairs[]`): an ordered pair of GPUs and its P2P
    statuses."""

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
    """snapshot.nvlink: NVLink across the machine; switch_links_per_gpu is keyed by GPU index as a
    string."""

    present: bool | None
    nvswitch: bool | None
    switch_hidden: bool | None
    switch_links_per_gpu: dict[str, int | None] | None


class SnapshotPcie(TypedDict, total=False):
    """snapshot.pcie: the PCIe tree (root_complexes' entries stay mappings: id, numa_node, gpus)."""

    virtual: bool | None
    root_complexes: list[dict[str, object]] | None


class SnapshotSummary(TypedDict, total=False):
    """snapshot.summary: what the probe concluded (the loader re-derives the P2P verdicts from the
    pairs). `gpu_count` is the one key the schema requires."""

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
    """snapshot.measurements: what `topoctl bench` measured; the rows stay mappings (readers treat
    their fields as optional, see the schema's description)."""

    method: str | None
    topoctl_version: str | None
    measured_at: str | None
    versions: dict[str, str | None] | None
    gpus: list[int] | None
    p2p: list[dict[str, object]] | None
    allreduce: list[dict[str, object]] | None
    coalescing: list[dict[str, object]] | None
    local_copy: list[dict[str, object]] | None
    decode_step: list[dict[str, object]] | None
    decode_ops: list[dict[str, object]] | None
    preflight: list[dict[str, object]] | None
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
    """snapshot.network: NICs as NCCL sees them (topoctl/snapshot/network_view.py reads it);
    `network_version` is the one key the schema requires."""

    network_version: Required[int]
    rdma: list[dict[str, object]] | None
    interfaces: list[dict[str, object]] | None
    gpu_nic: list[dict[str, object]] | None
    gpudirect: dict[str, object] | None


class CudaDeviceEntry(TypedDict, total=False):
    """One entry of snapshot.cuda_visible_devices.cuda_devices: cuda:<cuda> is snapshot GPU <gpu>
    (None: unknown), named by the list's entry <id>."""

    cuda: Required[int]
    gpu: Required[int | None]
    id: Required[str]


class SnapshotCudaVisibleDevices(TypedDict, total=False):
    """snapshot.cuda_visible_devices: what CUDA sees under CUDA_VISIBLE_DEVICES (probe/visible.py
    writes it, topoctl/snapshot/visible_view.py reads it). `device_order` and `unknown` are absent
    in records written before the probe wrote them."""

    value: Required[str]
    device_order: str | None
    cuda_devices: Required[list[CudaDeviceEntry]]
    hidden: Required[list[int] | None]
    ended_at: Required[str | None]
    why: Required[str | None]
    unknown: str | None


class Snapshot(TypedDict, total=False):
    """A validated snapshot as topoctl/snapshot/schema/snapshot.schema.json publishes it: the loaded
    dict is the value (a TypedDict costs nothing at run time and copies nothing), so mypy sees the
    JSON's shape on the path from the loader to the view and the commands. The schema's required
    keys are Required here; the rest may be absent. tests/snapshot/test_snapshot_types.py holds
    these keys to the schema's properties."""

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
    cuda_visible_devices: SnapshotCudaVisibleDevices | None
    unknown: dict[str, str | None] | None
