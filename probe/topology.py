"""Pure derivations from raw probe answers: link labels, NVLink pairing, PCIe tree, summary.

No I/O here, so every rule of thumb (how nvidia-smi names a link, when a link is down-trained, what
counts as an NVSwitch system) is tested directly on data.

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import re
from typing import Any

from topoctl.core.gpus import architecture_for_cc, architecture_for_nvml_id
from topoctl.core.p2p import pair_verdicts

HIDDEN_BUS = re.compile(r"^[fF:.]+$")
BDF = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


def architecture_name(nvml_arch: int | None, cc: list[int] | None) -> str | None:
    """From NVML's architecture id, else (older drivers) from the compute capability; both in
    gpus.yaml."""
    named = architecture_for_nvml_id(nvml_arch) if nvml_arch is not None else None
    if named is not None:
        return named
    if cc:
        return architecture_for_cc(cc[0], cc[1])
    return None


def cuda_version_text(value: int) -> str:
    """NVML's 13000 -> '13.0', 12080 -> '12.8'."""
    return f"{value // 1000}.{(value % 1000) // 10}"


def bus_key(bus_id: str | None) -> str | None:
    """Normalise a PCI bus id so NVML's and torch's forms compare: 'bus:dev.fn' lower case, domain
    dropped if 0."""
    if not bus_id:
        return None
    text = bus_id.strip().lower()
    parts = text.split(":")
    if len(parts) == 3:
        domain = int(parts[0], 16) if parts[0] else 0
        return f"{domain:x}:{parts[1]}:{parts[2]}"
    return text


def pcie_findings(pcie: dict[str, Any]) -> dict[str, bool | None]:
    """Width below max is a real fault (a bad riser, a slot wired x8); generation below max alone is
    usually power saving at idle, so it is reported separately and never called down-trained."""
    width, max_width = pcie.get("current_width"), pcie.get("max_width")
    gen, max_gen, gpu_max = pcie.get("current_gen"), pcie.get("max_gen"), pcie.get("gpu_max_gen")
    return {
        "downtrained": (width < max_width) if width is not None and max_width is not None else None,
        "gen_below_max": (gen < max_gen) if gen is not None and max_gen is not None else None,
        "slot_limited": (max_gen < gpu_max)
        if max_gen is not None and gpu_max is not None
        else None,
    }


def split_sysfs_path(real: str) -> tuple[str | None, list[str]]:
    """'/sys/devices/pci0000:17/0000:17:00.0/0000:18:00.0' -> ('pci0000:17', ['0000:17:00.0',
    '0000:18:00.0'])."""
    parts = [part for part in real.split("/") if part]
    root, chain = None, []
    for part in parts:
        if BDF.match(part):
            chain.append(part.lower())
        elif part.startswith("pci") and not chain:
            root = part
    return root, chain


def nvlink_pairs(
    gpus: list[dict[str, Any]], links: dict[int, list[dict[str, Any]]], pairs: list[dict[str, Any]]
) -> dict[str, Any]:
    """Count bonded links per pair and label each pair as nvidia-smi topo -m does (NV<n> or the PCIe
    level).

    Direct GPU-GPU links are matched by the remote PCI bus id. Links to an NVSwitch connect every
    pair of switch-attached GPUs; a pair gets min(links of each) like nvidia-smi. Inside a VM the
    remote bus id can be hidden (all F's) and the remote type unknown: NCCL then assumes an
    NVSwitch, and so do we, saying so.
    """
    by_bus = {bus_key(g["pci_bus_id"]): g["index"] for g in gpus if g.get("pci_bus_id")}
    direct: dict[tuple[int, int], int] = {}
    switch_links: dict[int, int] = {}
    hidden = False
    for index, gpu_links in links.items():
        for link in gpu_links:
            remote_bus = link.get("remote_bus_id") or ""
            is_hidden = bool(HIDDEN_BUS.match(remote_bus)) if remote_bus else True
            if link.get("remote_type") == "gpu" and not is_hidden and bus_key(remote_bus) in by_bus:
                peer = by_bus[bus_key(remote_bus)]
                direct[(index, peer)] = direct.get((index, peer), 0) + 1
            elif link.get("remote_type") == "switch" or is_hidden:
                switch_links[index] = switch_links.get(index, 0) + 1
                hidden = hidden or (is_hidden and link.get("remote_type") != "switch")
    any_links = any(links.values())
    for pair in pairs:
        i, j = pair["src"], pair["dst"]
        count = direct.get((i, j), 0)
        if switch_links.get(i) and switch_links.get(j):
            count += min(switch_links[i], switch_links[j])
        pair["nvlinks"] = count
        pair["link"] = f"NV{count}" if count else pair.get("pcie_ancestor")
    nvswitch = bool(switch_links) if any_links else False
    return {
        "present": any_links,
        "nvswitch": nvswitch,
        "switch_hidden": hidden,
        "switch_links_per_gpu": {str(k): v for k, v in sorted(switch_links.items())},
    }


def pcie_tree(gpus: list[dict[str, Any]], host: dict[str, Any]) -> dict[str, Any]:
    """Root complexes with their GPUs and NUMA nodes. In a VM the tree is the hypervisor's, not
    physical."""
    groups: dict[str, dict[str, Any]] = {}
    for gpu in gpus:
        root = gpu.get("root_complex")
        if root is None:
            continue
        group = groups.setdefault(root, {"id": root, "numa_node": gpu.get("numa_node"), "gpus": []})
        group["gpus"].append(gpu["index"])
    modes = {gpu.get("virtualization_mode") for gpu in gpus}
    if host.get("virtualized") or modes & {"passthrough", "vgpu"}:
        virtual: bool | None = True
    elif host.get("virtualized") is False and modes <= {"none"}:
        virtual = False
    else:
        virtual = None
    return {"virtual": virtual, "root_complexes": [groups[key] for key in sorted(groups)]}


def _interconnect(
    gpus: list[dict[str, Any]], pairs: list[dict[str, Any]], nvlink: dict[str, Any]
) -> str | None:
    if not gpus:
        return "none"
    if len(gpus) == 1:
        return "single"
    if any(gpu["nvlink"].get("active_links") is None for gpu in gpus):
        return None
    with_links = [gpu for gpu in gpus if gpu["nvlink"]["active_links"]]
    if not with_links:
        return "pcie"
    if len(with_links) < len(gpus):
        return "mixed"
    if all(pair["nvlinks"] for pair in pairs):
        return "nvswitch" if nvlink.get("nvswitch") else "nvlink"
    return "nvlink-partial"


def summarize(snapshot: dict[str, Any]) -> dict[str, Any]:
    gpus, pairs = snapshot["gpus"], snapshot["pairs"]

    verdicts = pair_verdicts(
        pairs
    )  # NCCL's P2P transport needs read and write OK (topoctl/core/p2p.py)
    numa = {gpu.get("numa_node") for gpu in gpus}
    return {
        "gpu_count": len(gpus),
        "gpu_names": sorted({gpu["name"] for gpu in gpus if gpu.get("name")}),
        "compute_capabilities": sorted(
            {gpu["compute_capability"] for gpu in gpus if gpu.get("compute_capability")}
        ),
        "architectures": sorted({gpu["architecture"] for gpu in gpus if gpu.get("architecture")}),
        "interconnect": _interconnect(gpus, pairs, snapshot["nvlink"]),
        "all_pairs_p2p": verdicts["all_pairs_p2p"],
        "p2p_pairs_ok": verdicts["p2p_pairs_ok"],
        "p2p_pairs_total": verdicts["p2p_pairs_total"],
        "nvlink_all_pairs": verdicts["nvlink_all_pairs"],
        "numa_nodes_spanned": None if None in numa else len(numa),
        # copies: one list in two places would print as a YAML anchor and alias (&id001 / *id001)
        "root_complex_groups": [
            list(group["gpus"]) for group in snapshot["pcie"]["root_complexes"]
        ],
        "downtrained_gpus": [gpu["index"] for gpu in gpus if gpu["pcie"].get("downtrained")],
        "virtualized": snapshot["pcie"]["virtual"],
        "mig_enabled": any(gpu.get("mig_mode") == "enabled" for gpu in gpus),
    }


def sysfs_bdf(nvml_bus_id: str) -> str:
    """NVML '00000000:18:00.0' -> sysfs '0000:18:00.0' (domain at least 4 digits, lower case, as
    Linux prints it: a VMD domain such as 0x10000 stays '10000', not cut to '0000')."""
    text = nvml_bus_id.strip().lower()
    domain, _, rest = text.partition(":")
    try:
        return f"{int(domain, 16):04x}:{rest}"
    except ValueError:
        return f"{domain[-4:].rjust(4, '0')}:{rest}"
