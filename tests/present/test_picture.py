"""`topoctl show --format dot|svg|png`: the topology as a Graphviz picture, on every reference
system."""

from __future__ import annotations

import os
import shutil

import pytest
from conftest import fixture_dirs

from topoctl.present.picture import to_dot
from topoctl.snapshot.catalogue import system_snapshot

SYSTEMS = [name for name in fixture_dirs() if name != "no-gpu"]
HAVE_DOT = shutil.which("dot") is not None


@pytest.mark.parametrize("name", SYSTEMS)
def test_every_system_draws_every_gpu(cli, name):
    code, out, err = cli(["show", "--system", name, "--format", "dot"])
    assert code == 0, err
    assert out.startswith("digraph topology {") and out.rstrip().endswith("}")
    for gpu in system_snapshot(name)["gpus"]:
        assert f"  gpu{gpu['index']} [shape=box" in out


def test_nvswitch_nics_and_numa_on_the_dgx_box():
    dot = to_dot(system_snapshot("h100-8x-8nic-ib"))
    assert dot.count('-> nvswitch [dir=none, color="#5e35b1", penwidth=2, label="NV18"]') == 8
    assert dot.count("[shape=ellipse") == 8 and '"mlx5_3\\nInfiniBand 400 Gb/s"' in dot
    assert "cluster_numa_0" in dot and "cluster_numa_1" in dot
    assert dot.count('label="Gen5 x16"') == 8


def test_pcie_picture_marks_the_downtrained_link_and_the_p2p_exceptions():
    dot = to_dot(system_snapshot("l40s-4x-pcie-2numa"))
    assert 'label="Gen4 x8 of x16", color="#c62828"' in dot
    assert "no P2P on 4 of 6 PCIe pairs (the others drawn)" in dot
    assert dot.count('label="P2P OK"') == 2


def test_labels_from_the_snapshot_cannot_break_the_dot_text():
    snapshot = system_snapshot("rtx-4090-2x-pcie-no-p2p")
    snapshot["gpus"][0]["name"] = 'evil" ] ; x -> y [label="\\'
    dot = to_dot(snapshot)
    assert '\\"' in dot and 'evil" ]' not in dot


@pytest.mark.skipif(not HAVE_DOT, reason="Graphviz is not installed here")
def test_svg_and_png_through_graphviz(cli, tmp_path):
    svg = tmp_path / "t.svg"
    assert cli(["show", "--system", "h100-8x-8nic-ib", "--format", "svg", "-o", str(svg)])[0] == 0
    assert "<svg" in svg.read_text()
    png = tmp_path / "t.png"
    assert cli(["show", "--system", "h100-8x-8nic-ib", "--format", "png", "-o", str(png)])[0] == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_without_graphviz_a_clear_message(cli, monkeypatch, tmp_path):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    code, _, err = cli(
        ["show", "--system", "h100-8x-8nic-ib", "--format", "svg", "-o", str(tmp_path / "t.svg")]
    )
    assert (
        code == 2 and "needs Graphviz's `dot` program" in err and "apt-get install graphviz" in err
    )


def test_png_needs_a_file(cli):
    code, _, err = cli(["show", "--system", "h100-8x-8nic-ib", "--format", "png"])
    assert code == 2 and "-o FILE" in err


def _draw_pictures_module():
    """scripts/draw_pictures.py, imported as a module (its check needs no Graphviz)."""
    import importlib.util

    from conftest import ROOT

    spec = importlib.util.spec_from_file_location(
        "draw_pictures", os.path.join(ROOT, "scripts", "draw_pictures.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_reference_systems_picture_in_docs_is_what_the_code_draws_now():
    """Each docs/pictures/<system>.dot equals to_dot() today, and its .svg carries that text's
    digest."""
    assert _draw_pictures_module().stale_pictures() == [], "run python scripts/draw_pictures.py"


def test_a_changed_picture_is_found_stale(tmp_path, monkeypatch):
    from conftest import ROOT

    module = _draw_pictures_module()
    folder = tmp_path / "pictures"
    folder.mkdir()
    for name in SYSTEMS:
        for suffix in ("dot", "svg"):
            source = os.path.join(ROOT, "docs", "pictures", f"{name}.{suffix}")
            (folder / f"{name}.{suffix}").write_text(
                open(source, encoding="utf-8").read(), encoding="utf-8"
            )
    monkeypatch.setattr(module, "FOLDER", str(folder))
    assert module.stale_pictures() == []
    dot = folder / "l40s-4x-pcie-2numa.dot"
    dot.write_text(dot.read_text().replace("Gen4 x8", "Gen4 x16"))
    (folder / "h200-1x-vm.svg").write_text(
        (folder / "h200-1x-vm.svg").read_text().replace("dot text sha256 ", "dot text sha256 0")
    )
    assert module.stale_pictures() == ["h200-1x-vm", "l40s-4x-pcie-2numa"]


def test_svg_stamp_round_trip():
    from topoctl.present.picture import dot_digest, stamp_svg, svg_stamp

    svg = stamp_svg('<?xml version="1.0"?>\n<svg width="1pt"></svg>\n', "digraph t {}\n")
    assert svg.index("<!-- topoctl picture") < svg.index("<svg") and svg_stamp(svg) == dot_digest(
        "digraph t {}\n"
    )
    assert svg_stamp("<svg></svg>") is None


def test_readme_shows_a_picture_from_docs():
    import re

    from conftest import ROOT

    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    shown = re.findall(r"!\[[^\]]+\]\((docs/pictures/[\w.-]+\.svg)\)", readme)
    assert shown and all(os.path.isfile(os.path.join(ROOT, path)) for path in shown)
