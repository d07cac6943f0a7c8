"""The candidate space: which launches `recommend` considers.

Allreduce paths come from sglang/data/spelling.yaml, EAGLE-3 is on or off (when asked for), and
every other setting a rule's effect mentions is searched over SGLang's default and each value the
rules name (a required value is the only option).

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from topoctl.autoconf.evidence import Evidence
from topoctl.autoconf.request import Launch, SettingValue
from topoctl.rules.sglang import spelling as table
from topoctl.rules.sglang.settings import equal

if (
    TYPE_CHECKING
):  # unit aliases are annotations only: no start-up import (tests/cli/test_startup_imports.py)
    from topoctl.autoconf.launch_model import Estimate
    from topoctl.autoconf.memory import Fit
    from topoctl.core.units import Microseconds, TokPerS
    from topoctl.rules.engine.model import Finding, Report

SPEC_GROUP = tuple(
    table.table()["speculative_group"]
)  # the three EAGLE sizes, from sglang/data/spelling.yaml
ROLE_SETTINGS = (
    "speculative_algorithm",
    "speculative_draft_model_path",
    "tp_size",
    "ep_size",
    "model_path",
)


def effect_items(effect: Mapping[str, Any], kind: str) -> list[tuple[str, SettingValue]]:
    """(setting, values) of a finding's forbid list (values: the `values` operand, or None),
    (setting, value) of its require/prefer mapping. The loader has normalised the effect (forbid
    entries are mappings)."""
    if kind == "forbid":
        return [(entry["setting"], entry.get("values")) for entry in effect.get("forbid") or ()]
    return list((effect.get(kind) or {}).items())


def agrees(
    setting: str,
    value: object,
    launch: Mapping[str, object],
    scoped: Mapping[str, object] | None = None,
) -> bool:
    """Whether a launch runs with `value` for `setting` (a setting it leaves out, or `none`, is at
    its default: `scoped`, what the rules say SGLang does by itself here, else
    rules/sglang/data/settings.yaml)."""
    return equal(setting, launch.get(setting), value, scoped)


@dataclass(frozen=True)
class Candidate:
    """One launch the search considers, with what each stage found: judged by the rules
    (search.judge_candidate), fitted (memory), priced (cost, launch_model), ranked. Frozen: each
    stage returns a new candidate (dataclasses.replace), so a candidate in one list never changes
    under a reader of another."""

    path: str
    launch: Launch
    blocked_by: list[tuple[Finding, str]] = field(default_factory=list)  # (finding, why)
    warnings: list[tuple[Finding, str]] = field(default_factory=list)
    estimate: TokPerS | None = None  # when throughput evidence reaches it
    estimate_level: int = 1
    estimate_basis: list[Evidence] = field(default_factory=list)
    allreduce_us: Microseconds = 0.0
    allreduce_level: int = 1
    allreduce_basis: list[str] = field(default_factory=list)
    prefers: int = 0
    departures: int = 0
    defaults: dict[str, object] = field(
        default_factory=dict
    )  # what the rules say SGLang does by itself here
    default_rules: dict[str, str] = field(
        default_factory=dict
    )  # setting -> the rule whose defaults say so
    honours_request: bool = True
    fit: Fit | None = None  # when a model is given
    predicted: Estimate | None = None  # when a model and the GPU's bandwidth are known
    remedies: int = (
        0  # preferences of blocking rules honoured: ranked before speed (a safe launch first)
    )
    remedies_asked: int = (
        0  # preferences of blocking rules that fired for this candidate's (TP, DP) option
    )
    gpus: tuple[int, ...] = ()  # the GPUs it runs on (snapshot indices; autoconf/placement.py)
    estimate_withheld: list[str] = field(
        default_factory=list
    )  # numbers measured on another launch, and why
    # why a choice was left at SGLang's default, by the choice ("speculative", "allreduce path"):
    # its predicted gain is inside the launch model's band (ranking.hold_within_band)
    uncertain: dict[str, str] = field(default_factory=dict)
    # What SGLang sets by itself for this launch (the rules' effect.implies, report.implied):
    # setting -> (value, rule id). The launch as SGLang runs it (`effective`) and the allreduce path
    # that runs (`runs_path`) are what the cost, the evidence and the rule preferences judge, the
    # way check judges a launch.
    implied: dict[str, tuple[SettingValue, str]] = field(default_factory=dict)
    report: Report | None = field(
        default=None, repr=False, compare=False
    )  # the rules' report on this launch

    @property
    def effective(self) -> Launch:
        if not self.implied:
            return self.launch
        return {**self.launch, **{setting: value for setting, (value, _) in self.implied.items()}}

    @property
    def memory_fit(self) -> Fit:
        """`fit`, for a reader that has already kept only the candidates the memory model judged."""
        assert self.fit is not None
        return self.fit

    @property
    def prediction(self) -> Estimate:
        """`predicted`, for a reader that has already kept only the candidates the launch model
        priced."""
        assert self.predicted is not None
        return self.predicted

    @property
    def runs_path(self) -> str:
        return running_path(self.path, self.effective, self.implied, self.defaults)

    @property
    def speculative(self) -> str | None:
        return cast("str | None", self.launch.get("speculative_algorithm"))

    @property
    def level(self) -> int:
        if self.estimate is not None:
            return self.estimate_level
        return 1 if self.predicted is not None else self.allreduce_level

    @property
    def tp(self) -> int:
        return int(self.launch.get("tp_size") or 1)

    @property
    def dp(self) -> int:
        return int(self.launch.get("dp_size") or 1)

    @property
    def remedies_missed(self) -> int:
        """Remedies of blocking rules this launch leaves out. Ranked on rather than `remedies`
        itself, so that an option no blocking rule asks anything of (TP 1, a group with P2P) is not
        put behind one that honours a remedy it needs."""
        return max(0, self.remedies_asked - self.remedies)

    @property
    def score(self) -> float:
        """Tokens/s from evidence, else from the launch model; without either, minus the allreduce
        time."""
        if self.estimate is not None:
            return self.estimate
        if self.predicted is not None:
            return self.predicted.tokens_per_s
        return -self.allreduce_us

    def label(self) -> str:
        parts = [f"allreduce={self.path}", f"speculative={self.speculative or 'off'}"]
        for setting in sorted(self.launch):
            if setting == "tp_size":
                continue
            if (
                setting in ("ep_size", "speculative_algorithm", "speculative_draft_model_path")
                or setting in SPEC_GROUP
                or setting in table.table()["allreduce_paths"][self.path]
            ):
                continue
            parts.append(f"{setting}={self.launch[setting]}")
        return ", ".join(parts)

    def canonical(self) -> str:
        return repr(sorted((k, repr(v)) for k, v in self.launch.items()))


def running_path(
    path: str,
    effective: Mapping[str, object],
    implied: Mapping[str, object],
    defaults: Mapping[str, object] | None = None,
) -> str:
    """The allreduce path a launch runs on once SGLang has set what it sets by itself: `path` unless
    an implied setting changes one of the paths' settings (deterministic inference turns custom
    allreduce off: the custom path runs as NCCL), or SGLang's own default in this scope (the rules'
    effect.defaults) does for a setting the launch leaves out (SGLang turns FlashInfer allreduce
    fusion on by itself for some models: the custom path runs as flashinfer_fusion); then the path
    whose every setting the launch as run has, the most specific first."""
    paths = table.table()["allreduce_paths"]
    names = {setting for settings in paths.values() for setting in settings}
    scoped = defaults or {}
    moved_by_default = any(
        setting in scoped and setting not in effective and not equal(setting, scoped[setting], None)
        for setting in names
    )
    if not moved_by_default and not any(setting in implied for setting in names):
        return path
    for name, settings in sorted(paths.items(), key=lambda item: (-len(item[1]), item[0])):
        if all(agrees(setting, value, effective, scoped) for setting, value in settings.items()):
            return name
    return path


def default_path(defaults: Mapping[str, object] | None = None) -> str | None:
    """SGLang's default allreduce path for a launch: the path whose every setting a launch that
    writes none of them runs with (`defaults`: what the rules say SGLang does by itself in this
    scope, e.g. the fusion on by default for some models), the most specific first; custom wherever
    SGLang keeps its own defaults."""
    paths = table.table()["allreduce_paths"]
    for name, settings in sorted(paths.items(), key=lambda item: (-len(item[1]), item[0])):
        if all(agrees(setting, value, {}, defaults) for setting, value in settings.items()):
            return name
    return None


@dataclass
class Space:
    """The settings searched and why: options per setting, the preferences rules state, and the rule
    ids behind each setting a rule names."""

    options: dict[str, list[SettingValue]]
    prefer_pairs: list[tuple[str, SettingValue, str]]  # (setting, value, rule id)
    reasons: dict[str, list[str]]
    spec_values: Launch  # the EAGLE sizes to write when speculative decoding is on
    # preferences of blocking rules: their remedy (NCCL_P2P_DISABLE=1 where P2P is missing or
    # unverified)
    remedies: list[tuple[str, SettingValue]] = field(default_factory=list)

    @property
    def option_names(self) -> list[str]:
        return sorted(self.options)


def fixed_settings() -> set[str]:
    """Settings the space never searches by rule preference: the path's own, the roles, the EAGLE
    sizes."""
    paths = table.table()["allreduce_paths"]
    return (
        {name for setting_map in paths.values() for name in setting_map}
        | set(ROLE_SETTINGS)
        | set(SPEC_GROUP)
    )


def settings_space(findings: list[Finding]) -> Space:
    """What the fired rules ask of the launch, as a search space."""
    fixed = fixed_settings()
    required: Launch = {}
    preferred: dict[str, list[SettingValue]] = {}
    prefer_pairs: list[tuple[str, SettingValue, str]] = []
    remedies: list[tuple[str, SettingValue]] = []
    reasons: dict[str, list[str]] = {}
    for finding in findings:
        for setting, value in effect_items(finding.effect, "require"):
            if setting not in fixed:
                required.setdefault(setting, value)
                reasons.setdefault(setting, []).append(finding.rule_id)
        for setting, value in effect_items(finding.effect, "prefer"):
            prefer_pairs.append((setting, value, finding.rule_id))
            if finding.severity == "block":
                remedies.append((setting, value))
            if setting not in fixed:
                preferred.setdefault(setting, []).append(value)
        for setting, _ in effect_items(finding.effect, "forbid"):
            reasons.setdefault(setting, []).append(finding.rule_id)
    options: dict[str, list[SettingValue]] = {}
    for setting, values in preferred.items():
        if setting not in required:
            options[setting] = distinct_choices(setting, values)
    for setting, value in required.items():
        options[setting] = [value]
    spec_values: Launch = dict(table.table()["speculative_defaults"])
    for setting, value, _ in prefer_pairs:
        if setting in SPEC_GROUP:
            spec_values[setting] = value
    return Space(options, prefer_pairs, reasons, spec_values, remedies)


def distinct_choices(setting: str, values: list[SettingValue]) -> list[SettingValue]:
    """SGLang's default, then each preferred value that differs from those before it."""
    choices: list[SettingValue] = [table.default(setting)]
    for value in values:
        if not any(equal(setting, value, seen) for seen in choices):
            choices.append(value)
    return choices


def usable_paths(version: str) -> dict[str, Launch]:
    """The allreduce paths whose settings the target SGLang version has."""
    paths = table.table()["allreduce_paths"]
    return {
        path: settings
        for path, settings in paths.items()
        if all(table.version_allows(setting, version) for setting in settings)
    }


def launches(
    space: Space,
    base_launch: Launch,
    version: str,
    spec_options: list[str | None],
    draft_model: str | None,
) -> Iterator[tuple[str, str | None, Launch]]:
    """Every (path, speculative, launch) of the space, in a stable order."""
    names = space.option_names
    for path, path_settings in usable_paths(version).items():
        for spec in spec_options:
            for combo in itertools.product(*(space.options[name] for name in names)):
                launch: Launch = dict(base_launch)
                launch.update(path_settings)
                for name, value in zip(names, combo, strict=True):
                    if value is not None:
                        launch[name] = value
                if spec:
                    launch["speculative_algorithm"] = spec
                    if draft_model:
                        launch["speculative_draft_model_path"] = draft_model
                    for name in SPEC_GROUP:
                        launch[name] = space.spec_values[name]
                yield path, spec, launch
