"""The synthetic reference systems, for the tests: each is data, fixtures/<name>/spec.json (what the
fake NVML binding and the fake sysfs/host answer), written from the sources in
fixtures/<name>/README.md. scripts/make_synthetic_fixtures.py turns each spec into
fixtures/<name>/capture.json by running the real probe against these fakes. SYSTEMS[name]() returns
a fresh copy of a spec.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable

FIXTURES = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "fixtures"
)
CPU_FLAGS = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr "
    "sse sse2 ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc "
    "cpuid aperfmperf pni pclmulqdq monitor ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe "
    "popcnt aes xsave avx f16c rdrand lahf_lm abm avx2 bmi1 bmi2 avx512f avx512dq"
)


def _cpuinfo(model: str, logical: int, sockets: int) -> str:
    """/proc/cpuinfo of a bare-metal host with two threads per core (so logical // 2 physical
    cores)."""
    per_socket = logical // sockets
    blocks = []
    for cpu in range(logical):
        blocks.append(
            f"processor\t: {cpu}\nvendor_id\t: "
            f"{'AuthenticAMD' if 'AMD' in model else 'GenuineIntel'}\nmodel name\t: "
            f"{model}\nphysical id\t: {cpu // per_socket}\nsiblings\t: {per_socket}\ncore "
            f"id\t\t: {(cpu % per_socket) % (per_socket // 2)}\ncpu cores\t: "
            f"{per_socket // 2}\nflags\t\t: {CPU_FLAGS}\n"
        )
    return "\n".join(blocks) + "\n"


def _loader(name: str) -> Callable[[], dict[str, Any]]:
    def load() -> dict[str, Any]:
        with open(os.path.join(FIXTURES, name, "spec.json"), encoding="utf-8") as handle:
            spec = json.load(handle)
        return {
            "name": name,
            "nvml": spec["nvml"],
            "world": spec["world"],
            "with_torch": spec["with_torch"],
        }

    return load


SYSTEMS = {
    name: _loader(name)
    for name in sorted(os.listdir(FIXTURES))
    if os.path.isfile(os.path.join(FIXTURES, name, "spec.json"))
}


def acs_config(control: int = 0x0000, capability: int = 0x005F) -> str:
    """A bridge's PCI config space as root reads it, hex text, up to the ACS block: the standard
    header (zeros: only the ACS block matters to the probe) and one extended capability at 0x100,
    ACS (id 0x000d, version 1, last in the list), capability and control registers as Linux's
    pci_regs.h lays them out. The 8x RTX PRO 6000 spec.json holds these for its bridges (control
    0x0000)."""
    header = (0x000D | (1 << 16)).to_bytes(4, "little")
    return (
        bytes(0x100) + header + capability.to_bytes(2, "little") + control.to_bytes(2, "little")
    ).hex()
