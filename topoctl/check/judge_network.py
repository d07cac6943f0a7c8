"""The judge stage's network check: the interfaces and RDMA NICs a launch names (NCCL_SOCKET_IFNAME,
GLOO_SOCKET_IFNAME, NCCL_IB_HCA, NCCL_IB_GID_INDEX, --disaggregation-ib-device) against what the
probe found on the node (snapshot `network`, read through NetworkView). No GPU and no network
traffic: names, link state, ports.

How each name is matched is read in the libraries that match it:
- NCCL v2.30.7-1 (NVIDIA/nccl): src/misc/utils.cc:189-244 (parseStringList: `name[:port[:rail[:plane]]]`
  entries split on `,`; matchIfList: a prefix unless exact, a port of -1 matches any), src/os/linux.cc:381-420
  (ncclOsFindInterfaces: a leading `^` excludes, then `=` means exact; only interfaces that are IFF_RUNNING with
  an IPv4/IPv6 address), src/misc/socket.cc:190-201 (a value of one character is ignored), src/bootstrap.cc:124-127
  ("Bootstrap : no socket interface found", ncclInvalidUsage: init fails), src/transport/net_ib/init.cc:318-372
  (NCCL_IB_HCA: `^`, `=`, ports; ports not IBV_PORT_ACTIVE are skipped) and 469-470 ("NET/IB : No device found"),
  src/plugin/net.cc:165-181 and 326-349 (a plugin with no device is passed over for the next, Socket; with
  NCCL_NET naming one plugin: "Failed to initialize any NET plugin"). The same syntax is documented in NCCL's
  user guide, docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html (NCCL_SOCKET_IFNAME, NCCL_IB_HCA).
- PyTorch's gloo: torch/csrc/distributed/c10d/init.cpp (ProcessGroupGloo: GLOO_SOCKET_IFNAME split on `,`, each
  name an exact interface for createDeviceForInterface, a value of one character ignored) and gloo
  transport/tcp/device.cc ("Unable to find address for: <name>" when the interface has no address): no prefixes,
  no `^` or `=`.
- SGLang 0.5.9 wheel: srt/distributed/device_communicators/mooncake_transfer_engine.py:15-70 (the device list, a
  GPU -> devices JSON or a JSON file) and 114-141 (handed to Mooncake's TransferEngine.initialize).

Layer: judge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from topoctl.check.outcome import Item
from topoctl.check.parse import written_value
from topoctl.core.vocab import Severity
from topoctl.snapshot.view import SnapshotLike, view_of

if TYPE_CHECKING:
    from topoctl.deploy.sglang_launch import ParsedLaunch
    from topoctl.snapshot.network_view import Interface, NetworkView, RdmaNic

ENV_NAMES = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_IB_GID_INDEX")
DISAGG_DEVICE = "disaggregation_ib_device"
RUNNING = (
    "up",
    "unknown",
)  # operstate of an interface that can be IFF_RUNNING (lo and many virtual ones: unknown)
MAX_LISTED = 8


@dataclass(frozen=True)
class Entry:
    name: str
    port: int | None  # None: any port (NCCL's -1)


@dataclass(frozen=True)
class NameList:
    """An NCCL interface or HCA list as parseStringList and its callers read it."""

    exclude: bool
    exact: bool
    entries: tuple[Entry, ...]

    def matches(self, name: str, port: int | None = None) -> bool:
        if not self.entries:
            return True
        hit = any(_entry_matches(entry, name, port, self.exact) for entry in self.entries)
        return hit != self.exclude


def _entry_matches(entry: Entry, name: str, port: int | None, exact: bool) -> bool:
    named = name == entry.name if exact else name.startswith(entry.name)
    return named and (entry.port is None or port is None or entry.port == port)


def parse_name_list(value: str) -> NameList:
    """`^=mlx5_0:1,mlx5_1` -> exclude, exact, entries; NCCL's own reading (the port is atoi of the
    second field)."""
    exclude = value.startswith("^")
    rest = value[1:] if exclude else value
    exact = rest.startswith("=")
    rest = rest[1:] if exact else rest
    entries = []
    for token in rest.split(","):
        name, _, tail = token.partition(":")
        if not name:
            continue
        port_text = tail.split(":", 1)[0]
        entries.append(Entry(name, _atoi(port_text) if port_text else None))
    return NameList(exclude, exact, tuple(entries))


def _atoi(text: str) -> int:
    digits = ""
    for char in text.strip():
        if not (char.isdigit() or (char in "+-" and not digits)):
            break
        digits += char
    try:
        return int(digits)
    except ValueError:
        return 0


def _names(items: list[str]) -> str:
    shown = ", ".join(items[:MAX_LISTED]) + (" ..." if len(items) > MAX_LISTED else "")
    return shown or "none"


def network_items(parsed: ParsedLaunch, snapshot: SnapshotLike, nnodes: int | None) -> list[Item]:
    """The findings on the network names the launch sets; [] when it sets none. A snapshot without a
    network section gives one note saying they were not checked, never silence."""
    given = {name: parsed.env[name] for name in ENV_NAMES if parsed.env.get(name)}
    disagg = written_value(parsed, DISAGG_DEVICE)[
        0
    ]  # no logical setting: read as the flag data reads it
    if disagg and disagg.strip():
        given["--disaggregation-ib-device"] = disagg
    if not given:
        return []
    network = view_of(snapshot).network
    if not network.present:
        return [
            Item(
                "topoctl-net-not-checked",
                Severity.INFO,
                "network names not checked",
                f"not checked: the snapshot has no NICs (made before topoctl probed them), so "
                f"{', '.join(sorted(given))} were not compared with the node",
                "probe the node again with this topoctl (`topoctl probe -o node.yaml`) and check "
                "against it",
            )
        ]
    judge = _Judge(
        parsed, network, 2 if nnodes is None else nnodes
    )  # None: several nodes, count unknown
    items: list[Item] = []
    for name, value in given.items():
        if "$" in value:  # an expansion the file does not resolve: the value is not known
            items.append(
                judge.item(
                    "not-checked",
                    "info",
                    f"{name} not checked",
                    f"{name}={value}: the value is expanded where the launch runs, so it is not "
                    "known here",
                    "",
                    name,
                )
            )
            continue
        items.extend(judge.check(name, value))
    return items


class _Judge:
    def __init__(self, parsed: ParsedLaunch, network: NetworkView, nnodes: int) -> None:
        self.parsed, self.network, self.nnodes = parsed, network, nnodes

    def item(
        self, code: str, severity: str, title: str, message: str, hint: str, setting: str
    ) -> Item:
        where = (
            self.parsed.lines.get(setting)
            or self.parsed.lines.get("SGLANG_ARGS")
            or self.parsed.where
        )
        return Item(f"topoctl-net-{code}", Severity(severity), title, message, hint, where)

    def check(self, name: str, value: str) -> list[Item]:
        if name == "NCCL_IB_GID_INDEX":
            return [
                self.item(
                    "gid-index-not-checked",
                    "info",
                    "NCCL_IB_GID_INDEX not checked",
                    f"NCCL_IB_GID_INDEX={value}: not checked, the snapshot has no GID tables "
                    "(the probe does "
                    "not read /sys/class/infiniband/*/ports/*/gids)",
                    "",
                    name,
                )
            ]
        if name in ("NCCL_IB_HCA", "--disaggregation-ib-device"):
            nics = self.network.rdma
            if nics is None:
                return [
                    self.item(
                        "rdma-not-checked",
                        "info",
                        f"{name} not checked",
                        "not checked: the snapshot could not list the node's RDMA devices "
                        f"({name}={value})",
                        "",
                        name,
                    )
                ]
            return (
                _ib_hca(self, value, nics) if name == "NCCL_IB_HCA" else _disagg(self, value, nics)
            )
        interfaces = self.network.interfaces
        if interfaces is None:
            return [
                self.item(
                    "interfaces-not-checked",
                    "info",
                    f"{name} not checked",
                    "not checked: the snapshot could not list the node's interfaces "
                    f"({name}={value})",
                    "",
                    name,
                )
            ]
        if len(value) <= 1:  # NCCL and torch both ignore a value of one character
            return []
        return (
            _socket_ifname(self, value, interfaces)
            if name == "NCCL_SOCKET_IFNAME"
            else _gloo_ifname(self, value, interfaces)
        )


def _running(interface: Interface) -> bool:
    return interface.operstate in RUNNING


def _socket_ifname(judge: _Judge, value: str, interfaces: list[Interface]) -> list[Item]:
    """NCCL_SOCKET_IFNAME: the bootstrap (and the socket transport, and the IB transport's own IP
    interface) take the running interfaces the list selects; none selected fails NCCL's init."""
    names = NameList.matches
    wanted = parse_name_list(value)
    chosen = [i for i in interfaces if _running(i) and names(wanted, i.name)]
    have = _names([i.name for i in interfaces])
    setting = "NCCL_SOCKET_IFNAME"
    if not chosen:
        down = [i.name for i in interfaces if names(wanted, i.name)]
        if down:
            why = (
                f"it selects only {_names(down)}, which {'is' if len(down) == 1 else 'are'} not up"
            )
        else:
            why = (
                f"it {'leaves out' if wanted.exclude else 'matches'} "
                f"{'every' if wanted.exclude else 'no'} interface of the node ({have})"
            )
        return [
            judge.item(
                "socket-ifname-none",
                "block",
                "NCCL_SOCKET_IFNAME selects no interface",
                f"NCCL_SOCKET_IFNAME={value}: {why}; NCCL's bootstrap finds no interface and "
                "init fails "
                '("Bootstrap : no socket interface found", NCCL src/bootstrap.cc:126)',
                f"name an interface that is up on every node, exactly (`={_first_up(interfaces)}`)",
                setting,
            )
        ]
    items: list[Item] = []
    if not wanted.exclude:
        for entry in wanted.entries:
            if not any(_entry_matches(entry, i.name, None, wanted.exact) for i in interfaces):
                items.append(
                    judge.item(
                        "socket-ifname-unmatched",
                        "warn",
                        "NCCL_SOCKET_IFNAME names an interface the node lacks",
                        f"NCCL_SOCKET_IFNAME={value}: {'=' if wanted.exact else ''}{entry.name} "
                        f"matches no interface of the node ({have}); NCCL uses "
                        f"{_names([i.name for i in chosen])}",
                        "drop the name, or check that the nodes are alike (topoctl fleet)",
                        setting,
                    )
                )
    loopback = [i.name for i in chosen if i.kind == "loopback" or i.name == "lo"]
    if judge.nnodes > 1 and wanted.exclude and loopback and len(loopback) < len(chosen):
        # The bootstrap takes the first interface getifaddrs lists (maxIfs 1, bootstrap.cc:124): lo
        # comes first.
        items.append(
            judge.item(
                "socket-ifname-loopback",
                "warn",
                "NCCL_SOCKET_IFNAME leaves loopback in",
                f"NCCL_SOCKET_IFNAME={value} excludes names but leaves {_names(loopback)} in; a "
                "list "
                "set by the user bypasses NCCL's default that skips lo, and the bootstrap takes "
                "the "
                "first interface the system lists, often lo, which the other nodes cannot reach",
                f"name the interface exactly (`={_first_up(interfaces)}`), or add lo to the list",
                setting,
            )
        )
    if judge.nnodes > 1 and len(loopback) == len(chosen):
        items.append(
            judge.item(
                "socket-ifname-loopback",
                "block",
                "NCCL_SOCKET_IFNAME selects only loopback",
                f"NCCL_SOCKET_IFNAME={value} selects only {_names([i.name for i in chosen])} on a "
                f"launch over {judge.nnodes} nodes: the other nodes cannot reach it",
                f"name the interface the nodes reach each other on (`={_first_up(interfaces)}`)",
                setting,
            )
        )
    return items


def _first_up(interfaces: list[Interface]) -> str:
    up = [i.name for i in interfaces if i.physical and i.operstate == "up"]
    return up[0] if up else "<interface>"


def _gloo_ifname(judge: _Judge, value: str, interfaces: list[Interface]) -> list[Item]:
    """GLOO_SOCKET_IFNAME: exact names, each one a gloo device; a name without an address fails the
    process group."""
    by_name = {i.name: i for i in interfaces}
    setting = "GLOO_SOCKET_IFNAME"
    items: list[Item] = []
    for name in value.split(","):
        interface = by_name.get(name)
        if interface is None:
            syntax = name[:1] in ("^", "=") or name.startswith(" ")
            why = (
                "gloo takes exact interface names: NCCL's `^` and `=` are read as part of the name"
                if syntax
                else f"the node has no such interface ({_names(sorted(by_name))})"
            )
            items.append(
                judge.item(
                    "gloo-ifname-missing",
                    "block",
                    "GLOO_SOCKET_IFNAME names an interface the node lacks",
                    f"GLOO_SOCKET_IFNAME={value}: `{name}`: {why}; torch's gloo process group "
                    "fails at init "
                    f'("Unable to find address for: {name}")',
                    "set GLOO_SOCKET_IFNAME to the exact name of an interface that is up "
                    f"(`{_first_up(interfaces)}`)",
                    setting,
                )
            )
        elif not _running(interface):
            items.append(
                judge.item(
                    "gloo-ifname-down",
                    "warn",
                    "GLOO_SOCKET_IFNAME names an interface that is down",
                    f"GLOO_SOCKET_IFNAME={value}: {name} is {interface.operstate}; gloo binds to "
                    "its address, if it still "
                    "has one, and its peers cannot connect",
                    f"name an interface that is up (`{_first_up(interfaces)}`)",
                    setting,
                )
            )
    return items


def _ib_hca(judge: _Judge, value: str, nics: list[RdmaNic]) -> list[Item]:
    """NCCL_IB_HCA: every active port the list selects is an NCCL IB device; none selected and NCCL
    runs between nodes over TCP sockets (or fails, when NCCL_NET names the IB plugin alone)."""
    wanted = parse_name_list(value)
    chosen = [
        f"{nic.name}:{port}"
        for nic in nics
        for port, state in nic.ports
        if state == "ACTIVE" and wanted.matches(nic.name, _port(port))
    ]
    items = (
        []
        if wanted.exclude
        else [
            item
            for entry in wanted.entries
            for item in _hca_entry(judge, value, entry, wanted.exact, nics)
        ]
    )
    if not chosen:  # said once, with what the node has, rather than once per name
        items = [item for item in items if item.id != "topoctl-net-ib-hca-unmatched"]
        only_ib = (judge.parsed.env.get("NCCL_NET") or "").strip().lower() == "ib"
        have = _names([f"{nic.name}:{port} {state}" for nic in nics for port, state in nic.ports])
        tail = (
            "and NCCL_NET=IB allows no other transport: NCCL's init fails (\"Failed to "
            "initialize any NET "
            'plugin", NCCL src/plugin/net.cc:349)'
            if only_ib
            else 'NCCL\'s IB transport finds no device ("NET/IB : No device found") and NCCL '
            "runs between the nodes "
            "over TCP sockets"
        )
        items.append(
            judge.item(
                "ib-hca-none",
                "block" if only_ib else "warn",
                "NCCL_IB_HCA selects no active port",
                f"NCCL_IB_HCA={value} selects no active RDMA port of the node ({have}); {tail}",
                "name the node's active RDMA ports exactly (topoctl recommend --nnodes 2 writes "
                "them)",
                "NCCL_IB_HCA",
            )
        )
    return items


def _port(port: int | str) -> int | None:
    return port if isinstance(port, int) else None


def _hca_entry(
    judge: _Judge, value: str, entry: Entry, exact: bool, nics: list[RdmaNic]
) -> list[Item]:
    """One entry of an including NCCL_IB_HCA list: a name no device has, a port that does not exist
    or is down, a prefix that also selects other devices."""
    named = [nic for nic in nics if _entry_matches(Entry(entry.name, None), nic.name, None, exact)]
    written = f"{entry.name}" + (f":{entry.port}" if entry.port is not None else "")
    if not named:
        return [
            judge.item(
                "ib-hca-unmatched",
                "warn",
                "NCCL_IB_HCA names an RDMA device the node lacks",
                f"NCCL_IB_HCA={value}: {written} matches no RDMA device of the node "
                f"({_names([nic.name for nic in nics])}); NCCL skips it",
                "drop the name, or check that the nodes are alike (topoctl fleet)",
                "NCCL_IB_HCA",
            )
        ]
    items: list[Item] = []
    ports = [
        (nic.name, port, state)
        for nic in named
        for port, state in nic.ports
        if entry.port is None or _port(port) == entry.port
    ]
    if entry.port is not None and not ports:
        items.append(
            judge.item(
                "ib-hca-port",
                "warn",
                "NCCL_IB_HCA names a port that does not exist",
                f"NCCL_IB_HCA={value}: {written}: {_names([nic.name for nic in named])} "
                f"{'has' if len(named) == 1 else 'have'} no port {entry.port} (ports: "
                f"{_names(sorted({str(p) for nic in named for p, _ in nic.ports}))}); NCCL skips it",
                "name a port the device has (`:1` on most NICs)",
                "NCCL_IB_HCA",
            )
        )
    elif ports and all(state != "ACTIVE" for _, _, state in ports):
        items.append(
            judge.item(
                "ib-hca-port-down",
                "warn",
                "NCCL_IB_HCA names a port that is not active",
                f"NCCL_IB_HCA={value}: {written}: "
                f"{_names([f'{name}:{port} {state}' for name, port, state in ports])}; NCCL "
                "skips a "
                "port that is not ACTIVE (src/transport/net_ib/init.cc:363)",
                "bring the port up, or leave it out of the list",
                "NCCL_IB_HCA",
            )
        )
    others = [nic.name for nic in named if nic.name != entry.name]
    if not exact and others:
        items.append(
            judge.item(
                "ib-hca-prefix",
                "warn",
                "NCCL_IB_HCA entry is a prefix of other devices",
                f"NCCL_IB_HCA={value}: {entry.name} is read as a prefix and also selects "
                f"{_names(others)} on this node",
                "start the list with `=` so that each name is exact",
                "NCCL_IB_HCA",
            )
        )
    return items


def _disagg(judge: _Judge, value: str, nics: list[RdmaNic]) -> list[Item]:
    """--disaggregation-ib-device: device names (a list, or a GPU -> list JSON) that Mooncake opens
    as written."""
    text = value.strip()
    if text.endswith(".json"):
        return [
            judge.item(
                "disagg-ib-device-not-checked",
                "info",
                "--disaggregation-ib-device not checked",
                f"--disaggregation-ib-device {text}: the device names are in a file read where "
                "the launch "
                "runs",
                "",
                "--disaggregation-ib-device",
            )
        ]
    try:
        mapping = json.loads(text) if text.startswith("{") else {"": text}
    except ValueError:
        mapping = {"": text}
    names = [
        name.strip()
        for devices in mapping.values()
        if isinstance(devices, str)
        for name in devices.split(",")
        if name.strip()
    ]
    have = [nic.name for nic in nics]
    missing = [name for name in names if name not in have]
    down = [nic.name for nic in nics if nic.name in names and not nic.active]
    items = []
    if missing:
        items.append(
            judge.item(
                "disagg-ib-device-missing",
                "warn",
                "--disaggregation-ib-device names an RDMA device the node lacks",
                f"--disaggregation-ib-device {text}: {_names(missing)} "
                f"{'is' if len(missing) == 1 else 'are'} not an RDMA device of the node "
                f"({_names(have)}); SGLang hands the names to Mooncake's transfer engine as written",
                "name the node's RDMA devices (ls /sys/class/infiniband)",
                "--disaggregation-ib-device",
            )
        )
    if down:
        items.append(
            judge.item(
                "disagg-ib-device-down",
                "warn",
                "--disaggregation-ib-device names an RDMA device with no active port",
                f"--disaggregation-ib-device {text}: {_names(down)} has no ACTIVE port",
                "bring its port up, or name another device",
                "--disaggregation-ib-device",
            )
        )
    return items
