"""`topoctl fleet`: one snapshot per node in, the nodes that differ from the majority out (and how).

Layer: commands and CLI (docs/architecture.md, "Layers")."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from topoctl.core.errors import EXIT_BLOCKED, TopoctlError
from topoctl.snapshot.view import SnapshotView

if TYPE_CHECKING:
    from topoctl.check.fleet_compare import FleetReport

SNAPSHOT_SUFFIXES = (".yaml", ".yml", ".json")


def _snapshot_files(paths: tuple[str, ...]) -> list[str]:
    files: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            files.extend(
                os.path.join(path, name)
                for name in sorted(os.listdir(path))
                if name.endswith(SNAPSHOT_SUFFIXES) and not name.startswith(".")
            )
        elif os.path.exists(path):
            files.append(path)
        else:
            raise TopoctlError(
                f"no such file or folder: {path}",
                hint="give the snapshots `topoctl probe` wrote, one per node",
            )
    return files


def _node_name(path: str, taken: set[str]) -> str:
    """The file's name without its suffix (nodes/%N.yaml gives the node's name); the path where
    names repeat."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return stem if stem not in taken else path


def _launch_checks(
    report: FleetReport, files: dict[str, str], launch: tuple[str, ...]
) -> list[dict[str, Any]]:
    """Judge the launch files with `topoctl check` on one node of each kind (nodes with the same
    aspects): the same pipeline, rules and flag data as check itself."""
    import contextlib
    import io
    import json
    import tempfile

    from topoctl.cli.app import main

    kinds: dict[tuple[str, ...], list[str]] = {}
    for node in report.nodes:
        kinds.setdefault(tuple(node.aspects[aspect] for aspect in sorted(node.aspects)), []).append(
            node.name
        )
    results = []
    for names in kinds.values():
        with tempfile.TemporaryDirectory() as folder:
            out = os.path.join(folder, "check.json")
            stderr = io.StringIO()
            with contextlib.redirect_stderr(stderr):
                code = main(
                    ["check", *launch, "--topology", files[names[0]], "--format", "json", "-o", out]
                )
            if code not in (0, EXIT_BLOCKED):
                message = (stderr.getvalue().strip().splitlines() or [f"check exited {code}"])[0]
                raise TopoctlError(
                    f"--launch: {message.removeprefix('topoctl: error: ')}",
                    hint="`topoctl check` must read the launch on its own first",
                    exit_code=code,
                )
            with open(out, encoding="utf-8") as handle:
                outcomes = json.load(handle)
        results.append(
            {"nodes": names, "exit": code, "check": outcomes, "stderr": stderr.getvalue().strip()}
        )
    return results


def _check_lines(results: list[dict[str, Any]]) -> list[str]:
    lines = ["", "Launch check (topoctl check, on one node of each kind):"]
    for result in results:
        verdict = {0: "passes", EXIT_BLOCKED: "BLOCKED"}.get(
            result["exit"], f"exit {result['exit']}"
        )
        lines.append(f"  {verdict} on {', '.join(result['nodes'])}")
        for outcome in (result["check"] or {}).get("results", []):
            for finding in outcome.get("findings", []):
                if finding.get("severity") in ("block", "warn"):
                    lines.append(
                        f"    {finding['severity']} {finding.get('id', '')}: "
                        f"{finding.get('title', '')}"
                    )
        if result["stderr"]:
            lines.append(f"    {result['stderr'].splitlines()[0]}")
    return lines


@click.command("fleet")
@click.argument("paths", nargs=-1, metavar="SNAPSHOT_OR_FOLDER...")
@click.option(
    "--launch",
    "launch",
    multiple=True,
    metavar="PATH",
    help="A launch (launch.env, manifest, script) to judge with `topoctl check` on one node of "
    "each kind; repeatable.",
)
@click.option(
    "--nodes",
    "nodes",
    metavar="LIST",
    help="The nodes the run expects (gpu01,gpu02 or Slurm's gpu[01-04,07]); default: "
    "SLURM_JOB_NODELIST. A node without a snapshot of this run is odd, with the reason.",
)
@click.option(
    "--since",
    "since",
    metavar="TIME",
    help="When the run began (ISO-8601 or @EPOCH): an older snapshot file is stale, an odd node.",
)
@click.option(
    "--window",
    "window",
    metavar="DURATION",
    help="Without --since, the run began this long before the newest snapshot (default 2h when "
    "nodes are expected; 900, 15m, 2h).",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option(
    "-o", "--output", metavar="FILE", help="Write the report to FILE atomically instead of stdout."
)
def command(**given: Any) -> int:
    """Compare the nodes of a fleet, one snapshot each: which nodes differ from the majority and how
    (GPU model, links, NVLink, PCIe, P2P, NICs, GPUDirect RDMA, driver, versions).

    \b
    Gather the snapshots with Slurm or a Kubernetes DaemonSet (examples/slurm, examples/kubernetes):
      srun --ntasks-per-node=1 topoctl probe -o nodes/%N.yaml
      topoctl fleet nodes/
      topoctl fleet nodes/ --launch launch.env      # ...and judge the launch on each kind of node

    \b
      topoctl fleet nodes/ --nodes 'gpu[01-04]' --since 2026-12-07T21:00:00Z   # every node named, this run's

    \b
    Exit codes: 0 every node alike (and the launch passes); 1 a node differs, an expected node has no snapshot
    of this run (or the launch is blocked on some node); 2 bad usage or an unreadable snapshot.
    """
    return run(FleetOptions(**given))


@dataclass(frozen=True)
class FleetOptions:
    """Everything `topoctl fleet` was given (click's parameter names)."""

    paths: tuple[str, ...] = ()
    launch: tuple[str, ...] = ()
    nodes: str | None = None
    since: str | None = None
    window: str | None = None
    fmt: str = "text"
    output: str | None = None


def run(options: FleetOptions) -> int:
    """fleet's stages: the snapshots read (one view each), compared, the launch checked per kind of
    node."""
    from topoctl.check import fleet_nodes
    from topoctl.check.fleet_compare import Node, aspects_of, compare, document, render_text
    from topoctl.core.io import emit
    from topoctl.core.serialize import dump
    from topoctl.snapshot.document import load_snapshot

    paths, launch, fmt, output = options.paths, options.launch, options.fmt, options.output

    files = _snapshot_files(paths)
    expected = fleet_nodes.expected_nodes(options.nodes, dict(os.environ))
    if len(files) < 2 and expected is None:
        raise TopoctlError(
            f"fleet compares nodes: {len(files)} snapshot(s) given",
            hint="give two or more snapshots, or a folder of them (topoctl probe -o nodes/%N.yaml)",
        )
    by_name: dict[str, str] = {}
    for path in files:
        by_name[_node_name(path, set(by_name))] = path
    run_nodes = fleet_nodes.run_nodes(
        by_name,
        expected,
        fleet_nodes.parse_since(options.since) if options.since else None,
        fleet_nodes.parse_window(options.window) if options.window else None,
        [path for path in paths if os.path.isdir(path)],
    )
    nodes: list[Node] = [
        Node(name, path, aspects_of(SnapshotView(load_snapshot(path))))  # one view per node
        for name, path in run_nodes.fresh.items()
    ]
    report = compare(nodes)
    report.absent, report.ignored = run_nodes.absent, run_nodes.ignored
    checks = _launch_checks(report, by_name, launch) if launch and nodes else []
    if fmt == "json":
        doc = document(report)
        if launch:
            doc["launch_checks"] = checks
        emit(dump(doc, "json"), output)
    else:
        text = render_text(report)
        emit(text + ("\n".join(_check_lines(checks)) + "\n" if checks else ""), output)
    blocked = any(result["exit"] != 0 for result in checks)
    return EXIT_BLOCKED if report.odd or report.absent or blocked else 0
