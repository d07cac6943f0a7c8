"""Each command makes one SnapshotView of each snapshot it reads and passes it down
(topoctl/snapshot/view.py).

A reader deep in the search that built its own view again from the dict would make the count grow:
before the view was passed down, `recommend` built 27 of them per run (10 in
autoconf/target.interconnect alone), `check` 8, `report` 40, `bench` 3 (4 over NCCL). The count is
taken by wrapping SnapshotView.__init__; the commands run on the built-in reference systems and
fixture snapshots (fixtures/*/README.md say where their facts come from).
"""

from __future__ import annotations

import contextlib
import io
import os

import pytest

from topoctl.cli.app import main
from topoctl.snapshot.view import SnapshotView

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SYSTEM = ("--system", "h200-4x-nvswitch-vm")
NODES = [
    os.path.join(ROOT, "fixtures", name, "snapshot.json")
    for name in ("h200-2x-nvswitch-vm", "h200-4x-nvswitch-vm")
]


@pytest.fixture
def views(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of SnapshotViews made since the test started (one list entry per construction)."""
    made: list[int] = []
    real = SnapshotView.__init__

    def counting(self: SnapshotView, data: object) -> None:
        made.append(1)
        real(self, data)  # type: ignore[arg-type]

    monkeypatch.setattr(SnapshotView, "__init__", counting)
    return made


def _run(argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(argv)


def _launch_env(tmp_path: str) -> str:
    path = os.path.join(tmp_path, "launch.env")
    assert _run(["recommend", *SYSTEM, "--model", "llama-3.1-70b", "-o", path]) == 0
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["show", *SYSTEM],
        ["show", *SYSTEM, "--format", "dot"],
        ["recommend", *SYSTEM],
        ["recommend", *SYSTEM, "--model", "llama-3.1-70b", "--format", "json"],
        ["recommend", *SYSTEM, "--model", "llama-3.1-70b", "--format", "table"],
        [
            "recommend",
            *SYSTEM,
            "--model",
            "llama-3.1-70b",
            "--speculative",
            "eagle3",
            "--draft-model",
            "/models/eagle3",
            "--explain",
        ],
        ["recommend", *SYSTEM, "--model", "llama-3.1-8b", "--tp-size", "1", "--format", "args"],
        ["recommend", "--system", "h100-8x-8nic-ib", "--model", "deepseek-v3", "--nnodes", "2"],
    ],
    ids=lambda argv: "-".join(part.lstrip("-") for part in argv if not part.startswith("/"))[:60],
)
def test_one_view_per_run(views: list[int], argv: list[str]) -> None:
    assert _run(argv) == 0
    assert len(views) == 1, f"{' '.join(argv)} made {len(views)} SnapshotViews"


def test_check_makes_one_view_of_the_target(views: list[int], tmp_path: str) -> None:
    launch = _launch_env(str(tmp_path))
    views.clear()
    assert _run(["check", launch, *SYSTEM]) == 0
    assert len(views) == 1


def test_check_with_expect_makes_one_view_of_each_snapshot(views: list[int], tmp_path: str) -> None:
    launch = _launch_env(str(tmp_path))
    views.clear()
    assert _run(["check", launch, *SYSTEM, "--expect", NODES[1], "--format", "json"]) in (0, 1)
    assert len(views) == 2  # the target and the snapshot the launch was made for


def test_report_makes_one_view_and_its_check_one(views: list[int], tmp_path: str) -> None:
    launch = _launch_env(str(tmp_path))
    views.clear()
    assert (
        _run(
            ["report", *SYSTEM, "--model", "llama-3.1-70b", "-o", os.path.join(tmp_path, "r.html")]
        )
        == 0
    )
    assert len(views) == 1
    views.clear()
    assert (
        _run(["report", *SYSTEM, "--launch", launch, "-o", os.path.join(tmp_path, "r2.html")]) == 0
    )
    assert len(views) == 2  # the page's view, and the one of the `topoctl check` run it embeds


def test_fleet_makes_one_view_per_node(views: list[int]) -> None:
    assert _run(["fleet", *NODES]) in (0, 1)
    assert len(views) == len(NODES)


def test_bench_makes_one_view(views: list[int], tmp_path: str) -> None:
    pytest.importorskip("torch")
    out = os.path.join(tmp_path, "machine.json")
    assert (
        _run(
            [
                "bench",
                "--topology",
                NODES[0],
                "--backend",
                "gloo",
                "--sizes",
                "4K",
                "--budget-s",
                "1",
                "--format",
                "json",
                "-o",
                out,
                "--quiet",
            ]
        )
        == 0
    )
    assert len(views) == 1
