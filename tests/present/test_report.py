"""`topoctl report -o report.html`: one self-contained page, checked as text and as a real browser
renders it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
HAVE_DOT = shutil.which("dot") is not None
# What would make a browser fetch something: an attribute naming a resource, a CSS url() or @import,
# a script.
FETCHES = re.compile(
    r"""(?:\s(?:src|href|srcset|poster|data|action)\s*=\s*["']?(?!#)[^"'\s>]+)"""
    r"""|url\((?!\s*["']?#)|@import|<script|<link\b""",
    re.I,
)


def test_the_fetch_pattern_finds_what_a_browser_would_load():
    for fetching in (
        '<img src="https://example.org/a.png">',
        "<style>@import 'x.css'</style>",
        '<div style="background: url(https://example.org/a.png)">',
        '<link rel="stylesheet" href="a.css">',
        '<a href="http://example.org/">',
    ):
        assert FETCHES.search(fetching), fetching
    assert FETCHES.search('<g clip-path="url(#p1)"><use xlink:href="#glyph"/></g>') is None


def _report(cli, tmp_path, *argv: str) -> str:
    out = tmp_path / "report.html"
    code, _, err = cli(["report", *argv, "-o", str(out)])
    assert code == 0, err
    return out.read_text(encoding="utf-8")


def test_page_holds_every_part_and_fetches_nothing(cli, tmp_path):
    page = _report(cli, tmp_path, "--system", "h200-1x-vm", "--model", "llama-3.1-8b")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    for heading in ("Topology", "GPU matrix", "Measurements", "Recommended launch", "Why", "Check"):
        assert f"<h2>{heading}</h2>" in page or f"<h3>{heading}</h3>" in page, heading
    assert (
        "SGLANG_ARGS=&#x27;--tp-size 1&#x27;" in page and "op-table band" in page
    )  # the launch and its band
    assert "torch_symm_mem/one_shot" in page  # the real H200's measured allreduce table
    assert FETCHES.search(page) is None, FETCHES.search(page)
    assert "<?xml" not in page and "<!DOCTYPE svg" not in page and "xmlns" not in page


def test_matrix_has_the_nic_columns_and_the_p2p_verdicts(cli, tmp_path):
    page = _report(cli, tmp_path, "--system", "h100-8x-8nic-ib")
    table = page[page.index('<table class="matrix">') : page.index("</table>")]
    assert table.count("<tr>") == 9 and "<th>mlx5_0</th>" in table
    assert (
        table.count('<td class="ok">NV18+</td>') == 56
        and table.count('<td class="nic">PXB</td>') == 8
    )


def test_check_findings_of_a_launch_file(cli, tmp_path):
    launch = tmp_path / "launch.env"
    launch.write_text('SGLANG_ARGS="--tp-size 4 --enable-torch-symm-mem"\nNCCL_P2P_LEVEL=SYS\n')
    page = _report(cli, tmp_path, "--system", "l40s-4x-pcie-2numa", "--launch", str(launch))
    assert (
        "nccl-p2p-level-through-host-bridge" in page
        and "torch-symm-mem-before-sm90-ignored" in page
    )
    assert "2 warning(s)" in page


def test_a_missing_launch_file_exits_2_with_a_hint_and_writes_no_page(cli, tmp_path):
    """A CI step `topoctl report --launch launch.env` must fail when the launch is not there (it
    exited 0 with the error in the page, so a typo in the path passed the step)."""
    out = tmp_path / "report.html"
    missing = tmp_path / "missing.env"
    code, stdout, err = cli(
        ["report", "--system", "h200-1x-vm", "--launch", str(missing), "-o", str(out)]
    )
    assert (code, stdout) == (2, "") and not out.exists()
    assert err.splitlines()[0] == f"topoctl: error: --launch: no such file or folder: {missing}"
    assert err.splitlines()[1].startswith("  hint: ")


def test_a_launch_file_check_cannot_read_exits_with_checks_code_and_its_hint(cli, tmp_path):
    """Present but unreadable as a launch: check's own message and hint, once, as report's error; no
    page."""
    out = tmp_path / "report.html"
    broken = tmp_path / "launch.env"
    broken.write_text('SGLANG_ARGS="--tp-size 1\n')  # an unterminated quote
    check_code, _, check_err = cli(["check", str(broken), "--system", "h200-1x-vm"])
    assert check_code == 2, check_err  # the premise: check itself exits 2 on it
    code, stdout, err = cli(
        ["report", "--system", "h200-1x-vm", "--launch", str(broken), "-o", str(out)]
    )
    assert (code, stdout) == (2, "") and not out.exists()
    first, hint = check_err.strip().splitlines()[:2]
    assert err.splitlines() == [
        first.replace("topoctl: error: ", "topoctl: error: --launch: "),
        hint,
    ]


def test_what_check_says_on_stderr_about_a_launch_it_judged_reaches_the_user(cli, tmp_path):
    """The embedded check's notes and warnings (the SGLang version read from an image tag, a
    launch.env made for another system) are what a user reads to trust the page's findings: report
    passes them on to its own stderr when the check succeeds, as `topoctl check` prints them, and
    keeps them out of stdout."""
    launch = os.path.join(
        os.path.dirname(__file__),
        os.pardir,
        "data",
        "launch_corpus",
        "compose",
        "compose_count_two_tp4.yaml",
    )
    check_code, _, check_err = cli(["check", launch, "--system", "h200-4x-nvswitch-vm"])
    note = next(
        line for line in check_err.splitlines() if "from the image tag" in line
    )  # the premise
    assert check_code in (0, 1)
    out = tmp_path / "report.html"
    code, stdout, err = cli(
        ["report", "--system", "h200-4x-nvswitch-vm", "--launch", launch, "-o", str(out)]
    )
    assert (code, stdout) == (0, "") and out.exists()
    assert note in err.splitlines()


def test_without_graphviz_or_matplotlib_the_page_says_what_is_left_out(cli, monkeypatch, tmp_path):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    page = _report(cli, tmp_path, "--system", "h200-1x-vm")
    assert "no picture: --format svg needs Graphviz" in page
    assert "plots left out: matplotlib is not installed" in page


def test_written_atomically_or_not_at_all(cli, tmp_path):
    target = tmp_path / "missing-folder" / "report.html"
    code, _, err = cli(["report", "--system", "h200-1x-vm", "-o", str(target)])
    assert code == 2 and "Traceback" not in err and not target.exists()
    assert not [name for name in os.listdir(tmp_path) if name != "missing-folder"]


@pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium here (apt-get install chromium); the browser test needs one",
)
@pytest.mark.skipif(
    not HAVE_DOT, reason="Graphviz is not installed: the page would hold no topology picture"
)
def test_a_headless_browser_renders_the_page(cli, tmp_path):
    launch = tmp_path / "launch.env"
    launch.write_text("SGLANG_ARGS='--tp-size 4'\nNCCL_P2P_LEVEL=SYS\n")
    _report(cli, tmp_path, "--system", "l40s-4x-pcie-2numa", "--launch", str(launch))
    flags = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    url = (tmp_path / "report.html").as_uri()
    dom = subprocess.run(
        [*flags, "--dump-dom", url], capture_output=True, text=True, timeout=120
    ).stdout
    # What the browser built from the page: the picture parsed as SVG with a node per GPU, the
    # matrix rows, the check finding.
    assert dom.count("<svg") >= 1 and dom.count('class="node"') >= 4 and "GPU3" in dom
    assert dom.count("<tr>") == 5 and "nccl-p2p-level-through-host-bridge" in dom
    shot = tmp_path / "shot.png"
    subprocess.run(
        [*flags, "--window-size=1280,1600", f"--screenshot={shot}", url],
        capture_output=True,
        timeout=120,
    )
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
