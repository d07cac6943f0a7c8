"""The judge stage of check: a parsed launch, its nodes and GPU group (the resolve stage), against
the target machine: the launch's own flag problems, the rules' findings (the rule engine recommend
runs), the parallel sizes recommend holds to, the memory fit recommend runs (judge_memory.py) and
drift from the snapshot the launch was made for (judge_drift.py). Gives one Outcome
(topoctl/check/outcome.py) for the report stage.

Layer: judge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from topoctl.check.judge_kernels import kernel_items
from topoctl.check.judge_memory import memory_items
from topoctl.check.judge_network import network_items
from topoctl.check.judge_preflight import recorded_items
from topoctl.check.outcome import Item, Outcome
from topoctl.check.parse import raw_int
from topoctl.check.resolve import launch_model
from topoctl.check.resolve_gpus import (
    _ids,
    _machine,
    _order_unknown,
    _visible_count,
    any_gpu_sets,
    launch_group,
)
from topoctl.check.resolve_nodes import NodeSpan, node_request, node_span
from topoctl.core.errors import one_line
from topoctl.core.vocab import Severity
from topoctl.deploy.sglang_launch import ParsedLaunch
from topoctl.rules.sglang.spelling import switch
from topoctl.snapshot.cuda_devices import (
    DEVICE_ORDER,
    PCI_BUS_ID_ORDER,
    VISIBLE_DEVICES,
    visible_devices_value,
)
from topoctl.snapshot.view import SnapshotLike, view_of

if TYPE_CHECKING:
    from topoctl.autoconf.evidence import Evidence
    from topoctl.rules.engine.model import RuleSet
    from topoctl.rules.sglang.flags import FlagSet

SEVERITY_ORDER = {Severity.BLOCK: 0, Severity.WARN: 1, Severity.INFO: 2}


@dataclass
class Sizes:
    """The parallel sizes SGLang runs the launch with: what it writes, else SGLang's defaults."""

    tp_all: int  # --tp-size over every node
    tp: int  # the TP ranks one node runs
    ep: int
    dp: int  # data-parallel replicas, each on its own TP group (1 under DP attention)
    span: NodeSpan


def judge(
    parsed: ParsedLaunch,
    snapshot: SnapshotLike,
    flags: FlagSet,
    ruleset: RuleSet,
    gpu_count: int,
    model: dict[str, Any] | None = None,
    expect: SnapshotLike = None,
) -> Outcome:
    """`gpu_count`: the target's GPUs, as `target.target_gpu_count(snapshot)` gives them (at least
    1). A launch over several nodes is judged per node (resolve_nodes.py): its ranks on one node
    against the target's GPUs."""
    outcome = Outcome(
        parsed.origin,
        flags_version=flags.version,
        note="" if flags.exact else flags.note,
        disabled=sorted(
            (str(k), str(v)) for k, v in (getattr(ruleset, "disabled", None) or {}).items()
        ),
    )
    outcome.items.extend(
        Item(
            f"sglang-{problem.code}",
            Severity(problem.severity),
            problem.code.replace("-", " "),
            problem.message,
            problem.remediation,
            problem.where,
        )
        for problem in parsed.problems
    )
    outcome.items.extend(given_gpus_items(parsed))
    launch = {k: v for k, v in parsed.settings.items() if k != "model_path"}
    sizes = parallel_sizes(parsed, flags, gpu_count)
    outcome.items.extend(
        Item("topoctl-nodes", Severity.INFO, "nodes the launch spans", one_line(message), "", where)
        for message, where in sizes.span.notes
    )
    spec = launch.get("speculative_algorithm")
    # The rules see the model the memory fit reads: --model, else the launch's --model-path
    # (config.json or a built-in profile's Hugging Face id); SGLang decides some settings from that
    # checkpoint.
    served = launch_model(parsed, model)[0]
    request = {
        "model": served,
        "speculative": spec.lower() if isinstance(spec, str) else None,
        "tp_size": sizes.tp,
        "ep_size": min(sizes.ep, sizes.tp) if sizes.span.nodes != 1 else sizes.ep,
        "dp_size": sizes.dp,
        "gpus": None,
        "sglang_version": flags.requested,
        "launch": launch,
        **node_request(parsed, sizes.span, sizes.tp_all),
    }
    outcome.items.extend(
        _gpu_and_rule_items(
            parsed,
            snapshot,
            ruleset,
            request,
            launch,
            sizes,
            gpu_count,
            {i.id for i in outcome.items},
        )
    )
    outcome.items.extend(_tp_not_given(parsed, snapshot, flags, launch, sizes.tp, gpu_count))
    outcome.items.extend(
        _size_items(parsed, sizes.tp_all, sizes.tp, sizes.ep, gpu_count, sizes.span)
    )
    outcome.items.extend(network_items(parsed, snapshot, sizes.span.nodes))
    outcome.items.extend(recorded_items(parsed, view_of(snapshot).measurement_rows("preflight")))
    if not any(
        item.severity == "block" and item.id.endswith("tp-exceeds-gpus") for item in outcome.items
    ):

        def measured() -> list[
            Evidence
        ]:  # only asked when the memory model says the launch does not load
            import topoctl.rules.engine as rules_api
            from topoctl.autoconf.evidence import collect_evidence

            report = rules_api.evaluate(ruleset, snapshot, request)
            return collect_evidence([f for f in report.findings if f.status == "fired"])

        outcome.items.extend(
            memory_items(parsed, snapshot, flags, sizes.tp_all, model, Item, measured)
        )
    outcome.items.extend(kernel_items(parsed, snapshot, flags.version, served, sizes.tp))
    outcome.items.extend(_version_mismatch(parsed, flags))
    outcome.items.extend(system_mismatch_items(parsed, snapshot))
    if expect is not None:  # --expect SNAPSHOT only
        from topoctl.check.judge_drift import drift

        outcome.items.extend(drift(expect, snapshot))
    outcome.items.sort(
        key=lambda item: (SEVERITY_ORDER.get(item.severity, 3), item.id, item.message)
    )
    return outcome


def parallel_sizes(parsed: ParsedLaunch, flags: FlagSet, gpu_count: int) -> Sizes:
    """The sizes SGLang runs the launch with. A launch that does not set --tp-size runs with
    SGLang's default (1 in every version's flag data), not on every GPU: judged as SGLang will run
    it (and said when it leaves GPUs idle). Data-parallel replicas each take their own TP group,
    unless DP attention runs inside the one TP group (SGLang 0.5.12
    srt/managers/data_parallel_controller.py: launch_dp_attention_schedulers)."""
    settings = parsed.settings
    tp_default = (flags.get("--tp-size") or {}).get("default")
    tp_default = (
        tp_default if isinstance(tp_default, int) and not isinstance(tp_default, bool) else 1
    )
    tp: int = settings["tp_size"] if isinstance(settings.get("tp_size"), int) else tp_default
    ep: int = settings["ep_size"] if isinstance(settings.get("ep_size"), int) else 1
    dp_value = settings.get("dp_size")
    dp = (
        dp_value
        if isinstance(dp_value, int) and not isinstance(dp_value, bool)
        else raw_int(parsed, ("dp_size", "data_parallel_size"), 1)
    )
    dp = 1 if dp < 1 or switch(settings, "dp_attention") else dp
    span = node_span(
        parsed,
        tp if tp >= 1 else 1,
        raw_int(parsed, ("pp_size", "pipeline_parallel_size"), 1),
        gpu_count,
    )
    return Sizes(tp, span.tp_per_node if tp >= 1 else tp, ep, dp, span)


def _gpu_and_rule_items(
    parsed: ParsedLaunch,
    snapshot: SnapshotLike,
    ruleset: RuleSet,
    request: dict[str, Any],
    launch: dict[str, Any],
    sizes: Sizes,
    gpu_count: int,
    present: set[str],
) -> list[Item]:
    """The GPU group of one node (resolve_gpus.py) and the rules' findings on it; a launch given a
    number of GPUs that the scheduler picks, on every set it may get."""
    tp, dp = sizes.tp, sizes.dp
    sets = any_gpu_sets(parsed, snapshot)
    if sets is not None:
        return _judge_any_set(parsed, snapshot, ruleset, request, sets, sizes, gpu_count, present)
    group, items = launch_group(parsed, snapshot, tp if tp >= 1 else 1, dp, gpu_count)
    request["gpus"] = list(group) if group is not None else None
    return items + rule_items(
        parsed, snapshot, ruleset, request, launch, present | {i.id for i in items}
    )


def _tp_not_given(
    parsed: ParsedLaunch,
    snapshot: SnapshotLike,
    flags: FlagSet,
    launch: dict[str, Any],
    tp: int,
    gpu_count: int,
) -> list[Item]:
    visible = _visible_count(parsed, snapshot, gpu_count)
    if (
        "tp_size" in launch or visible <= tp
    ):  # written but not read (an unresolved $TP): not "not given"
        return []
    seen_gpus = (
        f"the target's {gpu_count} GPUs" if visible == gpu_count else f"the {visible} visible GPUs"
    )
    return [
        Item(
            "topoctl-tp-size-not-given",
            Severity.WARN,
            "tensor parallel size not given",
            one_line(
                f"--tp-size is not given: SGLang {flags.version} runs with tensor parallel size "
                f"{tp}, using {tp} of {seen_gpus}"
            ),
            f"add --tp-size {visible} to use every {'visible ' if visible != gpu_count else ''}GPU "
            "(topoctl recommend writes it)",
            parsed.lines.get("SGLANG_ARGS", ""),
        )
    ]


def system_mismatch_items(parsed: ParsedLaunch, snapshot: SnapshotLike) -> list[Item]:
    """A launch.env records the system recommend made it for (TOPOCTL_SYSTEM: a reference system's
    name or the probed host's name). Checked against another target it may still pass, but its
    choices (TP size, GPU group, NCCL settings) were made for other hardware: a warning naming both,
    never a block, since nodes of one fleet are alike under different host names."""
    made_for = parsed.metadata.get("TOPOCTL_SYSTEM")
    view = view_of(snapshot)
    target = view.system_name or view.hostname
    if not made_for or made_for == "live" or not target or made_for == one_line(target):
        return []
    return [
        Item(
            "topoctl-system-mismatch",
            Severity.WARN,
            "launch made for another system",
            one_line(
                f"the launch was made for {made_for}; the target is {target}, so its TP size, "
                "GPU group "
                "and NCCL settings were chosen for other hardware"
            ),
            "re-run `topoctl recommend` for this target, or check against the system the launch "
            "was made for",
            parsed.lines.get("TOPOCTL_SYSTEM", ""),
        )
    ]


def _version_mismatch(parsed: ParsedLaunch, flags: FlagSet) -> list[Item]:
    """A launch.env written for another SGLang version than the one that reads it."""
    made_for = parsed.metadata.get("TOPOCTL_SGLANG_VERSION")
    if made_for:
        from topoctl.rules.sglang.flags import normalise_version

        try:
            made_for = normalise_version(made_for)
        except Exception:  # noqa: BLE001 - compared as written
            pass
    if not made_for or not flags.requested or made_for == flags.requested:
        return []
    return [
        Item(
            "topoctl-sglang-version-mismatch",
            Severity.WARN,
            "launch made for another SGLang version",
            one_line(
                f"the launch was written for SGLang {made_for}; the target runs {flags.requested}, "
                f"so its flags are judged as {flags.requested} reads them"
            ),
            "re-run `topoctl recommend` for the target's SGLang version, or pass --sglang-version "
            "if the target will run another one",
        )
    ]


def given_gpus_items(parsed: ParsedLaunch) -> list[Item]:
    """A TP size above the GPUs the launch is given (docker --gpus, nvidia.com/gpu) cannot start:
    SGLang puts rank i on GPU i of those it sees; over several nodes, the ranks of one node on that
    node's GPUs."""
    gpus = parsed.gpus
    visible = gpus.visible() if gpus is not None else None
    tp = parsed.settings.get("tp_size")
    if gpus is None or visible is None or not isinstance(tp, int) or isinstance(tp, bool) or tp < 1:
        return []
    span = node_span(parsed, tp, 1, visible)
    if span.tp_per_node <= visible or span.assumed:
        return []
    over = (
        ""
        if span.nodes == 1
        else f" over {span.nodes} nodes places {span.tp_per_node} ranks on each node; it"
    )
    return [
        Item(
            "sglang-tp-exceeds-given-gpus",
            Severity.BLOCK,
            "tp exceeds given gpus",
            f"--tp-size {tp}{over} needs {span.tp_per_node} GPUs; the launch is given {visible} "
            f"({gpus.source}); "
            "the server fails when a rank finds no GPU",
            f"give the launch {span.tp_per_node} GPUs, or lower --tp-size to "
            f"{visible * (span.nodes or 1)}",
            parsed.where,
        )
    ]


def _size_items(
    parsed: ParsedLaunch, tp_all: int, tp_node: int, ep: int, gpu_count: int, span: NodeSpan
) -> list[Item]:
    """The limits recommend holds --tp-size and --ep-size to (what it refuses, check blocks), per
    node: the ranks one node runs against the target's GPUs, --ep-size against the whole TP group. A
    node count that is only assumed never blocks."""
    from topoctl.autoconf.target import check_parallel_sizes
    from topoctl.core.errors import TopoctlError

    if tp_all < 1 or ep < 1:  # a size below 1 is already a blocking flag problem
        return []
    where = parsed.lines.get("SGLANG_ARGS", "")
    try:
        check_parallel_sizes(tp_node, 1, gpu_count)
    except TopoctlError as error:
        if span.assumed:
            return []
        message = (
            error.message
            if span.nodes == 1
            else f"--tp-size {tp_all} over {span.nodes} nodes ({span.source}) places {tp_node} "
            f"ranks on each node, more than the {gpu_count} GPUs of the target"
        )
        hint = (
            error.hint
            if span.nodes == 1
            else f"use --nnodes {-(-tp_all // gpu_count)} or more, or a TP size "
            f"of {gpu_count * (span.nodes or 1)} or less"
        )
        return [
            Item(
                "topoctl-tp-exceeds-gpus",
                Severity.BLOCK,
                "tensor parallel size exceeds the GPUs",
                one_line(message),
                one_line(hint or ""),
                where,
            )
        ]
    try:
        check_parallel_sizes(tp_all, ep, tp_all)
    except TopoctlError as error:
        return [
            Item(
                "topoctl-ep-size-invalid",
                Severity.BLOCK,
                "expert parallel size does not fit the TP size",
                one_line(error.message),
                one_line(error.hint or ""),
                where,
            )
        ]
    return []


def rule_items(
    parsed: ParsedLaunch,
    snapshot: SnapshotLike,
    ruleset: RuleSet,
    request: dict[str, Any],
    launch: dict[str, Any],
    present: set[str],
) -> list[Item]:
    """The rules' findings on one launch and GPU group (request["gpus"]), as check reports them;
    `present`: ids already reported (a warning without forbid/require is not repeated)."""
    import topoctl.rules.engine as rules_api

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
        if (
            violation.setting in report.implied
        ):  # SGLang sets it by itself for this launch (effect.implies)
            value, because = report.implied[violation.setting]
            written = f"{violation.setting}={value} set by SGLang itself ({because})"
        status = finding.status_text
        message = one_line(
            f"{written}: {finding.message}"
            + (
                f" (cannot verify: {', '.join(finding.unknown_facts)} unknown)"
                if finding.status == "unknown"
                else ""
            )
        )
        items.append(
            Item(
                finding.rule_id,
                Severity(finding.severity),
                one_line(finding.title),
                message,
                one_line(finding.remediation),
                one_line(violation.detail),
                status,
            )
        )
    for finding in report.findings:
        if (
            finding.severity == "warn"
            and finding.status == "fired"
            and not finding.effect.get("forbid")
            and not finding.effect.get("require")
            and finding.rule_id not in present | {i.id for i in items}
        ):
            items.append(
                Item(
                    finding.rule_id,
                    Severity.WARN,
                    one_line(finding.title),
                    one_line(finding.message),
                    one_line(finding.remediation),
                )
            )
    return items


def _judge_any_set(
    parsed: ParsedLaunch,
    snapshot: SnapshotLike,
    ruleset: RuleSet,
    request: dict[str, Any],
    sets: list[tuple[int, ...]],
    sizes: Sizes,
    gpu_count: int,
    present: set[str],
) -> list[Item]:
    """A launch given N GPUs that the scheduler picks: judged on every set it may get. A finding
    that blocks on every set blocks; one that blocks on some sets only is a warning naming the pairs
    (or sets) it blocks on, with a hint to pin the GPUs; warnings of any set are reported once."""
    given = getattr(parsed, "gpus", None)
    tp, dp, launch = sizes.tp, sizes.dp, request["launch"]
    per_set: list[tuple[tuple[int, ...], list[Item]]] = []
    for devices in sets:
        group, group_items = launch_group(
            parsed, snapshot, tp if tp >= 1 else 1, dp, gpu_count, devices
        )
        judged = dict(request, gpus=list(group) if group is not None else list(devices))
        per_set.append(
            (
                devices,
                [item for item in group_items if item.severity != "info"]
                + rule_items(parsed, snapshot, ruleset, judged, launch, present),
            )
        )
    size = len(sets[0]) if sets else 0
    if given is not None:
        why = (
            f"the launch is given {given.count} GPUs ({given.source}); which ones is decided "
            "where it runs"
        )
        hint, where_said = "", parsed.where
    else:
        unknown = _order_unknown(parsed, snapshot)
        why = unknown.reason if unknown is not None else ""
        hint = (
            f"add {DEVICE_ORDER}={PCI_BUS_ID_ORDER} next to {VISIBLE_DEVICES}, or name the "
            "GPUs by UUID"
        )
        where_said = parsed.lines.get(VISIBLE_DEVICES, "")
    items: list[Item] = [
        Item(
            "topoctl-gpu-group" if given is not None else "topoctl-gpu-group-unknown",
            Severity.INFO,  # what matters is said by each finding that differs between the sets
            "GPUs the launch runs on" if given is not None else "GPUs of the launch unknown",
            one_line(
                f"{why}; so it is judged on every set of {size} of the target's "
                f"{len(_machine(snapshot))} GPUs ({len(sets)} sets)"
            ),
            hint,
            where_said,
        )
    ]
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


def _some_sets_warning(
    item: Item,
    bad: list[tuple[int, ...]],
    sets: list[tuple[int, ...]],
    order_snapshot: SnapshotLike | None = None,
) -> Item:
    """A block that holds on some of the sets a scheduler may pick only: a warning naming where it
    blocks."""
    good = [devices for devices in sets if devices not in bad]
    good_pairs = {pair for devices in good for pair in itertools.combinations(devices, 2)}
    bad_pairs = sorted(
        {pair for devices in bad for pair in itertools.combinations(devices, 2)} - good_pairs
    )
    if bad_pairs:
        where = (
            "pairs "
            + ", ".join(f"GPU{a}-GPU{b}" for a, b in bad_pairs[:8])
            + (" ..." if len(bad_pairs) > 8 else "")
        )
    else:
        where = (
            "sets "
            + "; ".join(_ids(devices) for devices in bad[:4])
            + (" ..." if len(bad) > 4 else "")
        )
    safe = _ids(good[0])
    if (
        order_snapshot is not None
    ):  # integer ids under CUDA's default order: the fix is to say the order
        return Item(
            item.id,
            Severity.WARN,
            item.title,
            one_line(
                f"blocks on {len(bad)} of the {len(sets)} sets of GPUs the ids may name ({where}): "
                f"{item.message}"
            ),
            one_line(
                f"set CUDA_DEVICE_ORDER=PCI_BUS_ID so that the ids name known GPUs (GPUs {safe}: "
                f"CUDA_VISIBLE_DEVICES={visible_devices_value(good[0], order_snapshot)}), "
                f"or follow the rule: {item.remediation}"
            ),
            item.where,
            item.status,
        )
    return Item(
        item.id,
        Severity.WARN,
        item.title,
        one_line(
            f"blocks on {len(bad)} of the {len(sets)} sets of GPUs the launch may get ({where}): "
            f"{item.message}"
        ),
        one_line(
            f"pin the GPUs the launch gets (for example GPUs {safe}: docker --gpus "
            f"'\"device={safe}\"', "
            "or a node and device plugin setting that gives those), or follow the rule: "
            f"{item.remediation}"
        ),
        item.where,
        item.status,
    )


# -----------------------------------------------------------------------------------------------
# formats
