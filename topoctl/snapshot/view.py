"""A small typed view of a snapshot, for readers: one way to ask for the GPU count, the
interconnect, the GPUs, the pairs of a group of GPUs, a summary line, a software version or the
measurements.

    view = SnapshotView(load_snapshot("machine.yaml"))
    view.gpu_count, view.interconnect, view.software("sglang"), view.pairs_of([0, 1])

A command makes one view of the snapshot it reads and passes it down; a reader takes a SnapshotLike
and asks view_of(snapshot), which returns a view it is given as it is and makes one only from a
plain dict (a test's or a rule case's snapshot). tests/snapshot/test_snapshot_view_once.py counts
the views each command makes.

A snapshot that passed topoctl.snapshot.document.validate_snapshot (every loader does that) has
every section the view reads. A partial snapshot (a rule's test case, `snapshot: {pairs: [...]}`)
may leave any section out: then the view answers None (or an empty list where it says so), which
readers take as "not known", never a crash. What the probe could not read is None too. Only this
module reads the snapshot's raw shape for readers; probe/ writes it, topoctl/snapshot/document.py
validates it. Snapshot (with the TypedDicts of its sections) (topoctl/snapshot/shape.py, read only
by type checking) is that shape for mypy: what the loaders return and the view takes, at no cost and
with no copy at run time.

Layer: snapshot (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, NamedTuple, TypeAlias, TypeGuard, Union, cast

from topoctl.core.p2p import pair_p2p_ok
from topoctl.core.vocab import SOFTWARE_KEYS

if TYPE_CHECKING:
    from topoctl.snapshot.network_view import NetworkView
    from topoctl.snapshot.shape import GpuEntry, PairEntry, Snapshot
    from topoctl.snapshot.visible_view import CudaVisibleDevices


class Pair(
    NamedTuple
):  # not a dataclass: this class is made on every start-up path, 10x cheaper so
    src: int
    dst: int
    p2p: dict[str, str]
    link: str | None
    nvlinks: int | None

    @property
    def p2p_ok(self) -> bool | None:
        """Read and write both OK (topoctl/core/p2p.py): True, False, or None when unknown."""
        return pair_p2p_ok(self.p2p)


def _section(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


class SnapshotView:
    """The snapshot's typed reading; `data` is the validated dict itself, for the code that hands it
    on whole (a document that quotes it, the rules' partial snapshots)."""

    def __init__(self, data: Snapshot | dict[str, Any] | None) -> None:
        self.data: dict[str, Any] = cast("dict[str, Any]", data) if isinstance(data, dict) else {}

    # ------------------------------------------------------------------------------------------
    # GPUs
    @property
    def gpus(self) -> list[object] | None:
        """snapshot.gpus as listed, or None when the snapshot has no GPU list (only a partial one
        lacks it)."""
        gpus = self.data.get("gpus")
        return gpus if isinstance(gpus, list) else None

    @property
    def indexed_gpus(self) -> list[GpuEntry]:
        """The GPU entries that carry an index (every one in a validated snapshot), in the
        snapshot's order."""
        return [
            cast("GpuEntry", gpu)
            for gpu in self.gpus or []
            if isinstance(gpu, dict) and _is_int(gpu.get("index"))
        ]

    @property
    def gpus_by_index(self) -> dict[int, GpuEntry]:
        return {gpu["index"]: gpu for gpu in self.indexed_gpus}

    @property
    def gpu_count(self) -> int | None:
        """summary.gpu_count (the loader holds it to len(gpus)); without one, the GPUs listed; else
        None."""
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
        return (
            list(names)
            if names
            else sorted({str(gpu.get("name")) for gpu in self.gpus or [] if isinstance(gpu, dict)})
        )

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

    # -----------------------------------------------------------------------------------------
    # pairs
    @property
    def pairs(self) -> list[PairEntry] | None:
        """The pair entries (mappings) of snapshot.pairs, or None when the snapshot has no pair
        list."""
        pairs = self.data.get("pairs")
        return (
            [cast("PairEntry", pair) for pair in pairs if isinstance(pair, dict)]
            if isinstance(pairs, list)
            else None
        )

    def pairs_of(self, group: Iterable[int]) -> list[Pair]:
        """Every ordered pair within `group` (GPU indices), in the snapshot's order."""
        members = set(group)
        return [
            Pair(p["src"], p["dst"], p["p2p"], p.get("link"), p.get("nvlinks"))
            for p in self.pairs or []
            if p.get("src") in members and p.get("dst") in members
        ]

    @property
    def pair_p2p_ok(self) -> dict[tuple[int, int], bool | None]:
        """(src, dst) -> read and write both OK (True, False, or None when unknown), for every pair
        listed."""
        return {(p["src"], p["dst"]): pair_p2p_ok(p.get("p2p")) for p in self.pairs or []}

    # ---------------------------------------------------------------------------------------
    # summary
    @property
    def interconnect(self) -> str | None:
        """summary.interconnect: one of topoctl.core.vocab.INTERCONNECTS, or None when unknown."""
        interconnect: str | None = self.summary_value("interconnect")
        return interconnect

    def summary_value(self, field: str) -> Any:
        """summary.<field>, or None when the summary does not say."""
        return _section(self.data, "summary").get(field)

    def summary_says(self, field: str) -> bool:
        """Whether the summary has the line at all (a null there is the probe's "unknown")."""
        return field in _section(self.data, "summary")

    def host_value(self, field: str) -> object:
        """host.<field> (hostname, cpu_model, numa_nodes, virtualized, hypervisor, ...), or None."""
        return _section(self.data, "host").get(field)

    def nvlink_value(self, field: str) -> object:
        """nvlink.<field> (present, nvswitch, switch_hidden, ...), or None."""
        return _section(self.data, "nvlink").get(field)

    def pcie_value(self, field: str) -> object:
        """pcie.<field> (virtual, root_complexes), or None."""
        return _section(self.data, "pcie").get(field)

    # -------------------------------------------------------------------------------- software,
    # host
    def software(self, key: str) -> str | None:
        """A version from software.*; `key` must be one of topoctl.core.vocab.SOFTWARE_KEYS."""
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
    def unknown(self) -> dict[str, object]:
        """snapshot.unknown: dotted path -> why the probe could not read it ({} when all was read)."""
        return _section(self.data, "unknown")

    @property
    def cuda_visible_devices(self) -> "CudaVisibleDevices | None":
        """snapshot.cuda_visible_devices (topoctl/snapshot/visible_view.py): the GPUs CUDA saw under
        CUDA_VISIBLE_DEVICES where the snapshot was taken, as which CUDA device ids; None when the
        variable was not set."""
        recorded = self.data.get("cuda_visible_devices")
        if not isinstance(recorded, dict):
            return None
        from topoctl.snapshot.visible_view import read_record

        return read_record(recorded)

    @property
    def hostname(self) -> str | None:
        return _section(self.data, "host").get("hostname")

    # ----------------------------------------------------------------------------------
    # measurements
    @property
    def measurements(self) -> dict[str, Any] | None:
        """snapshot.measurements (topoctl bench), or None when nothing was measured."""
        return self.data.get("measurements") or None

    @property
    def gpu_measurements(self) -> dict[str, Any] | None:
        """The measurements when they are the GPUs' own: None for `topoctl bench --backend gloo`,
        which ran on CPU processes (a check of the harness). Everything that judges or ranks a
        launch reads through this; `show` prints the gloo block, marked as not GPU figures."""
        measured = self.measurements
        return (
            None if isinstance(measured, dict) and measured.get("backend") == "gloo" else measured
        )

    def measurement_rows(self, kind: str) -> list[object]:
        """The rows of measurements.<kind> (p2p, allreduce, coalescing, decode_step) as written, of
        the GPUs only (gpu_measurements); [] when none."""
        measured = self.gpu_measurements
        rows = measured.get(kind) if isinstance(measured, dict) else None
        return rows if isinstance(rows, list) else []

    def allreduce_measurements(self, path: str | None = None) -> list[dict[str, Any]]:
        """The allreduce rows with status ok (optionally of one path): the ones readers may rely on."""
        rows = self.measurement_rows("allreduce")
        return [
            row
            for row in rows
            if isinstance(row, dict)
            and row.get("status") == "ok"
            and (path is None or row.get("path") == path)
        ]

    # -------------------------------------------------------------------------------------- network
    @property
    def network(self) -> "NetworkView":
        """The NICs (topoctl/snapshot/network_view.py); `.present` is False on a snapshot made
        before NICs were probed."""
        from topoctl.snapshot.network_view import NetworkView

        return NetworkView(self.data.get("network"))


# What a reader of a snapshot accepts: the command's one view, or a plain dict (tests, a rule's
# case).
SnapshotLike: TypeAlias = Union[SnapshotView, "Snapshot", "dict[str, Any]", None]


def view_of(snapshot: SnapshotLike) -> SnapshotView:
    """The view of `snapshot`: the one a command made and passed down, as it is; a new one only for
    a dict."""
    return snapshot if isinstance(snapshot, SnapshotView) else SnapshotView(snapshot)
