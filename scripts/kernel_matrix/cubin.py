"""The code sections of one cubin (a CUDA device ELF): each `.text.<symbol>` section is one
function's SASS."""

from __future__ import annotations

import struct


def text_sections(cubin: bytes) -> dict[str, int]:
    """Mangled function name -> SASS byte size, for a 64-bit cubin; {} for anything else."""
    if cubin[:4] != b"\x7fELF" or len(cubin) < 64 or cubin[4] != 2:
        return {}
    shoff = struct.unpack_from("<Q", cubin, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    if shoff + shnum * shentsize > len(cubin) or shstrndx >= shnum:
        return {}
    heads = [struct.unpack_from("<IIQQQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    strtab = heads[shstrndx][4]
    out: dict[str, int] = {}
    for name, _, _, _, _, size in heads:
        end = cubin.find(b"\0", strtab + name)
        label = cubin[strtab + name : end].decode("ascii", "replace")
        if label.startswith(".text."):
            out[label[6:]] = out.get(label[6:], 0) + size
    return out


def elf_sm(cubin_head: bytes) -> int | None:
    """The SM number a standalone cubin targets: bits 8-15 of e_flags in the ELFOSABI_CUDA (0x41)
    layout nvcc 13 writes and every flashinfer-cubin 0.5.0-0.6.12 cubin uses; None for any other
    layout."""
    if cubin_head[:4] != b"\x7fELF" or len(cubin_head) < 0x34 or cubin_head[7] != 0x41:
        return None
    return int((struct.unpack_from("<I", cubin_head, 0x30)[0] >> 8) & 0xFF)
