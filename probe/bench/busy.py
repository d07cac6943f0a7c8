"""Is a GPU busy before `topoctl bench` measures it? (NVML: compute processes and utilisation.)

A benchmark on a GPU another process is using measures the contention, not the machine: bench says
so on stderr and in the measurements' `problems`, and goes on. Asked live through the probe's NVML
door (probe/nvml.py), never recorded; any question NVML cannot answer is simply not reported.

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from topoctl.probe.capture import Session
from topoctl.probe.nvml import Nvml


def busy_gpus(indices: list[int]) -> list[str]:
    """One line per GPU (NVML index) that has other compute processes or is more than 10% utilised."""
    nvml = Nvml(Session())
    if not nvml.init().ok:
        return []
    lines: list[str] = []
    try:
        for index in indices:
            processes = nvml._ask(
                "nvmlDeviceGetComputeRunningProcesses",
                index,
                live=lambda i=index: [
                    int(getattr(p, "pid", 0))
                    for p in nvml._call("nvmlDeviceGetComputeRunningProcesses", nvml._handle(i))
                ],
            )
            utilisation = nvml._ask(
                "nvmlDeviceGetUtilizationRates",
                index,
                live=lambda i=index: int(
                    nvml._call("nvmlDeviceGetUtilizationRates", nvml._handle(i)).gpu
                ),
            )
            parts: list[str] = []
            if processes.ok and processes.value:
                parts.append(f"{len(processes.value)} compute process(es) running")
            if utilisation.ok and isinstance(utilisation.value, int) and utilisation.value > 10:
                parts.append(f"{utilisation.value}% utilised")
            if parts:
                lines.append(
                    f"GPU {index} is busy ({', '.join(parts)}): its figures measure the "
                    "contention too"
                )
    finally:
        nvml.shutdown()
    return lines
