"""Reading rule files: YAML (safe_load only) -> checked, compiled Rule objects in a RuleSet.

Every problem in a rule file ends in one line naming the file, the rule and the field, raised as a
TopoctlError, so that a user extending the knowledge gets told exactly what to fix and the CLI never
shows a traceback. Checks run in two layers: the published JSON Schema
(rules/schema/rule.schema.json) owns the structure (fields, types, closed sets); its first error
becomes the line, with the field's description from the schema as the hint. Then the semantic checks
a schema cannot express: facts, operators against fact types, PEP 440 specifiers, setting names and
value types, units against kinds, cases that fire and stay silent, unique ids. A site file is
checked when its content is first seen (the knowledge cache keeps the result). Built-in files are
schema-checked by scripts/compile_knowledge.py and the test suite rather than at run time
(jsonschema's import and validation cost more than `rules list` itself), so their semantic checks
run on the schema's word.

Layer: knowledge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Iterable

from topoctl.core import knowledge_cache as cache
from topoctl.core import safe_read as limits
from topoctl.core import vocab
from topoctl.core.errors import TopoctlError
from topoctl.rules.sglang import settings as launch_settings

from .conditions import Compiled, ConditionError, check_operand, compile_condition
from .model import Rule, RuleSet, TestCase

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

    from topoctl.core.schema_check import Check

RULE_FILE_SUFFIXES = (".yaml", ".yml")
FIX_HINT = "see docs/rules.md; `topoctl rules schema` prints the rule file schema"


class RuleFileError(TopoctlError):
    """A rule file that cannot be used; the message names file, rule and field on one line."""

    def __init__(
        self,
        path: str,
        message: str,
        rule_id: str | None = None,
        field: str | None = None,
        hint: str | None = None,
    ) -> None:
        where = path
        if rule_id is not None:
            where += f": rule {rule_id!r}"
        if field:
            where += f": field {field!r}"
        text = " ".join(f"{where}: {message}".split())  # one line, always
        super().__init__(text, hint=" ".join(f"{hint}; {FIX_HINT}".split()) if hint else FIX_HINT)
        self.path, self.rule_id, self.field = path, rule_id, field


# ----------------------------------------------------------------------------------------- public
# entry
def load_rules(
    extra_dirs: list[str] | None = None,
    disabled: dict[str, str] | None = None,
    builtin: bool = True,
    with_tests: bool = True,
) -> "RuleSet":
    """Built-in rules (unless builtin=False) plus the rule files of `extra_dirs`, with `disabled`
    (rule id -> written reason) and the `disable:` entries of site files switched off.
    with_tests=False leaves the site rules' test cases out (what judging a launch needs: see
    site_rules).

    Raises TopoctlError for a bad file, a duplicate id, a disable without a reason or of an unknown
    id.
    """
    rules: list[Rule] = list(builtin_rules()) if builtin else []
    file_disables: list[tuple[str, str, str]] = []  # (path, id, reason)
    warnings: list[str] = []
    for directory in extra_dirs or []:
        site = site_rules(directory, with_tests)
        rules.extend(site.rules)
        file_disables.extend(site.disables)
        warnings.extend(site.warnings)
    _reject_duplicates(rules)
    known = {rule.id for rule in rules}
    switched_off: dict[str, str] = {}
    for path, rule_id, reason in file_disables:
        if rule_id not in known:
            raise RuleFileError(
                path, f"disables rule {rule_id!r}, which does not exist", field="disable"
            )
        switched_off[rule_id] = reason
    for rule_id, reason in (disabled or {}).items():
        if rule_id not in known:
            raise TopoctlError(
                f"--disable {rule_id}: no rule has this id",
                hint="`topoctl rules list` shows the ids",
            )
        if not isinstance(reason, str) or not reason.strip():
            raise TopoctlError(
                f"--disable {rule_id}: a reason is required (ID=REASON)",
                hint="the reason is shown in every report, so write why the rule does not apply",
            )
        switched_off[rule_id] = reason.strip()
    ruleset = RuleSet(rules, switched_off)
    ruleset.warnings = warnings
    return ruleset


@lru_cache(maxsize=1)
def builtin_rules() -> tuple[Rule, ...]:
    """The shipped knowledge, parsed and compiled once per process.

    The checked rules are kept in topoctl's knowledge cache (topoctl/core/knowledge_cache.py) as
    plain data, so a warm start neither imports PyYAML nor re-checks them; only the conditions are
    compiled again.
    """
    here = cache.package_dir("topoctl.rules")
    files = builtin_rule_files()
    sources = (
        files
        + [launch_settings.SETTINGS_FILE]
        + [os.path.join(here, name) for name in ("loader.py", "model.py")]
    )
    plain = cache.cached(
        "rules",
        sources,
        lambda: [
            _with_source(_rule_to_plain(rule), os.path.relpath(rule.source_file, here))
            for rule in _parse_builtin(files)
        ],
        check=lambda entries: _holds_every_rule(entries, files),
    )
    return tuple(
        _rule_from_plain(_with_source(entry, os.path.join(here, entry["source_file"])))
        for entry in plain
    )


def _with_source(plain: dict[str, Any], source_file: str) -> dict[str, Any]:
    """The entry naming its file by `source_file`: the knowledge shipped pre-built
    (topoctl/data/compiled) and the user cache name a built-in rule's file relative to the package,
    so they hold wherever topoctl is installed, and each run names the file where it is installed
    now."""
    return {
        **plain,
        "source_file": source_file.replace(os.sep, "/")
        if not os.path.isabs(source_file)
        else source_file,
    }


# `- id: NAME` at the start of a line (after any blank lines): a pattern that starts with a literal
# newline is searched by scanning for it, where `^` in multi-line mode is tried at every character
# (3x slower: ~1 ms over the shipped rule files on every start).
_ID_AFTER_NEWLINE = re.compile(r"\n\s*-\s*id:\s*['\"]?([A-Za-z0-9][A-Za-z0-9._-]*)")


def rule_ids(text: str) -> list[str]:
    """The ids of `- id: NAME` lines in a rule file's text, in order
    (tests/rules/test_rules_loader.py holds it to re.findall of `^\\s*-\\s*id:...` in multi-line
    mode)."""
    return _ID_AFTER_NEWLINE.findall("\n" + text)


def _holds_every_rule(entries: object, files: list[str]) -> bool:
    """Whether cached rules are exactly the rules the shipped files define (ids read from the text:
    no YAML parser on the warm path), each with the fields a Rule needs."""
    wanted: list[str] = []
    for path in files:
        wanted += rule_ids(cache.source_text(path))
    if not isinstance(entries, list) or sorted(entry["id"] for entry in entries) != sorted(wanted):
        return False
    return all(set(_PLAIN_FIELDS) <= set(entry) and "tests" in entry for entry in entries)


@dataclass
class SiteRules:
    """What one --rules folder (or file) gives: its rules, its disables (path, id, reason), and
    warnings."""

    rules: list[Rule] = field(default_factory=list)
    disables: list[tuple[str, str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _site_code() -> list[str]:
    """The code and data a checked site rule depends on: a change to any of them checks every file
    again."""
    engine = os.path.dirname(os.path.abspath(__file__))
    schema = os.path.join(cache.package_dir("topoctl.rules"), "schema", "rule.schema.json")
    return [launch_settings.SETTINGS_FILE, schema] + [
        os.path.join(engine, name)
        for name in ("loader.py", "model.py", "conditions.py", "facts.py")
    ]


class NoSiteRulesError(TopoctlError):
    """`--rules` on a folder whose files hold no rule (exit 2); `warnings` name each empty file, as
    they are named when other files of the folder hold rules, and are printed before the error."""

    def __init__(self, message: str, hint: str, warnings: list[str]) -> None:
        super().__init__(message, hint=hint)
        self.warnings = warnings


def site_rules(directory: str, with_tests: bool = True) -> SiteRules:
    """The rule files of a --rules folder (or one file), each fully checked (schema and semantics)
    the first time its content is seen. The folder has one cache entry
    (topoctl/core/knowledge_cache.py, keyed by its real path): each file's checked rules under the
    SHA-256 of its bytes. Every run reads every file and uses its entry only when the bytes are the
    same, so an edit is checked again, and a file with a problem is never stored (its error is
    reported on every run). A file that holds no rules (empty, or comments only) is a warning naming
    it; a folder with no rules at all is an error (exit 2): a site's blocking rules are never
    dropped without a word.

    The rules' test cases (most of a rule file's bytes) are kept in a second entry that only
    `with_tests` reads and writes (`rules list`, `explain`, `test`): `check` and `recommend` neither
    decode nor store them, and get rules with no test cases."""
    files = rule_files(directory)
    code = _site_code()
    real = os.path.realpath(directory)
    known = _stored_files(cache.read_section("site", code, real))
    known_tests = _stored_files(cache.read_section("sitetests", code, real)) if with_tests else {}
    entries: dict[str, Any] = {}
    tests: dict[str, Any] = {}
    out = SiteRules()
    for path, (entry, cases) in zip(
        files, _site_entries(files, known, known_tests, with_tests), strict=True
    ):
        name = os.path.basename(path)
        entries[name], tests[name] = entry, cases
        for plain, rule_cases in zip(
            entry["rules"],
            cases["tests"] if with_tests else [[]] * len(entry["rules"]),
            strict=True,
        ):
            out.rules.append(_rule_from_plain({**plain, "tests": rule_cases, "source_file": path}))
        out.disables.extend(
            (path, str(rule_id), str(reason)) for rule_id, reason in entry["disables"]
        )
        if not entry["rules"] and not entry["disables"]:
            out.warnings.append(
                f"{path} holds no rules (it is empty or only comments): nothing in it is checked"
            )
    if not out.rules and not out.disables:
        names = ", ".join(os.path.basename(path) for path in files)
        raise NoSiteRulesError(
            f"--rules {directory}: holds no rules (each rule file in it is empty or only "
            f"comments: {names})",
            hint="write rules in it (see docs/rules.md), or leave --rules out",
            warnings=out.warnings,
        )
    if entries != known:
        cache.store_section("site", code, real, {"files": entries})
    if with_tests and tests != known_tests:
        cache.store_section("sitetests", code, real, {"files": tests})
    return out


def _stored_files(stored: object) -> dict[str, Any]:
    files = stored.get("files") if isinstance(stored, dict) else None
    return files if isinstance(files, dict) else {}


Entry = tuple[
    dict[str, Any], dict[str, Any]
]  # (rules and disables, test cases per rule) of one site file
# At least this many files to check before the work is shared with a second process (below it, the
# fork and the hand-back cost more than they save).
PARALLEL_FROM = 64


def _site_entries(
    files: list[str], known: dict[str, Any], known_tests: dict[str, Any], with_tests: bool
) -> list[Entry]:
    """Each site file's checked content as plain data: the cached entries when the file's bytes are
    the ones they were built from, else parsed and checked now (_check_stale). A problem is raised
    for the first file in folder order that has one, as checking them one by one would."""
    import hashlib

    results: list[Entry | None] = []
    stale: list[tuple[int, str, bytes | None, str]] = []
    for position, path in enumerate(files):
        try:
            data: bytes | None = _read_rule_file(path)
        except TopoctlError:
            data = None  # raised again in its turn by _checked
        digest = hashlib.sha256(data).hexdigest() if data is not None else ""
        name = os.path.basename(path)
        entry: Any = known.get(name)
        cases: Any = known_tests.get(name)
        if (
            data is not None
            and _fresh(entry, digest, ("rules", "disables"))
            and (
                not with_tests
                or (
                    _fresh(cases, digest, ("tests",)) and len(cases["tests"]) == len(entry["rules"])
                )
            )
        ):
            results.append((entry, cases if with_tests else {}))
        else:
            results.append(None)
            stale.append((position, path, data, digest))
    for (position, *_), checked in zip(stale, _check_stale(stale), strict=True):
        results[position] = checked
    return [entry for entry in results if entry is not None]


def _checked(item: tuple[int, str, bytes | None, str]) -> Entry:
    """One file parsed and checked now (RuleFileError for a problem, a read one included)."""
    _, path, data, digest = item
    if data is None:
        data = _read_rule_file(path)
    file_rules, disables = _parse_rule_text(
        path, _decode(path, data), builtin=False, validate_schema=True
    )
    plain = [_rule_to_plain(rule) for rule in file_rules]
    return (
        {
            "sha256": digest,
            "rules": [
                {k: v for k, v in rule.items() if k not in ("source_file", "tests")}
                for rule in plain
            ],
            "disables": [list(d) for d in disables],
        },
        {"sha256": digest, "tests": [rule["tests"] for rule in plain]},
    )


def _checked_or_none(item: tuple[int, str, bytes | None, str]) -> Entry | None:
    try:
        return _checked(item)
    except TopoctlError:
        return None  # checked again where it is raised, in folder order


def _check_stale(stale: list[tuple[int, str, bytes | None, str]]) -> list[Entry]:
    """_checked for every file, in order. A folder seen for the first time (PARALLEL_FROM files or
    more) is shared with one forked process where there are two CPUs: the check is pure work on
    bytes already read, so each process takes every other file and the child hands its plain results
    back through a pipe. A file with a problem, or a child that fails in any way, is checked (again)
    here, so the error and the result are the ones checking them one by one gives."""
    if len(stale) < PARALLEL_FROM or not hasattr(os, "fork") or (os.cpu_count() or 1) < 2:
        return [_checked(item) for item in stale]
    import pickle

    theirs = stale[1::2]
    reader, writer = os.pipe()
    child = os.fork()
    if (
        child == 0
    ):  # the child: check its share, hand it back, and leave without running any clean-up
        status = 1
        try:
            os.close(reader)
            with os.fdopen(writer, "wb") as out:
                out.write(pickle.dumps([_checked_or_none(item) for item in theirs]))
            status = 0
        finally:
            os._exit(status)
    os.close(writer)
    mine = [_checked_or_none(item) for item in stale[0::2]]
    with os.fdopen(reader, "rb") as handle:
        payload = handle.read()
    _, status = os.waitpid(child, 0)
    try:
        handed = pickle.loads(payload) if status == 0 else None
    except Exception:  # a child cut short: its share is checked here
        handed = None
    if not isinstance(handed, list) or len(handed) != len(theirs):
        handed = [_checked_or_none(item) for item in theirs]
    merged = [
        mine[index // 2] if index % 2 == 0 else handed[index // 2] for index in range(len(stale))
    ]
    return [
        entry if entry is not None else _checked(item)
        for item, entry in zip(stale, merged, strict=True)
    ]


def _fresh(entry: object, digest: str, lists: tuple[str, ...]) -> bool:
    """Whether a cached entry was built from the bytes of SHA-256 `digest` and holds these lists."""
    return (
        isinstance(entry, dict)
        and entry.get("sha256") == digest
        and all(isinstance(entry.get(name), list) for name in lists)
    )


def _parse_builtin(files: list[str]) -> list[Rule]:
    rules: list[Rule] = []
    for path in files:
        file_rules, _ = parse_rule_file(path, builtin=True, validate_schema=False)
        rules.extend(file_rules)
    _reject_duplicates(rules)
    return rules


_PLAIN_FIELDS = (
    "id",
    "title",
    "severity",
    "message",
    "remediation",
    "effect",
    "evidence",
    "when",
    "source_file",
    "scope",
    "tags",
    "builtin",
)


def _rule_to_plain(rule: Rule) -> dict[str, Any]:
    """A checked rule as plain data (its compiled condition is rebuilt from `when`)."""
    plain = {name: getattr(rule, name) for name in _PLAIN_FIELDS}
    plain["tests"] = [
        {
            "name": case.name,
            "expect": case.expect,
            "snapshot": case.snapshot,
            "request": case.request,
            "violates": case.violates,
        }
        for case in rule.tests
    ]
    return plain


def _rule_from_plain(plain: dict[str, Any]) -> Rule:
    """The Rule of a plain entry written by _rule_to_plain (already checked when it was written)."""
    fields = {name: plain[name] for name in _PLAIN_FIELDS}
    tests = [TestCase(**case) for case in plain["tests"]]
    return Rule(condition=_compiled(plain["when"], checked=True), tests=tests, **fields)


_CONDITIONS: dict[
    tuple[bool, str], Compiled
] = {}  # (checked, a condition's repr) -> its compiled form


def _compiled(when: object, checked: bool = False) -> Compiled:
    """compile_condition, once per distinct condition and process (a compiled condition is a pure
    function of the facts: rules that share one share it). Keyed by repr (C-fast; plain YAML/JSON
    data, so equal text means an equal condition; the same condition written in another key order is
    merely compiled again).

    checked=True for an entry of the knowledge cache (checked when it was stored): its matchers are
    compiled when first run. A rule read from its file (checked=False) is compiled whole here, which
    is its check; a checked entry of the same text takes that compiled form (a site file's rules are
    checked, then built)."""
    text = repr(when)
    found = _CONDITIONS.get((False, text))
    if found is None and checked:
        found = _CONDITIONS.get((True, text))
    if found is None:
        found = _CONDITIONS[(checked, text)] = compile_condition(when, "when", checked=checked)
    return found


def builtin_rule_files() -> list[str]:
    return cache.data_files(
        os.path.join(cache.package_dir("topoctl.rules"), "knowledge"), RULE_FILE_SUFFIXES
    )


def rule_files(directory: str) -> list[str]:
    """The rule files of a site folder (or a single file), sorted so that load order is stable."""
    if os.path.isfile(directory):
        return [directory]
    if not os.path.isdir(directory):
        if os.path.lexists(directory):
            _is_rule_file(directory)  # a FIFO, a device, a link to nothing: named as what it is
        raise TopoctlError(
            f"--rules {directory}: no such folder", hint="pass a folder of *.yaml rule files"
        )
    named = sorted(
        os.path.join(directory, name)
        for name in os.listdir(directory)
        if name.endswith(RULE_FILE_SUFFIXES)
    )
    files = [path for path in named if _is_rule_file(path)]
    if not files:
        raise TopoctlError(
            f"--rules {directory}: no rule files (*.yaml, *.yml) in this folder",
            hint="pass the folder that holds the site's rule files, or leave --rules out",
        )
    return files


def _is_rule_file(path: str) -> bool:
    """Whether a name of a site folder that ends in .yaml is a rule file to read: True for a regular
    file, False for a folder. A FIFO, a device, a socket or a link to nothing is exit 2 naming it
    (never opened): skipped, it would drop that file's blocking rules without a word (a FIFO also
    blocks a reader forever)."""
    try:
        limits.check_regular(path)
    except IsADirectoryError:
        return False
    except OSError as exc:  # a link to nothing, no permission on the folder
        raise TopoctlError(
            f"{path}: cannot read this rule file: {exc.strerror or exc}",
            hint="make it a regular file of rules, or remove it from the folder",
        ) from None
    return True


@lru_cache(maxsize=1)
def rule_schema() -> dict[str, Any]:
    """The published JSON Schema of a rule file."""
    from importlib import resources

    text = (
        resources.files("topoctl.rules")
        .joinpath("schema")
        .joinpath("rule.schema.json")
        .read_text(encoding="utf-8")
    )
    return json.loads(text)


# ----------------------------------------------------------------------------------------- one file
def parse_rule_file(
    path: str, builtin: bool, validate_schema: bool
) -> tuple[list[Rule], list[tuple[str, str]]]:
    """(rules, [(disabled id, reason)]) of one file: the schema's structure first
    (validate_schema=False only for the built-in files, which scripts/compile_knowledge.py and the
    tests hold to the schema), then the semantic checks; RuleFileError on anything wrong."""
    return _parse_rule_text(path, _decode(path, _read_rule_file(path)), builtin, validate_schema)


def _read_rule_file(path: str) -> bytes:
    """A rule file's bytes, at most limits.MAX_RULE_FILE_BYTES; RuleFileError naming it otherwise."""
    try:
        return limits.read_file(path, limits.MAX_RULE_FILE_BYTES)
    except OSError as exc:
        raise RuleFileError(path, f"cannot read: {exc}") from None
    except (limits.LimitError, limits.NotAFileError) as exc:
        raise RuleFileError(path, exc.message.removeprefix(path).lstrip(": ")) from None


def _decode(path: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RuleFileError(path, f"cannot read: {exc}") from None


def _parse_rule_text(
    path: str, text: str, builtin: bool, validate_schema: bool
) -> tuple[list[Rule], list[tuple[str, str]]]:
    data = _parse_yaml(path, text)
    if data is None:
        return [], []
    if validate_schema:
        validate_against_schema(path, data)
    rules = [_build_rule(path, raw, builtin) for raw in data.get("rules") or []]
    disables = [(entry["id"], entry["reason"].strip()) for entry in data.get("disable") or []]
    return rules, disables


def _parse_yaml(path: str, text: str) -> Any:
    import yaml

    # safe_load semantics (libyaml's parser when available), within the limits of
    # topoctl/core/safe_read.py
    try:
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


def validate_against_schema(path: str, data: object) -> None:
    """Check a parsed rule file against the published JSON Schema: the structure. Every problem of
    the file is reported at once, on one line: the schema's best-matching error first (file, rule,
    field, what is wrong, with the field's schema description as hint), then the others of the file,
    so that a site's author fixes them in one pass rather than one run per mistake."""
    if _fast_check()(data):  # the common case: the compiled schema says valid, no jsonschema at all
        return
    import jsonschema

    errors = list(_validator().iter_errors(data))
    error = jsonschema.exceptions.best_match(errors)
    if error is None:
        return
    rule_id, field, message = _located(data, error)
    others = []
    for other in sorted(errors, key=lambda item: [str(part) for part in item.absolute_path]):
        text = _located_text(data, jsonschema.exceptions.best_match([other]))
        if text not in others and text != _located_text(data, error):
            others.append(text)
    if others:
        shown = others[:MAX_LISTED_SCHEMA_PROBLEMS]
        rest = len(others) - len(shown)
        message += (
            f" (and {len(others)} more: "
            + "; ".join(shown)
            + (f"; {rest} more" if rest else "")
            + ")"
        )
    raise RuleFileError(
        path, message, rule_id=rule_id, field=field or None, hint=_schema_hint(error)
    )


MAX_LISTED_SCHEMA_PROBLEMS = 20


def _located(data: object, error: ValidationError) -> tuple[str | None, str, str]:
    """(rule id or #index, field, message) of one schema error."""
    location = list(error.absolute_path)
    rule_id = None
    rules = data.get("rules") if isinstance(data, dict) else None
    if (
        len(location) >= 2
        and location[0] == "rules"
        and isinstance(location[1], int)
        and isinstance(rules, list)
    ):
        raw = rules[location[1]]
        rule_id = (
            raw.get("id")
            if isinstance(raw, dict) and isinstance(raw.get("id"), str)
            else f"#{location[1]}"
        )
        location = location[2:]
    field, message = schema_problem(error, location)
    return rule_id, field, message


def _located_text(data: object, error: ValidationError) -> str:
    rule_id, field, message = _located(data, error)
    where = (f"rule {rule_id!r}: " if rule_id is not None else "") + (
        f"field {field!r}: " if field else ""
    )
    return where + message


@lru_cache(maxsize=1)
def _fast_check() -> Check:
    """The rule schema compiled into Python checks (topoctl/core/schema_check.py), once per process."""
    from topoctl.core.schema_check import compile_schema  # only when a site rule file is checked

    return compile_schema(rule_schema())


@lru_cache(maxsize=1)
def _validator() -> Validator:
    """The rule file schema's validator, built once per process (building it checks the schema
    itself)."""
    import jsonschema

    return jsonschema.Draft202012Validator(rule_schema())


def _schema_hint(error: ValidationError) -> str | None:
    """The first sentence of the failing field's description in the schema (what the field is for),
    if any."""
    description = error.schema.get("description") if isinstance(error.schema, dict) else None
    if not isinstance(description, str) or not description.strip():
        return None
    sentence = description.split(". ")[0].rstrip(".")
    return sentence if len(sentence) <= 300 else sentence[:297] + "..."


_TYPE_WORDS = {
    "object": "a mapping",
    "array": "a list",
    "string": "text",
    "number": "a number",
    "integer": "an integer",
    "boolean": "true or false",
    "null": "null",
}


def _kind(value: object) -> str:
    """What a YAML value is, in the schema's words (never the value: it may be long or odd)."""
    for name, kinds in (
        ("boolean", bool),
        ("integer", int),
        ("number", float),
        ("string", str),
        ("array", list),
        ("object", dict),
    ):
        if isinstance(value, kinds):
            return _TYPE_WORDS[name]
    return "null" if value is None else type(value).__name__


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def schema_problem(error: ValidationError, location: list[str | int]) -> tuple[str, str]:
    """(field, message) for a jsonschema error, in the loader's words: `unknown field 'x' (allowed:
    ...)`, `missing`, `must be one of ...`, `must be a mapping, got text`; any other check keeps
    jsonschema's text."""
    field = _dotted(location)
    schema = error.schema if isinstance(error.schema, dict) else {}
    check, expected, value = error.validator, error.validator_value, error.instance
    if check == "additionalProperties" and isinstance(value, dict):
        allowed = list(schema.get("properties") or {})
        extra = [key for key in value if key not in allowed]
        key = str(extra[0]) if extra else "?"
        return _dotted([*location, key]), f"unknown field {key!r} (allowed: {', '.join(allowed)})"
    if check == "required" and isinstance(value, dict):
        missing = next((key for key in expected if key not in value), "?")
        return _dotted([*location, missing]), "missing"
    if check == "enum":
        return (
            field,
            f"must be one of {', '.join(str(item) for item in expected)}, got {_short(value)}",
        )
    if check == "const":
        return field, f"must be {expected!r}, got {_short(value)}"
    if check == "type":
        wanted = " or ".join(
            _TYPE_WORDS.get(name, name)
            for name in ([expected] if isinstance(expected, str) else expected)
        )
        return field, f"must be {wanted}, got {_kind(value)}"
    if check in ("minLength", "pattern") and isinstance(value, str) and not value.strip():
        return field, "must be non-empty text"
    if check == "pattern":
        return field, f"must match {expected}, got {_short(value)}"
    if check == "minItems":
        return (
            field,
            f"needs at least {expected} entr{'y' if expected == 1 else 'ies'}, got {len(value)}",
        )
    message = error.message
    return field, message if len(message) <= 160 else message[:157] + "..."


def _dotted(location: Iterable[object]) -> str:
    text = ""
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


# ----------------------------------------------------------------------------------------- one rule
Fail = Callable[
    [str, str], "RuleFileError"
]  # (field, message) -> the error to raise, naming the rule


def _build_rule(path: str, raw: dict[str, Any], builtin: bool) -> Rule:
    """A rule the schema has passed: its semantic checks, then the Rule."""
    rule_id = raw["id"]

    def fail(field: str, message: str) -> RuleFileError:
        return RuleFileError(path, message, rule_id=rule_id, field=field)

    try:
        condition = _compiled(raw["when"])
    except ConditionError as error:
        raise fail(error.field, error.message) from None
    effect = _check_effect(raw["effect"], fail)
    if raw["severity"] == "block" and not (effect["forbid"] or effect["require"]):
        raise fail(
            "effect", "a block rule must forbid or require a setting, so a launch can avoid it"
        )
    evidence = raw["evidence"]
    _check_evidence(evidence, fail)
    tests = _check_tests(raw["tests"], fail)
    return Rule(
        id=rule_id,
        title=raw["title"].strip(),
        severity=raw["severity"],
        message=raw["message"].strip(),
        remediation=raw["remediation"].strip(),
        effect=effect,
        evidence=evidence,
        tests=tests,
        when=raw["when"],
        condition=condition,
        source_file=path,
        scope=str(raw.get("scope") or "").strip(),
        tags=list(raw.get("tags") or []),
        builtin=builtin,
    )


def _check_evidence(evidence: list[dict[str, Any]], fail: Fail) -> None:
    """What the schema cannot say about evidence numbers: each names a kind whose unit it uses, and
    its configs name only settings, env:NAME, an allreduce path, the model, the interconnect or a
    descriptive key."""
    for position, item in enumerate(evidence):
        for index, number in enumerate(item.get("numbers") or []):
            field = f"evidence[{position}].numbers[{index}]"
            kind = number[
                "kind"
            ]  # one of vocab.EVIDENCE_KINDS: the schema's enum (tests/test_vocab.py)
            units = vocab.EVIDENCE_UNITS[kind]
            if units is not None and number.get("unit") not in units:
                raise fail(
                    f"{field}.unit",
                    f"a {kind} number is in {' or '.join(units)}, got {number.get('unit')!r}",
                )
            if kind == "relative" and not isinstance(number.get("baseline"), dict):
                raise fail(
                    f"{field}.baseline",
                    "a relative number needs the baseline it is measured against",
                )
            for where, config in (
                (f"{field}.config", number.get("config")),
                (f"{field}.baseline.config", (number.get("baseline") or {}).get("config")),
            ):
                if config is not None:
                    _check_evidence_config(config, where, fail)


_EVIDENCE_EXTRA_KEYS = (
    vocab.EVIDENCE_PATH_KEY,
    vocab.EVIDENCE_MODEL_KEY,
    vocab.EVIDENCE_INTERCONNECT_KEY,
    *vocab.EVIDENCE_DESCRIPTIVE_KEYS,
)


def _check_evidence_config(config: dict[str, Any], field: str, fail: Fail) -> None:
    for key, value in config.items():
        if key in _EVIDENCE_EXTRA_KEYS:
            if key == vocab.EVIDENCE_INTERCONNECT_KEY and value not in vocab.INTERCONNECTS:
                raise fail(
                    f"{field}.{key}",
                    f"must be one of {', '.join(vocab.INTERCONNECTS)}, got {value!r}",
                )
            continue
        if not isinstance(key, str) or not launch_settings.is_known_setting(key):
            raise fail(
                f"{field}.{key}",
                f"unknown key {key!r} (a logical setting, env:NAME, or one of "
                f"{', '.join(_EVIDENCE_EXTRA_KEYS)})",
            )
        _check_setting_value(key, value, f"{field}.{key}", fail)


def _check_effect(raw: dict[str, Any], fail: Fail) -> dict[str, Any]:
    """Setting names and values, and each forbid operator's operand against its setting's type (the
    schema has already held the shape: a mapping of forbid/require/prefer/defaults/implies, one
    operator a forbid)."""
    checked_forbid = []
    for position, entry in enumerate(raw.get("forbid") or []):
        field = f"effect.forbid[{position}]"
        setting = entry["setting"]
        _check_setting_name(setting, f"{field}.setting", fail)
        operators = [
            key for key in entry if key != "setting"
        ]  # the schema's forbid properties: FORBID_OPERATORS
        if operators:
            try:
                check_operand(
                    f"{field}.{operators[0]}",
                    setting,
                    launch_settings.setting_type(setting),
                    operators[0],
                    entry[operators[0]],
                )
            except ConditionError as error:
                raise fail(error.field, error.message) from None
        checked_forbid.append(dict(entry))
    result: dict[str, Any] = {"forbid": checked_forbid}
    for key in ("require", "prefer", "defaults", "implies"):
        mapping = raw.get(key) or {}
        for setting, value in mapping.items():
            _check_setting_name(setting, f"effect.{key}.{setting}", fail)
            _check_setting_value(setting, value, f"effect.{key}.{setting}", fail)
        result[key] = dict(mapping)
    return result


def _check_setting_name(setting: object, field: str, fail: Fail) -> None:
    if not isinstance(setting, str) or not launch_settings.is_known_setting(setting):
        known = ", ".join(sorted(launch_settings.setting_table()))
        raise fail(field, f"unknown setting {setting!r} (logical settings: {known}; or env:NAME)")


def _check_setting_value(setting: str, value: object, field: str, fail: Fail) -> None:
    kind = launch_settings.setting_type(setting)
    fits = (
        value is None
        or {
            "bool": lambda: isinstance(value, bool),
            "int": lambda: isinstance(value, int) and not isinstance(value, bool),
            "str": lambda: isinstance(value, str),
        }[kind]()
    )
    if not fits:
        raise fail(
            field,
            f"{setting} takes a {kind}, got {value!r}"
            + (" (env values are quoted strings)" if kind == "str" else ""),
        )


def _check_tests(raw: list[dict[str, Any]], fail: Fail) -> list[TestCase]:
    cases = []
    for position, case in enumerate(raw):
        field = f"tests[{position}]"
        snapshot = case.get("snapshot") or {}
        request = case.get("request") or {}
        launch = request.get("launch") or {}
        if not isinstance(launch, dict):
            raise fail(f"{field}.request.launch", "must be a mapping of setting: value")
        for setting in launch:
            _check_setting_name(setting, f"{field}.request.launch.{setting}", fail)
        violates = case.get("violates")
        if violates is not None:
            for setting in violates:
                _check_setting_name(setting, f"{field}.violates", fail)
            if case["expect"] == "silent" and violates:
                raise fail(f"{field}.violates", "a silent case has no effect to assert")
        cases.append(
            TestCase(
                name=case["name"].strip(),
                expect=case["expect"],
                snapshot=snapshot,
                request=request,
                violates=list(violates) if violates is not None else None,
            )
        )
    expectations = {case.expect for case in cases}
    if "fire" not in expectations or "silent" not in expectations:
        raise fail("tests", "needs at least one case that must fire and one that must stay silent")
    return cases


def _reject_duplicates(rules: list[Rule]) -> None:
    seen: dict[str, Rule] = {}
    for rule in rules:
        if rule.id in seen:
            raise RuleFileError(
                rule.source_file,
                f"duplicate id (already defined in {seen[rule.id].source_file})",
                rule_id=rule.id,
                field="id",
            )
        seen[rule.id] = rule
