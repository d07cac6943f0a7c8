"""What one node of a multi-node launch needs beyond its own launch (recommend --nnodes N): SGLang's
node flags with the values the launcher fills in, and NCCL's network settings from the probed NICs.

- NCCL_IB_HCA: each GPU's nearest active RDMA NIC and port, in GPU order, as an exact list (`=`):
  NCCL treats names as prefixes otherwise and uses every active port it finds (rule
  net-ib-hca-exact-gpu-order).
- NCCL_SOCKET_IFNAME: the node's own interfaces that are up, exact names, front-end Ethernet first:
  NCCL's default skips only lo and docker*, not a CNI's interfaces (rule
  net-socket-ifname-virtual-interfaces).
- NCCL_NET_GDR_LEVEL is not written: NCCL's default (PXB) is what the GPU-NIC distances are judged
  against (rules net-gpu-nearest-nic-sys, net-gpu-nearest-nic-beyond-pxb).

The per-node values are the same on every node of the same model (`topoctl fleet` says which nodes
differ).

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from topoctl.autoconf.request import ModelProfile
from topoctl.snapshot.network_view import NetworkView
from topoctl.snapshot.view import SnapshotLike, view_of

# 0 .. N-1, set by the launcher on each node (Slurm: $SLURM_NODEID; LWS: $(LWS_WORKER_INDEX))
NODE_RANK_VAR = "NODE_RANK"
# host:port of node 0 (Slurm: first host of $SLURM_JOB_NODELIST; LWS: $(LWS_LEADER_ADDRESS))
DIST_INIT_VAR = "DIST_INIT_ADDR"


@dataclass
class NodeSettings:
    """SGLang's per-node flags and NCCL's network environment for one node; `notes` say why or what
    is missing."""

    nnodes: int
    args: list[str]
    env: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def ib_hca(network: NetworkView, gpus: list[int]) -> str | None:
    """`=nic:port,...`: each GPU's nearest active NIC (all of them where several are equally near),
    first port active, in GPU order, each once. None when a GPU's nearest NIC is not known."""
    nics = {nic.name: nic for nic in network.active_rdma or []}
    entries: list[str] = []
    for gpu in gpus:
        nearest = network.nearest(gpu)
        if nearest is None:
            return None
        for name in nearest.nics:
            entry = f"{name}:{nics[name].active_ports[0]}"
            if entry not in entries:
                entries.append(entry)
    return "=" + ",".join(entries) if entries else None


def socket_ifname(network: NetworkView) -> str | None:
    """`=name,...`: the interfaces backed by a PCI device that are up, Ethernet before IPoIB, RDMA
    netdevs last."""
    interfaces = network.physical_interfaces or []
    rdma_netdevs = {netdev for nic in network.rdma or [] for netdev in nic.netdevs}
    ordered = sorted(
        interfaces, key=lambda i: (i.name in rdma_netdevs, i.kind != "ethernet", i.name)
    )
    return "=" + ",".join(i.name for i in ordered[:1]) if ordered else None


def node_settings(
    snapshot: SnapshotLike, nnodes: int, gpus: list[int] | None = None
) -> NodeSettings:
    """The per-node part of an `nnodes`-node launch on machines like `snapshot`."""
    view = view_of(snapshot)
    network = view.network
    settings = NodeSettings(
        nnodes,
        [
            "--nnodes",
            str(nnodes),
            "--node-rank",
            f"${{{NODE_RANK_VAR}}}",
            "--dist-init-addr",
            f"${{{DIST_INIT_VAR}}}",
        ],
    )
    settings.notes.append(
        f"the launcher sets {NODE_RANK_VAR} (0 to {nnodes - 1}) and {DIST_INIT_VAR} (host:port of "
        "node 0) on each node"
    )
    if not network.present:
        settings.notes.append(
            "this snapshot was made before topoctl probed NICs: NCCL's network settings are left "
            "to NCCL; re-run `topoctl probe` on a node"
        )
        return settings
    order = gpus if gpus is not None else [gpu["index"] for gpu in view.indexed_gpus]
    _rdma_settings(settings, network, order)
    ifname = socket_ifname(network)
    if ifname:
        settings.env["NCCL_SOCKET_IFNAME"] = ifname
    else:
        settings.notes.append(
            "no interface backed by a PCI device is up: NCCL_SOCKET_IFNAME not written"
        )
    return settings


def _rdma_settings(settings: NodeSettings, network: NetworkView, order: list[int]) -> None:
    if not network.active_rdma:
        settings.notes.append(
            "no RDMA NIC with an active port: NCCL runs between the nodes over TCP sockets"
        )
        return
    hca = ib_hca(network, order)
    if hca:
        settings.env["NCCL_IB_HCA"] = hca
    else:
        settings.notes.append(
            "a GPU's PCIe relation to the NICs is unknown: NCCL_IB_HCA not written"
        )
    far = [
        gpu
        for gpu in order
        if (nearest := network.nearest(gpu)) is not None and nearest.link == "SYS"
    ]
    if far:
        settings.notes.append(
            f"GPU {', '.join(map(str, far))}: nearest NIC is SYS away (rule "
            "net-gpu-nearest-nic-sys)"
        )
    if network.gpudirect_ready is not True:
        settings.notes.append(f"GPUDirect RDMA: {network.gpudirect.get('reason') or 'unknown'}")


def env_lines(settings: NodeSettings) -> list[str]:
    """The block recommend --nnodes appends to launch.env: shell assignments, single-quoted so that
    the variables in SGLANG_NODE_ARGS are expanded where the launch command evals them, on each
    node."""
    lines = [
        "",
        f"# Multi-node: {settings.nnodes} nodes like this one; start with",
        '#   eval "set -- $SGLANG_ARGS $SGLANG_NODE_ARGS"; python -m sglang.launch_server '
        '--model-path MODEL "$@"',
    ]
    lines.extend(f"# {note}" for note in settings.notes)
    lines.append("SGLANG_NODE_ARGS='" + " ".join(settings.args) + "'")
    lines.extend(f"{name}={_quoted(value)}" for name, value in sorted(settings.env.items()))
    return lines


def _quoted(value: str) -> str:
    """Single quotes, as the rest of launch.env writes values."""

    return f"'{value}'" if "'" not in value else shlex.quote(value)


def document(settings: NodeSettings) -> dict[str, object]:
    return {
        "nnodes": settings.nnodes,
        "args": settings.args,
        "env": dict(sorted(settings.env.items())),
        "notes": settings.notes,
    }


def split_over_nodes(model: ModelProfile, nnodes: int) -> ModelProfile:
    """The model as each node's GPUs hold it when TP spans `nnodes` nodes: the TP-sharded weights
    divided by the node count (replicated parts stay whole), so one node's memory fit judges TP
    (nnodes x GPUs per node)."""
    from topoctl.autoconf.memory import REPLICATED_PARTS

    if nnodes <= 1:
        return model
    parts = {
        key: value if key in REPLICATED_PARTS else value / nnodes
        for key, value in (model.get("parts_bytes") or {}).items()
    }
    replicated = model.get("replicated_attention_bytes") or 0.0
    if (
        replicated and "attention" in parts
    ):  # (A - R) / (N x tp) + R on each GPU: memory.per_gpu at TP tp
        parts["attention"] = (model["parts_bytes"]["attention"] - replicated) / nnodes + replicated
    # the step model (step_estimate.py) composes the whole TP group: it reads the node count and the
    # whole bytes
    return dict(
        model, parts_bytes=parts, nnodes=nnodes, whole_parts_bytes=model.get("parts_bytes") or {}
    )
