"""Minimal snapshots (docs/architecture.md, schema_version 1) for the tests that need a machine the
built-in systems do not cover (hostile strings, drift); tests/autoconf/test_autoconf_snapshots.py
checks that they load.
"""

from __future__ import annotations

import copy
from typing import Any


def make_snapshot(
    name: str = "test-box",
    gpu_name: str = "NVIDIA RTX PRO 6000 Blackwell Server Edition",
    count: int = 8,
    capability: str = "12.0",
    interconnect: str = "pcie",
    p2p: str = "OK",
    link: str = "NODE",
    sglang: str | None = "0.5.12",
    hostname: str = "node-1",
    driver: str = "580.95.05",
    nccl: str = "2.27.3",
    cuda: str = "12.9",
) -> dict[str, Any]:
    major, minor = capability.split(".")
    sm = int(major) * 10 + int(minor)
    arch = {
        9: "hopper",
        10: "blackwell",
        12: "blackwell",
        8: "ada" if minor == "9" else "ampere",
    }.get(int(major), "unknown")
    gpus = []
    for index in range(count):
        gpus.append(
            {
                "index": index,
                "name": gpu_name,
                "uuid": f"GPU-{index:08d}",
                "pci_bus_id": f"00000000:{index + 16:02x}:00.0",
                "compute_capability": capability,
                "sm": sm,
                "architecture": arch,
                "memory_total_bytes": 96 * 2**30,
                "mig_mode": "disabled",
                "virtualization_mode": "none",
                "numa_node": 0 if index < count // 2 else 1,
                "root_complex": f"pci0000:{index:02x}",
                "pcie_path": [],
                "pcie": {
                    "current_gen": 5,
                    "max_gen": 5,
                    "current_width": 16,
                    "max_width": 16,
                    "downtrained": False,
                },
                "nvlink": {
                    "links_supported": 0,
                    "active_links": 0,
                    "version": None,
                    "version_name": None,
                    "remote": {"gpu": 0, "switch": 0, "unknown": 0},
                },
                "fabric": None,
            }
        )
    nv = interconnect in ("nvswitch", "nvlink")
    pairs = []
    for src in range(count):
        for dst in range(count):
            if src == dst:
                continue
            pairs.append(
                {
                    "src": src,
                    "dst": dst,
                    "p2p": {
                        "read": p2p,
                        "write": p2p,
                        "nvlink": "OK" if nv else "NS",
                        "atomics": p2p,
                        "pci": p2p,
                    },
                    "link": "NV18" if nv else link,
                    "nvlinks": 18 if nv else 0,
                    "pcie_ancestor": link if not nv else "PHB",
                    "torch_can_access_peer": None,
                }
            )
    ok = count * (count - 1) if p2p == "OK" else 0
    return {
        "schema_version": 1,
        "topoctl_version": "0.1.0",
        "source": {"kind": "capture", "name": name, "captured_at": None},
        "host": {
            "hostname": hostname,
            "kernel": "6.8.0",
            "os": "Ubuntu 24.04",
            "cpu_model": "AMD EPYC 9555",
            "cpu_cores_logical": 128,
            "cpu_cores_physical": 64,
            "numa_nodes": 2,
            "memory_bytes": 2**40,
            "virtualized": False,
            "hypervisor": None,
        },
        "gpus": gpus,
        "pairs": pairs,
        "nvlink": {"present": nv, "nvswitch": interconnect == "nvswitch", "switch_hidden": False},
        "pcie": {"virtual": False, "root_complexes": []},
        "software": {
            "driver": driver,
            "cuda_driver": cuda,
            "cuda_runtime": cuda,
            "nccl": nccl,
            "torch": "2.8.0",
            "sglang": sglang,
            "sgl_kernel": None,
            "flashinfer": None,
            "vllm": None,
            "nvidia_ml_py": "13.580.82",
        },
        "summary": {
            "gpu_count": count,
            "gpu_names": [gpu_name],
            "compute_capabilities": [capability],
            "architectures": [arch],
            "interconnect": interconnect,
            "all_pairs_p2p": p2p == "OK",
            "p2p_pairs_ok": ok,
            "p2p_pairs_total": count * (count - 1),
            "nvlink_all_pairs": nv,
            "numa_nodes_spanned": 2,
            "root_complex_groups": [list(range(count))],
            "downtrained_gpus": [],
            "virtualized": False,
        },
        "unknown": {},
    }


def hostile(snapshot: dict[str, Any], marker: str) -> dict[str, Any]:
    """The same machine with every free-text field carrying shell metacharacters aimed at `marker`."""
    evil = f"x'\"$(touch {marker})`touch {marker}`;touch {marker}\nNCCL_X=1 $(touch {marker})'"
    out = copy.deepcopy(snapshot)
    out["source"]["name"] = "box" + evil
    out["host"]["hostname"] = "host" + evil
    for gpu in out["gpus"]:
        gpu["name"] = "GPU" + evil
    out["summary"]["gpu_names"] = ["GPU" + evil]
    for key in ("driver", "nccl", "cuda_driver", "torch"):
        out["software"][key] = "1.0" + evil
    return out
