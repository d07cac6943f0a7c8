"""The search behind `topoctl recommend`: enumerate candidate launches, drop the blocked ones, rank the
rest by evidence, and say why.

Nothing here names a system. The candidate space is the allreduce paths of data/settings.yaml, EAGLE-3
on or off (when asked for), and every value a rule's effect mentions (prefer/require) for the other
settings. The rules decide what is blocked (forbid/require effects; a block rule whose facts are unknown
counts as blocking: "cannot verify"), and their evidence decides the order:

1. measured > upstream-reported > modelled: a candidate whose expected speed rests on measurements
   outranks one that rests on upstream claims, which outranks the cost model alone;
2. within a level, the faster estimate wins (tok/s from evidence; or, without throughput evidence, the
   modelled allreduce time of one forward pass = allreduces x per-call latency of the path);
3. then the user's request (EAGLE-3 asked for), the number of rule preferences honoured, and the fewest
   departures from SGLang's defaults.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from topoctl.autoconf import settings as table
from topoctl.autoconf.data_files import load
from topoctl.errors import TopoctlError

LEVELS = {"measured": 3, "upstream-reported": 2, "modelled": 1}
LEVEL_NAMES = {rank: name for name, rank in LEVELS.items()}
PATH_KEYS = ("allreduce", "allreduce_path", "path")
SPEC_KEYS = ("speculative", "speculative_algorithm")
SPEC_GROUP = ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens")
OPT_IN_PATH_SETTINGS = ("pcie_ipc_allreduce", "torch_symm_mem", "nccl_symm_mem", "flashinfer_allreduce_fusion")


# ---------------------------------------------------------------------------------------------- effects

def effect_items(effect: Any, kind: str) -> list[tuple[str, Any]]:
    """(setting, values) for forbid (values: list or None = any non-default), (setting, value) otherwise."""
    if not isinstance(effect, dict):
        return []
    raw = effect.get(kind)
    out: list[tuple[str, Any]] = []
    if isinstance(raw, dict):
        for setting, value in raw.items():
            if isinstance(value, dict):
                value = value.get("values", value.get("value"))
            out.append((str(setting), value))
    elif isinstance(raw, list):
        for item in raw:
            if isinstance(item, str):
                out.append((item, None))
            elif isinstance(item, dict) and "setting" in item:
                value = item.get("values", item.get("value"))
                out.append((str(item["setting"]), value))
    return out


def _norm(value: Any) -> Any:
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("none", "null", "off", ""):
            return None
        return lowered
    return value


def same(a: Any, b: Any) -> bool:
    a, b = _norm(a), _norm(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or (a in (None, False) and b in (None, False))
    if a is None or b is None:
        return a is b
    return str(a) == str(b)


# --------------------------------------------------------------------------------------------- evidence

@dataclass
class Evidence:
    rule_id: str
    level: str
    metric: str
    value: float
    unit: str
    source: str
    path: str | None  # allreduce path the item speaks of (None: SGLang's default choice)
    config: dict[str, Any]  # other settings it was measured under (logical names, normalised)
    raw: dict[str, Any]

    @property
    def rank(self) -> int:
        return LEVELS.get(self.level, 1)

    @property
    def kind(self) -> str:
        unit = self.unit.lower()
        if unit in ("%", "percent", "x", "ratio"):
            return "relative"
        if unit in ("us", "µs", "usec", "ms") or "latency" in self.metric.lower():
            return "latency"
        if "tok" in unit or "throughput" in self.metric.lower():
            return "throughput"
        return "other"

    def latency_us(self) -> float:
        return self.value * 1000.0 if self.unit.lower() == "ms" else self.value

    def factor(self) -> float:
        unit = self.unit.lower()
        return self.value if unit in ("x", "ratio") else 1.0 + self.value / 100.0

    def describe(self) -> str:
        return f"{_fmt(self.value)} {self.unit} {self.metric} ({self.level}: {self.source}; rule {self.rule_id})"


def _fmt(value: float) -> str:
    return f"{value:g}" if abs(value) < 1e6 else f"{value:.3g}"


PATH_WORDS = (  # phrases an evidence config written in words uses for an allreduce path (checked in order)
    ("pcie_ipc", ("pcie ipc", "pcie_ipc", "pcie-ipc", "sglang_enable_pcie_ipc_allreduce")),
    ("torch_symm_mem", ("torch symm", "torch_symm_mem", "enable-torch-symm-mem", "torch symmetric")),
    ("flashinfer_fusion", ("allreduce fusion", "flashinfer_allreduce_fusion", "flashinfer-allreduce-fusion")),
    ("nccl_symm_mem", ("nccl symm", "nccl_symm_mem", "enable-symm-mem", "nccl symmetric")),
    ("custom", ("custom allreduce", "custom all-reduce", "custom all reduce", "custom_all_reduce=true",
                "custom_allreduce")),
    ("nccl", ("nccl", "disable-custom-all-reduce", "custom_all_reduce=false")),
)
NO_SPEC_WORDS = ("no speculative", "without speculative", "no spec", "non-speculative", "speculative off",
                 "no eagle", "without eagle", "speculative_algorithm=none", "speculative=none", "baseline")
SPEC_WORDS = ("eagle-3", "eagle3", "eagle 3")


def parse_config_text(text: str) -> dict[str, Any]:
    """Logical settings from an evidence config written as text.

    Understood, in this order: `setting=value` pairs (logical names, env:NAME=value, or NCCL_X=value),
    SGLang flags with their values (--cuda-graph-max-bs 128, --disable-custom-all-reduce), then words
    (EAGLE-3, no speculative decoding, NCCL, custom allreduce, PCIe IPC, torch symmetric memory, ...).
    """
    out: dict[str, Any] = {}
    lowered = text.lower()
    tokens = [t.strip(",;()") for t in text.replace(",", " , ").split()]
    reverse = table.reverse_map()
    known = table.specs()
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if not token:
            continue
        if "=" in token and not token.startswith("-"):
            key, _, value = token.partition("=")
            if key in known or key.startswith("env:"):
                out[key] = table.parse_value(key, value) if key in known else value
            elif key.isupper() and key.replace("_", "").isalnum():
                out[table.env_names().get(key, f"env:{key}")] = value
            elif key in SPEC_KEYS or key in PATH_KEYS:
                out[key] = value
            continue
        name = token.split("=", 1)[0]
        if name in reverse:
            setting, role, meaning = reverse[name]
            if role == "flags":
                value = token.split("=", 1)[1] if "=" in token else (tokens[index] if index < len(tokens) else "")
                index += 0 if "=" in token else 1
                out[setting] = table.parse_value(setting, value)
            else:
                out[setting] = role == "enable"
    if "speculative_algorithm" not in out and "speculative" not in out:
        if any(word in lowered for word in NO_SPEC_WORDS):
            out["speculative_algorithm"] = None
        elif any(word in lowered for word in SPEC_WORDS):
            out["speculative_algorithm"] = "eagle3"
    if not any(key in out for key in PATH_KEYS + OPT_IN_PATH_SETTINGS + ("custom_all_reduce",)):
        for path, words in PATH_WORDS:
            if any(word in lowered for word in words):
                out["allreduce"] = path
                break
    return out


def normalise_config(config: Any) -> tuple[str | None, dict[str, Any]]:
    """(allreduce path, other logical settings) of an evidence config (a mapping, or text)."""
    paths = table.table()["allreduce_paths"]
    rest: dict[str, Any] = {}
    path = None
    if isinstance(config, str):
        config = parse_config_text(config)
    if not isinstance(config, dict):
        return None, rest
    for key, value in config.items():
        if key in PATH_KEYS:
            name = _norm(value)
            aliases = {"custom_allreduce": "custom", "custom_all_reduce": "custom", "ca": "custom",
                       "pcie_ipc_allreduce": "pcie_ipc", "flashinfer_allreduce_fusion": "flashinfer_fusion",
                       "symm_mem": "nccl_symm_mem", "torch_symm": "torch_symm_mem"}
            path = aliases.get(name, name) if isinstance(name, str) else None
        elif key in SPEC_KEYS:
            rest["speculative_algorithm"] = _norm(value) if not isinstance(value, bool) else ("eagle3" if value else None)
        else:
            rest[key] = value
    if path is None:
        for name in OPT_IN_PATH_SETTINGS:
            if _norm(rest.get(name)) is True:
                path = next((p for p, s in paths.items() if s.get(name) is True), None)
        if path is None and "custom_all_reduce" in rest:
            path = "custom" if _norm(rest["custom_all_reduce"]) is True else "nccl"
    for name in OPT_IN_PATH_SETTINGS + ("custom_all_reduce",):
        rest.pop(name, None)
    return path if path in paths else None, rest


def _points(item: dict[str, Any]) -> list[dict[str, Any]]:
    """The numbers of one evidence item: `numbers: [{metric, value, unit, config, baseline}]` (each
    baseline is a point of its own), or the flat form {metric, value, unit, config}."""
    points = []
    numbers = item.get("numbers")
    if isinstance(numbers, list):
        for number in numbers:
            if not isinstance(number, dict):
                continue
            points.append({k: number.get(k) for k in ("metric", "value", "unit", "config")})
            baseline = number.get("baseline")
            if isinstance(baseline, dict) and str(number.get("unit") or "").strip() not in ("%", "x", "ratio"):
                points.append({"metric": number.get("metric"), "value": baseline.get("value"),
                               "unit": number.get("unit"), "config": baseline.get("config")})
    elif "value" in item:
        points.append({k: item.get(k) for k in ("metric", "value", "unit", "config")})
    return points


def collect_evidence(findings: list[Any]) -> list[Evidence]:
    out: list[Evidence] = []
    seen = set()
    for finding in findings:
        if getattr(finding, "status", "fired") != "fired":
            continue
        for item in finding.evidence or []:
            if not isinstance(item, dict):
                continue
            for point in _points(item):
                try:
                    value = float(point.get("value"))
                except (TypeError, ValueError):
                    continue
                if not point.get("config"):
                    continue  # a number without its configuration cannot rank a candidate
                path, config = normalise_config(point["config"])
                key = (finding.rule_id, point.get("metric"), value, repr(point["config"]))
                if key in seen:
                    continue
                seen.add(key)
                out.append(Evidence(finding.rule_id, str(item.get("level") or "modelled"),
                                    str(point.get("metric") or ""), value, str(point.get("unit") or ""),
                                    str(item.get("source") or ""), path, config, item))
    return out


# ------------------------------------------------------------------------------------------- candidates

@dataclass
class Candidate:
    path: str
    launch: dict[str, Any]
    blocked_by: list[tuple[Any, str]] = field(default_factory=list)  # (finding, why)
    warnings: list[tuple[Any, str]] = field(default_factory=list)
    estimate: float | None = None  # tok/s when throughput evidence reaches it
    estimate_level: int = 1
    estimate_basis: list[Evidence] = field(default_factory=list)
    allreduce_us: float = 0.0
    allreduce_level: int = 1
    allreduce_basis: list[str] = field(default_factory=list)
    prefers: int = 0
    departures: int = 0
    honours_request: bool = True

    @property
    def speculative(self) -> str | None:
        return self.launch.get("speculative_algorithm")

    @property
    def level(self) -> int:
        return self.estimate_level if self.estimate is not None else self.allreduce_level

    def key(self) -> tuple:
        has_throughput = self.estimate is not None
        score = self.estimate if has_throughput else -self.allreduce_us
        return (-len(self.warnings), self.level, has_throughput, round(score, 6), self.honours_request,
                self.prefers, -self.departures)

    def label(self) -> str:
        parts = [f"allreduce={self.path}", f"speculative={self.speculative or 'off'}"]
        for setting in sorted(self.launch):
            if setting in ("tp_size", "ep_size", "speculative_algorithm", "speculative_draft_model_path") \
                    or setting in SPEC_GROUP or setting in table.table()["allreduce_paths"][self.path]:
                continue
            parts.append(f"{setting}={self.launch[setting]}")
        return ", ".join(parts)

    def canonical(self) -> str:
        return repr(sorted((k, repr(v)) for k, v in self.launch.items()))


@dataclass
class Result:
    snapshot: dict[str, Any]
    model: dict[str, Any] | None
    flags: Any
    target_version: str | None
    tp_size: int
    ep_size: int
    speculative_asked: str | None
    forced: bool
    winner: Candidate
    ranked: list[Candidate]
    blocked: list[Candidate]
    findings: list[Any]
    reasons: dict[str, list[str]]  # setting -> rule ids / topoctl reasons behind its value
    decided: set[str]
    comparison: dict[str, Any] | None
    offers: list[Candidate]
    notes: list[str]
    evidence: list[Evidence]


def _interconnect(snapshot: dict[str, Any]) -> str:
    return str((snapshot.get("summary") or {}).get("interconnect") or "none")


def default_path(snapshot: dict[str, Any], tp_size: int) -> str:
    costs = load("costs.yaml")
    link = _interconnect(snapshot)
    table_paths = costs.get("default_path") or {}
    return table_paths.get(f"{link}@{tp_size}") or table_paths.get(link) or "nccl"


def _applies(ev: Evidence, cand: Candidate, dims: set[str], default_paths: set[str], model: str | None) -> bool:
    """Whether evidence measured under ev.config speaks of this candidate (missing keys = defaults)."""
    if ev.path is None:
        if cand.path not in default_paths:
            return False
    elif ev.path != cand.path:
        return False
    for key, value in ev.config.items():
        if key == "model":
            if model and value and _norm(value) != _norm(model):
                return False
            continue
        if key in cand.launch or key in dims:
            if not same(cand.launch.get(key, table.default(key)), value):
                return False
    for key in dims:
        if key not in ev.config and not same(cand.launch.get(key, table.default(key)), table.default(key)):
            return False
    return True


def _throughput(cand: Candidate, evidence: list[Evidence], dims: set[str], default_paths: set[str],
                model: str | None, depth: int = 0) -> tuple[float, int, list[Evidence]] | None:
    """Expected tok/s from throughput evidence, adjusted by relative evidence; (value, level, basis)."""
    exact = [ev for ev in evidence if ev.kind == "throughput" and _applies(ev, cand, dims, default_paths, model)]
    if exact:
        best = max(exact, key=lambda ev: (len(ev.config), ev.rank, -abs(ev.value)))
        return best.value, best.rank, [best]
    if depth > 4:
        return None
    for ev in evidence:
        if ev.kind != "relative" or not ev.config:
            continue
        changed = {k: v for k, v in ev.config.items() if k != "model"}
        if not changed or not all(same(cand.launch.get(k, table.default(k)), v) for k, v in changed.items()):
            continue
        if all(same(v, table.default(k)) for k, v in changed.items()):
            continue
        base_launch = dict(cand.launch)
        for key in changed:
            base_launch[key] = table.default(key)
        base = Candidate(cand.path, base_launch)
        found = _throughput(base, evidence, dims, default_paths, model, depth + 1)
        if found:
            value, level, basis = found
            return value * ev.factor(), min(level, ev.rank), basis + [ev]
    return None


def _latency(path: str, evidence: list[Evidence], snapshot: dict[str, Any], tp_size: int) -> tuple[float, int, str]:
    """Per-call allreduce latency (us) of a path: best evidence, else the cost table, else the default path's."""
    items = [ev for ev in evidence if ev.kind == "latency" and ev.path == path]
    if items:
        best = max(items, key=lambda ev: (ev.rank, -ev.value))
        return best.latency_us(), best.rank, best.describe()
    costs = load("costs.yaml")
    per_link = (costs.get("latency_us") or {}).get(_interconnect(snapshot)) or {}
    if path in per_link:
        return float(per_link[path]), 1, f"{per_link[path]} us per call (modelled: {costs.get('source')})"
    base = default_path(snapshot, tp_size)
    if base != path:
        value, _, _ = _latency(base, evidence, snapshot, tp_size)
        return value, 1, f"no data for this path: assumed no faster than {base} (modelled)"
    return 100.0, 1, "no data: 100 us per call assumed (modelled)"


# ------------------------------------------------------------------------------------------------ search

def _request(model: dict[str, Any] | None, speculative: str | None, tp: int, ep: int, version: str | None,
             launch: dict[str, Any]) -> dict[str, Any]:
    return {"model": model, "speculative": speculative, "tp_size": tp, "ep_size": ep,
            "sglang_version": version, "launch": launch}


def _violations(rules_api: Any, report: Any, launch: dict[str, Any]) -> tuple[list, list]:
    blocks, warns = [], []
    for violation in rules_api.violations(report, launch):
        finding = getattr(violation, "finding", violation)
        why = getattr(violation, "detail", "") or f"{getattr(violation, 'kind', 'forbid')} {getattr(violation, 'setting', '')}"
        (blocks if finding.severity == "block" else warns).append((finding, why))
    return blocks, warns


def search(snapshot: dict[str, Any], model: dict[str, Any] | None, flags: Any, target_version: str | None,
           speculative: str | None = None, draft_model: str | None = None, force_speculative: bool = False,
           tp_size: int | None = None, ep_size: int | None = None, ruleset: Any = None) -> Result:
    import topoctl.rules as rules_api

    if ruleset is None:
        ruleset = rules_api.load_rules()
    gpu_count = int((snapshot.get("summary") or {}).get("gpu_count") or len(snapshot.get("gpus") or []))
    if gpu_count < 1:
        raise TopoctlError("the target machine has no GPU", hint="probe the machine that will run SGLang",
                           exit_code=3)
    tp = tp_size or gpu_count
    ep = ep_size or 1
    version = flags.version
    notes: list[str] = []
    if not flags.exact:
        notes.append(flags.note)
    spec_options: list[str | None] = [None]
    if speculative:
        spec_options = [speculative] if force_speculative else [None, speculative]

    base_launch = {"tp_size": tp}
    if ep != 1:
        base_launch["ep_size"] = ep
    reports = {spec: rules_api.evaluate(ruleset, snapshot, _request(model, spec, tp, ep, target_version or version,
                                                                    dict(base_launch)))
               for spec in spec_options}
    findings_by_id: dict[str, Any] = {}
    for report in reports.values():
        for finding in report.findings:
            findings_by_id.setdefault(finding.rule_id, finding)
    findings = [findings_by_id[key] for key in sorted(findings_by_id)]

    # Values rules mention: these settings are searched (default vs each value mentioned).
    paths = table.table()["allreduce_paths"]
    path_settings = {name for setting_map in paths.values() for name in setting_map}
    fixed_settings = set(path_settings) | {"speculative_algorithm", "speculative_draft_model_path", "tp_size",
                                           "ep_size", "model_path"} | set(SPEC_GROUP)
    required: dict[str, Any] = {}
    preferred: dict[str, list[Any]] = {}
    options: dict[str, list[Any]] = {}
    prefer_pairs: list[tuple[str, Any, str]] = []
    reasons: dict[str, list[str]] = {}
    for finding in findings:
        for setting, value in effect_items(finding.effect, "require"):
            if setting not in fixed_settings:
                required.setdefault(setting, value)
                reasons.setdefault(setting, []).append(finding.rule_id)
        for setting, value in effect_items(finding.effect, "prefer"):
            prefer_pairs.append((setting, value, finding.rule_id))
            if setting not in fixed_settings:
                preferred.setdefault(setting, []).append(value)
        for setting, _ in effect_items(finding.effect, "forbid"):
            reasons.setdefault(setting, []).append(finding.rule_id)
    for setting, values in preferred.items():
        if setting in required:
            continue
        choices = [table.default(setting)]
        for value in values:
            if not any(same(value, seen) for seen in choices):
                choices.append(value)
        options[setting] = choices
    for setting, value in required.items():
        options[setting] = [value]

    spec_values: dict[str, Any] = dict(table.table()["speculative_defaults"])
    for setting, value, _ in prefer_pairs:
        if setting in SPEC_GROUP:
            spec_values[setting] = value

    default_paths = {"nccl", "custom"}
    dims = set(options) | {"speculative_algorithm"}
    model_name = model.get("name") if model else None
    allreduces = (model or {}).get("allreduces_per_forward") or 2 * 61

    candidates: list[Candidate] = []
    blocked: list[Candidate] = []
    reports_of: dict[int, Any] = {}
    option_names = sorted(options)
    for path in paths:
        path_settings_map = paths[path]
        if not all(table.version_allows(setting, version) for setting in path_settings_map):
            continue
        for spec in spec_options:
            for combo in itertools.product(*(options[name] for name in option_names)):
                launch: dict[str, Any] = dict(base_launch)
                launch.update(path_settings_map)
                for name, value in zip(option_names, combo):
                    if value is not None:
                        launch[name] = value
                if spec:
                    launch["speculative_algorithm"] = spec
                    if draft_model:
                        launch["speculative_draft_model_path"] = draft_model
                    for name in SPEC_GROUP:
                        launch[name] = spec_values[name]
                cand = Candidate(path, launch)
                # Each candidate is judged on its own: rules may speak of launch settings.
                report = rules_api.evaluate(ruleset, snapshot,
                                            _request(model, spec, tp, ep, target_version or version, dict(launch)))
                reports_of[id(cand)] = report
                for finding in report.findings:
                    findings_by_id.setdefault(finding.rule_id, finding)
                cand.blocked_by, cand.warnings = _violations(rules_api, report, launch)
                cand.honours_request = (spec == speculative)
                cand.prefers = sum(1 for setting, value, _ in prefer_pairs
                                   if same(launch.get(setting, table.default(setting)), value))
                cand.departures = sum(1 for setting, value in launch.items()
                                      if setting not in ("tp_size",) and not same(value, table.default(setting)))
                (blocked if cand.blocked_by else candidates).append(cand)

    evidence = collect_evidence([findings_by_id[key] for key in sorted(findings_by_id)])
    for cand in candidates + blocked:
        found = _throughput(cand, evidence, dims, default_paths, model_name)
        if found:
            cand.estimate, cand.estimate_level, cand.estimate_basis = found
        latency, level, basis = _latency(cand.path, evidence, snapshot, tp)
        cand.allreduce_us = allreduces * latency
        cand.allreduce_level = level
        cand.allreduce_basis = [basis]

    candidates.sort(key=Candidate.canonical)
    candidates.sort(key=Candidate.key, reverse=True)
    blocked.sort(key=Candidate.canonical)
    if not candidates:
        reasons_text = sorted({f"{finding.rule_id}: {finding.message}" for cand in blocked
                               for finding, _ in cand.blocked_by})
        raise TopoctlError("no launch passes the rules on this machine: " + "; ".join(reasons_text[:4]),
                           hint="run with --explain to see every blocked alternative", exit_code=1)
    winner = candidates[0]
    findings = list(reports_of[id(winner)].findings)

    decided = {setting for setting in reasons}
    decided.update(setting for setting, _, _ in prefer_pairs)
    decided.add("tp_size")
    for ev in winner.estimate_basis:
        decided.update(ev.config)
    reasons.setdefault("tp_size", []).append("topoctl: tensor parallel across " + (
        f"all {gpu_count} GPUs" if tp == gpu_count else f"{tp} GPUs (--tp-size)"))
    for setting, _, rule_id in prefer_pairs:
        reasons.setdefault(setting, []).append(rule_id)
    for name in paths[winner.path]:
        reasons.setdefault(name, []).append(f"ranking: allreduce path {winner.path}")
    if winner.speculative:
        for name in ("speculative_algorithm", "speculative_draft_model_path") + SPEC_GROUP:
            reasons.setdefault(name, []).append("requested: --speculative " + winner.speculative)
    for name in options:
        if name not in reasons:
            reasons[name] = ["ranking"]

    comparison = None
    if speculative:
        with_spec = next((c for c in candidates if c.speculative), None)
        without = next((c for c in candidates if not c.speculative), None)
        comparison = _compare(with_spec, without, winner, speculative, force_speculative, blocked)
    offers = []
    for path in paths:
        if path == winner.path:
            continue
        best = next((c for c in candidates if c.path == path and c.speculative == winner.speculative), None)
        if best and not best.warnings and best.allreduce_level >= LEVELS["upstream-reported"] \
                and best.allreduce_us < winner.allreduce_us:
            offers.append(best)
    return Result(snapshot, model, flags, target_version, tp, ep, speculative, force_speculative, winner,
                  candidates, blocked, findings, {k: sorted(set(v)) for k, v in reasons.items()}, decided,
                  comparison, offers, notes, evidence)


def _side(cand: Candidate | None) -> dict[str, Any] | None:
    if cand is None:
        return None
    basis = cand.estimate_basis[0] if cand.estimate_basis else None
    return {
        "config": cand.label(),
        "throughput_tok_s": round(basis.value, 3) if basis else None,
        "estimated_tok_s": round(cand.estimate, 3) if cand.estimate is not None else None,
        "level": LEVEL_NAMES[cand.level],
        "evidence": [ev.describe() for ev in cand.estimate_basis] or cand.allreduce_basis,
        "modelled_allreduce_ms_per_forward": round(cand.allreduce_us / 1000.0, 3),
    }


def _compare(with_spec: Candidate | None, without: Candidate | None, winner: Candidate, speculative: str,
             forced: bool, blocked: list[Candidate]) -> dict[str, Any]:
    out: dict[str, Any] = {"asked": speculative, "forced": forced,
                           "with": _side(with_spec), "without": _side(without),
                           "emitted": "with" if winner.speculative else "without"}
    name = speculative.upper().replace("EAGLE3", "EAGLE-3")
    if with_spec is None:
        reasons = sorted({f.rule_id for c in blocked if c.speculative for f, _ in c.blocked_by})
        out["verdict"] = "blocked"
        out["message"] = f"{name} is blocked on this machine (rules: {', '.join(reasons) or 'none'})"
    elif without is None:
        out["verdict"] = "forced" if forced else "only"
        out["message"] = f"{name} kept (--force-speculative)" if forced else f"{name} is the only launch left"
    elif not winner.speculative:
        a, b = out["with"], out["without"]
        shown_a = a["throughput_tok_s"] if a["throughput_tok_s"] is not None else a["estimated_tok_s"]
        shown_b = b["throughput_tok_s"] if b["throughput_tok_s"] is not None else b["estimated_tok_s"]
        out["verdict"] = "slower"
        if shown_a is not None and shown_b is not None:
            out["message"] = (f"{name} is slower here: {_fmt(shown_a)} tok/s with it vs {_fmt(shown_b)} tok/s "
                              f"without ({a['level']}); emitting the launch without it "
                              "(--force-speculative keeps it)")
        else:
            out["message"] = (f"{name} ranks below the launch without it ({a['level']} vs {b['level']} evidence); "
                              "emitting the launch without it (--force-speculative keeps it)")
    else:
        out["verdict"] = "kept"
        out["message"] = f"{name} kept: no evidence that it is slower on this machine"
    return out
