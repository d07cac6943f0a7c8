"""An nvidia-smi-like matrix of a Snapshot, for people (`topoctl show`).

Rows and columns are GPUs; each cell is the link (NV18, PIX, SYS, ...) and the P2P read/write
verdict (`+` both OK, `-` not OK, `?` unknown). To the right: NUMA node and root complex per GPU.
Colour only on a terminal and never when NO_COLOR is set (https://no-color.org).

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from topoctl.core.p2p import pair_p2p_ok
from topoctl.snapshot.view import SnapshotLike, SnapshotView, view_of

if TYPE_CHECKING:
    from topoctl.snapshot.network_view import RdmaNic

GREEN, RED, YELLOW, BOLD, RESET = "\x1b[32m", "\x1b[31m", "\x1b[33m", "\x1b[1m", "\x1b[0m"


def _p2p_mark(pair: Mapping[str, object]) -> str:
    """`+` read and write OK, `-` one of them names why P2P does not work, `?` unknown ("unknown" or
    NVML's U)."""
    return {True: "+", False: "-", None: "?"}[pair_p2p_ok(pair.get("p2p"))]


def _clean(value: object) -> str:
    """Snapshot text may come from anywhere: show it printable, on one line."""
    text = "-" if value is None else str(value)
    return "".join(ch if ch.isprintable() else "?" for ch in text)


def render(snapshot: SnapshotLike, color: bool = False) -> str:
    view = view_of(snapshot)
    gpus = view.indexed_gpus
    pairs = {(p["src"], p["dst"]): p for p in view.pairs or []}

    def paint(text: str, code: str) -> str:
        return f"{code}{text}{RESET}" if color else text

    width = 9
    nics = view.network.rdma or []
    header = (
        "".ljust(6)
        + "".join(f"GPU{g['index']}".ljust(width) for g in gpus)
        + "".join(f"NIC{n}".ljust(6) for n in range(len(nics)))
        + "NUMA  Root complex"
    )
    lines = [paint(header, BOLD) if color else header]
    for gpu in gpus:
        cells = []
        for other in gpus:
            if other["index"] == gpu["index"]:
                cells.append(" X".ljust(width))
                continue
            pair = pairs.get((gpu["index"], other["index"]))
            if pair is None:
                cells.append("?".ljust(width))
                continue
            mark = _p2p_mark(pair)
            text = f"{_clean(pair.get('link') or '?')}{mark}".ljust(width)
            cells.append(paint(text, GREEN if mark == "+" else RED if mark == "-" else YELLOW))
        nic_cells = "".join(
            _clean(view.network.link(gpu["index"], nic.name) or "?").ljust(6) for nic in nics
        )
        lines.append(
            f"GPU{gpu['index']}".ljust(6)
            + "".join(cells)
            + nic_cells
            + _clean(gpu.get("numa_node")).ljust(6)
            + _clean(gpu.get("root_complex"))
        )
    lines.append("")
    for gpu in gpus:
        pcie = gpu.get("pcie") or {}
        nvlink = gpu.get("nvlink") or {}
        note = "  DOWN-TRAINED" if pcie.get("downtrained") else ""
        lines.append(
            f"GPU{gpu['index']}: {_clean(gpu.get('name'))}, sm "
            f"{_clean(gpu.get('compute_capability'))}, PCIe gen "
            f"{_clean(pcie.get('current_gen'))}/{_clean(pcie.get('max_gen'))} "
            f"x{_clean(pcie.get('current_width'))}/{_clean(pcie.get('max_width'))}, NVLink "
            f"{_clean(nvlink.get('active_links'))} active, {_clean(gpu.get('pci_bus_id'))}{note}"
        )
    lines.append("")
    lines.append(
        f"Interconnect: {_clean(view.interconnect)}; P2P read+write OK on "
        f"{view.summary_value('p2p_pairs_ok')}/{view.summary_value('p2p_pairs_total')} ordered "
        f"pairs; virtualized: {_clean(view.summary_value('virtualized'))}"
    )
    lines.append(
        f"Driver {_clean(view.software('driver'))}, CUDA {_clean(view.software('cuda_driver'))}, "
        f"NCCL {_clean(view.software('nccl'))}, torch {_clean(view.software('torch'))}, "
        f"SGLang {_clean(view.software('sglang'))}"
    )
    lines.extend(network_lines(view))
    from topoctl.probe.bench.bench_lines import render_measurements, render_pcie_checks

    lines.extend(render_pcie_checks(view))
    measured = render_measurements(view)
    if measured:
        lines.append("")
        lines.extend(measured)
    unknown = view.unknown
    if unknown:
        lines.append(
            f"Unknown: {len(unknown)} field(s) could not be read (see `unknown` in the snapshot)"
        )
    lines.append("")
    lines.append(
        "Legend: NV# = # bonded NVLinks; PIX/PXB/PHB/NODE/SYS as nvidia-smi topo -m; "
        "+ P2P read+write OK, - not OK, ? unknown" + ("; NIC# = RDMA device above" if nics else "")
    )
    return "\n".join(lines) + "\n"


def _nic_line(number: int, nic: RdmaNic) -> str:
    transport = {"ib": "InfiniBand", "roce": "RoCE", "mixed": "IB+RoCE"}.get(
        nic.transport or "", "link layer ?"
    )
    rate = f"{nic.rate_gbps:g} Gb/s" if nic.rate_gbps else "no active port"
    ports = (
        f"port {','.join(str(port) for port in nic.active_ports)} active"
        if nic.active_ports
        else "no port ACTIVE"
    )
    return (
        f"NIC{number}: {_clean(nic.name)} ({transport}, {rate}, {ports}, NUMA "
        f"{_clean(nic.numa_node)}, {_clean(nic.pci_bus_id)})"
    )


def network_lines(view: SnapshotView) -> list[str]:
    """The NIC legend, the interfaces with their speed and GPUDirect RDMA readiness (nothing on a
    snapshot made before NICs were probed)."""
    network = view.network
    if not network.present:
        return []
    nics = network.rdma
    lines = [""]
    if nics is None:
        lines.append("RDMA NICs: unknown (see `unknown`)")
    elif not nics:
        lines.append(
            "RDMA NICs: none (/sys/class/infiniband lists no device): between nodes NCCL uses "
            "TCP sockets"
        )
    lines.extend(_nic_line(number, nic) for number, nic in enumerate(nics or []))
    interfaces = network.physical_interfaces
    if interfaces is not None:
        described = [
            f"{_clean(i.name)} {i.speed_mbps // 1000 if i.speed_mbps else '?'} Gb/s"
            for i in interfaces
        ]
        lines.append("Interfaces up (PCI devices): " + (", ".join(described) or "none"))
    ready = network.gpudirect_ready
    state = {True: "ready", False: "not possible", None: "unknown"}[ready]
    lines.append(f"GPUDirect RDMA: {state} ({_clean(network.gpudirect.get('reason'))})")
    return lines
