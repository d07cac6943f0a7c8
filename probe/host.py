"""Host facts: hostname, kernel, CPU, NUMA nodes, memory, and whether this is a virtual machine."""
from __future__ import annotations

import platform
import socket
from typing import Any

from topoctl.probe.capture import ProbeFailure, Session
from topoctl.probe.files import Files

HYPERVISOR_VENDORS = ("qemu", "kvm", "vmware", "xen", "microsoft corporation", "amazon ec2", "google",
                      "firecracker", "innotek", "parallels", "openstack", "bochs", "cloud hypervisor")


def _count_facts() -> dict[str, Any]:
    """Cores and memory. /proc answers in microseconds on Linux; psutil (slower to import) elsewhere."""
    import os

    try:
        logical = os.cpu_count()
        cores: set[tuple[str, str]] = set()
        physical_id = core_id = ""
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "physical id":
                    physical_id = value.strip()
                elif key == "core id":
                    core_id = value.strip()
                elif not key and core_id:
                    cores.add((physical_id, core_id))
                    core_id = ""
        if core_id:
            cores.add((physical_id, core_id))
        memory = None
        with open("/proc/meminfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    memory = int(line.split()[1]) * 1024
                    break
        if memory is None:
            raise OSError("no MemTotal")
        return {"cpu_cores_logical": logical, "cpu_cores_physical": len(cores) or logical, "memory_bytes": memory}
    except OSError:
        pass
    try:
        import psutil
    except ImportError:
        raise ProbeFailure("psutil missing") from None
    return {"cpu_cores_logical": psutil.cpu_count(logical=True),
            "cpu_cores_physical": psutil.cpu_count(logical=False),
            "memory_bytes": int(psutil.virtual_memory().total)}


def _platform_facts() -> dict[str, Any]:
    return {"hostname": socket.gethostname(), "kernel": platform.release(), "os": platform.system(),
            "machine": platform.machine()}


def _count_range_list(text: str) -> int:
    """Count the members of a kernel range list such as '0-1,4'."""
    total = 0
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            low, high = part.split("-", 1)
            total += int(high) - int(low) + 1
        else:
            int(part)
            total += 1
    return total


def collect_host(session: Session, files: Files) -> tuple[dict[str, Any], dict[str, str]]:
    """Host section of the snapshot, and the reasons for any field left unknown."""
    unknown: dict[str, str] = {}
    host: dict[str, Any] = {}
    base = session.ask("host", "platform", _platform_facts)
    for key in ("hostname", "kernel", "os", "machine"):
        host[key] = base.value.get(key) if base.ok else None
        if not base.ok:
            unknown[f"host.{key}"] = base.reason or "unknown"
    counts = session.ask("host", "counts", _count_facts)
    if not counts.ok and counts.reason == "NotRecorded":
        counts = session.ask("host", "psutil", _count_facts)  # captures from topoctl 0.1.0 previews
    for key in ("cpu_cores_logical", "cpu_cores_physical", "memory_bytes"):
        host[key] = counts.value.get(key) if counts.ok else None
        if not counts.ok:
            unknown[f"host.{key}"] = counts.reason or "unknown"

    cpuinfo = files.read("/proc/cpuinfo")
    cpu_model, cpu_flags = None, ""
    if cpuinfo.ok:
        for line in cpuinfo.value.splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "model name" and cpu_model is None:
                cpu_model = value.strip()
            elif key == "flags" and not cpu_flags:
                cpu_flags = value
    else:
        unknown["host.cpu_model"] = cpuinfo.reason or "unknown"
    host["cpu_model"] = cpu_model

    online = files.read_stripped("/sys/devices/system/node/online")
    try:
        host["numa_nodes"] = _count_range_list(online) if online else None
    except ValueError:
        host["numa_nodes"] = None
    if host["numa_nodes"] is None:
        unknown["host.numa_nodes"] = "sysfs node/online unreadable"

    vendor = files.read_stripped("/sys/class/dmi/id/sys_vendor")
    product = files.read_stripped("/sys/class/dmi/id/product_name")
    hypervisor = None
    for text in (vendor, product):
        if text and any(name in text.lower() for name in HYPERVISOR_VENDORS):
            hypervisor = text
            break
    flag_says_vm = " hypervisor" in f" {cpu_flags} " or "hypervisor" in cpu_flags.split()
    host["hypervisor"] = hypervisor
    if hypervisor or flag_says_vm:
        host["virtualized"] = True
    elif cpuinfo.ok and cpu_flags:
        host["virtualized"] = False
    else:
        host["virtualized"] = None
        unknown["host.virtualized"] = "no CPU flags or DMI data"
    return host, unknown
