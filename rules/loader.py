"""Reading rule files: YAML (safe_load only) -> checked, compiled Rule objects in a RuleSet.

Every problem in a rule file ends in one line naming the file, the rule and the field, raised as a
TopoctlError, so that a user extending the knowledge gets told exactly what to fix and the CLI never
shows a traceback. Checks run in two layers: precise Python checks (fields, facts, operators, PEP 440
specifiers, settings, test cases), then the published JSON Schema (rules/schema/rule.schema.json) for
everything else. Built-in files are schema-validated by the test suite rather than on every start, which
keeps `topoctl rules list` fast; a user's files are always validated.
"""
from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from typing import Any, Iterable

from topoctl import vocab
from topoctl.errors import TopoctlError

from . import settings as launch_settings
from .conditions import FORBID_OPERATORS, ConditionError, check_operand, compile_condition
from .model import SEVERITIES, Rule, RuleSet, TestCase

RULE_FIELDS = ("id", "title", "severity", "scope", "tags", "when", "effect", "message", "remediation", "evidence",
               "tests")
REQUIRED_FIELDS = ("id", "title", "severity", "when", "effect", "message", "remediation", "evidence", "tests")
FILE_FIELDS = ("schema_version", "rules", "disable")
EFFECT_FIELDS = ("forbid", "require", "prefer", "defaults", "implies")
EXPECTATIONS = ("fire", "unknown", "silent")
RULE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{2,99}$")
RULE_FILE_SUFFIXES = (".yaml", ".yml")
FIX_HINT = "see docs/rules.md; `topoctl rules schema` prints the rule file schema"


class RuleFileError(TopoctlError):
    """A rule file that cannot be used; the message names file, rule and field on one line."""

    def __init__(self, path: str, message: str, rule_id: str | None = None, field: str | None = None) -> None:
        where = path
        if rule_id is not None:
            where += f": rule {rule_id!r}"
        if field:
            where += f": field {field!r}"
        text = " ".join(f"{where}: {message}".split())  # one line, always
        super().__init__(text, hint=FIX_HINT)
        self.path, self.rule_id, self.field = path, rule_id, field


# ----------------------------------------------------------------------------------------- public entry
def load_rules(extra_dirs: list[str] | None = None, disabled: dict[str, str] | None = None,
               builtin: bool = True) -> "RuleSet":
    """Built-in rules (unless builtin=False) plus the rule files of `extra_dirs`, with `disabled`
    (rule id -> written reason) and the `disable:` entries of site files switched off.

    Raises TopoctlError for a bad file, a duplicate id, a disable without a reason or of an unknown id.
    """
    rules: list[Rule] = list(builtin_rules()) if builtin else []
    file_disables: list[tuple[str, str, str]] = []  # (path, id, reason)
    for directory in extra_dirs or []:
        for path in rule_files(directory):
            file_rules, disables = _site_file(path)
            rules.extend(file_rules)
            file_disables.extend((path, rule_id, reason) for rule_id, reason in disables)
    _reject_duplicates(rules)
    known = {rule.id for rule in rules}
    switched_off: dict[str, str] = {}
    for path, rule_id, reason in file_disables:
        if rule_id not in known:
            raise RuleFileError(path, f"disables rule {rule_id!r}, which does not exist", field="disable")
        switched_off[rule_id] = reason
    for rule_id, reason in (disabled or {}).items():
        if rule_id not in known:
            raise TopoctlError(f"--disable {rule_id}: no rule has this id", hint="`topoctl rules list` shows the ids")
        if not isinstance(reason, str) or not reason.strip():
            raise TopoctlError(f"--disable {rule_id}: a reason is required (ID=REASON)",
                               hint="the reason is shown in every report, so write why the rule does not apply")
        switched_off[rule_id] = reason.strip()
    return RuleSet(rules, switched_off)


@lru_cache(maxsize=1)
def builtin_rules() -> tuple[Rule, ...]:
    """The shipped knowledge, parsed and compiled once per process.

    The checked rules are kept in topoctl's knowledge cache (topoctl/cache.py) as plain data, so a warm
    start neither imports PyYAML nor re-checks them; only the conditions are compiled again.
    """
    from topoctl import cache

    here = cache.package_dir(__package__)
    files = builtin_rule_files()
    sources = files + [os.path.join(here, name) for name in ("settings.yaml", "loader.py", "model.py")]
    plain = cache.cached("rules", sources,
                         lambda: [_with_source(_rule_to_plain(rule), os.path.relpath(rule.source_file, here))
                                  for rule in _parse_builtin(files)],
                         check=lambda entries: _holds_every_rule(entries, files))
    return tuple(_rule_from_plain(_with_source(entry, os.path.join(here, entry["source_file"]))) for entry in plain)


def _with_source(plain: dict[str, Any], source_file: str) -> dict[str, Any]:
    """The entry naming its file by `source_file`: the knowledge shipped pre-built (topoctl/data/compiled) and the
    user cache name a built-in rule's file relative to the package, so they hold wherever topoctl is installed,
    and each run names the file where it is installed now."""
    return {**plain, "source_file": source_file.replace(os.sep, "/") if not os.path.isabs(source_file) else source_file}


_ID_LINE = re.compile(r"^\s*-\s*id:\s*['\"]?([A-Za-z0-9][A-Za-z0-9._-]*)", re.M)


def _holds_every_rule(entries: Any, files: list[str]) -> bool:
    """Whether cached rules are exactly the rules the shipped files define (ids read from the text: no YAML
    parser on the warm path), each with the fields a Rule needs."""
    wanted: list[str] = []
    for path in files:
        with open(path, encoding="utf-8") as handle:
            wanted += _ID_LINE.findall(handle.read())
    if not isinstance(entries, list) or sorted(entry["id"] for entry in entries) != sorted(wanted):
        return False
    return all(set(_PLAIN_FIELDS) <= set(entry) and "tests" in entry for entry in entries)


def _site_file(path: str) -> tuple[list[Rule], list[tuple[str, str]]]:
    """A site rule file, fully checked (schema and semantics) the first time its content is seen, then
    served from the knowledge cache under the SHA-256 of its bytes: an edit is a new content, so it is
    checked again. A file with a problem is never stored, so its error is reported on every run."""
    import hashlib

    from topoctl import cache

    try:
        with open(path, "rb") as handle:
            digest = hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return parse_rule_file(path, builtin=False, validate_schema=True)  # reports the read error
    here = cache.package_dir(__package__)
    code = [os.path.join(here, name) for name in ("settings.yaml", "loader.py", "model.py", "conditions.py",
                                                  "facts.py", os.path.join("schema", "rule.schema.json"))]

    def build() -> dict[str, Any]:
        file_rules, disables = parse_rule_file(path, builtin=False, validate_schema=True)
        return {"rules": [_rule_to_plain(rule) for rule in file_rules], "disables": [list(d) for d in disables]}

    plain = cache.cached(f"site-{digest[:32]}", code, build,
                         check=lambda doc: all(entry["source_file"] == path for entry in doc["rules"]))
    return ([_rule_from_plain(entry) for entry in plain["rules"]],
            [(str(rule_id), str(reason)) for rule_id, reason in plain["disables"]])


def _parse_builtin(files: list[str]) -> list[Rule]:
    rules: list[Rule] = []
    for path in files:
        file_rules, _ = parse_rule_file(path, builtin=True, validate_schema=False)
        rules.extend(file_rules)
    _reject_duplicates(rules)
    return rules


_PLAIN_FIELDS = ("id", "title", "severity", "message", "remediation", "effect", "evidence", "when", "source_file",
                 "scope", "tags", "builtin")


def _rule_to_plain(rule: Rule) -> dict[str, Any]:
    """A checked rule as plain data (its compiled condition is rebuilt from `when`)."""
    plain = {name: getattr(rule, name) for name in _PLAIN_FIELDS}
    plain["tests"] = [{"name": case.name, "expect": case.expect, "snapshot": case.snapshot, "request": case.request,
                       "violates": case.violates} for case in rule.tests]
    return plain


def _rule_from_plain(plain: dict[str, Any]) -> Rule:
    """The Rule of a plain entry written by _rule_to_plain (already checked when it was written)."""
    fields = {name: plain[name] for name in _PLAIN_FIELDS}
    tests = [TestCase(**case) for case in plain["tests"]]
    return Rule(condition=compile_condition(plain["when"], "when"), tests=tests, **fields)


def builtin_rule_files() -> list[str]:
    from topoctl import cache

    return cache.data_files(os.path.join(cache.package_dir(__package__), "knowledge"), RULE_FILE_SUFFIXES)


def rule_files(directory: str) -> list[str]:
    """The rule files of a site folder (or a single file), sorted so that load order is stable."""
    if os.path.isfile(directory):
        return [directory]
    if not os.path.isdir(directory):
        raise TopoctlError(f"--rules {directory}: no such folder", hint="pass a folder of *.yaml rule files")
    return sorted(os.path.join(directory, name) for name in os.listdir(directory)
                  if name.endswith(RULE_FILE_SUFFIXES) and os.path.isfile(os.path.join(directory, name)))


@lru_cache(maxsize=1)
def rule_schema() -> dict[str, Any]:
    """The published JSON Schema of a rule file."""
    from importlib import resources

    text = resources.files(__package__).joinpath("schema").joinpath("rule.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


# ----------------------------------------------------------------------------------------- one file
def parse_rule_file(path: str, builtin: bool, validate_schema: bool) -> tuple[list[Rule], list[tuple[str, str]]]:
    """(rules, [(disabled id, reason)]) of one file; RuleFileError on anything wrong."""
    from topoctl import limits

    try:
        text = limits.read_file(path, limits.MAX_RULE_FILE_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleFileError(path, f"cannot read: {exc}") from None
    except limits.LimitError as exc:
        raise RuleFileError(path, exc.message.removeprefix(path).lstrip(": ")) from None
    data = _parse_yaml(path, text)
    if data is None:
        return [], []
    if not isinstance(data, dict):
        raise RuleFileError(path, f"a rule file is a mapping with rules: and/or disable:, got {type(data).__name__}")
    for key in data:
        if key not in FILE_FIELDS:
            raise RuleFileError(path, f"unknown field {key!r} (allowed: {', '.join(FILE_FIELDS)})", field=str(key))
    raw_rules = data.get("rules") or []
    if not isinstance(raw_rules, list):
        raise RuleFileError(path, "rules: must be a list", field="rules")
    rules = [_build_rule(path, position, raw, builtin) for position, raw in enumerate(raw_rules)]
    disables = _parse_disables(path, data.get("disable") or [])
    if validate_schema:
        validate_against_schema(path, data)
    return rules, disables


def _parse_yaml(path: str, text: str) -> Any:
    import yaml

    from topoctl import limits

    try:  # safe_load semantics (libyaml's parser when available), within the limits of topoctl/limits.py
        return limits.load_yaml(text, path, max_nodes=limits.MAX_RULE_FILE_NODES)
    except limits.LimitError as exc:
        raise RuleFileError(path, exc.message.removeprefix(path).lstrip(": ")) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        line = mark.line + 1 if mark is not None else None
        near = _rule_id_near(text, line) if line else None
        where = f" at line {line}" if line else ""
        raise RuleFileError(path, f"not valid YAML{where}: {problem}", rule_id=near) from None


def _rule_id_near(text: str, line: int) -> str | None:
    """The id of the rule a YAML error sits in: the last `id:` at or above the error's line."""
    found = None
    for content in text.splitlines()[:line]:
        match = re.match(r"^\s*-?\s*id:\s*['\"]?([A-Za-z0-9][A-Za-z0-9._-]*)", content)
        if match:
            found = match.group(1)
    return found or "?"


def _parse_disables(path: str, entries: Any) -> list[tuple[str, str]]:
    if not isinstance(entries, list):
        raise RuleFileError(path, "disable: must be a list of {id, reason}", field="disable")
    result = []
    for position, entry in enumerate(entries):
        field = f"disable[{position}]"
        if not isinstance(entry, dict) or set(entry) != {"id", "reason"}:
            raise RuleFileError(path, "each disable entry needs exactly id and reason", field=field)
        rule_id, reason = entry["id"], entry["reason"]
        if not isinstance(rule_id, str) or not rule_id:
            raise RuleFileError(path, "id must be a rule id", field=f"{field}.id")
        if not isinstance(reason, str) or not reason.strip():
            raise RuleFileError(path, f"disabling {rule_id!r} needs a written reason", field=f"{field}.reason")
        result.append((rule_id, reason.strip()))
    return result


def validate_against_schema(path: str, data: Any) -> None:
    """Check a parsed rule file against the published JSON Schema; one-line error on the best match."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(rule_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is None:
        return
    location = list(error.absolute_path)
    rule_id = None
    if len(location) >= 2 and location[0] == "rules" and isinstance(location[1], int):
        raw = data["rules"][location[1]]
        rule_id = raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), str) else f"#{location[1]}"
        location = location[2:]
    message = error.message if len(error.message) <= 160 else error.message[:157] + "..."
    raise RuleFileError(path, message, rule_id=rule_id, field=_dotted(location) or None)


def _dotted(location: Iterable[Any]) -> str:
    text = ""
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


# ----------------------------------------------------------------------------------------- one rule
def _build_rule(path: str, position: int, raw: Any, builtin: bool) -> Rule:
    if not isinstance(raw, dict):
        raise RuleFileError(path, "a rule must be a mapping", rule_id=f"#{position}")
    rule_id = raw.get("id")
    if not isinstance(rule_id, str) or not RULE_ID.match(rule_id):
        raise RuleFileError(path, f"id must match {RULE_ID.pattern}, got {rule_id!r}", rule_id=f"#{position}", field="id")

    def fail(field: str, message: str) -> RuleFileError:
        return RuleFileError(path, message, rule_id=rule_id, field=field)

    for key in raw:
        if key not in RULE_FIELDS:
            raise fail(str(key), f"unknown field {key!r} (allowed: {', '.join(RULE_FIELDS)})")
    for key in REQUIRED_FIELDS:
        if key not in raw:
            raise fail(key, "missing")
    for key in ("title", "message", "remediation"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise fail(key, "must be non-empty text")
    if raw["severity"] not in SEVERITIES:
        raise fail("severity", f"must be one of {', '.join(SEVERITIES)}, got {raw['severity']!r}")
    try:
        condition = compile_condition(raw["when"], "when")
    except ConditionError as error:
        raise fail(error.field, error.message) from None
    effect = _check_effect(raw["effect"], fail)
    if raw["severity"] == "block" and not (effect["forbid"] or effect["require"]):
        raise fail("effect", "a block rule must forbid or require a setting, so a launch can avoid it")
    evidence = raw["evidence"]
    if not isinstance(evidence, list) or not evidence or not all(isinstance(item, dict) for item in evidence):
        raise fail("evidence", "needs at least one evidence entry (source, level, summary, scope)")
    _check_evidence(evidence, fail)
    tests = _check_tests(raw["tests"], fail)
    return Rule(id=rule_id, title=raw["title"].strip(), severity=raw["severity"], message=raw["message"].strip(),
                remediation=raw["remediation"].strip(), effect=effect, evidence=evidence, tests=tests,
                when=raw["when"], condition=condition, source_file=path, scope=str(raw.get("scope") or "").strip(),
                tags=list(raw.get("tags") or []), builtin=builtin)


def _check_evidence(evidence: list[dict[str, Any]], fail: Any) -> None:
    """What the schema cannot say about evidence numbers: each names a kind whose unit it uses, and its configs
    name only settings, env:NAME, an allreduce path, the model, the interconnect or a descriptive key."""
    for position, item in enumerate(evidence):
        numbers = item.get("numbers") or []
        if not isinstance(numbers, list):
            continue  # the schema's to report
        for index, number in enumerate(numbers):
            if not isinstance(number, dict):
                continue
            field = f"evidence[{position}].numbers[{index}]"
            kind = number.get("kind")
            if kind not in vocab.EVIDENCE_KINDS:
                raise fail(f"{field}.kind", f"must be one of {', '.join(vocab.EVIDENCE_KINDS)}, got {kind!r}")
            units = vocab.EVIDENCE_UNITS[kind]
            if units is not None and number.get("unit") not in units:
                raise fail(f"{field}.unit", f"a {kind} number is in {' or '.join(units)}, got {number.get('unit')!r}")
            if kind == "relative" and not isinstance(number.get("baseline"), dict):
                raise fail(f"{field}.baseline", "a relative number needs the baseline it is measured against")
            for where, config in ((f"{field}.config", number.get("config")),
                                  (f"{field}.baseline.config", (number.get("baseline") or {}).get("config"))):
                if config is not None:
                    _check_evidence_config(config, where, fail)


_EVIDENCE_EXTRA_KEYS = (vocab.EVIDENCE_PATH_KEY, vocab.EVIDENCE_MODEL_KEY, vocab.EVIDENCE_INTERCONNECT_KEY,
                        *vocab.EVIDENCE_DESCRIPTIVE_KEYS)


def _check_evidence_config(config: Any, field: str, fail: Any) -> None:
    if not isinstance(config, dict):
        raise fail(field, "must be a mapping of setting: value (e.g. {allreduce: nccl, speculative_algorithm: null})")
    for key, value in config.items():
        if key in _EVIDENCE_EXTRA_KEYS:
            if key == vocab.EVIDENCE_INTERCONNECT_KEY and value not in vocab.INTERCONNECTS:
                raise fail(f"{field}.{key}", f"must be one of {', '.join(vocab.INTERCONNECTS)}, got {value!r}")
            continue
        if not isinstance(key, str) or not launch_settings.is_known_setting(key):
            raise fail(f"{field}.{key}", f"unknown key {key!r} (a logical setting, env:NAME, or one of "
                                         f"{', '.join(_EVIDENCE_EXTRA_KEYS)})")
        _check_setting_value(key, value, f"{field}.{key}", fail)


def _check_effect(raw: Any, fail: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise fail("effect", "must be a mapping of forbid/require/prefer/defaults/implies")
    for key in raw:
        if key not in EFFECT_FIELDS:
            raise fail(f"effect.{key}", f"unknown field {key!r} (allowed: {', '.join(EFFECT_FIELDS)})")
    forbid = raw.get("forbid") or []
    if not isinstance(forbid, list):
        raise fail("effect.forbid", "must be a list of {setting, values|eq|has_token|...}")
    checked_forbid = []
    for position, entry in enumerate(forbid):
        field = f"effect.forbid[{position}]"
        if isinstance(entry, str):
            entry = {"setting": entry}
        if not isinstance(entry, dict) or "setting" not in entry:
            raise fail(field, "needs setting:")
        setting = entry["setting"]
        _check_setting_name(setting, f"{field}.setting", fail)
        operators = [key for key in entry if key != "setting"]
        if len(operators) > 1 or any(op not in FORBID_OPERATORS for op in operators):
            raise fail(field, f"at most one of {', '.join(FORBID_OPERATORS)}, got {operators}")
        if operators:
            try:
                check_operand(f"{field}.{operators[0]}", setting, launch_settings.setting_type(setting),
                              operators[0], entry[operators[0]])
            except ConditionError as error:
                raise fail(error.field, error.message) from None
        checked_forbid.append(dict(entry))
    result: dict[str, Any] = {"forbid": checked_forbid}
    for key in ("require", "prefer", "defaults", "implies"):
        mapping = raw.get(key) or {}
        if not isinstance(mapping, dict):
            raise fail(f"effect.{key}", "must be a mapping of setting: value")
        for setting, value in mapping.items():
            _check_setting_name(setting, f"effect.{key}.{setting}", fail)
            _check_setting_value(setting, value, f"effect.{key}.{setting}", fail)
        result[key] = dict(mapping)
    return result


def _check_setting_name(setting: Any, field: str, fail: Any) -> None:
    if not isinstance(setting, str) or not launch_settings.is_known_setting(setting):
        known = ", ".join(sorted(launch_settings.setting_table()))
        raise fail(field, f"unknown setting {setting!r} (logical settings: {known}; or env:NAME)")


def _check_setting_value(setting: str, value: Any, field: str, fail: Any) -> None:
    kind = launch_settings.setting_type(setting)
    fits = value is None or {
        "bool": lambda: isinstance(value, bool),
        "int": lambda: isinstance(value, int) and not isinstance(value, bool),
        "str": lambda: isinstance(value, str),
    }[kind]()
    if not fits:
        raise fail(field, f"{setting} takes a {kind}, got {value!r}" + (" (env values are quoted strings)"
                                                                         if kind == "str" else ""))


def _check_tests(raw: Any, fail: Any) -> list[TestCase]:
    if not isinstance(raw, list):
        raise fail("tests", "must be a list of cases {name, expect, snapshot, request}")
    cases = []
    for position, case in enumerate(raw):
        field = f"tests[{position}]"
        if not isinstance(case, dict):
            raise fail(field, "a case must be a mapping")
        for key in case:
            if key not in ("name", "expect", "snapshot", "request", "violates"):
                raise fail(f"{field}.{key}", f"unknown field {key!r} (allowed: name, expect, snapshot, request, violates)")
        if not isinstance(case.get("name"), str) or not case["name"].strip():
            raise fail(f"{field}.name", "every case needs a name")
        if case.get("expect") not in EXPECTATIONS:
            raise fail(f"{field}.expect", f"must be one of {', '.join(EXPECTATIONS)}, got {case.get('expect')!r}")
        snapshot = case.get("snapshot") or {}
        request = case.get("request") or {}
        if not isinstance(snapshot, dict):
            raise fail(f"{field}.snapshot", "must be a mapping (a partial snapshot)")
        if not isinstance(request, dict):
            raise fail(f"{field}.request", "must be a mapping")
        launch = request.get("launch") or {}
        if not isinstance(launch, dict):
            raise fail(f"{field}.request.launch", "must be a mapping of setting: value")
        for setting in launch:
            _check_setting_name(setting, f"{field}.request.launch.{setting}", fail)
        violates = case.get("violates")
        if violates is not None:
            if not isinstance(violates, list):
                raise fail(f"{field}.violates", "must be a list of settings (the launch breaks them)")
            for setting in violates:
                _check_setting_name(setting, f"{field}.violates", fail)
            if case["expect"] == "silent" and violates:
                raise fail(f"{field}.violates", "a silent case has no effect to assert")
        cases.append(TestCase(name=case["name"].strip(), expect=case["expect"], snapshot=snapshot, request=request,
                              violates=list(violates) if violates is not None else None))
    expectations = {case.expect for case in cases}
    if "fire" not in expectations or "silent" not in expectations:
        raise fail("tests", "needs at least one case that must fire and one that must stay silent")
    return cases


def _reject_duplicates(rules: list[Rule]) -> None:
    seen: dict[str, Rule] = {}
    for rule in rules:
        if rule.id in seen:
            raise RuleFileError(rule.source_file, f"duplicate id (already defined in {seen[rule.id].source_file})",
                                rule_id=rule.id, field="id")
        seen[rule.id] = rule
