"""Evidence: the numbers rules carry (`evidence:` items of fired findings), made comparable for ranking.

A rule backs its advice with measurements, upstream claims or modelled figures. This module turns each such
number into an Evidence item (level, metric, value, unit, the allreduce path and settings it was measured
under), so that autoconf/search.py can tell which numbers speak of a candidate launch and rank candidates on
them: measured > upstream-reported > modelled (LEVELS), then the value.

The settings a number was measured under are written in the key=value form (`allreduce=nccl
speculative_algorithm=none cuda_graph_max_bs=128 model=kimi-k2.5`; built-in rules must use it, a test holds
them to it). A config written in words (SGLang flags, "EAGLE-3", "custom allreduce", ...) is understood by a
keyword fallback that exists only for site rules written before that form; a number whose key=value config
names an unknown key is left out rather than applied everywhere.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from topoctl.rules.settings import equal
from topoctl.sglang import spelling as table

LEVELS = {"measured": 3, "upstream-reported": 2, "modelled": 1}
LEVEL_NAMES = {rank: name for name, rank in LEVELS.items()}
PATH_KEYS = ("allreduce", "allreduce_path", "path")
SPEC_KEYS = ("speculative", "speculative_algorithm")
OPT_IN_PATH_SETTINGS = ("pcie_ipc_allreduce", "torch_symm_mem", "nccl_symm_mem", "flashinfer_allreduce_fusion")


def _norm(value: Any) -> Any:
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("none", "null", "off", ""):
            return None
        return lowered
    return value


@dataclass
class Evidence:
    rule_id: str
    level: str
    metric: str
    value: float
    unit: str
    source: str
    path: str | None  # allreduce path the item names (`allreduce=`); None: it does not say
    config: dict[str, Any]  # logical settings it was measured under (and `model`), normalised
    raw: dict[str, Any]
    baseline: dict[str, Any] | None = None  # for relative numbers: the settings the change is measured against
    baseline_path: str | None = None
    config_text: str = ""

    @property
    def rank(self) -> int:
        return LEVELS.get(self.level, 1)

    @property
    def kind(self) -> str:
        unit = self.unit.lower()
        metric = self.metric.lower()
        if unit in ("%", "percent", "x", "ratio"):
            return "relative"
        if unit in ("us", "µs", "usec", "ms") and "latency" in metric:
            return "latency"  # per call; "allreduce time per verify pass" is context, not a per-call latency
        if "tok" in unit or "throughput" in metric:
            return "throughput"
        return "other"

    def latency_us(self) -> float:
        return self.value * 1000.0 if self.unit.lower() == "ms" else self.value

    def factor(self) -> float:
        unit = self.unit.lower()
        return self.value if unit in ("x", "ratio") else 1.0 + self.value / 100.0

    def change_text(self) -> str:
        """What a relative number changes, e.g. `cuda_graph_max_bs=128 instead of 512`."""
        parts = [f"{key}={_value_text(new)} instead of {_value_text(old)}" for key, (new, old) in sorted(_changed(self).items())]
        return ", ".join(parts) or self.config_text

    def relative_text(self) -> str:
        if self.unit.strip().lower() in ("x", "ratio"):
            return f"x{_fmt(self.value)}"
        return f"{'+' if self.value > 0 else ''}{_fmt(self.value)}%"

    def describe(self) -> str:
        if self.kind == "relative":
            return (f"{self.relative_text()} {self.metric} with {self.change_text()} "
                    f"({self.level}: {self.source}; rule {self.rule_id})")
        return f"{_fmt(self.value)} {self.unit} {self.metric} ({self.level}: {self.source}; rule {self.rule_id})"


def _fmt(value: float) -> str:
    return f"{value:g}" if abs(value) < 1e6 else f"{value:.3g}"


def _value_text(value: Any) -> str:
    if value is None:
        return "default"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _changed(rel: Evidence) -> dict[str, Any]:
    """The settings a relative number changes: those its config gives another value than its baseline
    (a setting the baseline does not name is at SGLang's default there)."""
    base = rel.baseline or {}
    out = {}
    for key, value in rel.config.items():
        if key in DESCRIPTIVE_KEYS or key in (MODEL_KEY, INTERCONNECT_KEY):
            continue
        before = base[key] if key in base else table.default(key)
        if not equal(key, value, before):
            out[key] = (value, before)
    if rel.path is not None and rel.baseline_path is not None and rel.path != rel.baseline_path:
        out["allreduce"] = (rel.path, rel.baseline_path)
    return out


# Settings that do not change what a throughput number measures: where the weights live, and SGLang's start-up
# P2P test (--enable-p2p-check runs once before custom allreduce is set up; decode does not run it).
NEUTRAL_SETTINGS = ("model_path", "speculative_draft_model_path", "enable_p2p_check")
# Compared only when a number names them (every built-in number does); ranking's own business otherwise.
SIZE_SETTINGS = ("tp_size", "ep_size")


def unmeasured_settings(launch: dict[str, Any], scoped: dict[str, Any], named: set[str]) -> list[str]:
    """The settings a launch runs with at another value than SGLang's default (in this scope: `scoped`, what
    the rules say SGLang does by itself here) that a measurement does not name (`named`: the settings its
    config, its allreduce path and the relative numbers applied to it speak of). A measurement leaves every
    setting it does not name at its default, so a launch with any of these is not the launch that was
    measured: e.g. NCCL_P2P_DISABLE=1 on a launch whose number was measured without it."""
    out = []
    for setting, value in sorted(launch.items()):
        if setting in named or setting in NEUTRAL_SETTINGS or setting in SIZE_SETTINGS:
            continue
        if not equal(setting, value, None, scoped):  # None: the setting's default (scoped, else settings.yaml)
            out.append(f"{setting}={_value_text(value)}")
    return out


def _here(ev: Evidence, interconnect: str | None) -> bool:
    wanted = ev.config.get(INTERCONNECT_KEY)
    return wanted is None or interconnect is None or _norm(wanted) == _norm(interconnect)


# Keys an evidence config may name besides the logical settings of sglang/data/spelling.yaml (and env:NAME):
# `allreduce` is the allreduce path (a name from settings.yaml's allreduce_paths), `model` the model the
# number was measured with (compared with the requested model's name); the DESCRIPTIVE keys say what was
# measured and never decide whether the number applies to a candidate.
MODEL_KEY = "model"
INTERCONNECT_KEY = "interconnect"  # compared with the target's summary.interconnect (pcie, nvswitch, ...)
DESCRIPTIVE_KEYS = ("message_kib", "message_mib", "max_message_mib", "allreduces_per_pass")
_KV_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_:.\-]*=\S*\Z")

PATH_WORDS = (  # site rules only: phrases a config written in words uses for an allreduce path (in order)
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


def is_key_value(text: str) -> bool:
    """Whether an evidence config is written in the key=value form (every token `key=value`)."""
    tokens = str(text).split()
    return bool(tokens) and all(_KV_TOKEN.match(token) for token in tokens)


def parse_config_kv(text: str) -> tuple[dict[str, Any], list[str]]:
    """(config, unknown keys) of a key=value evidence config: `allreduce=nccl speculative_algorithm=none
    cuda_graph_max_bs=128 model=kimi-k2.5`. Values go through the settings table (`none`/`null` -> None,
    booleans, integers); `NCCL_X=v` means `env:NCCL_X=v`."""
    known = table.specs()
    out: dict[str, Any] = {}
    unknown: list[str] = []
    for token in str(text).split():
        key, _, value = token.partition("=")
        if value.lower() in ("none", "null"):
            parsed: Any = None
        elif key in known:
            parsed = table.parse_value(key, value)
        else:
            parsed = value
        if key in PATH_KEYS or key in (MODEL_KEY, INTERCONNECT_KEY) or key in DESCRIPTIVE_KEYS or key in known:
            out[key] = parsed
        elif key in SPEC_KEYS:
            out["speculative_algorithm"] = parsed
        elif key.startswith("env:"):
            out[key] = parsed
        elif key.isupper() and key.replace("_", "").isalnum():
            out[table.env_names().get(key, f"env:{key}")] = parsed
        else:
            unknown.append(key)
    return out, unknown


def parse_config_text(text: str) -> dict[str, Any]:
    """Logical settings from an evidence config written in words: the fallback for site rules written before
    the key=value form (built-in rules use key=value; a test holds them to it).

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


PATH_ALIASES = {"custom_allreduce": "custom", "custom_all_reduce": "custom", "ca": "custom",
                "pcie_ipc_allreduce": "pcie_ipc", "flashinfer_allreduce_fusion": "flashinfer_fusion",
                "symm_mem": "nccl_symm_mem", "torch_symm": "torch_symm_mem"}


def normalise_config(config: Any) -> tuple[str | None, dict[str, Any]]:
    """(allreduce path, other settings) of an evidence config: key=value text, a mapping, or (site rules
    only) words. The path is what `allreduce=` names, or, for configs in words, what the words name; the
    settings keep every logical setting named (custom_all_reduce included), `model`, and descriptive keys."""
    return _normalise(config)[:2]


def _normalise(config: Any) -> tuple[str | None, dict[str, Any], list[str]]:
    paths = table.table()["allreduce_paths"]
    unknown: list[str] = []
    words = False
    if isinstance(config, str):
        if is_key_value(config):
            config, unknown = parse_config_kv(config)
        else:
            config, words = parse_config_text(config), True
    if not isinstance(config, dict):
        return None, {}, unknown
    rest: dict[str, Any] = {}
    path = None
    for key, value in config.items():
        if key in PATH_KEYS:
            name = _norm(value)
            path = PATH_ALIASES.get(name, name) if isinstance(name, str) else None
            if path not in paths:
                unknown.append(f"{key}={value}")
                path = None
        elif key in SPEC_KEYS:
            rest["speculative_algorithm"] = _norm(value) if not isinstance(value, bool) else ("eagle3" if value else None)
        else:
            rest[key] = value
    if words and path is None:  # words such as "--enable-torch-symm-mem" name a path through its settings
        for name in OPT_IN_PATH_SETTINGS:
            if _norm(rest.get(name)) is True:
                path = next((p for p, s in paths.items() if s.get(name) is True), None)
        if path is None and "custom_all_reduce" in rest:
            path = "custom" if _norm(rest["custom_all_reduce"]) is True else "nccl"
    if words:
        for name in OPT_IN_PATH_SETTINGS + ("custom_all_reduce",):
            rest.pop(name, None)
    return path, rest, unknown


def _points(item: dict[str, Any]) -> list[dict[str, Any]]:
    """The numbers of one evidence item: `numbers: [{metric, value, unit, config, baseline}]` (the baseline of
    an absolute number is a point of its own; the baseline of a relative one is what the change is measured
    against), or the flat form {metric, value, unit, config}."""
    points = []
    numbers = item.get("numbers")
    if isinstance(numbers, list):
        for number in numbers:
            if not isinstance(number, dict):
                continue
            point = {k: number.get(k) for k in ("metric", "value", "unit", "config")}
            baseline = number.get("baseline")
            relative = str(number.get("unit") or "").strip().lower() in ("%", "percent", "x", "ratio")
            if relative and isinstance(baseline, dict):
                point["baseline"] = baseline.get("config")
            points.append(point)
            if isinstance(baseline, dict) and not relative:
                points.append({"metric": number.get("metric"), "value": baseline.get("value"),
                               "unit": number.get("unit"), "config": baseline.get("config")})
    elif "value" in item:
        points.append({k: item.get(k) for k in ("metric", "value", "unit", "config")})
    return points


def collect_evidence(findings: list[Any], notes: list[str] | None = None) -> list[Evidence]:
    """Every number of the fired findings' evidence that can rank a candidate. A number whose config names a
    key that is neither a setting nor `allreduce`/`model`/a descriptive key is left out (said in `notes`):
    a misspelt setting must not make a number apply everywhere."""
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
                    value = float(point["value"])
                except (KeyError, TypeError, ValueError):
                    continue
                if not point.get("config"):
                    continue  # a number without its configuration cannot rank a candidate
                path, config, unknown = _normalise(point["config"])
                baseline_path, baseline, unknown_base = None, None, list[str]()
                if point.get("baseline"):
                    baseline_path, baseline, unknown_base = _normalise(point["baseline"])
                if unknown or unknown_base:
                    if notes is not None:
                        notes.append(f"rule {finding.rule_id}: evidence config names unknown "
                                     f"{', '.join(sorted(set(unknown + unknown_base)))}: not used for ranking")
                    continue
                key = (finding.rule_id, point.get("metric"), value, repr(point["config"]))
                if key in seen:
                    continue
                seen.add(key)
                out.append(Evidence(finding.rule_id, str(item.get("level") or "modelled"),
                                    str(point.get("metric") or ""), value, str(point.get("unit") or ""),
                                    str(item.get("source") or ""), path, config, item, baseline, baseline_path,
                                    str(point["config"])))
    return out
