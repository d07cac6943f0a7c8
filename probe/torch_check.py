"""Optional cross-check through PyTorch (`topoctl probe --with-torch`).

`torch.cuda.can_device_access_peer` is what the field report used to confirm P2P on all 56 pairs; it
asks the CUDA runtime, not NVML, so it catches the cases where the two disagree. torch is imported
only here. Device order: torch numbers GPUs in CUDA order, which can differ from NVML's PCI order,
so answers are keyed by PCI bus id and mapped back to NVML indices by the collector.

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from typing import Any

from topoctl.probe.capture import Answer, ProbeFailure, Session


def _torch_facts() -> dict[str, Any]:
    try:
        import torch
    except ImportError:
        raise ProbeFailure(
            "torch not installed (pip install torch; from a clone of topoctl: pip install "
            "'.[torch]')"
        ) from None
    facts: dict[str, Any] = {
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "nccl": None,
        "devices": [],
        "peer": {},
    }
    if not torch.cuda.is_available():
        raise ProbeFailure("torch.cuda.is_available() is False")
    try:
        version = torch.cuda.nccl.version()
        facts["nccl"] = (
            ".".join(str(part) for part in version) if isinstance(version, tuple) else str(version)
        )
    except Exception as exc:
        facts["nccl_error"] = type(exc).__name__
    count = torch.cuda.device_count()
    for index in range(count):
        props = torch.cuda.get_device_properties(index)
        bus = None
        if hasattr(props, "pci_bus_id"):
            bus = f"{getattr(props, 'pci_domain_id', 0):08x}:{props.pci_bus_id:02x}:{getattr(props, 'pci_device_id', 0):02x}.0"
        facts["devices"].append(
            {
                "torch_index": index,
                "name": props.name,
                "pci_bus_id": bus,
                "capability": f"{props.major}.{props.minor}",
            }
        )
    for src in range(count):
        for dst in range(count):
            if src != dst:
                facts["peer"][f"{src}|{dst}"] = bool(torch.cuda.can_device_access_peer(src, dst))
    return facts


def collect_torch(session: Session) -> Answer:
    """The torch cross-check's answer (ok with facts, or the reason it could not run)."""
    return session.ask("torch", "facts", _torch_facts)
