"""Host facts: hostname, kernel, CPU, NUMA nodes, memory, and whether this is a virtual machine.

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import platform
import socket
from typing import Any

from topoctl.probe.capture import Answer, ProbeFailure, Session
from topoctl.probe.files import Files

HYPERVISOR_VENDORS = (
    "qemu",
    "kvm",
    "vmware",
    "xen",
    "microsoft corporation",
    "amazon ec2",
    "google",
    "firecracker",
    "innotek",
    "parallels",
    "openstack",
    "bochs",
    "cloud hypervisor",
)


def parse_cpuinfo(text: str) -> dict[str, Any]:
    """The facts topoctl needs from /proc/cpuinfo text, in one pass: the first model name, whether
    the first flags line says `hypervisor` (None: no flags line), and the physical cores (distinct
    physical id/core id pairs; None when the file names no core ids, as in many VMs and on Arm)."""
    model: str | None = None
    flags: str | None = None
    cores: set[tuple[str, str]] = set()
    physical_id = core_id = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and model is None:
            model = value.strip()
        elif key == "flags" and flags is None:
            flags = value
        elif key == "physical id":
            physical_id = value.strip()
        elif key == "core id":
            core_id = value.strip()
        elif not key and core_id:
            cores.add((physical_id, core_id))
            core_id = ""
    if core_id:
        cores.add((physical_id, core_id))
    return {
        "model": model,
        "hypervisor_flag": None
        if flags is None or not flags.strip()
        else "hypervisor" in flags.split(),
        "cores_physical": len(cores) or None,
    }


def _cpu_facts() -> dict[str, Any]:
    """/proc/cpuinfo read once and parsed: only the parsed facts are recorded (the file is ~1 KB a
    CPU)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            return parse_cpuinfo(handle.read())
    except OSError as exc:
        raise ProbeFailure(type(exc).__name__) from None


def _count_facts() -> dict[str, Any]:
    """Logical CPUs and memory. /proc answers in microseconds on Linux; psutil (slower to import)
    elsewhere, which also counts physical cores (on Linux they come from the "cpu" question,
    /proc/cpuinfo)."""
    import os

    try:
        memory = None
        with open("/proc/meminfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    memory = int(line.split()[1]) * 1024
                    break
        if memory is None:
            raise OSError("no MemTotal")
        return {"cpu_cores_logical": os.cpu_count(), "memory_bytes": memory}
    except OSError:
        pass
    try:
        import psutil
    except ImportError:
        raise ProbeFailure("psutil missing") from None
    return {
        "cpu_cores_logical": psutil.cpu_count(logical=True),
        "cpu_cores_physical": psutil.cpu_count(logical=False),
        "memory_bytes": int(psutil.virtual_memory().total),
    }


def _platform_facts() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "os": platform.system(),
        "machine": platform.machine(),
    }


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
    cpu = _cpu_answer(session, files)
    cpu_facts = cpu.value if cpu.ok and isinstance(cpu.value, dict) else {}
    _cores_and_memory(counts, cpu_facts, host, unknown)
    model = cpu_facts.get("model")
    host["cpu_model"] = model if isinstance(model, str) else None
    if not cpu.ok:
        unknown["host.cpu_model"] = cpu.reason or "unknown"
    online = files.read_stripped("/sys/devices/system/node/online")
    try:
        host["numa_nodes"] = _count_range_list(online) if online else None
    except ValueError:
        host["numa_nodes"] = None
    if host["numa_nodes"] is None:
        unknown["host.numa_nodes"] = "sysfs node/online unreadable"
    hypervisor_flag = cpu_facts.get("hypervisor_flag")
    _virtualization(
        files, hypervisor_flag if isinstance(hypervisor_flag, bool) else None, host, unknown
    )
    return host, unknown


def _cpu_answer(session: Session, files: Files) -> Answer:
    """The "cpu" question's answer; for captures made before it existed, the recorded /proc/cpuinfo."""
    cpu = session.ask("host", "cpu", _cpu_facts)
    if not cpu.ok and cpu.reason == "NotRecorded":
        # Captures made before the "cpu" question hold the whole file, and their "counts" hold the
        # physical cores: replay them as the probe of that time read them.
        text = files.read("/proc/cpuinfo")
        cpu = (
            Answer(True, value={**parse_cpuinfo(text.value), "cores_physical": None})
            if text.ok and isinstance(text.value, str)
            else text
        )
    return cpu


def _cores_and_memory(
    counts: Answer, cpu_facts: dict[str, Any], host: dict[str, Any], unknown: dict[str, str]
) -> None:
    """Logical and physical CPU cores and memory bytes into `host` (physical from the core ids when
    seen)."""
    for key in ("cpu_cores_logical", "cpu_cores_physical", "memory_bytes"):
        host[key] = counts.value.get(key) if counts.ok else None
    cores = cpu_facts.get("cores_physical")
    if isinstance(cores, int) and not isinstance(cores, bool) and cores > 0:
        host["cpu_cores_physical"] = cores
    elif host["cpu_cores_physical"] is None:
        host["cpu_cores_physical"] = host[
            "cpu_cores_logical"
        ]  # no core ids (VMs, Arm): one thread a core
    for key in ("cpu_cores_logical", "cpu_cores_physical", "memory_bytes"):
        if host[key] is None:
            unknown[f"host.{key}"] = (counts.reason if not counts.ok else None) or "unknown"


def _virtualization(
    files: Files, hypervisor_flag: bool | None, host: dict[str, Any], unknown: dict[str, str]
) -> None:
    """`hypervisor` (the DMI vendor or product naming one) and `virtualized` (that, or the CPU
    flag)."""
    vendor = files.read_stripped("/sys/class/dmi/id/sys_vendor")
    product = files.read_stripped("/sys/class/dmi/id/product_name")
    hypervisor = None
    for text in (vendor, product):
        if text and any(name in text.lower() for name in HYPERVISOR_VENDORS):
            hypervisor = text
            break
    host["hypervisor"] = hypervisor
    if hypervisor or hypervisor_flag:
        host["virtualized"] = True
    elif hypervisor_flag is False:
        host["virtualized"] = False
    else:
        host["virtualized"] = None
        unknown["host.virtualized"] = "no CPU flags or DMI data"
