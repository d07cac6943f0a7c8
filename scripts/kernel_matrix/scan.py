"""Scan one kernel wheel: per op, the compiled targets and the SMs they run on, with the files they
come from."""

from __future__ import annotations

import re
import shutil
import struct
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from .cubin import elf_sm, text_sections
from .fatbin import Entry, shared_object_entries
from .rules import arch_tokens, classify_kernel, cubin_op
from .targets import arch_token_allows, runs_on

STUB_BYTES = (
    256  # a kernel whose SASS is this small had its body compiled out by an __CUDA_ARCH__ guard
)
_PTX_ENTRY = re.compile(rb"\.entry\s+([A-Za-z_$][\w$]*)")
_NAME_TARGET = re.compile(r"[Ss]m_?(\d{2,3})([af]?)")


@dataclass
class OpFacts:
    """What one wheel compiles for one op (mutable while a wheel is scanned)."""

    targets: dict[str, set[str]] = field(
        default_factory=dict
    )  # file in wheel -> targets with real kernels
    sms: dict[str, set[int]] = field(
        default_factory=dict
    )  # file in wheel -> SMs those targets run on
    kernels: int = 0
    named_arch: bool = (
        False  # some kernel's name says its architecture; then unnamed helpers do not count
    )
    helper_targets: dict[str, set[str]] = field(default_factory=dict)
    helper_sms: dict[str, set[int]] = field(default_factory=dict)

    def add(self, file: str, target: str, sms: list[int], named: bool = True) -> None:
        if not sms:
            return
        targets, where = (
            (self.targets, self.sms) if named else (self.helper_targets, self.helper_sms)
        )
        targets.setdefault(file, set()).add(target)
        where.setdefault(file, set()).update(sms)

    def settle(self) -> None:
        """Keep the architecture-named kernels' SMs when there are any, else the unnamed ones'."""
        if not self.named_arch:
            for file, targets in self.helper_targets.items():
                self.targets.setdefault(file, set()).update(targets)
                self.sms.setdefault(file, set()).update(self.helper_sms[file])
        self.helper_targets, self.helper_sms = {}, {}


def _kernel_sms(name: str, size: int, target: str) -> list[int]:
    if size <= STUB_BYTES:
        return []
    tokens = arch_tokens(name)
    # CUTLASS kernels reuse older parts (Sm90 epilogues in Sm100/Sm120 GEMMs); the newest named one
    # decides.
    return [s for s in runs_on(target) if not tokens or arch_token_allows(max(tokens), s)]


def _entry_kernels(entry: Entry) -> dict[str, int]:
    if entry.kind == "sass":
        return text_sections(entry.payload)
    # PTX: every .entry is a kernel; its size is unknown, so it is not treated as a stub.
    return {m.decode(): STUB_BYTES + 1 for m in _PTX_ENTRY.findall(entry.payload)}


def scan_shared_object(local: Path, inner: str, ops: dict[str, OpFacts]) -> None:
    """Add the ops of one shared object (extracted to `local`, named `inner` in its wheel) to `ops`."""
    seen: dict[str, set[str]] = {}
    for entry in shared_object_entries(local):
        for name, size in _entry_kernels(entry).items():
            op = classify_kernel(inner, name)
            if op is None:
                continue
            facts = ops.setdefault(op, OpFacts())
            seen.setdefault(op, set()).add(name)
            named = bool(arch_tokens(name))
            facts.named_arch |= named
            facts.add(inner, entry.target, _kernel_sms(name, size, entry.target), named)
    for op, names in seen.items():
        ops[op].kernels += len(names)


def scan_cubin(inner: str, head: bytes, ops: dict[str, OpFacts]) -> None:
    """Add one standalone cubin of flashinfer-cubin to `ops`."""
    op = cubin_op(inner)
    sm = elf_sm(head)
    if op is None or sm is None:
        return
    leaf = inner.rsplit("/", 1)[-1]
    suffix = next((m.group(2) for m in _NAME_TARGET.finditer(leaf) if int(m.group(1)) == sm), "")
    target = f"sm_{sm}{suffix}"
    facts = ops.setdefault(op, OpFacts())
    facts.kernels += 1
    facts.add(_cubin_dir(inner), target, runs_on(target))


def _cubin_dir(inner: str) -> str:
    # One source entry per cubin directory keeps the output small; thousands of cubins share one.
    return inner.rsplit("/", 1)[0] + "/*.cubin"


def scan_wheel(wheel: Path) -> dict[str, OpFacts]:
    """All ops of one kernel wheel."""
    ops: dict[str, OpFacts] = {}
    with zipfile.ZipFile(wheel) as zf:
        for info in sorted(zf.infolist(), key=lambda i: i.filename):
            name = info.filename
            if name.endswith(".cubin"):
                with zf.open(info) as fh:
                    scan_cubin(name, fh.read(64), ops)
            elif re.search(r"\.so(\.\d+)*$", name) and _has_fatbin_hint(zf, info):
                with tempfile.TemporaryDirectory(prefix="kmatrix-") as tmp:
                    local = Path(tmp) / "lib.so"
                    with zf.open(info) as src, open(local, "wb") as dst:
                        shutil.copyfileobj(src, dst, 1 << 22)
                    scan_shared_object(local, name, ops)
    for facts in ops.values():
        facts.settle()
    return ops


def _has_fatbin_hint(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bool:
    # Only ELF shared objects can embed a .nv_fatbin section; the header says so without extracting
    # the file.
    with zf.open(info) as fh:
        head = fh.read(64)
    return head[:4] == b"\x7fELF" and struct.unpack_from("<H", head, 16)[0] == 3
