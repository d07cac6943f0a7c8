"""Evidence: the numbers rules carry (`evidence:` items of fired findings), made comparable for
ranking.

A rule backs its advice with measurements, upstream claims or modelled figures. Each number says
what it is (`kind`: throughput, latency, relative or context) and the settings it was measured under
(`config`, a mapping validated by the rule schema: logical settings, env:NAME, `allreduce`, `model`,
`interconnect` and descriptive keys). This module turns each number into an Evidence item, so that
autoconf/search.py can tell which numbers speak of a candidate launch and rank candidates on them:
measured > upstream-reported > modelled (LEVELS), then the value. Nothing is guessed from words: a
number whose config names an unknown key is left out rather than applied everywhere.

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from topoctl.core.vocab import (
    EVIDENCE_DESCRIPTIVE_KEYS,
    EVIDENCE_INTERCONNECT_KEY,
    EVIDENCE_LEVEL_RANK,
    EVIDENCE_MODEL_KEY,
)
from topoctl.core.vocab import evidence_config_text as config_text
from topoctl.rules.sglang import spelling as table
from topoctl.rules.sglang.settings import equal

if TYPE_CHECKING:
    from topoctl.rules.engine.model import Finding

LEVELS = EVIDENCE_LEVEL_RANK
LEVEL_NAMES = {rank: name for name, rank in LEVELS.items()}
PATH_KEYS = ("allreduce", "allreduce_path", "path")
SPEC_KEYS = ("speculative", "speculative_algorithm")


def _norm(value: object) -> object:
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
    config: dict[str, object]  # logical settings it was measured under (and `model`), normalised
    raw: dict[str, Any]  # the rule file's evidence item, as parsed
    baseline: dict[str, object] | None = (
        None  # for relative numbers: the settings the change is measured against
    )
    baseline_path: str | None = None
    config_text: str = ""
    number_kind: str = "context"  # the number's `kind:` in the rule file

    @property
    def rank(self) -> int:
        return LEVELS.get(self.level, 1)

    @property
    def kind(self) -> str:
        """throughput, latency, relative or context: what the rule file says the number is."""
        return self.number_kind

    def latency_us(self) -> float:
        return self.value * 1000.0 if self.unit.lower() == "ms" else self.value

    def factor(self) -> float:
        unit = self.unit.lower()
        return self.value if unit in ("x", "ratio") else 1.0 + self.value / 100.0

    def change_text(self) -> str:
        """What a relative number changes, e.g. `cuda_graph_max_bs=128 instead of 512`."""
        parts = [
            f"{key}={_value_text(new)} instead of {_value_text(old)}"
            for key, (new, old) in sorted(_changed(self).items())
        ]
        return ", ".join(parts) or self.config_text

    def relative_text(self) -> str:
        if self.unit.strip().lower() in ("x", "ratio"):
            return f"x{_fmt(self.value)}"
        return f"{'+' if self.value > 0 else ''}{_fmt(self.value)}%"

    def describe(self) -> str:
        if self.kind == "relative":
            return (
                f"{self.relative_text()} {self.metric} with {self.change_text()} "
                f"({self.level}: {self.source}; rule {self.rule_id})"
            )
        return (
            f"{_fmt(self.value)} {self.unit} {self.metric} ({self.level}: {self.source}; rule "
            f"{self.rule_id})"
        )


def _fmt(value: float) -> str:
    return f"{value:g}" if abs(value) < 1e6 else f"{value:.3g}"


def _value_text(value: object) -> str:
    if value is None:
        return "default"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _changed(rel: Evidence) -> dict[str, tuple[object, object]]:
    """The settings a relative number changes: those its config gives another value than its
    baseline (a setting the baseline does not name is at SGLang's default there)."""
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


# Settings that do not change what a throughput number measures: where the weights live, and
# SGLang's start-up P2P test (--enable-p2p-check runs once before custom allreduce is set up; decode
# does not run it).
NEUTRAL_SETTINGS = ("model_path", "speculative_draft_model_path", "enable_p2p_check")
# Compared only when a number names them (every built-in number does); ranking's own business
# otherwise.
SIZE_SETTINGS = ("tp_size", "ep_size")


def unmeasured_settings(
    launch: Mapping[str, object], scoped: Mapping[str, object], named: set[str]
) -> list[str]:
    """The settings a launch runs with at another value than SGLang's default (in this scope:
    `scoped`, what the rules say SGLang does by itself here) that a measurement does not name
    (`named`: the settings its config, its allreduce path and the relative numbers applied to it
    speak of). A measurement leaves every setting it does not name at its default, so a launch with
    any of these is not the launch that was measured: e.g. NCCL_P2P_DISABLE=1 on a launch whose
    number was measured without it."""
    out = []
    for setting, value in sorted(launch.items()):
        if setting in named or setting in NEUTRAL_SETTINGS or setting in SIZE_SETTINGS:
            continue
        if not equal(
            setting, value, None, scoped
        ):  # None: the setting's default (scoped, else settings.yaml)
            out.append(f"{setting}={_value_text(value)}")
    return out


def _here(ev: Evidence, interconnect: str | None) -> bool:
    wanted = ev.config.get(INTERCONNECT_KEY)
    return wanted is None or interconnect is None or _norm(wanted) == _norm(interconnect)


# Keys an evidence config may name besides the logical settings of sglang/data/spelling.yaml (and
# env:NAME): `allreduce` is the allreduce path (a name from settings.yaml's allreduce_paths),
# `model` the model the number was measured with (compared with the requested model's name); the
# DESCRIPTIVE keys say what was measured and never decide whether the number applies to a candidate.
MODEL_KEY = EVIDENCE_MODEL_KEY
# compared with the target's summary.interconnect (pcie, nvswitch, ...)
INTERCONNECT_KEY = EVIDENCE_INTERCONNECT_KEY
DESCRIPTIVE_KEYS = EVIDENCE_DESCRIPTIVE_KEYS


def _config_value(key: str, value: object) -> object:
    """A config value as the settings table reads it (booleans and integers as given; text through
    the table's own parsing, so `EAGLE3` and `eagle3` are one algorithm)."""
    return (
        table.parse_value(key, value) if isinstance(value, str) and key in table.specs() else value
    )


PATH_ALIASES = {
    "custom_allreduce": "custom",
    "custom_all_reduce": "custom",
    "ca": "custom",
    "pcie_ipc_allreduce": "pcie_ipc",
    "flashinfer_allreduce_fusion": "flashinfer_fusion",
    "symm_mem": "nccl_symm_mem",
    "torch_symm": "torch_symm_mem",
}


def normalise_config(config: object) -> tuple[str | None, dict[str, object]]:
    """(allreduce path, other settings) of an evidence config mapping: the path is what `allreduce=`
    names; the settings keep every logical setting named (custom_all_reduce included), `model`,
    `interconnect` and the descriptive keys."""
    return _normalise(config)[:2]


def _normalise(config: object) -> tuple[str | None, dict[str, object], list[str]]:
    """(path, settings, unknown keys) of an evidence config mapping."""
    if not isinstance(config, dict):
        return None, {}, ["config (not a mapping)"]
    paths = table.table()["allreduce_paths"]
    known = table.specs()
    unknown: list[str] = []
    rest: dict[str, object] = {}
    path = None
    for key, value in config.items():
        if key in PATH_KEYS:
            name = _norm(value)
            path = PATH_ALIASES.get(name, name) if isinstance(name, str) else None
            if path not in paths:
                unknown.append(f"{key}={value}")
                path = None
        elif key in SPEC_KEYS:
            rest["speculative_algorithm"] = (
                _norm(value) if not isinstance(value, bool) else ("eagle3" if value else None)
            )
        elif key in known or key.startswith("env:"):
            rest[key] = _config_value(key, value)
        elif key in (MODEL_KEY, INTERCONNECT_KEY) or key in DESCRIPTIVE_KEYS:
            rest[key] = value
        else:
            unknown.append(key)
    return path, rest, unknown


def _points(item: dict[str, Any]) -> list[dict[str, Any]]:
    """The numbers of one evidence item (`numbers: [{metric, kind, value, unit, config,
    baseline}]`). The baseline of an absolute number is a point of its own (same kind); the baseline
    of a relative one is what the change is measured against."""
    points = []
    for number in item.get("numbers") or []:
        if not isinstance(number, dict):
            continue
        point = {k: number.get(k) for k in ("metric", "kind", "value", "unit", "config")}
        baseline = number.get("baseline")
        relative = number.get("kind") == "relative"
        if relative and isinstance(baseline, dict):
            point["baseline"] = baseline.get("config")
        points.append(point)
        if isinstance(baseline, dict) and not relative:
            points.append(
                {
                    "metric": number.get("metric"),
                    "kind": number.get("kind"),
                    "value": baseline.get("value"),
                    "unit": number.get("unit"),
                    "config": baseline.get("config"),
                }
            )
    return points


def collect_evidence(findings: Sequence[Finding], notes: list[str] | None = None) -> list[Evidence]:
    """Every number of the fired findings' evidence that can rank a candidate. A number whose config
    names a key that is neither a setting nor `allreduce`/`model`/a descriptive key is left out
    (said in `notes`): a misspelt setting must not make a number apply everywhere."""
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
                        notes.append(
                            f"rule {finding.rule_id}: evidence config names unknown "
                            f"{', '.join(sorted(set(unknown + unknown_base)))}: not used for "
                            "ranking"
                        )
                    continue
                key = (finding.rule_id, point.get("metric"), value, repr(point["config"]))
                if key in seen:
                    continue
                seen.add(key)
                out.append(
                    Evidence(
                        finding.rule_id,
                        str(item.get("level") or "modelled"),
                        str(point.get("metric") or ""),
                        value,
                        str(point.get("unit") or ""),
                        str(item.get("source") or ""),
                        path,
                        config,
                        item,
                        baseline,
                        baseline_path,
                        config_text(point["config"]),
                        str(point.get("kind") or "context"),
                    )
                )
    return out
