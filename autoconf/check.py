"""The judgement behind `topoctl check`: a parsed launch against a machine, plus drift from the snapshot the
launch was made for, reported as text, json, JUnit XML or GitHub annotations.

Layer: judge (docs/architecture.md, "Layers").
"""
from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from typing import Any

from topoctl.errors import one_line
from topoctl.sglang.launch import ParsedLaunch, Problem

SCHEMA_VERSION = 1  # of check's json report: a key renamed or removed raises it


@dataclass
class Item:
    id: str
    severity: str  # block | warn | info
    title: str
    message: str
    remediation: str = ""
    where: str = ""
    status: str = "fired"


@dataclass
class Outcome:
    origin: str
    items: list[Item] = field(default_factory=list)
    flags_version: str = ""
    note: str = ""
    disabled: list[tuple[str, str]] = field(default_factory=list)  # (rule id, written reason): in every format
    skipped: str = ""  # a file (or container) with no SGLang launch in it: why; reported, never "ok"
    error: str = ""  # a file (or launch) that could not be checked: why; reported, and the check ends with exit 2

    def count(self, severity: str) -> int:
        return sum(1 for item in self.items if item.severity == severity)


def judge(parsed: ParsedLaunch, snapshot: dict[str, Any], flags: Any, ruleset: Any, gpu_count: int,
          model: dict | None = None, expect: dict[str, Any] | None = None) -> Outcome:
    """`gpu_count`: the target's GPUs, as `target.target_gpu_count(snapshot)` gives them (at least 1). A launch over
    several nodes is judged per node (autoconf/nodes.py): its ranks on one node against the target's GPUs."""
    from topoctl.autoconf.nodes import node_span

    outcome = Outcome(parsed.origin, flags_version=flags.version, note="" if flags.exact else flags.note,
                      disabled=sorted((str(k), str(v)) for k, v in (getattr(ruleset, "disabled", None) or {}).items()))
    for problem in parsed.problems:
        outcome.items.append(Item(f"sglang-{problem.code}", problem.severity, problem.code.replace("-", " "),
                                  problem.message, problem.remediation, problem.where))
    launch = {k: v for k, v in parsed.settings.items() if k != "model_path"}
    # A launch that does not set --tp-size runs with SGLang's default (1 in every version's flag data), not on
    # every GPU: judge what SGLang will do, and say so when it leaves GPUs idle.
    tp_default = (flags.get("--tp-size") or {}).get("default")
    tp_default = tp_default if isinstance(tp_default, int) and not isinstance(tp_default, bool) else 1
    tp: int = launch["tp_size"] if isinstance(launch.get("tp_size"), int) else tp_default
    ep: int = launch["ep_size"] if isinstance(launch.get("ep_size"), int) else 1
    spec = launch.get("speculative_algorithm")
    dp_value = launch.get("dp_size")
    dp = dp_value if isinstance(dp_value, int) and not isinstance(dp_value, bool) \
        else _raw_int(parsed, ("dp_size", "data_parallel_size"), 1)
    # Data-parallel replicas, each on its own TP group, unless DP attention runs inside the one TP group
    # (SGLang 0.5.12 srt/managers/data_parallel_controller.py: launch_dp_attention_schedulers).
    dp = 1 if dp < 1 or _raw_flag(parsed, "enable_dp_attention") else dp
    span = node_span(parsed, tp if tp >= 1 else 1, _raw_int(parsed, ("pp_size", "pipeline_parallel_size"), 1),
                     gpu_count)
    outcome.items.extend(Item("topoctl-nodes", "info", "nodes the launch spans", one_line(message), "", where)
                         for message, where in span.notes)
    tp_all, tp = tp, (span.tp_per_node if tp >= 1 else tp)
    request = {"model": model, "speculative": spec.lower() if isinstance(spec, str) else None, "tp_size": tp,
               "ep_size": min(ep, tp) if span.nodes != 1 else ep, "dp_size": dp, "gpus": None,
               "sglang_version": flags.requested, "launch": launch}
    sets = any_gpu_sets(parsed, snapshot)
    if sets is None:
        group, group_items = launch_group(parsed, snapshot, tp if tp >= 1 else 1, dp, gpu_count)
        outcome.items.extend(group_items)
        request["gpus"] = list(group) if group is not None else None
        outcome.items.extend(rule_items(parsed, snapshot, ruleset, request, launch, {i.id for i in outcome.items}))
    else:
        outcome.items.extend(_judge_any_set(parsed, snapshot, ruleset, request, launch, sets, tp, dp, gpu_count,
                                            {i.id for i in outcome.items}))
    visible = _visible_count(parsed, snapshot, gpu_count)
    if "tp_size" not in launch and visible > tp:  # written but not read (an unresolved $TP): not "not given"
        seen_gpus = f"the target's {gpu_count} GPUs" if visible == gpu_count else f"the {visible} visible GPUs"
        outcome.items.append(Item(
            "topoctl-tp-size-not-given", "warn", "tensor parallel size not given",
            one_line(f"--tp-size is not given: SGLang {flags.version} runs with tensor parallel size {tp}, "
                     f"using {tp} of {seen_gpus}"),
            f"add --tp-size {visible} to use every {'visible ' if visible != gpu_count else ''}GPU "
            "(topoctl recommend writes it)",
            parsed.lines.get("SGLANG_ARGS", "")))
    outcome.items.extend(_size_items(parsed, tp_all, tp, ep, gpu_count, span))
    if not any(item.severity == "block" and item.id.endswith("tp-exceeds-gpus") for item in outcome.items):
        from topoctl.autoconf.check_memory import memory_items

        def measured() -> list[Any]:  # only asked when the memory model says the launch does not load
            import topoctl.rules as rules_api
            from topoctl.autoconf.evidence import collect_evidence

            report = rules_api.evaluate(ruleset, snapshot, request)
            return collect_evidence([f for f in report.findings if f.status == "fired"])

        outcome.items.extend(memory_items(parsed, snapshot, flags, tp_all, model, Item, measured))
    made_for = parsed.metadata.get("TOPOCTL_SGLANG_VERSION")
    if made_for:
        from topoctl.sglang.flags import normalise_version

        try:
            made_for = normalise_version(made_for)
        except Exception:  # noqa: BLE001 - compared as written
            pass
    if made_for and flags.requested and made_for != flags.requested:
        outcome.items.append(Item("topoctl-sglang-version-mismatch", "warn", "launch made for another SGLang version",
                                  one_line(f"the launch was written for SGLang {made_for}; the target runs {flags.requested}, "
                                           f"so its flags are judged as {flags.requested} reads them"),
                                  "re-run `topoctl recommend` for the target's SGLang version, or pass --sglang-version "
                                  "if the target will run another one"))
    if expect is not None:
        outcome.items.extend(drift(expect, snapshot))
    order = {"block": 0, "warn": 1, "info": 2}
    outcome.items.sort(key=lambda item: (order.get(item.severity, 3), item.id, item.message))
    return outcome


def _size_items(parsed: ParsedLaunch, tp_all: int, tp_node: int, ep: int, gpu_count: int, span: Any) -> list[Item]:
    """The limits recommend holds --tp-size and --ep-size to (what it refuses, check blocks), per node: the ranks
    one node runs against the target's GPUs, --ep-size against the whole TP group. A node count that is only
    assumed never blocks."""
    from topoctl.autoconf.target import check_parallel_sizes
    from topoctl.errors import TopoctlError

    if tp_all < 1 or ep < 1:  # a size below 1 is already a blocking flag problem
        return []
    where = parsed.lines.get("SGLANG_ARGS", "")
    try:
        check_parallel_sizes(tp_node, 1, gpu_count)
    except TopoctlError as error:
        if span.assumed:
            return []
        message = error.message if span.nodes == 1 else \
            f"--tp-size {tp_all} over {span.nodes} nodes ({span.source}) places {tp_node} ranks on each node, " \
            f"more than the {gpu_count} GPUs of the target"
        hint = error.hint if span.nodes == 1 else f"use --nnodes {-(-tp_all // gpu_count)} or more, or a TP size " \
            f"of {gpu_count * (span.nodes or 1)} or less"
        return [Item("topoctl-tp-exceeds-gpus", "block", "tensor parallel size exceeds the GPUs",
                     one_line(message), one_line(hint or ""), where)]
    try:
        check_parallel_sizes(tp_all, ep, tp_all)
    except TopoctlError as error:
        return [Item("topoctl-ep-size-invalid", "block", "expert parallel size does not fit the TP size",
                     one_line(error.message), one_line(error.hint or ""), where)]
    return []


def rule_items(parsed: ParsedLaunch, snapshot: dict[str, Any], ruleset: Any, request: dict[str, Any],
               launch: dict[str, Any], present: set[str]) -> list[Item]:
    """The rules' findings on one launch and GPU group (request["gpus"]), as check reports them; `present`:
    ids already reported (a warning without forbid/require is not repeated)."""
    import topoctl.rules as rules_api

    report = rules_api.evaluate(ruleset, snapshot, request)
    items: list[Item] = []
    seen: set[str] = set()
    for violation in rules_api.violations(report, launch):
        finding = violation.finding
        key = f"{finding.rule_id}:{violation.setting}"
        if key in seen:
            continue
        seen.add(key)
        if finding.severity not in ("block", "warn"):
            continue
        written = parsed.written.get(violation.setting, f"{violation.setting} left at its default")
        if violation.setting in report.implied:  # SGLang sets it by itself for this launch (effect.implies)
            value, because = report.implied[violation.setting]
            written = f"{violation.setting}={value} set by SGLang itself ({because})"
        status = finding.status_text
        message = one_line(f"{written}: {finding.message}" + (f" (cannot verify: {', '.join(finding.unknown_facts)} unknown)"
                                                               if finding.status == "unknown" else ""))
        items.append(Item(finding.rule_id, finding.severity, one_line(finding.title), message,
                          one_line(finding.remediation), one_line(violation.detail), status))
    for finding in report.findings:
        if finding.severity == "warn" and finding.status == "fired" and not finding.effect.get("forbid") \
                and not finding.effect.get("require") and finding.rule_id not in present | {i.id for i in items}:
            items.append(Item(finding.rule_id, "warn", one_line(finding.title), one_line(finding.message),
                              one_line(finding.remediation)))
    return items


# Runtimes that, given a number of GPUs and no ids, give GPUs 0..N-1 (nvidia-smi's indices): Docker Engine
# (moby daemon/nvidia_linux.go, setNvidiaGPUs: NVIDIA_VISIBLE_DEVICES=countToDevices(count), "0,1,...,count-1";
# Compose's `count:` / `gpus:` reach the engine as the same device request) and nerdctl
# (pkg/cmd/container/run_gpus.go: nvidia.WithDevices(0..count-1)). Podman and Kubernetes: not defined here
# (the kubelet's device manager and the device plugin pick free GPUs), so any N of the machine.
RUNTIME_PICKS = ("docker run --gpus", "nerdctl run --gpus", "deploy.resources.reservations.devices", "gpus: ")
ANY_SET_LIMIT = 500  # sets of N GPUs judged one by one; beyond, every pair of the machine (said)


def runtime_pick(given: Any, machine: int) -> list[str] | None:
    """The host GPU ids a runtime gives a launch that asks for a number of GPUs, where that is defined."""
    if given is None or given.ids is not None or given.count is None or not 0 < given.count < machine:
        return None
    if not str(getattr(given, "source", "")).startswith(RUNTIME_PICKS):
        return None
    return [str(index) for index in range(given.count)]


def any_gpu_sets(parsed: ParsedLaunch, snapshot: dict[str, Any]) -> list[tuple[int, ...]] | None:
    """Every set of GPUs a launch given only a number of them may get (a Kubernetes `nvidia.com/gpu: N`, podman
    `--gpus N`), each in the PCI bus order CUDA inside numbers them; None when the GPUs are known (ids, all, a
    runtime that picks 0..N-1, no container) or there are more than ANY_SET_LIMIT sets."""
    from topoctl.cuda_devices import pci_order

    given = getattr(parsed, "gpus", None)
    machine = pci_order(snapshot)
    if given is None:
        unknown = _order_unknown(parsed, snapshot)
        if unknown is None or not 0 < unknown.count < len(machine) \
                or math.comb(len(machine), unknown.count) > ANY_SET_LIMIT:
            return None
        return list(itertools.combinations(machine, unknown.count))
    if given.ids is not None or given.count is None or not 0 < given.count < len(machine):
        return None
    if runtime_pick(given, len(machine)) is not None or math.comb(len(machine), given.count) > ANY_SET_LIMIT:
        return None
    return list(itertools.combinations(machine, given.count))


def _order_unknown(parsed: ParsedLaunch, snapshot: dict[str, Any]) -> Any:
    """The launch's CUDA_VISIBLE_DEVICES when it names `count` GPUs that CUDA's default device order leaves
    unknown (integer ids without CUDA_DEVICE_ORDER=PCI_BUS_ID, topoctl/cuda_devices.py resolve_visible)."""
    from topoctl.cuda_devices import DEVICE_ORDER, VISIBLE_DEVICES, parse_visible_devices

    value = parsed.env.get(VISIBLE_DEVICES)
    if value is None:
        return None
    group = parse_visible_devices(value, snapshot, parsed.env.get(DEVICE_ORDER))
    return group if group.order_unknown else None


def _judge_any_set(parsed: ParsedLaunch, snapshot: dict[str, Any], ruleset: Any, request: dict[str, Any],
                   launch: dict[str, Any], sets: list[tuple[int, ...]], tp: int, dp: int, gpu_count: int,
                   present: set[str]) -> list[Item]:
    """A launch given N GPUs that the scheduler picks: judged on every set it may get. A finding that blocks on
    every set blocks; one that blocks on some sets only is a warning naming the pairs (or sets) it blocks on,
    with a hint to pin the GPUs; warnings of any set are reported once."""
    given = getattr(parsed, "gpus", None)
    per_set: list[tuple[tuple[int, ...], list[Item]]] = []
    for devices in sets:
        group, group_items = launch_group(parsed, snapshot, tp if tp >= 1 else 1, dp, gpu_count, devices)
        judged = dict(request, gpus=list(group) if group is not None else list(devices))
        per_set.append((devices, [item for item in group_items if item.severity != "info"]
                        + rule_items(parsed, snapshot, ruleset, judged, launch, present)))
    size = len(sets[0]) if sets else 0
    if given is not None:
        why = f"the launch is given {given.count} GPUs ({given.source}); which ones is decided where it runs"
        hint, where_said = "", parsed.where
    else:
        from topoctl.cuda_devices import DEVICE_ORDER, PCI_BUS_ID_ORDER, VISIBLE_DEVICES

        unknown = _order_unknown(parsed, snapshot)
        why = unknown.reason if unknown is not None else ""
        hint = f"add {DEVICE_ORDER}={PCI_BUS_ID_ORDER} next to {VISIBLE_DEVICES}, or name the GPUs by UUID"
        where_said = parsed.lines.get(VISIBLE_DEVICES, "")
    items: list[Item] = [Item("topoctl-gpu-group" if given is not None else "topoctl-gpu-group-unknown",
                              "info",  # what matters is said by each finding that differs between the sets
                              "GPUs the launch runs on" if given is not None else "GPUs of the launch unknown",
                              one_line(f"{why}; so it is judged on every set of {size} of the target's "
                                       f"{len(_machine(snapshot))} GPUs ({len(sets)} sets)"), hint, where_said)]
    keys: dict[tuple[str, str, str], Item] = {}
    blocking: dict[tuple[str, str, str], list[tuple[int, ...]]] = {}
    for devices, found in per_set:
        for item in found:
            key = (item.id, item.title, item.where)
            keys.setdefault(key, item)
            if item.severity == "block":
                blocking.setdefault(key, [])
                if devices not in blocking[key]:
                    blocking[key].append(devices)
    for key, item in keys.items():
        bad = blocking.get(key)
        if bad is None:
            items.append(item)  # a warning: once
        elif len(bad) == len(sets):
            items.append(item)  # blocks whatever GPUs the launch gets
        else:
            items.append(_some_sets_warning(item, bad, sets, snapshot if given is None else None))
    return items


def _machine(snapshot: dict[str, Any]) -> list[int]:
    from topoctl.cuda_devices import pci_order

    return pci_order(snapshot)


def _some_sets_warning(item: Item, bad: list[tuple[int, ...]], sets: list[tuple[int, ...]],
                       order_snapshot: dict[str, Any] | None = None) -> Item:
    """A block that holds on some of the sets a scheduler may pick only: a warning naming where it blocks."""
    good = [devices for devices in sets if devices not in bad]
    good_pairs = {pair for devices in good for pair in itertools.combinations(devices, 2)}
    bad_pairs = sorted({pair for devices in bad for pair in itertools.combinations(devices, 2)} - good_pairs)
    if bad_pairs:
        where = "pairs " + ", ".join(f"GPU{a}-GPU{b}" for a, b in bad_pairs[:8]) + (" ..." if len(bad_pairs) > 8 else "")
    else:
        where = "sets " + "; ".join(_ids(devices) for devices in bad[:4]) + (" ..." if len(bad) > 4 else "")
    safe = _ids(good[0])
    if order_snapshot is not None:  # integer ids under CUDA's default order: the fix is to say the order
        from topoctl.cuda_devices import visible_devices_value

        return Item(item.id, "warn", item.title,
                    one_line(f"blocks on {len(bad)} of the {len(sets)} sets of GPUs the ids may name ({where}): "
                             f"{item.message}"),
                    one_line(f"set CUDA_DEVICE_ORDER=PCI_BUS_ID so that the ids name known GPUs (GPUs {safe}: "
                             f"CUDA_VISIBLE_DEVICES={visible_devices_value(good[0], order_snapshot)}), "
                             f"or follow the rule: {item.remediation}"),
                    item.where, item.status)
    return Item(item.id, "warn", item.title,
                one_line(f"blocks on {len(bad)} of the {len(sets)} sets of GPUs the launch may get ({where}): "
                         f"{item.message}"),
                one_line(f"pin the GPUs the launch gets (for example GPUs {safe}: docker --gpus '\"device={safe}\"', "
                         "or a node and device plugin setting that gives those), or follow the rule: "
                         f"{item.remediation}"),
                item.where, item.status)


def launch_group(parsed: ParsedLaunch, snapshot: dict[str, Any], tp: int, dp: int, gpu_count: int,
                 given_devices: tuple[int, ...] | None = None) -> tuple[tuple[int, ...] | None, list[Item]]:
    """The GPUs the launch runs on (snapshot indices), and what check says about them.

    CUDA_VISIBLE_DEVICES (launch.env, or the environment before the command) names the visible GPUs, read as
    CUDA reads it (topoctl/cuda_devices.py); SGLang's ranks take visible devices base_gpu_id + dp_rank x tp x
    gpu_id_step + tp_rank x gpu_id_step (sglang 0.5.12 srt/entrypoints/engine.py and
    srt/managers/data_parallel_controller.py; pipeline parallelism not modelled). Without
    it, the first tp x dp GPUs in PCI bus order. When the value cannot be mapped onto the snapshot, every GPU
    (conservatively, with a warning). None: every GPU, by the engine's own default.

    `given_devices`: the GPUs a container given only a number of GPUs sees, for one of the sets it may get
    (any_gpu_sets)."""
    from topoctl.cuda_devices import (
        DEVICE_ORDER,
        VISIBLE_DEVICES,
        VisibleGroup,
        container_devices,
        parse_visible_devices,
        pci_order,
        probe_visible,
    )
    needed = tp * dp
    base = max(_raw_int(parsed, "base_gpu_id", 0), 0)
    step = max(_raw_int(parsed, "gpu_id_step", 1), 1)
    positions, spread = _rank_positions(tp, dp, base, step)
    where = parsed.lines.get(VISIBLE_DEVICES, "")
    value = parsed.env.get(VISIBLE_DEVICES)
    items: list[Item] = []
    machine = pci_order(snapshot)
    given = getattr(parsed, "gpus", None)  # docker --gpus / nvidia.com/gpu: what the launcher gives the launch
    source = str(getattr(given, "source", ""))
    devices = machine
    picked = runtime_pick(given, len(machine))
    if given_devices is not None:  # one possible set of GPUs of a launch given a number of them ("any N")
        devices = list(given_devices)
    elif picked is not None:
        mapped, _ = container_devices(picked, snapshot)
        if mapped is not None:
            devices = mapped
            source += (f": the runtime gives GPUs {','.join(picked)} (NVIDIA_VISIBLE_DEVICES=0..N-1, "
                       "moby daemon/nvidia_linux.go countToDevices; pin device ids to choose others)")
    elif given is not None and given.ids is not None:
        mapped, why = container_devices(list(given.ids), snapshot)
        if mapped is None:
            items.append(Item("topoctl-gpu-group-unknown", "warn", "GPUs of the launch unknown",
                              one_line(f"{why} ({source}); judged on every GPU of the target"),
                              "give GPUs by their index or UUID as `topoctl show` lists them", parsed.where))
            return tuple(machine), items
        devices = mapped
    elif given is not None and given.count is not None and given.count < len(machine):
        items.append(Item("topoctl-gpu-group", "info", "GPUs the launch runs on",
                          one_line(f"the launch is given {given.count} GPUs ({source}); which ones is decided "
                                   f"where it runs, and there are more than {ANY_SET_LIMIT} sets of them, so it is "
                                   "judged on every pair of the target"), "", parsed.where))
        return tuple(machine), items
    seen = probe_visible(snapshot) if given is None and value is None and given_devices is None else None
    if seen is not None:  # CUDA_VISIBLE_DEVICES where the snapshot was taken: CUDA's devices are those GPUs
        devices, source = list(seen.gpus), seen.text
        if max(positions) >= len(devices):
            if tp > gpu_count:  # more than the machine has: the parallel-size check says so
                return tuple(devices), items
            return _too_few(items, tp, dp, positions, len(devices), seen.text, where, tuple(devices))
    if value is None and devices is not machine:
        if tp > len(devices):  # the launcher check says so (tp-exceeds-given-gpus)
            return tuple(devices), items
        if max(positions) >= len(devices):
            return _too_few(items, tp, dp, positions, len(devices), f"the launch is given {len(devices)} "
                            f"({source})", where, tuple(devices))
        group = tuple(devices[position] for position in positions)
        items.append(Item("topoctl-gpu-group", "info", "GPUs the launch runs on",
                          one_line(f"judged on GPUs {_ids(group)} of {len(machine)} ({source})"), "",
                          parsed.where))
        return group, items
    if value is None:
        if tp > gpu_count:  # the parallel-size check says so
            return None, items
        if needed == len(machine) and not spread:
            return None, items
        if max(positions) >= len(machine):
            return _too_few(items, tp, dp, positions, len(machine), f"the target has {len(machine)} GPUs", where)
        group = tuple(machine[position] for position in positions)
        items.append(Item("topoctl-gpu-group", "info", "GPUs the launch runs on",
                          one_line(f"judged on GPUs {_ids(group)} of {len(machine)}: "
                                   + (f"from --base-gpu-id {base} / --gpu-id-step {step}" if spread
                                      else f"the first {needed}")
                                   + f" ({VISIBLE_DEVICES} is not set); pairs with the other GPUs do not count"),
                          f"set {VISIBLE_DEVICES} (with {DEVICE_ORDER}=PCI_BUS_ID) to choose the GPUs; "
                          "`topoctl recommend --tp-size N` picks the best group"))
        return group, items
    visible = parse_visible_devices(value, snapshot, parsed.env.get(DEVICE_ORDER), devices)
    if given is None and given_devices is not None:  # one of the sets integer ids may name (any_gpu_sets)
        whole = parse_visible_devices(value, snapshot, parsed.env.get(DEVICE_ORDER))
        if whole.order_unknown and len(given_devices) == whole.count:
            visible = VisibleGroup(tuple(given_devices), notes=whole.notes)
    if visible.gpus is None:
        items.append(Item("topoctl-gpu-group-unknown", "warn", "GPUs of the launch unknown",
                          one_line(f"{visible.reason}; judged on every GPU of the target"),
                          f"write {VISIBLE_DEVICES} as integer ids with {DEVICE_ORDER}=PCI_BUS_ID, or as GPU UUIDs",
                          where))
        return tuple(machine), items  # unknown: judged on every pair, conservatively
    for note in visible.notes:
        items.append(Item("topoctl-gpu-group", "info", "GPUs the launch runs on", one_line(note), "", where))
    if max(positions) >= len(visible.gpus):
        if tp > gpu_count:  # more than the machine has: the parallel-size check says so
            return visible.gpus, items
        return _too_few(items, tp, dp, positions, len(visible.gpus), f"{VISIBLE_DEVICES}={value} leaves "
                        f"{len(visible.gpus)} visible", where, visible.gpus)
    group = tuple(visible.gpus[position] for position in positions)
    items.append(Item("topoctl-gpu-group", "info", "GPUs the launch runs on",
                      one_line(f"judged on GPUs {_ids(group)} of {len(machine)} ({VISIBLE_DEVICES}={value}"
                               + (f", devices {_ids(tuple(positions))} of it (--base-gpu-id / --gpu-id-step)" if spread
                                  else f", the first {needed} of them" if needed < len(visible.gpus) else "") + ")"),
                      "", where))
    return group, items


def _rank_positions(tp: int, dp: int, base: int, step: int) -> tuple[list[int], bool]:
    """(the visible device index of each rank, whether they are other than the first tp x dp), built only when
    they could fit a snapshot: past MAX_GPUS ranks (`--tp-size 1000000000`) the highest index alone stands for
    them, which is all the checks below read of a group that cannot fit."""
    from topoctl.snapshot import MAX_GPUS

    needed = tp * dp
    if needed > MAX_GPUS:
        return [base + (needed - 1) * step], True
    positions = [base + dp_rank * tp * step + tp_rank * step for dp_rank in range(dp) for tp_rank in range(tp)]
    return positions, positions != list(range(needed))


def _too_few(items: list[Item], tp: int, dp: int, positions: list[int], available: int, what: str, where: str,
             fallback: tuple[int, ...] | None = None) -> tuple[tuple[int, ...] | None, list[Item]]:
    """A launch whose ranks need a device id past the visible ones: CUDA has no such device, SGLang cannot start."""
    items.append(Item("topoctl-tp-exceeds-visible-gpus", "block", "tensor parallel size exceeds the visible GPUs",
                      one_line(f"tp {tp} x dp {dp} uses device ids up to {max(positions)}; {what}: the server will "
                               "not start"),
                      f"make {max(positions) + 1} GPUs visible, or lower --tp-size / --base-gpu-id", where))
    return fallback, items


def _raw_flag(parsed: ParsedLaunch, dest: str) -> bool:
    """Whether a switch topoctl has no logical setting for (--enable-dp-attention) is given."""
    from topoctl.autoconf.nodes import given_flags

    return any(True for _ in given_flags(parsed, dest))


def _raw_int(parsed: ParsedLaunch, dest: str | tuple[str, ...], default: int) -> int:
    """An int flag topoctl has no logical setting for (--base-gpu-id, --gpu-id-step), read from the launch's
    arguments with the version's flag data; the last one given counts, as in argparse (one argparse refuses is
    already a blocking flag problem: the default stands for it)."""
    from topoctl.autoconf.nodes import written_value

    text, _ = written_value(parsed, dest)
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


def _visible_count(parsed: ParsedLaunch, snapshot: dict[str, Any], gpu_count: int) -> int:
    """How many GPUs the launch's CUDA_VISIBLE_DEVICES leaves visible (every GPU without one, or when unknown)."""
    from topoctl.cuda_devices import DEVICE_ORDER, VISIBLE_DEVICES, container_devices, parse_visible_devices, probe_visible

    given = getattr(parsed, "gpus", None)
    devices = container_devices(list(given.ids), snapshot)[0] if given is not None and given.ids is not None else None
    if given is not None and given.ids is None and given.count is not None:
        return min(given.count, gpu_count)
    value = parsed.env.get(VISIBLE_DEVICES)
    seen = probe_visible(snapshot) if given is None and value is None else None
    if seen is not None:
        return len(seen.gpus)
    if value is None:
        return gpu_count if devices is None else len(devices)
    visible = parse_visible_devices(value, snapshot, parsed.env.get(DEVICE_ORDER), devices)
    if visible.order_unknown:
        return visible.count  # how many is known, which ones is not
    return (gpu_count if devices is None else len(devices)) if visible.gpus is None else len(visible.gpus)


def _ids(group: tuple[int, ...]) -> str:
    return ",".join(str(index) for index in group)


def drift(expected: dict[str, Any], actual: dict[str, Any]) -> list[Item]:
    """What changed on the target machine since the snapshot the launch was made for."""
    from topoctl.snapshot_view import SnapshotView

    items: list[Item] = []
    before_view, after_view = SnapshotView(expected), SnapshotView(actual)
    e_count, a_count = before_view.gpu_count, after_view.gpu_count
    if e_count != a_count:
        items.append(Item("drift-gpu-count", "block", "GPU count changed",
                          f"expected {e_count} GPUs, the machine has {a_count}", "recommend again for this machine"))
    e_names, a_names = before_view.gpu_model_names, after_view.gpu_model_names
    if e_names != a_names and e_count == a_count:
        items.append(Item("drift-gpu-model", "block", "GPU model changed",
                          one_line(f"expected {', '.join(sorted(set(e_names)))}, found {', '.join(sorted(set(a_names)))}"),
                          "recommend again for this machine"))

    def pairs_text(pairs: list[tuple[int, int]]) -> str:
        return ", ".join(f"{a}->{b}" for a, b in pairs[:6]) + (" ..." if len(pairs) > 6 else "")

    before, after = before_view.pair_p2p_ok, after_view.pair_p2p_ok  # None: "unknown"/NVML's U, not verified
    lost = sorted(pair for pair, ok in before.items() if ok and after.get(pair) is False)
    unverified = sorted(pair for pair, ok in before.items() if ok and pair in after and after[pair] is None)
    missing = sorted(pair for pair, ok in before.items() if ok and pair not in after)
    if lost:
        items.append(Item("drift-p2p-lost", "block", "P2P lost",
                          f"P2P read/write no longer OK for {len(lost)} pair(s): {pairs_text(lost)}",
                          "check IOMMU/ACS and the driver; recommend again"))
    if unverified or (missing and after and not lost):
        what = []
        if unverified:
            what.append(f"{len(unverified)} pair(s) that had P2P now have an unknown read/write status: "
                        f"{pairs_text(unverified)}")
        if missing:
            what.append(f"{len(missing)} pair(s) that had P2P are missing from the target snapshot")
        items.append(Item("drift-p2p-unknown", "warn", "P2P not verifiable", "; ".join(what),
                          "probe again (topoctl probe); if NVML keeps answering U, check the driver and IOMMU/ACS"))
    e_gpus = before_view.gpus_by_index
    for gpu in after_view.indexed_gpus:
        before_gpu = e_gpus.get(gpu["index"])
        if not before_gpu:
            continue
        bp, ap = before_gpu.get("pcie") or {}, gpu.get("pcie") or {}
        for field_name, label in (("current_width", "width x"), ("current_gen", "gen ")):
            b, a = bp.get(field_name), ap.get(field_name)
            if isinstance(b, int) and isinstance(a, int) and a < b:
                items.append(Item("drift-link-downtrained", "warn", "PCIe link down-trained",
                                  f"GPU {gpu.get('index')}: PCIe {label}{a}, was {label}{b}",
                                  "reseat the card or check the riser; expect slower allreduce"))
        bn, an = (before_gpu.get("nvlink") or {}).get("active_links"), (gpu.get("nvlink") or {}).get("active_links")
        if isinstance(bn, int) and isinstance(an, int) and an < bn:
            items.append(Item("drift-nvlink-down", "block", "NVLink links down",
                              f"GPU {gpu.get('index')}: {an} active NVLinks, was {bn}", "check the fabric; recommend again"))
    if before_view.interconnect != after_view.interconnect:
        items.append(Item("drift-interconnect", "block", "interconnect changed",
                          one_line(f"expected {before_view.interconnect}, found {after_view.interconnect}"),
                          "recommend again for this machine"))
    for key, label in (("driver", "driver"), ("cuda_driver", "CUDA (driver)"), ("nccl", "NCCL"),
                       ("sglang", "SGLang"), ("torch", "torch")):
        b, a = before_view.software(key), after_view.software(key)
        if b != a and b is not None:
            items.append(Item(f"drift-{key.replace('_', '-')}-version", "warn", f"{label} version changed",
                              one_line(f"{label} {b} -> {a}"), "re-run `topoctl recommend` and re-test the launch"))
    return items


# ----------------------------------------------------------------------------------------------- formats

def escape(text: str) -> str:
    """XML text escape (xml.sax.saxutils would pull in urllib on every start)."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def quoteattr(text: str) -> str:
    return '"' + escape(text).replace('"', "&quot;") + '"'


def format_text(outcomes: list[Outcome], fail_on: str) -> str:
    lines = []
    for outcome in outcomes:
        if outcome.error:
            lines.append(f"{outcome.origin}: not checked")
            lines.append(f"  ERROR {one_line(outcome.error)}")
            continue
        if outcome.skipped:
            lines.append(f"{one_line(outcome.origin)}: no launch checked")
            lines.append(f"  NONE  {one_line(outcome.skipped)}")
            continue
        # everything that comes from the input (names, paths, values) on one line: a container named
        # "x\n::error::..." must not print a line a CI log reads as its own annotation
        head = f"{outcome.origin}: SGLang {outcome.flags_version}" + (f" ({outcome.note})" if outcome.note else "")
        lines.append(one_line(head))
        for rule_id, reason in outcome.disabled:
            lines.append(f"  OFF   {one_line(rule_id)}: disabled: {one_line(reason)}")
        for item in outcome.items:
            lines.append(f"  {item.severity.upper():5} {one_line(item.id)}: {one_line(item.message)}")
            if item.remediation:
                lines.append(f"        fix: {one_line(item.remediation)}")
        verdict = "FAIL" if failing(outcome, fail_on) else "ok"
        lines.append(f"  {verdict}: {outcome.count('block')} blocking, {outcome.count('warn')} warning(s)")
    return "\n".join(lines) + "\n"


def format_json(outcomes: list[Outcome], fail_on: str) -> str:
    doc = {"schema_version": SCHEMA_VERSION, "fail_on": fail_on,
           "ok": not any(failing(o, fail_on) for o in outcomes), "results": [
        {"origin": o.origin, "sglang_flags_version": o.flags_version, "note": o.note or None,
         "ok": not failing(o, fail_on), "blocking": o.count("block"), "warnings": o.count("warn"),
         "findings": [item.__dict__ for item in o.items],
         "disabled": [{"rule_id": rule_id, "reason": reason} for rule_id, reason in o.disabled]} for o in outcomes
        if not o.skipped and not o.error],
        "no_launch": [{"origin": o.origin, "reason": o.skipped} for o in outcomes if o.skipped and not o.error]}
    errors = [{"origin": o.origin, "message": o.error} for o in outcomes if o.error]
    if errors:  # only when a file could not be checked: reports of runs without errors keep their form
        doc["errors"] = errors
        doc["ok"] = False
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def format_junit(outcomes: list[Outcome], fail_on: str) -> str:
    lines = ['<?xml version="1.0" encoding="UTF-8"?>']
    total = sum(max(len(o.items), 1) + len(o.disabled) for o in outcomes)
    failures = sum(1 for o in outcomes for i in o.items if _fails(i, fail_on))
    skipped = sum(len(o.disabled) + (1 if o.skipped and not o.error else 0) for o in outcomes)
    errors = sum(1 for o in outcomes if o.error)
    lines.append(f'<testsuites name="topoctl check" tests="{total}" failures="{failures}" skipped="{skipped}"'
                 + (f' errors="{errors}"' if errors else "") + ">")
    for o in outcomes:
        if o.error:
            lines.append(f'  <testsuite name={quoteattr(one_line(o.origin))} tests="1" failures="0" errors="1">')
            lines.append(f'    <testcase classname="topoctl.check" name={quoteattr(one_line(o.origin))}>')
            lines.append(f'      <error message={quoteattr(one_line("not checked: " + o.error))}/>')
            lines.append("    </testcase>")
            lines.append("  </testsuite>")
            continue
        if o.skipped:
            lines.append(f'  <testsuite name={quoteattr(one_line(o.origin))} tests="1" failures="0" skipped="1">')
            lines.append(f'    <testcase classname="topoctl.check" name={quoteattr(one_line(o.origin))}>')
            lines.append(f'      <skipped message={quoteattr(one_line("no launch: " + o.skipped))}/>')
            lines.append("    </testcase>")
            lines.append("  </testsuite>")
            continue
        o_fail = sum(1 for i in o.items if _fails(i, fail_on))
        lines.append(f'  <testsuite name={quoteattr(one_line(o.origin))} tests="{max(len(o.items), 1) + len(o.disabled)}" '
                     f'failures="{o_fail}" skipped="{len(o.disabled)}">')
        if not o.items:
            lines.append('    <testcase classname="topoctl.check" name="launch"/>')
        for rule_id, reason in o.disabled:  # a switched-off rule shows as a skipped test with its reason
            classname = quoteattr("topoctl.check." + one_line(o.origin))
            lines.append(f'    <testcase classname={classname} name={quoteattr(one_line(rule_id))}>')
            lines.append(f'      <skipped message={quoteattr(one_line("disabled: " + reason))}/>')
            lines.append("    </testcase>")
        for item in o.items:
            name = quoteattr(f"{item.id}")
            lines.append(f'    <testcase classname={quoteattr("topoctl.check." + one_line(o.origin))} name={name}>')
            text = escape(one_line(f"{item.message}" + (f" -- fix: {item.remediation}" if item.remediation else "")))
            if _fails(item, fail_on):
                lines.append(f'      <failure type="{item.severity}" message={quoteattr(one_line(item.title))}>{text}</failure>')
            else:
                lines.append(f"      <system-out>{escape(item.severity)}: {text}</system-out>")
            lines.append("    </testcase>")
        lines.append("  </testsuite>")
    lines.append("</testsuites>")
    return "\n".join(lines) + "\n"


def _gh(text: str) -> str:
    return one_line(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(text: str) -> str:
    return _gh(text).replace(":", "%3A").replace(",", "%2C")


def _origin_file_line(origin: str) -> tuple[str, str]:
    """`path:line (label)` or `path` -> (path, line or "")."""
    import re

    match = re.match(r"^(.*?):(\d+)(?: \(.*\))?$", origin)
    return (match.group(1), match.group(2)) if match else (origin, "")


def format_github(outcomes: list[Outcome], fail_on: str) -> str:
    lines = []
    for o in outcomes:
        path, line_no = _origin_file_line(o.origin)
        origin_part = (f"file={_gh_prop(path)}," + (f"line={line_no}," if line_no else "")
                       if o.origin and o.origin not in ("<command>", "<stdin>") else "")
        if o.error:
            lines.append(f"::error {origin_part}title={_gh_prop('not checked')}::{_gh(o.error)}")
            continue
        if o.skipped:
            lines.append(f"::notice {origin_part}title={_gh_prop('no launch')}::{_gh(o.skipped)}")
            continue
        for rule_id, reason in o.disabled:
            lines.append(f"::notice {origin_part}title={_gh_prop(rule_id + ': disabled')}::{_gh('disabled: ' + reason)}")
        for item in o.items:
            level = "error" if _fails(item, fail_on) else ("warning" if item.severity == "warn" else "notice")
            file_part = ""
            where = item.where or ""
            if ":" in where and where.rsplit(":", 1)[1].isdigit():
                path, line = where.rsplit(":", 1)
                file_part = f"file={_gh_prop(path)},line={line},"
            elif o.origin and o.origin not in ("<command>", "<stdin>"):
                file_part = origin_part
            message = item.message + (f" -- fix: {item.remediation}" if item.remediation else "")
            lines.append(f"::{level} {file_part}title={_gh_prop(item.id + ': ' + item.title)}::{_gh(message)}")
    return "\n".join(lines) + ("\n" if lines else "")


def _fails(item: Item, fail_on: str) -> bool:
    return item.severity == "block" or (fail_on == "warn" and item.severity == "warn")


def failing(outcome: Outcome, fail_on: str) -> bool:
    return any(_fails(item, fail_on) for item in outcome.items)


def format_sarif(outcomes: list[Outcome], fail_on: str) -> str:
    """SARIF 2.1.0 for code scanning: a renderer of its own (autoconf/sarif.py)."""
    from topoctl.autoconf.sarif import format_sarif as render

    return render(outcomes, fail_on)


FORMATTERS = {"text": format_text, "json": format_json, "junit": format_junit, "github": format_github,
              "sarif": format_sarif}

__all__ = ["Item", "Outcome", "Problem", "judge", "drift", "FORMATTERS", "failing"]
