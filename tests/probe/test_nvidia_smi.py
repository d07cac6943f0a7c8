"""Real captures agree with nvidia-smi printed on the same machine; the nvidia-smi parsers
round-trip."""

from __future__ import annotations

import os
import re

import pytest
from conftest import FIXTURES, examples
from hypothesis import given, settings
from hypothesis import strategies as st

from topoctl.probe.capture import load_capture
from topoctl.probe.collect import probe_capture
from topoctl.probe.nvidia_smi import ParseError, compare, parse_p2p_matrix, parse_topo_matrix

REAL = ["h200-4x-nvswitch-vm", "h200-2x-nvswitch-vm"]
FLAGS = {"r": "read", "w": "write", "n": "nvlink", "a": "atomics", "p": "pci"}
UNDERLINE, RESET = "\x1b[4m", "\x1b[0m"


def read(folder: str, name: str) -> str:
    with open(os.path.join(folder, name), encoding="utf-8") as handle:
        return handle.read()


def real_folder(name: str) -> str:
    folder = os.path.join(FIXTURES, name)
    if name != "h200-4x-nvswitch-vm" and not os.path.isfile(
        os.path.join(folder, "nvidia-smi-topo-m.txt")
    ):
        pytest.skip(f"{name}: no real capture with nvidia-smi outputs committed yet")
    return folder


@pytest.mark.parametrize("name", REAL)
def test_real_capture_agrees_with_nvidia_smi_compare(name):
    folder = real_folder(name)
    snapshot = probe_capture(load_capture(folder), name=name)
    p2p = {flag: read(folder, f"nvidia-smi-topo-p2p-{flag}.txt") for flag in FLAGS}
    assert compare(snapshot, read(folder, "nvidia-smi-topo-m.txt"), p2p) == []


@pytest.mark.parametrize("name", REAL)
def test_real_capture_agrees_with_nvidia_smi_pair_by_pair(name):
    """Independent of compare(): every ordered pair, the link and all five capabilities."""
    folder = real_folder(name)
    snapshot = probe_capture(load_capture(folder), name=name)
    n = len(snapshot["gpus"])
    ours = {(p["src"], p["dst"]): p for p in snapshot["pairs"]}
    links = parse_topo_matrix(read(folder, "nvidia-smi-topo-m.txt"))
    expected = {(i, j) for i in range(n) for j in range(n) if i != j}
    assert set(links) == expected == set(ours)
    checked = 0
    for key in sorted(expected):
        assert ours[key]["link"] == links[key], key
        checked += 1
    for flag, capability in FLAGS.items():
        theirs = parse_p2p_matrix(read(folder, f"nvidia-smi-topo-p2p-{flag}.txt"))
        assert set(theirs) == expected
        for key in sorted(expected):
            assert ours[key]["p2p"][capability] == theirs[key], (flag, key)
            checked += 1
    assert checked == 6 * n * (n - 1)
    # and the GPU names/bus ids agree with nvidia-smi --query-gpu where it was saved
    query = os.path.join(folder, "nvidia-smi-query.csv")
    if os.path.exists(query):
        text = read(folder, "nvidia-smi-query.csv")
        for gpu in snapshot["gpus"]:
            assert gpu["name"] in text
            assert gpu["pci_bus_id"].lower() in text.lower()


def test_compare_reports_a_disagreement():
    folder = os.path.join(FIXTURES, "h200-4x-nvswitch-vm")
    snapshot = probe_capture(load_capture(folder), name="x")
    snapshot["pairs"][0]["link"] = "SYS"
    snapshot["pairs"][1]["p2p"]["write"] = "CNS"
    problems = compare(
        snapshot,
        read(folder, "nvidia-smi-topo-m.txt"),
        {"w": read(folder, "nvidia-smi-topo-p2p-w.txt")},
    )
    assert len(problems) == 2
    assert any("link GPU0->GPU1" in line for line in problems)
    assert any("p2p write" in line for line in problems)


def test_parse_real_topo_m_has_cpu_affinity_columns():
    text = read(os.path.join(FIXTURES, "h200-4x-nvswitch-vm"), "nvidia-smi-topo-m.txt")
    matrix = parse_topo_matrix(text)
    assert len(matrix) == 12 and set(matrix.values()) == {"NV18"}


# -- property tests: render matrices the way nvidia-smi does and parse them back
# ---------------------------
LINK_LABELS = st.one_of(
    st.sampled_from(["PIX", "PXB", "PHB", "NODE", "SYS"]),
    st.integers(1, 18).map(lambda n: f"NV{n}"),
)
P2P_LABELS = st.sampled_from(["OK", "CNS", "GNS", "TNS", "DR", "NS", "U"])


def render_topo_m(n: int, cells: dict, nics: int, underline: bool) -> str:
    head = (
        [f"GPU{i}" for i in range(n)]
        + [f"NIC{k}" for k in range(nics)]
        + ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]
    )
    header = (
        "\t" + (UNDERLINE if underline else "") + "\t".join(head) + (RESET if underline else "")
    )
    lines = [header]
    for i in range(n):
        row = (
            [" X " if i == j else cells[(i, j)] for j in range(n)]
            + ["PIX"] * nics
            + ["0-63", "0", "N/A"]
        )
        lines.append(f"GPU{i}\t" + "\t".join(row))
    for k in range(nics):
        lines.append(
            f"NIC{k}\t" + "\t".join(["PIX"] * n + [" X " if k == m else "PIX" for m in range(nics)])
        )
    lines += [
        "",
        "Legend:",
        "",
        "  X    = Self",
        "  NV#  = Connection traversing a bonded set of # NVLinks",
    ]
    if nics:
        lines += ["", "NIC Legend:", "", *(f"  NIC{k}: mlx5_{k}" for k in range(nics))]
    return "\n".join(lines) + "\n"


def render_p2p(n: int, cells: dict, underline: bool) -> str:
    head = "\t".join(f"GPU{i}" for i in range(n))
    lines = [" \t" + (UNDERLINE if underline else "") + head + "\t" + (RESET if underline else "")]
    for i in range(n):
        lines.append(
            f" GPU{i}\t" + "\t".join("X" if i == j else cells[(i, j)] for j in range(n)) + "\t"
        )
    lines += [
        "",
        "Legend:",
        "",
        "  X    = Self",
        "  OK   = Status Ok",
        "  CNS  = Chipset not supported",
    ]
    return "\n".join(lines) + "\n"


@st.composite
def matrices(draw, labels):
    n = draw(st.integers(1, 16))
    cells = {(i, j): draw(labels) for i in range(n) for j in range(n) if i != j}
    return n, cells


@settings(max_examples=examples(150), deadline=None)
@given(matrices(LINK_LABELS), st.integers(0, 4), st.booleans())
def test_topo_m_round_trip(matrix, nics, underline):
    n, cells = matrix
    assert parse_topo_matrix(render_topo_m(n, cells, nics, underline)) == cells


@settings(max_examples=examples(150), deadline=None)
@given(matrices(P2P_LABELS), st.booleans())
def test_p2p_round_trip(matrix, underline):
    n, cells = matrix
    assert parse_p2p_matrix(render_p2p(n, cells, underline)) == cells


@settings(max_examples=examples(100), deadline=None)
@given(matrices(P2P_LABELS), st.sampled_from(["\r\n", "\n"]), st.integers(0, 3))
def test_p2p_parser_ignores_line_endings_and_leading_blank_lines(matrix, newline, blanks):
    n, cells = matrix
    text = "\n" * blanks + render_p2p(n, cells, True)
    assert parse_p2p_matrix(text.replace("\n", newline)) == cells


@settings(max_examples=examples(100), deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=200))
def test_parsers_raise_parse_error_or_answer_on_any_text(text):
    for parser in (parse_topo_matrix, parse_p2p_matrix):
        try:
            result = parser(text)
        except ParseError:
            continue
        assert isinstance(result, dict)


@settings(max_examples=examples(60), deadline=None)
@given(matrices(P2P_LABELS))
def test_p2p_parser_rejects_an_unknown_status(matrix):
    n, cells = matrix
    if n < 2:
        return
    text = render_p2p(n, cells, False)
    broken = re.sub(r"^( GPU1\t)(\S+)", r"\1BOGUS", text, flags=re.M)
    with pytest.raises(ParseError):
        parse_p2p_matrix(broken)


def test_parsers_reject_text_without_a_matrix():
    for parser in (parse_topo_matrix, parse_p2p_matrix):
        with pytest.raises(ParseError):
            parser(
                "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
            )
        with pytest.raises(ParseError):
            parser("\tGPU0\tGPU1\nGPU0\t X \tNV4\n")  # row GPU1 missing
