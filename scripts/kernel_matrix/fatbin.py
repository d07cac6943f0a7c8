"""Read the CUDA fat binaries of an ELF shared object: per embedded cubin/PTX its SM target and
kernels.

The container layout was read off fatbins that nvcc 13.0 writes
(tests/fixtures/kernel_matrix/*.fatbin, made by tests/fixtures/kernel_matrix/README.md's commands):
a 16-byte header (magic 0xBA55ED50, version, header size, payload size) and entries of (kind, header
size, payload size, ..., SM at byte 28, flags at byte 40, uncompressed size at byte 56). Flag 0x2000
marks an LZ4 block payload, 0x8000 a zstd frame; 0x100000 an arch-specific target (sm_90a), 0x200000
a family target (sm_100f).
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

FATBIN_MAGIC = 0xBA55ED50
KIND_PTX = 1
KIND_ELF = 2
FLAG_LZ4 = 0x2000
FLAG_ZSTD = 0x8000
FLAG_ARCH_SPECIFIC = 0x100000
FLAG_FAMILY = 0x200000


@dataclass(frozen=True)
class Entry:
    """One cubin or PTX text inside a fatbin."""

    kind: str  # "sass" or "ptx"
    sm: int
    suffix: str  # "", "a" or "f"
    compression: str  # "", "lz4" or "zstd"
    payload: bytes

    @property
    def target(self) -> str:
        return f"{'sm' if self.kind == 'sass' else 'compute'}_{self.sm}{self.suffix}"


def lz4_block(src: bytes, size: int) -> bytes:
    """Decompress one raw LZ4 block (no frame) into `size` bytes."""
    out = bytearray()
    i, n = 0, len(src)
    while i < n:
        token = src[i]
        i += 1
        lit = token >> 4
        if lit == 15:
            lit, i = _lz4_len(src, i, lit)
        out += src[i : i + lit]
        i += lit
        if i >= n or len(out) >= size:
            break
        offset = src[i] | (src[i + 1] << 8)
        i += 2
        mlen = token & 15
        if mlen == 15:
            mlen, i = _lz4_len(src, i, mlen)
        _lz4_copy(out, offset, mlen + 4)
    return bytes(out[:size])


def _lz4_len(src: bytes, i: int, base: int) -> tuple[int, int]:
    while True:
        b = src[i]
        i += 1
        base += b
        if b != 255:
            return base, i


def _lz4_copy(out: bytearray, offset: int, mlen: int) -> None:
    start = len(out) - offset
    if offset >= mlen:
        out += out[start : start + mlen]
        return
    # Overlapping match: the pattern of `offset` bytes repeats.
    chunk = bytes(out[start:])
    reps, rest = divmod(mlen, offset)
    out += chunk * reps + chunk[:rest]


def _zstd(payload: bytes) -> bytes:
    try:
        import zstandard  # type: ignore[import-not-found, unused-ignore]
    except (
        ImportError
    ) as exc:  # CUDA 13 builds compress with zstd; without it kernel names would go unseen
        raise RuntimeError("a fatbin entry is zstd-compressed: pip install zstandard") from exc
    return bytes(zstandard.ZstdDecompressor().decompress(payload, max_output_size=1 << 31))


def _entry(buf: bytes | mmap.mmap, p: int) -> tuple[Entry, int]:
    kind, _, hsz, size = struct.unpack_from("<HHIQ", buf, p)
    sm = struct.unpack_from("<I", buf, p + 28)[0]
    flags = struct.unpack_from("<Q", buf, p + 40)[0]
    unpacked = struct.unpack_from("<Q", buf, p + 56)[0] if hsz >= 64 else 0
    suffix = "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY else ""
    comp = "lz4" if flags & FLAG_LZ4 else "zstd" if flags & FLAG_ZSTD else ""
    raw = bytes(buf[p + hsz : p + hsz + size])
    payload = raw
    if comp == "lz4":
        payload = lz4_block(raw, unpacked)
    elif comp == "zstd":
        payload = _zstd(raw)
    entry = Entry("ptx" if kind == KIND_PTX else "sass", sm, suffix, comp, payload)
    return entry, p + hsz + size


def iter_fatbin(buf: bytes | mmap.mmap, start: int, end: int) -> Iterator[Entry]:
    """Every entry of the fatbins laid end to end in buf[start:end]."""
    off = start
    while off + 16 <= end:
        magic, _, hsz, fsz = struct.unpack_from("<IHHQ", buf, off)
        if magic != FATBIN_MAGIC:
            off += 8  # fatbins are 8-aligned; padding in between
            continue
        p, stop = off + hsz, off + hsz + fsz
        while p < stop:
            entry, p = _entry(buf, p)
            yield entry
        off = stop


def section(buf: bytes | mmap.mmap, wanted: str) -> tuple[int, int] | None:
    """(offset, size) of the named section of a 64-bit little-endian ELF file, or None."""
    if bytes(buf[:4]) != b"\x7fELF" or buf[4] != 2:
        return None
    shoff = struct.unpack_from("<Q", buf, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", buf, 0x3A)
    heads = [struct.unpack_from("<IIQQQQ", buf, shoff + i * shentsize) for i in range(shnum)]
    strtab = heads[shstrndx][4]
    key = wanted.encode() + b"\0"
    for name, _, _, _, off, size in heads:
        if bytes(buf[strtab + name : strtab + name + len(key)]) == key:
            return off, size
    return None


def shared_object_entries(path: Path) -> list[Entry]:
    """The fatbin entries of a shared object file ([] when it embeds none)."""
    with open(path, "rb") as fh:
        if fh.read(4) != b"\x7fELF":
            return []
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            where = section(buf, ".nv_fatbin")
            if where is None:
                return []
            return list(iter_fatbin(buf, where[0], where[0] + where[1]))


def fatbin_file_entries(path: Path) -> list[Entry]:
    """The entries of a bare .fatbin file as nvcc -fatbin writes it."""
    data = path.read_bytes()
    return list(iter_fatbin(data, 0, len(data)))
