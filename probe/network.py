"""NICs as NCCL sees them: RDMA devices, Ethernet interfaces, each NIC's PCIe relation to each GPU,
and whether GPUDirect RDMA can work.

Everything is read through the Files door (recorded and replayed like NVML answers), from the places
NCCL and rdma-core read:
/sys/class/infiniband/<dev>/{device,ports/<n>/{state,phys_state,rate,link_layer}},
/sys/class/net/<if>/{type,operstate,speed,device}, and the kernel modules NCCL's IB transport looks
for (NCCL v2.30.7 src/transport/net_ib/gdr.cc:18-20: /sys/kernel/mm/memory_peers/nv_mem/version or
/sys/module/nvidia_peermem/version). The PCIe relation of a NIC and a GPU is derived from their
sysfs paths the way nvidia-smi topo -m labels it (PIX/PXB/PHB/NODE/SYS), in nic_link().

A capture recorded before NICs were probed (or a synthetic spec that says nothing of them) answers
NotRecorded / NotInSpec: then the snapshot has no `network` section at all, rather than a false "no
NIC".

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from typing import Any

from topoctl.probe.files import Files
from topoctl.probe.topology import split_sysfs_path

NETWORK_VERSION = 1
IB_CLASS = "/sys/class/infiniband"
NET_CLASS = "/sys/class/net"
MAX_INTERFACES = (
    256  # a Kubernetes node can hold hundreds of veth interfaces: only the first are looked at
)
NOT_ASKED = ("NotRecorded", "NotInSpec")
ARPHRD = {
    "1": "ethernet",
    "32": "infiniband",
    "772": "loopback",
}  # /sys/class/net/<if>/type (linux/if_arp.h)
# Linux gained RDMA memory registration of dma-buf (ibv_reg_dmabuf_mr) in 5.12; NCCL then asks the
# NIC at run time (gdr.cc:57-59, EOPNOTSUPP means no support).
DMABUF_KERNEL = (5, 12)


def _sysfs_value(text: str | None) -> str | None:
    """'4: ACTIVE' -> 'ACTIVE'; '5: LinkUp' -> 'LinkUp'; other text stripped."""
    if text is None:
        return None
    head, sep, tail = text.partition(":")
    return tail.strip() if sep and head.strip().isdigit() else text.strip()


def _rate_gbps(text: str | None) -> float | None:
    """'400 Gb/sec (4X NDR)' -> 400.0 (the form /sys/class/infiniband/*/ports/*/rate gives)."""
    if not text:
        return None
    first = text.split()[0]
    try:
        return float(first)
    except ValueError:
        return None


def _numa(files: Files, device: str, single_node: bool) -> int | None:
    text = files.read_stripped(f"{device}/numa_node")
    if text is not None and text.lstrip("-").isdigit():
        value = int(text)
        if value >= 0:
            return value
        return 0 if single_node else None
    return None


class _NetworkProbe:
    def __init__(self, files: Files, host: dict[str, Any], unknown: dict[str, str]) -> None:
        self.files = files
        self.unknown = unknown
        self.single_node = host.get("numa_nodes") == 1

    def placement(self, device_link: str) -> dict[str, Any]:
        """PCI bus id, root complex, bridges and NUMA node of the PCI device behind a sysfs `device`
        link."""
        real = self.files.realpath(device_link)
        if not real.ok or not isinstance(real.value, str):
            return {"pci_bus_id": None, "root_complex": None, "pcie_path": [], "numa_node": None}
        root, path = split_sysfs_path(real.value)
        if not path:
            return {"pci_bus_id": None, "root_complex": root, "pcie_path": [], "numa_node": None}
        # The PCI device's own folder: a virtio NIC's `device` link ends below it
        # (.../0000:00:03.0/virtio2).
        numa = _numa(self.files, f"/sys/bus/pci/devices/{path[-1]}", self.single_node)
        return {
            "pci_bus_id": path[-1],
            "root_complex": root,
            "pcie_path": path[:-1],
            "numa_node": numa,
        }

    def port(self, device: str, number: str) -> dict[str, Any]:
        base = f"{IB_CLASS}/{device}/ports/{number}"
        rate = self.files.read_stripped(f"{base}/rate")
        layer = self.files.read_stripped(f"{base}/link_layer")
        return {
            "port": int(number) if number.isdigit() else number,
            "state": _sysfs_value(self.files.read_stripped(f"{base}/state")),
            "phys_state": _sysfs_value(self.files.read_stripped(f"{base}/phys_state")),
            "rate": rate,
            "rate_gbps": _rate_gbps(rate),
            "link_layer": layer,
        }

    def rdma_device(self, name: str) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": name, **self.placement(f"{IB_CLASS}/{name}/device")}
        ports = self.files.listdir(f"{IB_CLASS}/{name}/ports")
        entry["ports"] = [self.port(name, number) for number in ports.value] if ports.ok else []
        if not ports.ok:
            self.unknown[f"network.rdma.{name}.ports"] = ports.reason or "unknown"
        netdevs = self.files.listdir(f"{IB_CLASS}/{name}/device/net")
        entry["netdevs"] = list(netdevs.value) if netdevs.ok else []
        layers = {port["link_layer"] for port in entry["ports"]} - {None}
        entry["transport"] = (
            "ib"
            if layers == {"InfiniBand"}
            else "roce"
            if layers == {"Ethernet"}
            else "mixed"
            if len(layers) > 1
            else None
        )
        return entry

    def interface(self, name: str) -> dict[str, Any]:
        base = f"{NET_CLASS}/{name}"
        kind = ARPHRD.get(self.files.read_stripped(f"{base}/type") or "", "other")
        entry: dict[str, Any] = {
            "name": name,
            "type": kind,
            "operstate": self.files.read_stripped(f"{base}/operstate"),
        }
        if kind == "loopback":
            entry.update(
                {
                    "physical": False,
                    "speed_mbps": None,
                    "pci_bus_id": None,
                    "numa_node": None,
                    "root_complex": None,
                    "pcie_path": [],
                }
            )
            return entry
        placement = self.placement(f"{base}/device")
        entry["physical"] = placement["pci_bus_id"] is not None
        speed = self.files.read_stripped(
            f"{base}/speed"
        )  # Mb/s; -1 or unreadable (EINVAL) while the link is down
        entry["speed_mbps"] = int(speed) if speed and speed.isdigit() else None
        entry["pci_bus_id"], entry["numa_node"] = placement["pci_bus_id"], placement["numa_node"]
        entry["root_complex"], entry["pcie_path"] = (
            placement["root_complex"],
            placement["pcie_path"],
        )
        return entry

    def gpudirect(self, kernel: str | None) -> dict[str, Any]:
        """What NCCL's IB transport checks before it uses GPUDirect RDMA (gdr.cc:18-20 and 57-59)."""
        peermem = self.files.read("/sys/module/nvidia_peermem/version")
        legacy = self.files.read("/sys/kernel/mm/memory_peers/nv_mem/version")
        info: dict[str, Any] = {
            "nvidia_peermem": peermem.ok
            if peermem.ok or peermem.reason == "FileNotFoundError"
            else None,
            "nv_peer_mem": legacy.ok if legacy.ok or legacy.reason == "FileNotFoundError" else None,
        }
        info["dmabuf"], dmabuf_reason = _dmabuf(kernel)
        if info["nvidia_peermem"] or info["nv_peer_mem"]:
            info["ready"], info["reason"] = (
                True,
                "a peer-memory module is loaded (NCCL's GDR check passes)",
            )
        elif info["dmabuf"] is False and info["nvidia_peermem"] is False:
            info["ready"], info["reason"] = False, f"no nvidia_peermem module and {dmabuf_reason}"
        else:
            info["ready"] = None
            info["reason"] = (
                f"no nvidia_peermem module; {dmabuf_reason}"
                if info["nvidia_peermem"] is False
                else f"the module list was not readable ({peermem.reason}); {dmabuf_reason}"
            )
        return info


def _dmabuf(kernel: str | None) -> tuple[bool | None, str]:
    """dma-buf GPUDirect needs a kernel of 5.12 or later; past that only NCCL's run-time test can
    tell."""
    try:
        major, minor = (int(part) for part in (kernel or "").split("-")[0].split(".")[:2])
    except ValueError:
        return None, "kernel version unknown, so dma-buf support is unknown"
    if (major, minor) < DMABUF_KERNEL:
        return False, f"kernel {major}.{minor} predates dma-buf RDMA registration (5.12)"
    return None, (
        "dma-buf: the kernel allows it; NCCL tests the NIC and CUDA driver at run time "
        "(ibv_reg_dmabuf_mr), which a probe that opens no device cannot"
    )


def _common_prefix(a: list[str], b: list[str]) -> int:
    count = 0
    for left, right in zip(a, b, strict=False):
        if left != right:
            break
        count += 1
    return count


def nic_link(gpu: dict[str, Any], nic: dict[str, Any]) -> str | None:
    """The PCIe relation of a GPU and a NIC as nvidia-smi topo -m prints it, from their sysfs paths:
    PIX (same PCIe switch: their bridges differ at most in the last, switch-downstream, one), PXB (a
    shared bridge higher up, not the host bridge), PHB (the same root complex only), NODE (other
    root complexes of one NUMA node), SYS (across NUMA nodes); None when a path or NUMA node is
    unknown."""
    if not gpu.get("root_complex") or not nic.get("root_complex"):
        return None
    gpu_path, nic_path = list(gpu.get("pcie_path") or []), list(nic.get("pcie_path") or [])
    if gpu["root_complex"] == nic["root_complex"]:
        shared = _common_prefix(gpu_path, nic_path)
        if shared == 0:
            return "PHB"
        return "PIX" if max(len(gpu_path), len(nic_path)) - shared <= 1 else "PXB"
    if gpu.get("numa_node") is None or nic.get("numa_node") is None:
        return None
    return "NODE" if gpu["numa_node"] == nic["numa_node"] else "SYS"


def collect_network(
    files: Files, host: dict[str, Any], gpus: list[dict[str, Any]], unknown: dict[str, str]
) -> dict[str, Any] | None:
    """The snapshot's `network` section, or None when the capture never asked (see the module
    docstring)."""
    probe = _NetworkProbe(files, host, unknown)
    rdma_list = files.listdir(IB_CLASS)
    net_list = files.listdir(NET_CLASS)
    if (
        not rdma_list.ok
        and rdma_list.reason in NOT_ASKED
        and not net_list.ok
        and net_list.reason in NOT_ASKED
    ):
        return None
    network: dict[str, Any] = {"network_version": NETWORK_VERSION}
    if rdma_list.ok:
        network["rdma"] = [probe.rdma_device(name) for name in rdma_list.value]
    elif rdma_list.reason == "FileNotFoundError":
        network[
            "rdma"
        ] = []  # no RDMA stack loaded: no RDMA device (what NCCL's IB transport would find)
    else:
        network["rdma"] = None
        unknown["network.rdma"] = rdma_list.reason or "unknown"
    if net_list.ok:
        names = list(net_list.value)
        network["interfaces"] = [probe.interface(name) for name in names[:MAX_INTERFACES]]
        if len(names) > MAX_INTERFACES:
            unknown["network.interfaces"] = (
                f"{len(names)} interfaces; the first {MAX_INTERFACES} were read"
            )
    else:
        network["interfaces"] = None
        unknown["network.interfaces"] = net_list.reason or "unknown"
    network["gpu_nic"] = [
        {"gpu": gpu["index"], "nic": nic["name"], "link": nic_link(gpu, nic)}
        for gpu in gpus
        for nic in network["rdma"] or []
    ]
    network["gpudirect"] = probe.gpudirect(host.get("kernel"))
    return network
