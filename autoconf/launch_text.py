"""Writing a recommendation: launch.env (sourceable by sh), args, json, yaml, and the --explain
text.

Every value in launch.env is single-quoted ('\\'' for a quote inside), every key is checked to be a
shell identifier, and every comment is made single-line, so nothing from a snapshot (hostnames, GPU
names, versions) can run as a command when the file is sourced. Output is a pure function of the
inputs: no timestamps, stable order, so the same inputs give byte-identical files.

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from topoctl import LAUNCH_ENV_TITLE, __version__
from topoctl.autoconf.anchor import RULE_ID as PATH_RATIO
from topoctl.autoconf.evidence import LEVEL_NAMES
from topoctl.autoconf.search import Candidate, Result, estimate_formula, implied_notes
from topoctl.core.errors import TopoctlError
from topoctl.core.errors import one_line as _one_line
from topoctl.rules.sglang import spelling as table
from topoctl.snapshot.cuda_devices import (
    DEVICE_ORDER,
    PCI_BUS_ID_ORDER,
    VISIBLE_DEVICES,
    visible_devices_value,
)
from topoctl.snapshot.view import SnapshotLike, view_of

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# longest comment or --explain text taken from a snapshot or a rule; longer is cut with "..."
LINE_LIMIT = 300


def one_line(text: object) -> str:
    """Text safe for a comment or a one-line value: topoctl's one escaper (\\n, \\t, \\xNN), cut at
    LINE_LIMIT."""
    return _one_line(text, limit=LINE_LIMIT)


def sh_quote(value: str) -> str:
    """Single-quote for sh: the only special character inside '...' is the quote itself."""
    return "'" + str(value).replace("\x00", "").replace("'", "'\\''") + "'"


def assignment(name: str, value: str) -> str:
    if not NAME_RE.match(name):
        raise TopoctlError(
            f"refusing to write {name!r}: not a shell variable name",
            hint="environment settings in rules must be written env:NAME with NAME a shell "
            "identifier",
        )
    return f"{name}={sh_quote(value)}"


def comment(text: str) -> str:
    return "# " + one_line(text)


# ----------------------------------------------------------------------------------------------
# document


def target_info(snapshot: SnapshotLike) -> dict[str, object]:
    view = view_of(snapshot)
    return {
        "system": one_line(view.system_name or view.hostname or "live"),
        "source": one_line(view.source_kind or "unknown"),
        "hostname": one_line(view.hostname) if view.hostname is not None else None,
        "gpu_count": view.gpu_count,
        "gpu_names": [one_line(name) for name in view.gpu_names],
        "interconnect": one_line(view.interconnect) if view.interconnect else None,
    }


SCHEMA_VERSION = 1  # of recommend's json/yaml document: a key renamed or removed raises it
PLACEMENT_SETTINGS = (f"env:{DEVICE_ORDER}", f"env:{VISIBLE_DEVICES}")


def _setting_reasons(result: Result, setting: str) -> list[str]:
    if setting in PLACEMENT_SETTINGS and result.placement is not None:
        if setting == f"env:{DEVICE_ORDER}":
            return [
                f"placement: {VISIBLE_DEVICES} counts GPUs in PCI bus order (as the snapshot's "
                "bus ids do), "
                "not CUDA's default fastest-first order"
            ]
        return [
            f"placement: {reason}" if index == 0 else reason
            for index, reason in enumerate(result.placement.reasons)
        ]
    return result.reasons.get(setting) or ["topoctl"]


def placement_env(result: Result) -> dict[str, tuple[str, str]]:
    """CUDA_DEVICE_ORDER and CUDA_VISIBLE_DEVICES for a launch on fewer GPUs than the machine has
    (none when it runs on every GPU). The ids are positions in PCI bus order
    (topoctl/snapshot/cuda_devices.py), which is what CUDA_DEVICE_ORDER=PCI_BUS_ID makes CUDA count.
    """
    placement = result.placement
    if placement is None or placement.in_bus_order(result.snapshot):
        return {}
    return {
        DEVICE_ORDER: (PCI_BUS_ID_ORDER, f"env:{DEVICE_ORDER}"),
        VISIBLE_DEVICES: (
            visible_devices_value(placement.gpus, result.snapshot),
            f"env:{VISIBLE_DEVICES}",
        ),
    }


def rendered(result: Result) -> table.Rendered:
    """The chosen launch written for the target's SGLang version, with the GPUs it runs on (built
    once)."""
    if "rendered" not in result.memo:
        out = table.render(result.winner.launch, result.flags, result.decided, result.flags.version)
        out.env.update(placement_env(result))
        result.memo["rendered"] = out
    return result.memo["rendered"]


def basis(cand: Candidate) -> str:
    """Where the number a candidate is ranked by comes from, in words: rule evidence at its level,
    the launch model with the origin of its allreduce latency (measured in the snapshot, cited
    reference table, field report, assumed), or the per-call allreduce latency alone."""
    if cand.estimate is not None:
        level = f"rule evidence, {LEVEL_NAMES[cand.estimate_level]}"
        if cand.predicted is not None and any(
            ev.rule_id == PATH_RATIO for ev in cand.estimate_basis
        ):
            return (
                f"{level}, x launch model path ratio (allreduce latency: "
                f"{cand.predicted.allreduce_origin})"
            )
        return level
    if cand.predicted is not None:
        kind = "op-table band" if cand.predicted.step_ops else "held-out band"
        return (
            f"launch model, {cand.predicted.band_text()} (x/{cand.predicted.band:.2f}, {kind}); "
            f"allreduce latency: {cand.predicted.allreduce_origin}"
        )
    return f"{LEVEL_NAMES[cand.allreduce_level]} per-call allreduce latency"


def runs_label(cand: Candidate) -> str:
    """What the launch runs, in recommend's words: the allreduce SGLang uses at that TP on that
    machine once it has set what it sets by itself (its gates, through the rules' `implies`), and
    none for one GPU per replica, where there is no tensor-parallel allreduce at all."""
    label = cand.label()
    runs = "none (TP 1: no allreduce)" if cand.tp <= 1 else cand.runs_path
    if runs == cand.path:
        return label
    return label.replace(f"allreduce={cand.path}", f"allreduce={runs}", 1)


def _candidate_doc(cand: Candidate) -> dict[str, object]:
    return {
        "config": runs_label(cand),
        "allreduce_path": cand.path,
        "allreduce_runs": None if cand.tp <= 1 else cand.runs_path,
        "sglang_sets": implied_notes(cand) if cand.tp > 1 else [],
        "speculative": cand.speculative,
        "level": LEVEL_NAMES[cand.level],
        "basis": basis(cand),
        "allreduce_origin": cand.predicted.allreduce_origin if cand.predicted is not None else None,
        "estimated_tok_s": round(cand.estimate, 3) if cand.estimate is not None else None,
        "estimate_formula": estimate_formula(cand),
        "modelled_allreduce_ms_per_forward": round(cand.allreduce_us / 1000.0, 3),
        "evidence": [ev.describe() for ev in cand.estimate_basis] + cand.allreduce_basis,
        "tp_size": cand.tp,
        "dp_size": cand.dp,
        "gpus": list(cand.gpus),
        "predicted_tok_s": round(cand.predicted.tokens_per_s, 3)
        if cand.predicted is not None
        else None,
        "fit": cand.fit.to_dict() if cand.fit is not None else None,
        "estimate": cand.predicted.to_dict() if cand.predicted is not None else None,
        "estimate_withheld": [one_line(text) for text in cand.estimate_withheld],
    }


def blocked_summary(result: Result) -> list[dict[str, object]]:
    """Blocked alternatives grouped by allreduce path and speculative on/off, with the rules behind
    them."""
    groups: dict[tuple[str, str], dict[str, str]] = {}
    for cand in result.blocked:
        key = (cand.path, cand.speculative or "off")
        bucket = groups.setdefault(key, {})
        for finding, why in cand.blocked_by:
            status = finding.status_text if finding.status == "unknown" else "blocked"
            bucket[finding.rule_id] = one_line(f"{status}: {finding.message} [{why}]")
    allowed = {(c.path, c.speculative or "off") for c in result.ranked}
    out = []
    for (path, spec), rules in sorted(groups.items()):
        out.append(
            {
                "allreduce_path": path,
                "speculative": spec,
                "partly": (path, spec) in allowed,
                "rules": [
                    {"rule_id": rule_id, "reason": rules[rule_id]} for rule_id in sorted(rules)
                ],
            }
        )
    return out


def document(result: Result) -> dict[str, Any]:
    """Everything a recommendation says, as plain data: json/yaml print it, launch.env and --explain
    read it. Built once per result."""
    if "document" not in result.memo:
        result.memo["document"] = _document(result)
    return result.memo["document"]


def _document(result: Result) -> dict[str, Any]:
    out = rendered(result)
    winner = result.winner
    lines = []
    for name, (value, setting) in sorted(out.env.items()):
        lines.append(
            {
                "key": name,
                "value": value,
                "setting": setting,
                "reasons": _setting_reasons(result, setting),
            }
        )
    flags = []
    for setting, tokens in out.args:
        flags.append(
            {"flag": tokens, "setting": setting, "reasons": _setting_reasons(result, setting)}
        )
    model = result.model
    return {
        "schema_version": SCHEMA_VERSION,
        "topoctl_version": __version__,
        "target": target_info(result.snapshot),
        "placement": result.placement.as_dict() if result.placement is not None else None,
        "sglang": {
            "target": one_line(result.target_version) if result.target_version else None,
            "flags_version": result.flags.version,
            "exact": bool(result.flags.exact),
            "note": one_line(result.flags.note) if not result.flags.exact else None,
        },
        "model": (
            {
                **{
                    k: model.get(k)
                    for k in (
                        "name",
                        "source",
                        "architecture",
                        "model_type",
                        "layers",
                        "hidden_size",
                        "heads",
                        "kv_heads",
                        "head_dim",
                        "attention",
                        "kv_lora_rank",
                        "qk_rope_head_dim",
                        "moe",
                        "experts",
                        "active_experts",
                        "vocab_size",
                        "total_params",
                        "active_params",
                        "weight_bytes",
                        "active_weight_bytes",
                        "weight_bytes_source",
                        "allreduces_per_forward",
                        "allreduce_bytes_per_token",
                    )
                },
                "quantization": (model.get("quantization") or {}).get("label"),
            }
            if model
            else None
        ),
        "objective": result.objective,
        "unfit": [
            {"config": c.label(), "tp_size": c.tp, "why": c.memory_fit.why}
            for c in result.unfit[:8]
        ],
        "tp_size": result.tp_size,
        "ep_size": result.ep_size,
        "settings": {k: winner.launch[k] for k in sorted(winner.launch)},
        "env": {name: value for name, (value, _) in sorted(out.env.items())},
        "args": out.flat_args(),
        "env_lines": lines,
        "flags": flags,
        "chosen": _candidate_doc(winner),
        "speculative": result.comparison,
        "alternatives": [_candidate_doc(c) for c in result.ranked if c is not winner][:8],
        "offers": [
            dict(
                _candidate_doc(c),
                settings={k: c.launch[k] for k in sorted(c.launch)},
                level=LEVEL_NAMES[c.allreduce_level],
            )
            for c in result.offers
        ],
        "blocked": blocked_summary(result),
        "warnings": sorted({f"{f.rule_id}: {one_line(f.message)}" for f, _ in winner.warnings}),
        "findings": [
            {
                "rule_id": f.rule_id,
                "severity": f.severity,
                "status": f.status,
                "status_text": f.status_text,
                "title": one_line(f.title),
            }
            for f in result.findings
        ],
        "problems": [{"setting": s, "reason": r} for s, r in out.problems],
        "notes": [one_line(n) for n in result.notes],
        # as written: json and yaml escape it themselves; the env header and --explain make it one
        # line
        "disabled": [{"rule_id": rule_id, "reason": reason} for rule_id, reason in result.disabled],
    }


# -----------------------------------------------------------------------------------------------
# formats


def render_env(result: Result) -> str:
    doc = document(result)
    target = doc["target"]
    out = rendered(result)
    lines = [
        comment(f"{LAUNCH_ENV_TITLE} {__version__} (topoctl recommend)."),
        "# Load it without running anything else:   set -a; . ./launch.env; set +a",
        "# then start SGLang with the flags:          "
        'eval "set -- $SGLANG_ARGS"; python -m sglang.launch_server --model-path MODEL "$@"',
        comment(
            f"Target: {target['system']} ({target['gpu_count']}x {', '.join(target['gpu_names'])}, "
            f"interconnect {target['interconnect']})"
        ),
        comment(
            f"SGLang flags written for {result.flags.version}"
            + (f" ({result.flags.note})" if not result.flags.exact else "")
        ),
    ]
    if result.model:
        model = result.model
        lines.append(
            comment(
                f"Model: {model['name']}: {model['allreduces_per_forward']} allreduces per "
                f"forward pass, {model['allreduce_bytes_per_token']} bytes each per token"
            )
        )
    chosen = doc["chosen"]
    lines.append(comment(f"Chosen: {chosen['config']} (evidence: {chosen['basis']})"))
    if chosen["allreduce_runs"] not in (None, chosen["allreduce_path"]):
        lines.append(
            comment(
                f"Runs: allreduce path {chosen['allreduce_runs']}, not "
                f"{chosen['allreduce_path']} as the "
                "flags alone say: "
                + "; ".join(n for n in chosen["sglang_sets"] if n.startswith("SGLang "))
            )
        )
    if chosen["estimate_formula"]:
        lines.append(comment(f"Expected: {chosen['estimate_formula']}"))
    for item in doc["disabled"]:
        lines.append(comment(f"Rule {item['rule_id']} disabled: {item['reason']}"))
    if result.comparison:
        lines.append(comment(result.comparison["message"]))
    for setting, reason in out.problems:
        lines.append(comment(f"not written: {setting}: {reason}"))
    lines.append("")
    lines.append(comment("What this file was made for"))
    meta = {
        "TOPOCTL_MODEL": (result.model or {}).get("name") or "",
        "TOPOCTL_SGLANG_FLAGS_VERSION": result.flags.version,
        "TOPOCTL_SGLANG_VERSION": result.target_version or result.flags.version,
        "TOPOCTL_SYSTEM": target["system"],
        "TOPOCTL_TP_SIZE": str(result.tp_size),
        "TOPOCTL_VERSION": __version__,
    }
    for name in sorted(meta):
        lines.append(assignment(name, one_line(meta[name])))
    for name, (value, setting) in sorted(out.env.items()):
        lines.append("")
        reasons = _setting_reasons(result, setting)
        text = f"{setting}: " + "; ".join(reasons)
        if len(text) <= LINE_LIMIT:
            lines.append(comment(text))
        else:  # one reason a line rather than a line cut short
            lines.append(comment(f"{setting}:"))
            lines.extend(comment(f"  {reason}") for reason in reasons)
        lines.append(assignment(name, value))
    lines.append("")
    for setting, tokens in out.args:
        lines.append(
            comment(f"{' '.join(tokens)}: " + "; ".join(_setting_reasons(result, setting)))
        )
    lines.append(assignment("SGLANG_ARGS", shlex.join(out.flat_args())))
    for offer in result.offers:
        offer_out = table.render(
            offer.launch, result.flags, result.decided | set(offer.launch), result.flags.version
        )
        extra_env = {k: v for k, v in offer_out.env.items() if out.env.get(k) != v}
        lines.append("")
        basis = "; ".join(offer.allreduce_basis)
        lines.append(
            comment(
                f"Offered, not chosen: allreduce path {offer.path} "
                f"(evidence: {LEVEL_NAMES[offer.allreduce_level]}; {basis}). "
                "Not measured on this machine; to try it, add:"
            )
        )
        for name, (value, _) in sorted(extra_env.items()):
            lines.append(comment(assignment(name, value)))
        if offer_out.flat_args() != out.flat_args():
            lines.append(comment(assignment("SGLANG_ARGS", shlex.join(offer_out.flat_args()))))
    return "\n".join(lines) + "\n"


def render_args(result: Result) -> str:
    """SGLang's argument list and nothing else, one shell-quoted line to put after `python -m
    sglang.launch_server --model-path M`, on every target alike, so a script can splice it in
    without parsing it. Environment settings the launch needs (NCCL_P2P_DISABLE=1 on GPUs without
    P2P, CUDA_VISIBLE_DEVICES for a group of the GPUs) are not flags: launch.env (`--format env`)
    carries them, and `recommend --format args` names them on stderr (`args_environment`), so none
    is lost without a word."""
    return shlex.join(rendered(result).flat_args()) + "\n"


def args_environment(result: Result) -> dict[str, str]:
    """The environment settings the chosen launch needs beside its flags, as launch.env writes them."""
    return {name: value for name, (value, _) in sorted(rendered(result).env.items())}


def render_json(result: Result) -> str:
    return json.dumps(document(result), indent=2, sort_keys=True) + "\n"


def render_yaml(result: Result) -> str:
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(
        document(result),
        Dumper=dumper,
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=False,
    )


def render(result: Result, fmt: str) -> str:
    return {"env": render_env, "args": render_args, "json": render_json, "yaml": render_yaml}[fmt](
        result
    )


def explain(result: Result) -> str:
    """The --explain text: the target, the model, the chosen launch and why, the settings, the
    findings and the alternatives, one section after another in that order."""
    doc = document(result)
    per = "per forward" if result.model else "per call (no model given)"
    lines = _explain_header(result, doc)
    lines += _explain_chosen(doc["chosen"], per)
    for item in doc["disabled"]:
        lines.append(f"disabled: rule {one_line(item['rule_id'])}: {one_line(item['reason'])}")
    lines += [f"  evidence: {one_line(item)}" for item in doc["chosen"]["evidence"]]
    lines += [f"  {item}" for item in doc["chosen"]["estimate_withheld"]]
    lines += _explain_speculative(result.comparison)
    lines += _explain_settings(doc)
    lines += _explain_alternatives(doc, per)
    for offer in doc["offers"]:
        lines.append(
            f"offered: allreduce path {offer['allreduce_path']} [{offer['level']}]: "
            + "; ".join(one_line(e) for e in offer["evidence"])
        )
    lines += [f"note: {note}" for note in doc["notes"]]
    return "\n".join(lines) + "\n"


def _explain_header(result: Result, doc: dict[str, Any]) -> list[str]:
    target = doc["target"]
    lines = [
        f"topoctl recommend: {target['system']}: {target['gpu_count']}x "
        f"{', '.join(target['gpu_names'])}, interconnect {target['interconnect']}"
    ]
    model = result.model
    if model:
        lines.append(
            f"model {model['name']}: {model['layers']} layers, hidden {model['hidden_size']}, "
            f"{'MoE' if model['moe'] else 'dense'}: {model['allreduces_per_forward']} allreduces "
            "per forward "
            f"pass under TP, {model['allreduce_bytes_per_token']} bytes "
            f"({model['allreduce_bytes_per_token'] / 1024:g} KiB)"
            " per token each"
        )
    lines.append(
        f"SGLang: flags written for {result.flags.version}"
        + (f" ({result.flags.note})" if not result.flags.exact else "")
        + (
            f"; target {result.target_version}"
            if result.target_version
            else "; no installed SGLang known"
        )
    )
    return lines


def _explain_chosen(chosen: dict[str, Any], per: str) -> list[str]:
    lines = [
        f"chosen: {chosen['config']}  [evidence: {chosen['basis']}"
        + (
            f", {round(chosen['estimated_tok_s'], 1):g} tok/s expected"
            if chosen["estimated_tok_s"] is not None
            else ""
        )
        + f", allreduce {chosen['modelled_allreduce_ms_per_forward']:g} ms {per}]"
    ]
    if chosen["estimate_formula"]:
        lines.append(f"  estimate: {one_line(chosen['estimate_formula'])}")
    if chosen.get("estimate"):
        est = chosen["estimate"]
        lines.append(
            f"  launch model: {est['tokens_per_s']:g} tok/s ({est['objective']}), step "
            f"{est['step_ms']:g} ms = weights {est['weights_ms']:g} + KV read "
            f"{est['kv_read_ms']:g} + allreduce {est['allreduce_ms']:g} + overhead "
            f"{est['overhead_ms']:g}"
            + (f"; EAGLE-3 cycle {est['cycle_ms']:g} ms" if est.get("cycle_ms") else "")
        )
        for item in est["inputs"]:
            lines.append(
                f"    input: {item['name']} = {item['value']:g} {item['unit']} "
                f"[{one_line(item['origin'])}] ({one_line(item['source'])})"
            )
    if chosen.get("fit"):
        fit = chosen["fit"]
        lines.append(
            f"  memory per GPU: weights {fit['weights_bytes_per_gpu'] / 1e9:.1f} GB, KV cache "
            f"{fit['kv_cache_bytes_per_gpu'] / 1e9:.1f} GB = {fit['kv_cache_tokens']} tokens, "
            f"mem_fraction_static {fit['mem_fraction_static']} "
            f"({one_line(fit['mem_fraction_source'])})"
        )
    return lines


def _explain_speculative(comp: dict[str, Any] | None) -> list[str]:
    if not comp:
        return []
    lines = [f"speculative: {comp['message']}"]
    for side in ("with", "without"):
        if comp.get(side):
            s = comp[side]
            value = (
                s["throughput_tok_s"] if s["throughput_tok_s"] is not None else s["estimated_tok_s"]
            )
            lines.append(
                f"  {side}: {s['config']}: "
                + (f"{value:g} tok/s " if value is not None else "")
                + f"[{s['level']}] "
                + "; ".join(one_line(e) for e in s["evidence"])
            )
    return lines


def _explain_settings(doc: dict[str, Any]) -> list[str]:
    lines = ["settings:"]
    lines += [
        f"  {' '.join(item['flag'])}  <- {'; '.join(item['reasons'])}" for item in doc["flags"]
    ]
    lines += [
        f"  {item['key']}={item['value']}  <- {'; '.join(item['reasons'])}"
        for item in doc["env_lines"]
    ]
    lines += [f"  not written: {item['setting']}: {item['reason']}" for item in doc["problems"]]
    if doc["warnings"]:
        lines.append("warnings:")
        lines.extend(f"  {w}" for w in doc["warnings"])
    lines.append("findings:")
    lines += [
        f"  [{f['severity']}] {f['rule_id']} ({f['status_text']}): {f['title']}"
        for f in doc["findings"]
    ]
    return lines


def _explain_alternatives(doc: dict[str, Any], per: str) -> list[str]:
    lines = []
    if doc["blocked"]:
        lines.append("blocked alternatives:")
        for group in doc["blocked"]:
            lines.append(
                f"  allreduce={group['allreduce_path']}, speculative={group['speculative']}"
                + (" (some variants)" if group["partly"] else "")
                + ":"
            )
            lines += [f"    {rule['rule_id']}: {rule['reason']}" for rule in group["rules"]]
    if doc["alternatives"]:
        lines.append("other candidates, best first:")
        for index, alt in enumerate(doc["alternatives"], 1):
            value = (
                f", {round(alt['estimated_tok_s'], 1):g} tok/s"
                if alt["estimated_tok_s"] is not None
                else ""
            )
            if not value and alt.get("predicted_tok_s") is not None:
                value = f", {round(alt['predicted_tok_s'], 1):g} tok/s predicted"
            lines.append(
                f"  {index}. TP {alt['tp_size']}: {alt['config']} [{alt['basis']}{value}, "
                f"allreduce {alt['modelled_allreduce_ms_per_forward']:g} ms {per}]"
            )
    return lines
