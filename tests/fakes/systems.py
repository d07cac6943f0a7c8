"""Specs of the synthetic reference systems: what the fake NVML binding and the fake sysfs/host answer.

Every number here is written from a documented source or is an assumption stated in the fixture's
README.md (fixtures/<name>/README.md). scripts/make_synthetic_fixtures.py turns each spec into
fixtures/<name>/capture.json by running the real probe against these fakes.
"""
from __future__ import annotations

import uuid as _uuid
from typing import Any

MiB = 1024 * 1024
OK, CNS, GNS, TNS, DR, NS, U = 0, 1, 2, 3, 4, 5, 6
PIX, PXB, PHB, NODE, SYS = 10, 20, 30, 40, 50
CAPS = ("read", "write", "nvlink", "atomics", "pci")
LINK_ACTIVE = 1
NVLINK_4 = 6  # NVML version code of NVLink 4.0 (Hopper)
REMOTE_SWITCH = 2

CPU_FLAGS = ("fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 "
             "ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc cpuid "
             "aperfmperf pni pclmulqdq monitor ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt aes "
             "xsave avx f16c rdrand lahf_lm abm avx2 bmi1 bmi2 avx512f avx512dq")


def _uuid_for(system: str, index: int) -> str:
    return "GPU-" + str(_uuid.uuid5(_uuid.NAMESPACE_URL, f"topoctl-synthetic/{system}/{index}"))


def _cpuinfo(model: str, logical: int, sockets: int) -> str:
    """/proc/cpuinfo of a bare-metal host with two threads per core (so logical // 2 physical cores)."""
    per_socket = logical // sockets
    blocks = []
    for cpu in range(logical):
        blocks.append(f"processor\t: {cpu}\nvendor_id\t: {'AuthenticAMD' if 'AMD' in model else 'GenuineIntel'}\n"
                      f"model name\t: {model}\nphysical id\t: {cpu // per_socket}\nsiblings\t: {per_socket}\n"
                      f"core id\t\t: {(cpu % per_socket) % (per_socket // 2)}\ncpu cores\t: {per_socket // 2}\n"
                      f"flags\t\t: {CPU_FLAGS}\n")
    return "\n".join(blocks) + "\n"


def _matrix(n: int, value: Any) -> list[list[Any]]:
    return [[value(i, j) if callable(value) else value for j in range(n)] for i in range(n)]


def _p2p(n: int, **caps: Any) -> dict[str, list[list[int]]]:
    """caps: capability -> status or f(i, j) -> status. The diagonal is OK, as NVML answers it."""
    return {cap: _matrix(n, lambda i, j, v=caps[cap]: OK if i == j else (v(i, j) if callable(v) else v))
            for cap in CAPS}


def _packages(**versions: str | None) -> dict[str, Any]:
    distributions = {"torch": "torch", "sglang": "sglang", "sgl_kernel": "sgl-kernel",
                     "flashinfer": "flashinfer-python", "vllm": "vllm", "nvidia_ml_py": "nvidia-ml-py",
                     "nccl_wheel": "nvidia-nccl-cu12", "cuda_runtime_wheel": "nvidia-cuda-runtime-cu12"}
    return {key: ({"distribution": dist, "version": versions[key]} if versions.get(key) else None)
            for key, dist in distributions.items()}


def _gpu(system: str, index: int, name: str, bus: str, cc: tuple[int, int], arch: int, memory_mib: int,
         pcie: dict[str, int], mig: list[int] | None = None, nvlinks: list | None = None,
         fabric: dict | None = None) -> dict[str, Any]:
    return {"name": name, "uuid": _uuid_for(system, index), "bus_id": bus, "cc": list(cc), "arch": arch,
            "memory": memory_mib * MiB, "mig": mig, "virt": 0, "pcie": dict(pcie),
            "nvlinks": nvlinks or [], "fabric": fabric}


def _world(system: str, buses: list[str], sysfs_paths: list[str], numa: list[int], bridges: dict[str, str],
           cpu: str, logical: int, sockets: int, memory_bytes: int, vendor: str, product: str,
           packages: dict[str, Any], hostname: str, kernel: str) -> dict[str, Any]:
    files: dict[str, Any] = {
        # what the file says; the probe asks the "cpu" question below, older probes read the file itself
        "read:/proc/cpuinfo": _cpuinfo(cpu, logical, sockets),
        "read:/sys/devices/system/node/online": "0\n" if sockets == 1 else f"0-{sockets - 1}\n",
        "read:/sys/class/dmi/id/sys_vendor": vendor + "\n",
        "read:/sys/class/dmi/id/product_name": product + "\n",
    }
    for bus, real, node in zip(buses, sysfs_paths, numa):
        bdf = bus.lower()[4:]
        files[f"realpath:/sys/bus/pci/devices/{bdf}"] = real
        files[f"read:/sys/bus/pci/devices/{bdf}/numa_node"] = f"{node}\n"
    for bdf, kind in bridges.items():
        vendor_id, device_id = {"root": ("0x1022", "0x14ab") if "AMD" in cpu else ("0x8086", "0x352a"),
                                "switch": ("0x1000", "0xc030")}[kind]
        files[f"read:/sys/bus/pci/devices/{bdf}/vendor"] = vendor_id + "\n"
        files[f"read:/sys/bus/pci/devices/{bdf}/device"] = device_id + "\n"
        files[f"read:/sys/bus/pci/devices/{bdf}/class"] = "0x060400\n"
    return {
        "files": files,
        "host": {"platform": {"hostname": hostname, "kernel": kernel, "os": "Linux", "machine": "x86_64"},
                 # "cpu" and "counts" are the current questions (/proc/cpuinfo parsed, /proc/meminfo and
                 # os.cpu_count()), "psutil" the one earlier probes asked
                 "cpu": {"model": cpu, "hypervisor_flag": False, "cores_physical": logical // 2},
                 "counts": {"cpu_cores_logical": logical, "memory_bytes": memory_bytes},
                 "psutil": {"cpu_cores_logical": logical, "cpu_cores_physical": logical // 2,
                            "memory_bytes": memory_bytes}},
        "software": {"packages": packages},
        "torch": {},
    }


def acs_config(control: int = 0x0000, capability: int = 0x005F) -> str:
    """A bridge's PCI config space as root reads it, hex text, up to the ACS block: the standard header
    (zeros: only the ACS block matters to the probe) and one extended capability at 0x100, ACS (id 0x000d,
    version 1, last in the list), capability and control registers as Linux's pci_regs.h lays them out."""
    header = (0x000D | (1 << 16)).to_bytes(4, "little")
    return (bytes(0x100) + header + capability.to_bytes(2, "little") + control.to_bytes(2, "little")).hex()


def _torch_facts(spec: dict[str, Any], torch_version: str, cuda: str, nccl: str,
                 peer: Any = True) -> dict[str, Any]:
    gpus = spec["gpus"]
    facts: dict[str, Any] = {"torch": torch_version, "cuda_runtime": cuda, "nccl": nccl, "devices": [], "peer": {}}
    for index, gpu in enumerate(gpus):
        domain, bus, rest = gpu["bus_id"].split(":")
        facts["devices"].append({"torch_index": index, "name": gpu["name"],
                                 "pci_bus_id": f"{int(domain, 16):08x}:{bus.lower()}:{rest.split('.')[0].lower()}.0",
                                 "capability": f"{gpu['cc'][0]}.{gpu['cc'][1]}"})
    for src in range(len(gpus)):
        for dst in range(len(gpus)):
            if src != dst:
                facts["peer"][f"{src}|{dst}"] = peer(src, dst) if callable(peer) else peer
    return facts


# -- 8x RTX PRO 6000 Blackwell Server Edition, PCIe Gen5, two sockets (the field report's system) ---------
def rtx_pro_6000_8x_pcie() -> dict[str, Any]:
    system = "rtx-pro-6000-8x-pcie"
    name = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    buses, paths, numa, bridges = [], [], [], {}
    for socket, root in ((0, 0x00), (1, 0x80)):
        root_port, upstream = f"0000:{root:02x}:01.0", f"0000:{root + 1:02x}:00.0"
        bridges[root_port], bridges[upstream] = "root", "switch"
        for k in range(4):
            downstream = f"0000:{root + 2:02x}:{k:02x}.0"
            gpu_bdf = f"0000:{root + 3 + k:02x}:00.0"
            bridges[downstream] = "switch"
            buses.append(f"0000{gpu_bdf.upper()}")
            paths.append(f"/sys/devices/pci0000:{root:02x}/{root_port}/{upstream}/{downstream}/{gpu_bdf}")
            numa.append(socket)
    pcie = {"cur_gen": 5, "max_gen": 5, "gpu_max_gen": 5, "cur_width": 16, "max_width": 16}
    gpus = [_gpu(system, i, name, buses[i], (12, 0), 10, 97887, pcie, mig=[0, 0]) for i in range(8)]
    for gpu in gpus:  # assumed (README.md): BAR1 covers the 96 GB; no PCIe replays or errors
        gpu["bar1"] = {"total": 128 * 1024 ** 3, "used": 40 * MiB}
        gpu["pcie_counters"] = {"replay": 0, "replay_rollover": 0, "l0_to_recovery": 0, "correctable_errors": 0,
                                "nonfatal_errors": 0, "fatal_errors": 0}
    same_socket = lambda i, j: i // 4 == j // 4  # noqa: E731
    spec = {
        "driver": "575.57.08", "cuda_driver": 12090, "nvml_version": "12.575.57.08", "gpus": gpus,
        "p2p": _p2p(8, read=OK, write=OK, nvlink=NS, atomics=OK, pci=OK),
        "ancestor": _matrix(8, lambda i, j: 0 if i == j else (PXB if same_socket(i, j) else SYS)),
    }
    world = _world(system, buses, paths, numa, bridges, cpu="AMD EPYC 9354 32-Core Processor", logical=128,
                   sockets=2, memory_bytes=1536 * 1024 ** 3, vendor="Supermicro", product="AS -4125GS-TNRT",
                   packages=_packages(torch="2.8.0+cu129", sglang="0.5.12", nvidia_ml_py="12.575.51",
                                      nccl_wheel="2.27.3"),
                   hostname="rtx-pro-6000-8x", kernel="6.8.0-60-generic")
    world["torch"] = {"facts": _torch_facts(spec, "2.8.0+cu129", "12.9", "2.27.3", peer=True)}
    for bdf in bridges:  # assumed (README.md): probed as root, ACS present with redirect off; no IOMMU
        world["files"][f"config:/sys/bus/pci/devices/{bdf}/config"] = acs_config(0x0000)
    return {"name": system, "nvml": spec, "world": world, "with_torch": True}


# -- 8x H100 SXM5 on an HGX baseboard with NVSwitch, bare metal -------------------------------------------
def h100_8x_nvswitch() -> dict[str, Any]:
    system = "h100-8x-nvswitch"
    name = "NVIDIA H100 80GB HBM3"
    # DGX H100 places each GPU behind its own PCIe switch on its own root complex (host bridge).
    roots = [0x15, 0x26, 0x37, 0x48, 0x95, 0xa6, 0xb7, 0xc8]
    buses, paths, numa, bridges = [], [], [], {}
    for index, root in enumerate(roots):
        root_port, upstream, downstream = (f"0000:{root:02x}:01.0", f"0000:{root + 1:02x}:00.0",
                                           f"0000:{root + 2:02x}:00.0")
        gpu_bdf = f"0000:{root + 3:02x}:00.0"
        bridges.update({root_port: "root", upstream: "switch", downstream: "switch"})
        buses.append(f"0000{gpu_bdf.upper()}")
        paths.append(f"/sys/devices/pci0000:{root:02x}/{root_port}/{upstream}/{downstream}/{gpu_bdf}")
        numa.append(0 if index < 4 else 1)
    pcie = {"cur_gen": 5, "max_gen": 5, "gpu_max_gen": 5, "cur_width": 16, "max_width": 16}
    links = [[LINK_ACTIVE, NVLINK_4, REMOTE_SWITCH, f"00000000:{0xe0 + k // 5:02X}:00.0"] for k in range(18)]
    fabric = {"state": 3, "status": 0, "clique_id": 0, "cluster_uuid": bytes(16)}
    gpus = [_gpu(system, i, name, buses[i], (9, 0), 9, 81559, pcie, mig=[0, 0], nvlinks=links, fabric=fabric)
            for i in range(8)]
    same_socket = lambda i, j: i // 4 == j // 4  # noqa: E731
    spec = {
        "driver": "570.133.20", "cuda_driver": 12080, "nvml_version": "12.570.133.20", "gpus": gpus,
        "p2p": _p2p(8, read=OK, write=OK, nvlink=OK, atomics=OK,
                    pci=lambda i, j: OK if same_socket(i, j) else CNS),
        "ancestor": _matrix(8, lambda i, j: 0 if i == j else (NODE if same_socket(i, j) else SYS)),
    }
    world = _world(system, buses, paths, numa, bridges, cpu="Intel(R) Xeon(R) Platinum 8480C", logical=224,
                   sockets=2, memory_bytes=2048 * 1024 ** 3, vendor="NVIDIA", product="DGXH100",
                   packages=_packages(torch="2.8.0+cu128", sglang="0.5.12", nvidia_ml_py="12.570.86",
                                      nccl_wheel="2.27.3"),
                   hostname="h100-8x", kernel="5.15.0-1063-nvidia")
    return {"name": system, "nvml": spec, "world": world, "with_torch": False}


# -- 2x GeForce RTX 4090, PCIe Gen4, no P2P ---------------------------------------------------------------
def rtx_4090_2x_pcie_no_p2p() -> dict[str, Any]:
    system = "rtx-4090-2x-pcie-no-p2p"
    name = "NVIDIA GeForce RTX 4090"
    buses = ["00000000:01:00.0", "00000000:41:00.0"]
    paths = ["/sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0", "/sys/devices/pci0000:00/0000:00:03.1/0000:41:00.0"]
    bridges = {"0000:00:01.1": "root", "0000:00:03.1": "root"}
    pcie = {"cur_gen": 4, "max_gen": 4, "gpu_max_gen": 4, "cur_width": 16, "max_width": 16}
    gpus = [_gpu(system, i, name, buses[i], (8, 9), 8, 24564, pcie) for i in range(2)]
    spec = {
        "driver": "570.153.02", "cuda_driver": 12080, "nvml_version": "12.570.153.02", "gpus": gpus,
        "p2p": _p2p(2, read=GNS, write=GNS, nvlink=NS, atomics=GNS, pci=GNS),
        "ancestor": _matrix(2, lambda i, j: 0 if i == j else PHB),
    }
    world = _world(system, buses, paths, [0, 0], bridges, cpu="AMD Ryzen Threadripper PRO 7975WX 32-Cores",
                   logical=64, sockets=1, memory_bytes=256 * 1024 ** 3, vendor="ASUS", product="Pro WS WRX90E-SAGE SE",
                   packages=_packages(torch="2.8.0+cu128", sglang="0.5.5", nvidia_ml_py="12.570.86",
                                      nccl_wheel="2.27.3"),
                   hostname="rtx-4090-2x", kernel="6.8.0-60-generic")
    return {"name": system, "nvml": spec, "world": world, "with_torch": False}


# -- 4x L40S, PCIe Gen4, two sockets, GPU 2 running x8 of x16 ---------------------------------------------
def l40s_4x_pcie_2numa() -> dict[str, Any]:
    system = "l40s-4x-pcie-2numa"
    name = "NVIDIA L40S"
    roots = [0x16, 0x38, 0x98, 0xb8]  # each GPU on its own CPU root port and host bridge
    buses, paths, bridges = [], [], {}
    for root in roots:
        root_port, gpu_bdf = f"0000:{root:02x}:01.0", f"0000:{root + 1:02x}:00.0"
        bridges[root_port] = "root"
        buses.append(f"0000{gpu_bdf.upper()}")
        paths.append(f"/sys/devices/pci0000:{root:02x}/{root_port}/{gpu_bdf}")
    numa = [0, 0, 1, 1]
    gpus = []
    for i in range(4):
        pcie = {"cur_gen": 4, "max_gen": 4, "gpu_max_gen": 4, "cur_width": 16, "max_width": 16}
        if i == 2:
            pcie["cur_width"] = 8  # down-trained: a riser or slot that trained x8 (a fault to report)
        if i == 3:
            pcie["cur_gen"] = 1  # idle power saving: below max generation, not down-trained
        gpus.append(_gpu(system, i, name, buses[i], (8, 9), 8, 46068, pcie))
    same_socket = lambda i, j: numa[i] == numa[j]  # noqa: E731
    within = lambda i, j: OK if same_socket(i, j) else CNS  # noqa: E731
    spec = {
        "driver": "570.133.20", "cuda_driver": 12080, "nvml_version": "12.570.133.20", "gpus": gpus,
        "p2p": _p2p(4, read=within, write=within, nvlink=NS, atomics=within, pci=within),
        "ancestor": _matrix(4, lambda i, j: 0 if i == j else (NODE if same_socket(i, j) else SYS)),
    }
    world = _world(system, buses, paths, numa, bridges, cpu="Intel(R) Xeon(R) Gold 6448Y", logical=128,
                   sockets=2, memory_bytes=1024 * 1024 ** 3, vendor="Dell Inc.", product="PowerEdge R760xa",
                   packages=_packages(torch="2.8.0+cu128", sglang="0.5.12", nvidia_ml_py="12.570.86",
                                      nccl_wheel="2.27.3"),
                   hostname="l40s-4x", kernel="5.14.0-503.el9.x86_64")
    return {"name": system, "nvml": spec, "world": world, "with_torch": False}


# -- a machine without an NVIDIA driver ---------------------------------------------------------------------
def no_gpu() -> dict[str, Any]:
    spec = {"init_error": "LibraryNotFound", "gpus": []}
    world = {"files": {}, "host": {}, "software": {}, "torch": {}}
    return {"name": "no-gpu", "nvml": spec, "world": world, "with_torch": False}


SYSTEMS = {
    "rtx-pro-6000-8x-pcie": rtx_pro_6000_8x_pcie,
    "h100-8x-nvswitch": h100_8x_nvswitch,
    "rtx-4090-2x-pcie-no-p2p": rtx_4090_2x_pcie_no_p2p,
    "l40s-4x-pcie-2numa": l40s_4x_pcie_2numa,
    "no-gpu": no_gpu,
}
