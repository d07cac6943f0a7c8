"""Loading the Snapshot that everything downstream of the probe reads.

A snapshot comes from one of three places: a file written by `topoctl probe` (--topology FILE), a
built-in reference system shipped in the package (--system NAME), or a live probe of this machine.
Downstream code (rules, autoconf, show) only ever sees the plain dict returned here.
"""
from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Any

from topoctl.errors import TopoctlError
from topoctl.p2p import P2P_CAPABILITIES, P2P_STATUSES, all_pairs_p2p, measured_health, pair_p2p_ok

if TYPE_CHECKING:
    from typing_extensions import TypeGuard

SCHEMA_VERSION = 1  # the probe writes it (probe/collect.py imports it from here); loading accepts only it
MAX_GPUS = 1024  # far above any one host: a snapshot or capture listing more GPUs is corruption
SYSTEMS_PACKAGE = "topoctl.systems"


def list_systems() -> list[str]:
    """Names of the built-in reference systems (folders of topoctl.systems with a snapshot.json)."""
    root = _systems_dir()
    try:
        entries = os.listdir(root)
    except OSError:
        return []
    return sorted(name for name in entries if os.path.isfile(os.path.join(root, name, "snapshot.json")))


def _systems_dir() -> str:
    from topoctl.cache import package_dir  # a plain folder lookup: no importlib.resources on the start-up path

    return package_dir(SYSTEMS_PACKAGE)


def system_snapshot(name: str) -> dict[str, Any]:
    """The snapshot of built-in system `name`, or a TopoctlError listing the names there are."""
    entry = os.path.join(_systems_dir(), name, "snapshot.json")
    if "/" in name or os.sep in name or name.startswith(".") or not os.path.isfile(entry):
        known = ", ".join(list_systems()) or "(none installed)"
        raise TopoctlError(f"unknown system {name!r}", hint=f"built-in systems: {known}")
    with open(entry, "rb") as handle:
        data = json.loads(handle.read())
    validate_snapshot(data, origin=f"system {name}")
    return data


def parse_snapshot_text(text: str, origin: str) -> dict[str, Any]:
    """Parse JSON or YAML snapshot text (YAML via safe_load only).

    Errors name the parser's position (line, column), never a line of the file: the file may be anything
    (`--topology /etc/shadow`), and its content must not end up in a CI log.
    """
    hint = "pass the file written by `topoctl probe`"
    stripped = text.lstrip()
    if not stripped:
        raise TopoctlError(f"{origin} is empty", hint=hint)
    if stripped.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            where = f" at line {exc.lineno}, column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
            problem = getattr(exc, "msg", None) or "malformed"
            raise TopoctlError(f"{origin}: not valid JSON: {problem}{where}", hint=hint) from None
    else:
        import yaml

        try:
            data = yaml.safe_load(text)
        except Exception as exc:  # yaml.YAMLError and friends
            raise TopoctlError(f"{origin}: not valid YAML: {_yaml_problem(exc)}", hint=hint) from None
    if data is None:
        raise TopoctlError(f"{origin} is empty", hint=hint)
    validate_snapshot(data, origin=origin)
    reconcile_summary(data)
    return data


def _yaml_problem(exc: Exception) -> str:
    """The parser's words and position, without the snippet of the file PyYAML shows."""
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None)
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if not isinstance(problem, str):
        return type(exc).__name__
    problem = problem[:120]
    if mark is not None and isinstance(getattr(mark, "line", None), int):
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
    return problem


def load_snapshot(path: str) -> dict[str, Any]:
    """Read a snapshot file written by `topoctl probe` (JSON or YAML)."""
    if path == "":
        raise TopoctlError("the snapshot file name is empty", hint="pass the file written by `topoctl probe -o FILE`")
    if path == "-":
        import sys

        return parse_snapshot_text(_decode(sys.stdin.buffer.read(), "<stdin>"), origin="<stdin>")
    if os.path.isdir(path):
        raise TopoctlError(f"{path} is a folder, not a snapshot file",
                           hint="pass the file written by `topoctl probe -o FILE`")
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        raise TopoctlError(f"no such file: {path}", hint="write one with `topoctl probe -o FILE`") from None
    except OSError as exc:
        raise TopoctlError(f"cannot read {path}: {exc.strerror or type(exc).__name__}",
                           hint="check the path and its permissions") from None
    return parse_snapshot_text(_decode(raw, path), origin=path)


def _decode(raw: bytes, origin: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TopoctlError(f"{origin} is not UTF-8 text",
                           hint="pass the file written by `topoctl probe` (YAML or JSON)") from None


# ------------------------------------------------------------------------------------------ validation
INTERCONNECTS = frozenset({"nvswitch", "nvlink", "nvlink-partial", "pcie", "mixed", "single", "none"})
_CAPABILITY = re.compile(r"\d{1,3}\.\d{1,3}\Z")


class _Invalid(Exception):
    pass


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _bad(field: str, wanted: str, value: Any) -> _Invalid:
    return _Invalid(f"{field} must be {wanted}, got {_kind(value)}")


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _int(mapping: dict, key: str, field: str, minimum: int | None = 0, nullable: bool = True) -> None:
    value = mapping.get(key)
    if value is None and nullable:
        return
    if not _is_int(value):
        raise _bad(f"{field}.{key}", "an integer" + (" or null" if nullable else ""), value)
    if minimum is not None and value < minimum:
        raise _Invalid(f"{field}.{key} must be >= {minimum}, got {value}")


def _str(mapping: dict, key: str, field: str) -> None:
    value = mapping.get(key)
    if value is not None and not isinstance(value, str):
        raise _bad(f"{field}.{key}", "a string or null", value)


def _bool(mapping: dict, key: str, field: str) -> None:
    value = mapping.get(key)
    if value is not None and not isinstance(value, bool):
        raise _bad(f"{field}.{key}", "true, false or null", value)


def _mapping(mapping: dict, key: str, field: str) -> dict | None:
    value = mapping.get(key)
    if value is not None and not isinstance(value, dict):
        raise _bad(f"{field}.{key}", "a mapping or null", value)
    return value


def _int_list(mapping: dict, key: str, field: str, below: int | None = None) -> None:
    value = mapping.get(key)
    if value is None:
        return
    if not isinstance(value, list):
        raise _bad(f"{field}.{key}", "a list of integers or null", value)
    for position, item in enumerate(value):
        if not _is_int(item) or item < 0 or (below is not None and item >= below):
            raise _Invalid(f"{field}.{key}[{position}] must be a GPU index (0..{(below or 1) - 1})")


def _str_list(mapping: dict, key: str, field: str) -> None:
    value = mapping.get(key)
    if value is None:
        return
    if not isinstance(value, list):
        raise _bad(f"{field}.{key}", "a list of strings or null", value)
    for position, item in enumerate(value):
        if not isinstance(item, str):
            raise _bad(f"{field}.{key}[{position}]", "a string", item)


def _check_gpu(gpu: Any, field: str) -> None:
    if not isinstance(gpu, dict):
        raise _bad(field, "a mapping", gpu)
    for key in ("name", "uuid", "pci_bus_id", "architecture", "mig_mode", "virtualization_mode", "root_complex"):
        _str(gpu, key, field)
    capability = gpu.get("compute_capability")
    if capability is not None and not (isinstance(capability, str) and _CAPABILITY.match(capability)):
        raise _Invalid(f"{field}.compute_capability must be \"M.m\" (e.g. \"9.0\") or null")
    _int(gpu, "sm", field)
    _int(gpu, "memory_total_bytes", field)
    _int(gpu, "numa_node", field)
    _str_list(gpu, "pcie_path", field)
    pcie = _mapping(gpu, "pcie", field)
    if pcie is not None:
        for key in ("current_gen", "max_gen", "gpu_max_gen", "current_width", "max_width"):
            _int(pcie, key, f"{field}.pcie")
        for key in ("downtrained", "gen_below_max", "slot_limited"):
            _bool(pcie, key, f"{field}.pcie")
    nvlink = _mapping(gpu, "nvlink", field)
    if nvlink is not None:
        for key in ("links_supported", "active_links", "version"):
            _int(nvlink, key, f"{field}.nvlink")
        _str(nvlink, "version_name", f"{field}.nvlink")
        remote = _mapping(nvlink, "remote", f"{field}.nvlink")
        if remote is not None:
            for key in ("gpu", "switch", "unknown"):
                _int(remote, key, f"{field}.nvlink.remote")
    _mapping(gpu, "fabric", field)


def _check(data: Any) -> None:
    if not isinstance(data, dict):
        raise _Invalid(f"a snapshot must be a mapping, got {_kind(data)}")
    if "schema_version" not in data:
        raise _Invalid("missing schema_version (is this a topoctl snapshot?)")
    version = data["schema_version"]
    if not _is_int(version):
        raise _bad("schema_version", f"the integer {SCHEMA_VERSION}", version)
    if version != SCHEMA_VERSION:
        raise _Invalid(f"schema_version {version} is not supported (this topoctl reads {SCHEMA_VERSION})")
    for key, kind, wanted in (("gpus", list, "a list"), ("pairs", list, "a list"), ("software", dict, "a mapping"),
                              ("summary", dict, "a mapping")):
        if not isinstance(data.get(key), kind):
            raise _bad(key, wanted, data.get(key))
    for key in ("topoctl_version",):
        _str(data, key, "snapshot")

    gpus = data["gpus"]
    count = len(gpus)
    if count == 0:
        raise _Invalid("gpus is empty: no GPU in this snapshot (a snapshot describes at least one)")
    if count > MAX_GPUS:
        raise _Invalid(f"gpus lists {count} GPUs, more than {MAX_GPUS}")
    seen: set[int] = set()
    for position, gpu in enumerate(gpus):
        field = f"gpus[{position}]"
        if not isinstance(gpu, dict):
            raise _bad(field, "a mapping", gpu)
        index = gpu.get("index")
        if not _is_int(index):
            raise _bad(f"{field}.index", "an integer", index)
        if not 0 <= index < count:
            raise _Invalid(f"{field}.index {index} is out of range (0..{count - 1} for {count} GPUs)")
        if index in seen:
            raise _Invalid(f"{field}.index {index} appears twice")
        seen.add(index)
        _check_gpu(gpu, field)

    pairs = data["pairs"]
    expected = count * (count - 1)
    seen_pairs: set[tuple[int, int]] = set()
    for position, pair in enumerate(pairs):
        field = f"pairs[{position}]"
        if not isinstance(pair, dict):
            raise _bad(field, "a mapping", pair)
        src: int = pair.get("src")  # type: ignore[assignment]  # checked just below
        dst: int = pair.get("dst")  # type: ignore[assignment]
        for key, value in (("src", src), ("dst", dst)):
            if not _is_int(value):
                raise _bad(f"{field}.{key}", "a GPU index", value)
            if not 0 <= value < count:
                raise _Invalid(f"{field}.{key} {value} is out of range (0..{count - 1} for {count} GPUs)")
        if src == dst:
            raise _Invalid(f"{field} pairs GPU {src} with itself")
        if (src, dst) in seen_pairs:
            raise _Invalid(f"{field} ({src}->{dst}) appears twice")
        seen_pairs.add((src, dst))
        p2p = pair.get("p2p")
        if not isinstance(p2p, dict):
            raise _bad(f"{field}.p2p", "a mapping", p2p)
        for capability in P2P_CAPABILITIES:
            if capability not in p2p:
                raise _Invalid(f"{field}.p2p.{capability} is missing (write \"unknown\" when it was not read)")
            status = p2p[capability]
            if not isinstance(status, str) or status not in P2P_STATUSES:
                raise _Invalid(f"{field}.p2p.{capability} must be one of {' '.join(sorted(P2P_STATUSES))}")
        _str(pair, "link", field)
        _int(pair, "nvlinks", field)
        _str(pair, "pcie_ancestor", field)
        _bool(pair, "torch_can_access_peer", field)
    if len(pairs) != expected:
        missing = next(((i, j) for i in range(count) for j in range(count) if i != j and (i, j) not in seen_pairs),
                       None)
        what = f"; {missing[0]}->{missing[1]} is missing" if missing else ""
        raise _Invalid(f"pairs lists {len(pairs)} ordered pairs, {count} GPUs have {expected}{what}")

    software = data["software"]
    for key, value in software.items():
        if value is not None and not isinstance(value, str):
            raise _bad(f"software.{key}", "a string or null", value)

    summary = data["summary"]
    gpu_count = summary.get("gpu_count")
    if not _is_int(gpu_count):
        raise _bad("summary.gpu_count", "an integer", gpu_count)
    if gpu_count != count:
        raise _Invalid(f"summary.gpu_count is {gpu_count} but gpus lists {count}")
    for key in ("gpu_names", "compute_capabilities", "architectures"):
        _str_list(summary, key, "summary")
    interconnect = summary.get("interconnect")
    if interconnect is not None and (not isinstance(interconnect, str) or interconnect not in INTERCONNECTS):
        raise _Invalid(f"summary.interconnect must be one of {' '.join(sorted(INTERCONNECTS))} or null")
    for key in ("all_pairs_p2p", "nvlink_all_pairs", "virtualized", "mig_enabled"):
        _bool(summary, key, "summary")
    for key in ("p2p_pairs_ok", "p2p_pairs_total", "numa_nodes_spanned"):
        _int(summary, key, "summary")
    _int_list(summary, "downtrained_gpus", "summary", below=count)
    groups = summary.get("root_complex_groups")
    if groups is not None:
        if not isinstance(groups, list):
            raise _bad("summary.root_complex_groups", "a list of lists of GPU indices or null", groups)
        for position, group in enumerate(groups):
            if not isinstance(group, list) or not all(_is_int(i) and 0 <= i < count for i in group):
                raise _Invalid(f"summary.root_complex_groups[{position}] must be a list of GPU indices")
    for key in ("source", "host", "nvlink", "pcie", "unknown", "measurements", "iommu"):
        _mapping(data, key, "snapshot")
    measurements = data.get("measurements") or {}
    for key in ("p2p", "allreduce", "coalescing", "local_copy"):  # docs/bench.md; every field in a row is optional
        rows = measurements.get(key)
        if rows is None:
            continue
        if not isinstance(rows, list):
            raise _bad(f"measurements.{key}", "a list or null", rows)
        for position, row in enumerate(rows):
            if not isinstance(row, dict):
                raise _bad(f"measurements.{key}[{position}]", "a mapping", row)
            _bool(row, "healthy", f"measurements.{key}[{position}]")
    source = data.get("source") or {}
    for key in ("kind", "name", "captured_at"):
        _str(source, key, "source")
    host = data.get("host") or {}
    for key in ("hostname", "kernel", "os", "cpu_model", "hypervisor", "machine"):
        _str(host, key, "host")
    for key in ("cpu_cores_logical", "cpu_cores_physical", "numa_nodes", "memory_bytes"):
        _int(host, key, "host")
    _bool(host, "virtualized", "host")
    nvlink = data.get("nvlink") or {}
    for key in ("present", "nvswitch", "switch_hidden"):
        _bool(nvlink, key, "nvlink")
    pcie = data.get("pcie") or {}
    _bool(pcie, "virtual", "pcie")
    complexes = pcie.get("root_complexes")
    if complexes is not None:
        if not isinstance(complexes, list):
            raise _bad("pcie.root_complexes", "a list or null", complexes)
        for position, entry in enumerate(complexes):
            field = f"pcie.root_complexes[{position}]"
            if not isinstance(entry, dict):
                raise _bad(field, "a mapping", entry)
            _str(entry, "id", field)
            _int(entry, "numa_node", field)
            _int_list(entry, "gpus", field, below=count)


def reconcile_summary(data: dict[str, Any]) -> None:
    """Make the summary's P2P and NVLink verdicts say what the pairs say (the pairs are what was measured).

    Downstream code reads `summary.all_pairs_p2p` first; a hand-edited snapshot whose summary claims working
    P2P while a pair says NS must not make `recommend` drop --disable-custom-all-reduce. Call after
    validate_snapshot.
    """
    pairs, summary = data["pairs"], data["summary"]
    if not pairs:
        return
    health = measured_health(data)  # a pair that failed `topoctl bench`'s check has no working P2P
    oks = [False if health.get((pair["src"], pair["dst"]), (True, None))[0] is False else pair_p2p_ok(pair["p2p"])
           for pair in pairs]
    failed = sorted([src, dst] for (src, dst), (healthy, _) in health.items() if not healthy)
    if failed:
        summary["p2p_failed_health_check"] = failed
    summary["all_pairs_p2p"] = all_pairs_p2p(oks)
    summary["p2p_pairs_ok"] = sum(1 for ok in oks if ok)
    summary["p2p_pairs_total"] = len(pairs)
    nvlinks = [pair.get("nvlinks") for pair in pairs]
    if any(value == 0 for value in nvlinks):
        summary["nvlink_all_pairs"] = False
    elif summary.get("nvlink_all_pairs") is False and all(_is_int(v) and v > 0 for v in nvlinks):
        summary["nvlink_all_pairs"] = True


def validate_snapshot(data: Any, origin: str) -> None:
    """Check every field downstream code relies on; raise a one-line TopoctlError naming the field otherwise.

    Plain Python, no schema library: it runs on every `show`, `recommend` and `check` (well under 2 ms for
    8 GPUs). Values from the file are never echoed, only their type or a number.
    """
    try:
        _check(data)
    except _Invalid as problem:
        raise TopoctlError(f"{origin}: {problem}", hint="regenerate it with `topoctl probe -o FILE`") from None


def resolve_target(topology: str | None = None, system: str | None = None,
                   fallback_system: str | None = None) -> dict[str, Any]:
    """The snapshot a command works on: --topology FILE, --system NAME, or a live probe of this machine.

    With `fallback_system`, a machine where the probe sees no GPU (exit-3 case) uses that built-in system
    instead, and says so on stderr: the README's first command runs anywhere, and never silently.
    """
    for option, value, what in (("--topology", topology, "a snapshot file written by `topoctl probe -o FILE`"),
                                ("--system", system, "a built-in system: topoctl recommend --list-systems"),
                                ("--fallback-system", fallback_system,
                                 "a built-in system: topoctl recommend --list-systems")):
        if value is not None and not value.strip():
            raise TopoctlError(f"{option} is empty", hint=f"give {what}, or leave {option} out")
    # A bad --fallback-system fails even when it would not be used: a CI line with a typo must not pass.
    snapshot_of_fallback = system_snapshot(fallback_system) if fallback_system is not None else None
    if topology is not None and system is not None:
        raise TopoctlError("give either --topology or --system, not both",
                           hint="--topology reads a snapshot file; --system names a built-in reference system")
    if topology is not None:
        return load_snapshot(topology)
    if system is not None:
        return system_snapshot(system)
    from topoctl.errors import NoGpuError
    from topoctl.probe.collect import probe_live  # imported here: only the live path touches hardware

    if snapshot_of_fallback is None:
        return probe_live()
    try:
        return probe_live()
    except NoGpuError as error:
        import sys

        from topoctl.errors import one_line

        print(f"topoctl: {one_line(error.message)}; using the built-in reference system {fallback_system!r} instead "
              f"(--fallback-system)", file=sys.stderr)
        return snapshot_of_fallback
