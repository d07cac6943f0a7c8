"""What the probe can see of the PCIe path without a transfer: ACS on the bridges, the IOMMU, BAR1,
error counters.

A driver that says P2P "OK" is not enough: with PCIe ACS redirecting peer requests up to the root
complex, or an IOMMU translating them, transfers between GPUs behind one switch hang or crawl while
`nvidia-smi topo -p2p` says OK; a BAR1 smaller than GPU memory limits what a peer can map. These are
the facts behind such reports, read from the same places the kernel and the driver use:

- ACS (Access Control Services) of every bridge above a GPU, from the bridge's PCI config space
  (`/sys/bus/pci/devices/BDF/config`). The ACS block is an extended capability (offset 0x100 and
  up), which Linux shows only to root: drivers/pci/pci-sysfs.c `pci_read_config` gives other users
  the first 64 bytes. An unreadable block is said so (`readable: false`, with the reason), never
  guessed. Register layout as Linux's include/uapi/linux/pci_regs.h: extended capability id 0x000d,
  capability register at +4, control register at +6; control bits SV 0x01, TB 0x02, RR 0x04 (P2P
  request redirect), CR 0x08 (P2P completion redirect), UF 0x10, EC 0x20, DT 0x40. RR or CR set on a
  bridge between two GPUs sends their peer traffic up through the root complex (and the IOMMU).
- The IOMMU: `/sys/class/iommu` (one entry per IOMMU unit the kernel drives), each GPU's
  `/sys/bus/pci/devices/BDF/iommu_group` and that group's `type` (DMA, DMA-FQ: translated; identity:
  pass-through; as the kernel's sysfs-kernel-iommu_groups ABI names them) and the kernel command
  line (`intel_iommu=`, `amd_iommu=`, `iommu=`, `iommu.passthrough=`; only those switches are
  recorded, under the capture's `host` section as `iommu_cmdline`, never the whole command line).
- BAR1 (the window peers and the host map GPU memory through) against GPU memory: NVML
  nvmlDeviceGetBAR1MemoryInfo.
- PCIe replay and error counters where NVML gives them: nvmlDeviceGetPcieReplayCounter and the
  nvmlDeviceGetFieldValues PCIe counters (ids as the binding defines them; NotSupported is common on
  VMs).

Every question goes through the recording Session (sections `nvml` and `files`), so captures replay
them; a capture recorded before these questions existed answers NotRecorded and the fields are null
with the reason.

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import copy
import os
from typing import TYPE_CHECKING, Any

from topoctl.probe.capture import Answer, ProbeFailure, Session
from topoctl.probe.topology import sysfs_bdf

if TYPE_CHECKING:
    from topoctl.probe.files import Files
    from topoctl.probe.nvml import Nvml

ACS_EXT_CAP_ID = 0x000D
EXT_CAP_START = 0x100
ACS_CONTROL_BITS = {
    "source_validation": 0x01,
    "translation_blocking": 0x02,
    "request_redirect": 0x04,
    "completion_redirect": 0x08,
    "upstream_forwarding": 0x10,
    "egress_control": 0x20,
    "direct_translated": 0x40,
}
MAX_CONFIG = 4096
# NVML field ids by the binding's constant names (nvidia-ml-py); the binding gives the numbers.
PCIE_FIELDS = {
    "replay_rollover": "NVML_FI_DEV_PCIE_REPLAY_ROLLOVER_COUNTER",
    "l0_to_recovery": "NVML_FI_DEV_PCIE_L0_TO_RECOVERY_COUNTER",
    "correctable_errors": "NVML_FI_DEV_PCIE_COUNT_CORRECTABLE_ERRORS",
    "nonfatal_errors": "NVML_FI_DEV_PCIE_COUNT_NON_FATAL_ERROR",
    "fatal_errors": "NVML_FI_DEV_PCIE_COUNT_FATAL_ERROR",
}
# nvmlValueType_t -> the member of c_nvmlValue_t holding the value
_VALUE_MEMBER = {
    0: "dVal",
    1: "uiVal",
    2: "ulVal",
    3: "ullVal",
    4: "sllVal",
    5: "siVal",
    6: "usVal",
}
IOMMU_CMDLINE_KEYS = ("intel_iommu", "amd_iommu", "iommu", "iommu.passthrough", "iommu.strict")
TRANSLATED_GROUP_TYPES = frozenset({"DMA", "DMA-FQ"})


# ------------------------------------------------------------------------------------------------
# doors


def read_config(session: Session, bdf: str) -> Answer:
    """The PCI config space of `bdf` as hex text (what this user may read: 64 bytes unless root)."""
    path = f"/sys/bus/pci/devices/{bdf}/config"

    def live() -> str:
        try:
            with open(path, "rb") as handle:
                return handle.read(MAX_CONFIG).hex()
        except OSError as exc:
            raise ProbeFailure(type(exc).__name__) from None

    return session.ask("files", f"config:{path}", live)


def bar1(nvml: Nvml, i: int) -> Answer:
    def live() -> dict[str, int]:
        info = nvml._call("nvmlDeviceGetBAR1MemoryInfo", nvml._handle(i))
        return {
            "total": int(info.bar1Total),
            "used": int(info.bar1Used),
            "free": int(info.bar1Free),
        }

    return nvml._ask("nvmlDeviceGetBAR1MemoryInfo", i, live=live)


def replay_counter(nvml: Nvml, i: int) -> Answer:
    return nvml._ask(
        "nvmlDeviceGetPcieReplayCounter",
        i,
        live=lambda: int(nvml._call("nvmlDeviceGetPcieReplayCounter", nvml._handle(i))),
    )


def pcie_field_values(nvml: Nvml, i: int) -> Answer:
    """{name: value or "err:<reason>"} for PCIE_FIELDS, in one NVML call."""

    def live() -> dict[str, Any]:
        lib = nvml._lib()
        names = [name for name, constant in PCIE_FIELDS.items() if hasattr(lib, constant)]
        if not names:
            raise ProbeFailure("FunctionNotFound")
        ids = [getattr(lib, PCIE_FIELDS[name]) for name in names]
        values = nvml._call("nvmlDeviceGetFieldValues", nvml._handle(i), ids)
        out: dict[str, Any] = {}
        for name, value in zip(names, values, strict=False):
            status = int(value.nvmlReturn)
            if status != 0:
                out[name] = "err:NotSupported" if status == 3 else f"err:NVMLError({status})"
                continue
            member = _VALUE_MEMBER.get(int(value.valueType))
            out[name] = int(getattr(value.value, member)) if member else "err:unknown value type"
        return out

    return nvml._ask("nvmlDeviceGetFieldValues", i, "pcie", live=live)


# ----------------------------------------------------------------------------------------------
# parsing


def parse_acs(config_hex: str) -> dict[str, Any]:
    """ACS of one bridge from its config space (hex text): readable, present, capability/control
    bits, redirect.

    Pure: tests feed it bytes. Fewer than 0x104 bytes means the extended space was not readable (not
    root).
    """
    try:
        data = bytes.fromhex(config_hex)
    except ValueError:
        return {
            "readable": False,
            "reason": "config space is not hex text",
            "present": None,
            "redirect": None,
        }
    if len(data) < EXT_CAP_START + 8:
        return {
            "readable": False,
            "present": None,
            "redirect": None,
            "reason": f"only {len(data)} bytes of config space readable: the extended "
            "capabilities (ACS) "
            "need root (Linux shows other users 64 bytes)",
        }
    offset, seen = EXT_CAP_START, set()
    while offset and offset + 8 <= len(data) and offset not in seen:
        seen.add(offset)
        header = int.from_bytes(data[offset : offset + 4], "little")
        if header in (0, 0xFFFFFFFF):
            break
        if header & 0xFFFF == ACS_EXT_CAP_ID:
            capability = int.from_bytes(data[offset + 4 : offset + 6], "little")
            control = int.from_bytes(data[offset + 6 : offset + 8], "little")
            enabled = {name: bool(control & bit) for name, bit in ACS_CONTROL_BITS.items()}
            return {
                "readable": True,
                "present": True,
                "capability": f"0x{capability:04x}",
                "control": f"0x{control:04x}",
                "enabled": enabled,
                "redirect": enabled["request_redirect"] or enabled["completion_redirect"],
                "reason": None,
            }
        offset = (header >> 20) & 0xFFC
    return {"readable": True, "present": False, "redirect": False, "reason": None}


def cmdline_iommu(cmdline: str | None) -> dict[str, str]:
    """The IOMMU switches of a kernel command line (`intel_iommu=on iommu=pt` -> {...})."""
    out: dict[str, str] = {}
    for word in (cmdline or "").split():
        key, sep, value = word.partition("=")
        if sep and key in IOMMU_CMDLINE_KEYS:
            out[key] = value
    return out


def iommu_mode(
    present: bool | None, group_types: list[str | None], cmdline: dict[str, str]
) -> str | None:
    """translated | passthrough | mixed | off | None (unknown), from the GPUs' group types first."""
    types = {t for t in group_types if t}
    if types:
        translated = bool(types & TRANSLATED_GROUP_TYPES)
        identity = "identity" in types
        if translated and identity:
            return "mixed"
        if translated:
            return "translated"
        if identity:
            return "passthrough"
        return None
    if present is False and not any(g is not None for g in group_types):
        return "off"
    if cmdline.get("iommu") == "pt" or cmdline.get("iommu.passthrough") == "1":
        return "passthrough"
    return None


def pair_acs(
    path_a: list[str], path_b: list[str], acs_of: dict[str, dict[str, Any]]
) -> tuple[bool | None, str | None]:
    """Whether ACS redirects peer traffic on the bridges between two GPUs: those on either GPU's
    path below the bridges both share (a shared switch's downstream ports, or the whole path when
    they meet at the root). (True | False | None, reason when None)."""
    if not path_a or not path_b:
        return None, "the PCIe path above a GPU is not visible (common in VMs)"
    shared = 0
    while shared < min(len(path_a), len(path_b)) and path_a[shared] == path_b[shared]:
        shared += 1
    between = path_a[shared:] + path_b[shared:]
    if shared:
        between.append(
            path_a[shared - 1]
        )  # the switch port both hang off: its ACS decides the turn-around too
    if not between:
        return False, None
    redirects = [acs_of.get(bdf, {}).get("redirect") for bdf in between]
    if any(value is True for value in redirects):
        return True, None
    if all(value is False for value in redirects):
        return False, None
    first = next(bdf for bdf, value in zip(between, redirects, strict=True) if value is None)
    return (
        None,
        "ACS not readable on a bridge between them "
        f"({acs_of.get(first, {}).get('reason') or 'not read'})",
    )


# ---------------------------------------------------------------------------------------------
# collect


def collect(
    session: Session, nvml: Nvml, files: Files, snapshot: dict[str, Any], unknown: dict[str, str]
) -> None:
    """Add BAR1, PCIe counters, IOMMU group and ACS facts to `snapshot` (gpus, pairs, a top-level
    `iommu`).

    A capture recorded before these questions existed answers none of them: then one
    `unknown["pcie_checks"]` says so instead of a line per field."""
    found: dict[str, str] = {}
    _collect(session, nvml, files, snapshot, found)
    never_asked = (
        session.replaying
        and all(
            files.listdir(path).reason == "NotRecorded"
            for path in ("/sys/class/iommu", "/sys/kernel/iommu_groups")
        )
        and all(bar1(nvml, gpu["index"]).reason == "NotRecorded" for gpu in snapshot["gpus"])
    )
    if never_asked:
        unknown["pcie_checks"] = (
            "NotRecorded: the capture predates the ACS, IOMMU, BAR1 and PCIe counter questions"
        )
    else:
        unknown.update(found)


def _collect(
    session: Session, nvml: Nvml, files: Files, snapshot: dict[str, Any], unknown: dict[str, str]
) -> None:
    acs_of: dict[str, dict[str, Any]] = {}
    for gpu in snapshot["gpus"]:
        at = f"gpus.{gpu['index']}"
        _gpu_bar1(nvml, gpu, at, unknown)
        _gpu_counters(nvml, gpu, at, unknown)
        for bridge in gpu.get("pcie_bridges") or []:
            bdf = bridge.get("bdf")
            if not bdf:
                continue
            if bdf not in acs_of:
                answer = read_config(session, bdf)
                acs_of[bdf] = (
                    parse_acs(answer.value)
                    if answer.ok
                    else {
                        "readable": False,
                        "present": None,
                        "redirect": None,
                        "reason": f"config space: {answer.reason}",
                    }
                )
            bridge["acs"] = copy.deepcopy(acs_of[bdf])  # each GPU its own copy: no YAML anchors
    _iommu(session, files, snapshot, unknown)
    gpus = {gpu["index"]: gpu for gpu in snapshot["gpus"]}
    reasons: dict[str, str] = {}
    for pair in snapshot["pairs"]:
        a, b = gpus.get(pair["src"], {}), gpus.get(pair["dst"], {})
        value, reason = pair_acs(a.get("pcie_path") or [], b.get("pcie_path") or [], acs_of)
        pair["pcie_acs_redirect"] = value
        if value is None:
            reasons[f"pairs.{pair['src']}-{pair['dst']}.pcie_acs_redirect"] = reason or "unknown"
    if reasons and len(reasons) == len(snapshot["pairs"]) and len(set(reasons.values())) == 1:
        unknown["pairs.*.pcie_acs_redirect"] = next(
            iter(reasons.values())
        )  # one line when every pair says the same
    else:
        unknown.update(reasons)


def _gpu_bar1(nvml: Nvml, gpu: dict[str, Any], at: str, unknown: dict[str, str]) -> None:
    answer = bar1(nvml, gpu["index"])
    if not answer.ok or not isinstance(answer.value, dict):
        gpu["bar1"] = None
        unknown[f"{at}.bar1"] = answer.reason or "unknown"
        return
    total = answer.value.get("total")
    memory = gpu.get("memory_total_bytes")
    covers = (
        (total >= memory)
        if isinstance(total, int) and isinstance(memory, int) and memory > 0
        else None
    )
    gpu["bar1"] = {
        "total_bytes": total,
        "used_bytes": answer.value.get("used"),
        "covers_memory": covers,
    }


def _gpu_counters(nvml: Nvml, gpu: dict[str, Any], at: str, unknown: dict[str, str]) -> None:
    counters: dict[str, Any] = {}
    replay = replay_counter(nvml, gpu["index"])
    counters["replay"] = replay.value if replay.ok else None
    fields = pcie_field_values(nvml, gpu["index"])
    missing: dict[str, str] = {}
    if not replay.ok:
        missing["replay"] = replay.reason or "unknown"
    for name in PCIE_FIELDS:
        value = fields.value.get(name) if fields.ok and isinstance(fields.value, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            counters[name] = value
        else:
            counters[name] = None
            missing[name] = (
                value[4:]
                if isinstance(value, str) and value.startswith("err:")
                else (fields.reason or "unknown")
            )
    gpu["pcie_counters"] = counters
    if len(missing) == len(counters) and len(set(missing.values())) == 1:
        unknown[f"{at}.pcie_counters"] = next(
            iter(missing.values())
        )  # one line when NVML gives none of them
    else:
        unknown.update({f"{at}.pcie_counters.{name}": reason for name, reason in missing.items()})


def _read_cmdline() -> str:
    try:
        with open("/proc/cmdline", encoding="utf-8", errors="replace") as handle:
            return handle.read(64 * 1024)
    except OSError as exc:
        raise ProbeFailure(type(exc).__name__) from None


def _iommu(
    session: Session, files: Files, snapshot: dict[str, Any], unknown: dict[str, str]
) -> None:
    units = files.listdir("/sys/class/iommu")
    present: bool | None = (
        bool(units.value) if units.ok else (False if units.reason == "FileNotFoundError" else None)
    )
    groups_answer = files.listdir("/sys/kernel/iommu_groups")
    cmdline_answer = session.ask("host", "iommu_cmdline", lambda: cmdline_iommu(_read_cmdline()))
    cmdline = (
        cmdline_answer.value if cmdline_answer.ok and isinstance(cmdline_answer.value, dict) else {}
    )
    group_types: list[str | None] = []
    for gpu in snapshot["gpus"]:
        at = f"gpus.{gpu['index']}"
        gpu["iommu_group"] = gpu["iommu_group_type"] = None
        bus = gpu.get("pci_bus_id")
        if not bus:
            group_types.append(None)
            continue
        link = files.realpath(f"/sys/bus/pci/devices/{sysfs_bdf(bus)}/iommu_group")
        if not link.ok:
            if not (
                link.reason == "FileNotFoundError" and present is False
            ):  # no IOMMU: no group, nothing unknown
                unknown[f"{at}.iommu_group"] = (
                    "no iommu_group link"
                    if link.reason == "FileNotFoundError"
                    else str(link.reason)
                )
            group_types.append(None)
            continue
        name = os.path.basename(str(link.value))
        gpu["iommu_group"] = int(name) if name.isdigit() else None
        kind = files.read_stripped(f"/sys/kernel/iommu_groups/{name}/type")
        gpu["iommu_group_type"] = kind
        if kind is None:
            unknown[f"{at}.iommu_group_type"] = "group type unreadable (older kernel)"
        group_types.append(kind)
    groups = (
        len(groups_answer.value)
        if groups_answer.ok and isinstance(groups_answer.value, list)
        else None
    )
    if present is None:
        unknown["iommu.present"] = units.reason or "unknown"
    mode = iommu_mode(present, group_types, cmdline)
    if mode is None:
        unknown["iommu.mode"] = "no IOMMU group type and no telling kernel switch"
    snapshot["iommu"] = {
        "present": present,
        "units": units.value if units.ok else None,
        "groups": groups,
        "mode": mode,
        "cmdline": cmdline,
    }


def summary(snapshot: dict[str, Any]) -> dict[str, Any]:
    """Summary lines rules read: pairs whose bridges redirect peer traffic, GPUs whose BAR1 is
    smaller than their memory, and the IOMMU mode (each null when unknown)."""
    pairs = snapshot.get("pairs") or []
    redirect = [pair.get("pcie_acs_redirect") for pair in pairs]
    gpus = snapshot.get("gpus") or []
    covers = [(gpu.get("bar1") or {}).get("covers_memory") for gpu in gpus]
    return {
        "acs_redirect_pairs": (
            [[p["src"], p["dst"]] for p in pairs if p.get("pcie_acs_redirect") is True]
            if pairs and (True in redirect or None not in redirect)
            else None
        ),
        "bar1_small_gpus": (
            [g["index"] for g, c in zip(gpus, covers, strict=True) if c is False]
            if False in covers or (covers and None not in covers)
            else None
        ),
        "iommu_mode": (snapshot.get("iommu") or {}).get("mode"),
    }
