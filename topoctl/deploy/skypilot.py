"""SkyPilot task files: the `run:` script (a shell script, read as topoctl/deploy/shell.py reads
scripts) on `num_nodes` nodes with `resources.accelerators` GPUs each, and the task's `envs`.
SkyPilot gives the script SKYPILOT_NUM_NODES, SKYPILOT_NODE_RANK, SKYPILOT_NODE_IPS and
SKYPILOT_NUM_GPUS_PER_NODE (its docs, "Environment variables"); the rank and addresses differ per
node and are not checked. `setup:` installs, it starts no server: skipped, and said so.

Layer: deployment reading (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import re
from dataclasses import replace

from topoctl.deploy.found import Found, Node, shaped
from topoctl.deploy.launchers import GpuSet, Launch, Nodes, NotALaunch, Unsupported, read_script


def is_document(doc: Node) -> bool:
    """A SkyPilot task: a `run:` script beside any of the keys only a task has."""
    value = doc.value
    return (
        isinstance(value, dict)
        and isinstance(value.get("run"), str)
        and any(
            key in value
            for key in ("resources", "setup", "num_nodes", "envs", "file_mounts", "workdir")
        )
    )


def _accelerators(doc: Node, path: str) -> GpuSet | None:
    node = doc.at("resources", "accelerators")
    if node is None or node.value is None:
        return None
    value = node.value
    if (
        isinstance(value, dict) and value
    ):  # {H100: 8}, or any of {L4:1, A100:1} (the first, said in the source)
        name, count = next(iter(value.items()))
        text = str(name) if count is None else f"{name}:{count}"
    elif isinstance(value, list) and value:
        text = str(value[0])  # any of several: the first, said in the source
    else:
        text = str(value)
    match = re.search(r":(\d+)$", text)
    count = int(match.group(1)) if match else 1
    return GpuSet(count=count, source=f"resources.accelerators: {text} ({path}:{node.line})")


def read_document(path: str, doc: Node, base_dir: str) -> list[Found]:
    """The launches of the task's `run:` script, on its nodes with its GPUs and `envs`."""
    run = doc.get("run")
    if run is None:  # is_document took it: a task has run:
        return []
    nodes_node = doc.get("num_nodes")
    count = (
        int(nodes_node.value) if nodes_node is not None and str(nodes_node.value).isdigit() else 1
    )
    gpus = _accelerators(doc, path)
    env: dict[str, str] = {}
    env_where: dict[str, str] = {}
    envs = shaped(doc.get("envs"), dict, path, "envs")  # SkyPilot's task schema: a mapping
    for name, item in (
        envs.children.items() if envs is not None and isinstance(envs.children, dict) else []
    ):
        if item.value is not None:
            env[name], env_where[name] = str(item.value), f"{path}:{item.line}"
    env["SKYPILOT_NUM_NODES"] = str(count)
    env_where["SKYPILOT_NUM_NODES"] = (
        f"num_nodes ({path}:{nodes_node.line})" if nodes_node is not None else "SkyPilot"
    )
    if gpus is not None and gpus.count is not None:
        env["SKYPILOT_NUM_GPUS_PER_NODE"] = str(gpus.count)
        env_where["SKYPILOT_NUM_GPUS_PER_NODE"] = gpus.source
    nodes = Nodes(
        count,
        f"num_nodes: {count} ({path}:{nodes_node.line})"
        if nodes_node is not None
        else "num_nodes: 1 (SkyPilot's default)",
    )
    inherit = Launch(
        launcher="",
        where=path,
        base_dir=base_dir,
        env=env,
        env_where=env_where,
        gpus=gpus,
        nodes=nodes,
    )
    offset = run.line - 1 + (1 if run.style in ("|", ">") else 0)
    skipped = (
        ["skipped: SkyPilot setup: section (it prepares the node, it starts no server)"]
        if doc.get("setup") is not None
        else []
    )
    try:
        launches = read_script(
            str(run.value), origin=path, base_dir=base_dir, inherit=inherit, line_offset=offset
        )
    except Unsupported as error:
        return [
            Found(
                path,
                run.line,
                "run",
                kind="skypilot",
                unsupported=error.server,
                none_reason=f"{path}: {error.message}",
            )
        ]
    except NotALaunch as error:
        return [
            Found(path, run.line, "run", kind="skypilot", none_reason=f"{path}: {error.message}")
        ]
    if not launches:
        return [
            Found(
                path,
                run.line,
                "run",
                kind="skypilot",
                none_reason=f"{path}:{run.line}: the run: script starts no SGLang launch",
            )
        ]
    out = []
    for launch in launches:
        out.append(
            Found(
                path,
                int(launch.where.rsplit(":", 1)[1]),
                "run",
                kind="skypilot",
                launch=replace(launch, notes=[*launch.notes, *skipped]) if skipped else launch,
            )
        )
    return out
