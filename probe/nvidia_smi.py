"""Parsers for `nvidia-smi topo -m` and `nvidia-smi topo -p2p r|w|n|a|p` text.

topoctl does not use these to probe (it asks NVML directly); they exist so that real captures can be
checked against what nvidia-smi printed on the same machine, pair by pair, and so that users can
compare.

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import re

from topoctl.core.p2p import P2P_CODES

DEVICE = re.compile(r"^(GPU|NIC)\d+$")
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
P2P_FLAGS = {"r": "read", "w": "write", "n": "nvlink", "a": "atomics", "p": "pci"}


class ParseError(ValueError):
    """The text is not an nvidia-smi topology matrix."""


def _matrix(text: str) -> tuple[list[str], dict[str, list[str]]]:
    header: list[str] | None = None
    rows: dict[str, list[str]] = {}
    for raw in ANSI.sub("", text).splitlines():
        tokens = raw.split()
        if not tokens:
            if header and rows:
                break
            continue
        if tokens[0].startswith("Legend"):
            break
        if header is None:
            devices = [token for token in tokens if DEVICE.match(token)]
            if devices and tokens[0] == devices[0]:
                header = devices
            continue
        if DEVICE.match(tokens[0]):
            rows[tokens[0]] = tokens[1:]
    if not header:
        raise ParseError("no header line with GPU0 ... found")
    for label in header:
        if label.startswith("GPU") and label not in rows:
            raise ParseError(f"row {label} missing")
    return header, rows


def parse_topo_matrix(text: str) -> dict[tuple[int, int], str]:
    """`nvidia-smi topo -m` -> {(i, j): 'NV18' | 'PIX' | 'PXB' | 'PHB' | 'NODE' | 'SYS'} for GPU
    pairs i != j."""
    header, rows = _matrix(text)
    result: dict[tuple[int, int], str] = {}
    for label, cells in rows.items():
        if not label.startswith("GPU"):
            continue
        if len(cells) < len(header):
            raise ParseError(f"row {label} has {len(cells)} cells, expected at least {len(header)}")
        src = int(label[3:])
        for column, cell in zip(header, cells, strict=False):
            if column.startswith("GPU") and column != label:
                result[(src, int(column[3:]))] = cell
    return result


def parse_p2p_matrix(text: str) -> dict[tuple[int, int], str]:
    """`nvidia-smi topo -p2p X` -> {(i, j): 'OK' | 'CNS' | 'GNS' | 'TNS' | 'DR' | 'NS' | 'U'}."""
    header, rows = _matrix(text)
    result: dict[tuple[int, int], str] = {}
    for label, cells in rows.items():
        if len(cells) < len(header):
            raise ParseError(f"row {label} has {len(cells)} cells, expected {len(header)}")
        src = int(label[3:])
        for column, cell in zip(header, cells, strict=False):
            if column == label:
                continue
            if cell not in P2P_CODES:
                raise ParseError(f"row {label}, column {column}: {cell!r} is not a P2P status")
            result[(src, int(column[3:]))] = cell
    return result


def compare(snapshot: dict, topo_m: str | None, p2p: dict[str, str]) -> list[str]:
    """Every disagreement between a snapshot and nvidia-smi's matrices, as readable lines (empty =
    agree).

    `p2p` maps the nvidia-smi flag (r, w, n, a, p) to that command's output text.
    """
    problems: list[str] = []
    pairs = {(pair["src"], pair["dst"]): pair for pair in snapshot["pairs"]}
    if topo_m is not None:
        for key, label in sorted(parse_topo_matrix(topo_m).items()):
            ours = pairs.get(key, {}).get("link")
            if ours != label:
                problems.append(
                    f"link GPU{key[0]}->GPU{key[1]}: nvidia-smi {label}, topoctl {ours}"
                )
    for flag, text in sorted(p2p.items()):
        capability = P2P_FLAGS[flag]
        for key, status in sorted(parse_p2p_matrix(text).items()):
            ours = pairs.get(key, {}).get("p2p", {}).get(capability)
            if ours != status:
                problems.append(
                    f"p2p {capability} GPU{key[0]}->GPU{key[1]}: nvidia-smi {status}, topoctl "
                    f"{ours}"
                )
    expected = {
        (i, j) for i in range(len(snapshot["gpus"])) for j in range(len(snapshot["gpus"])) if i != j
    }
    if set(pairs) != expected:
        problems.append(f"pairs: expected {len(expected)} ordered pairs, snapshot has {len(pairs)}")
    return problems
