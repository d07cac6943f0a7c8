"""Declarative conditions, compiled once into small closures and evaluated in three-valued logic.

A condition is data (all / any / not / every_pair / any_pair / a matcher `{fact: NAME, OP:
OPERAND}`), never code: there is no eval or exec, and the operators are a closed list. Each compiled
node answers True, False or None (unknown). A matcher over a fact the probe could not read answers
None and records the fact's name, so a finding can say exactly what it could not verify. Kleene
logic: all() is False as soon as one part is False, unknown if any part is unknown and none is
False; any() is the dual; not() keeps unknown unknown.

Layer: knowledge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import fnmatch
import re
from functools import lru_cache
from typing import Callable, Optional, TypeGuard, cast

from topoctl.core import pep440

from .facts import PAIR_FACTS, UNKNOWN, VERSION_FACT_TYPE, Context, fact_type, launch_value

Tri = Optional[bool]
Compiled = Callable[[Context], Tri]
Test = Callable[[object], bool]

COMBINATORS = ("all", "any", "not", "every_pair", "any_pair")
OPERATORS = (
    "eq",
    "ne",
    "in",
    "not_in",
    "lt",
    "le",
    "gt",
    "ge",
    "version",
    "any_in",
    "all_in",
    "contains",
    "glob",
    "has_token",
    "known",
    "set",
)
# What an effect's forbid entry may test a launch value with (`values` is an alias of `in`).
FORBID_OPERATORS = ("values", "eq", "has_token", "glob", "lt", "le", "gt", "ge")
SCALAR_TYPES = ("int", "bool", "str", VERSION_FACT_TYPE)


class ConditionError(ValueError):
    """A condition that cannot be compiled; `field` is the dotted path inside the rule."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


# ------------------------------------------------------------------------------------------ value
# tests
def _key(value: object) -> object:
    """Comparison key: strings ignore case (Tree == TREE), bools never equal ints (True != 1)."""
    if isinstance(value, str):
        return value.casefold()
    if isinstance(value, bool):
        return ("bool", value)
    return value


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@lru_cache(maxsize=4096)
def parse_version(text: str) -> pep440.Version | None:
    """The PEP 440 version `text` spells (topoctl.core.pep440), or None when it is not one."""
    return pep440.parse(text)


def nccl_list_enables(value: str, token: str) -> bool:
    """Does an NCCL list value (NCCL_ALGO, NCCL_PROTO) turn `token` on?

    NCCL reads comma lists ("LL,LL128"), exclusion lists ("^LL128": everything but LL128) and, from
    2.24, per-collective parts ("allreduce:tree;broadcast:ring"). Case does not matter.
    """
    wanted = token.casefold()
    for part in value.split(";"):
        part = part.strip()
        if ":" in part:
            part = part.split(":", 1)[1].strip()
        excluded = part.startswith("^")
        names = {name.strip().casefold() for name in part.lstrip("^").split(",") if name.strip()}
        if not names:
            continue
        if (wanted not in names) if excluded else (wanted in names):
            return True
    return False


def _items(operand: object) -> list[object]:
    """A list operand (check_operand has held it to a list of scalars)."""
    return cast("list[object]", operand)


def make_test(op: str, operand: object) -> Test:
    """A predicate over a known, non-UNKNOWN value (None allowed: request facts may be None)."""
    if op == "eq":
        key = _key(operand)
        return lambda value: _key(value) == key
    if op == "ne":
        key = _key(operand)
        return lambda value: _key(value) != key
    if op in ("in", "values"):
        keys = [_key(item) for item in _items(operand)]
        return lambda value: _key(value) in keys
    if op == "not_in":
        keys = [_key(item) for item in _items(operand)]
        return lambda value: _key(value) not in keys
    if op in ("lt", "le", "gt", "ge"):
        compare = {
            "lt": lambda a: a < operand,
            "le": lambda a: a <= operand,
            "gt": lambda a: a > operand,
            "ge": lambda a: a >= operand,
        }[op]
        return lambda value: _number(value) and compare(value)
    if op == "version":
        specifier = pep440.specifier(operand)

        def matches_version(value: object) -> bool:
            parsed = parse_version(str(value)) if value is not None else None
            return parsed is not None and specifier.contains(parsed)

        return matches_version
    if op == "any_in":
        keys = [_key(item) for item in _items(operand)]
        return lambda value: isinstance(value, list) and any(_key(item) in keys for item in value)
    if op == "all_in":
        keys = [_key(item) for item in _items(operand)]
        return lambda value: isinstance(value, list) and all(_key(item) in keys for item in value)
    if op == "contains":
        key = _key(operand)
        return lambda value: isinstance(value, list) and any(_key(item) == key for item in value)
    if op == "glob":
        pattern = re.compile(fnmatch.translate(cast(str, operand).casefold()))
        return lambda value: isinstance(value, str) and pattern.match(value.casefold()) is not None
    if op == "has_token":
        return lambda value: isinstance(value, str) and nccl_list_enables(value, cast(str, operand))
    raise ValueError(f"no test for operator {op!r}")


# ------------------------------------------------------------------------------------------
# validation
def check_operand(field: str, fact: str, kind: str, op: str, operand: object) -> None:
    """Refuse operator/operand combinations that could never mean what the author wanted."""
    check = next((checker for ops, checker in _OPERAND_CHECKS if op in ops), None)
    if check is None:
        raise ConditionError(field, f"unknown operator {op!r}")
    check(field, fact, kind, op, operand)


def _scalar_fits(kind: str, item: object) -> bool:
    """Whether one operand value fits a fact of `kind` (null fits every kind: it matches an
    unknown)."""
    if item is None:
        return True
    if kind == "bool":
        return isinstance(item, bool)
    if kind in ("int", "list[int]"):
        return _number(item)
    if kind in ("str", VERSION_FACT_TYPE, "list[str]"):
        return isinstance(item, str)
    return False


def _check_equality(field: str, fact: str, kind: str, op: str, operand: object) -> None:
    if kind.startswith("list["):
        raise ConditionError(
            field, f"{op} cannot compare list fact {fact!r}; use contains, any_in or all_in"
        )
    if not _scalar_fits(kind, operand):
        raise ConditionError(field, f"{op} operand {operand!r} does not fit {kind} fact {fact!r}")


def _check_membership(field: str, fact: str, kind: str, op: str, operand: object) -> None:
    if kind.startswith("list["):
        raise ConditionError(
            field, f"{op} needs a scalar fact; {fact!r} is a list (use any_in or all_in)"
        )
    if not isinstance(operand, list) or not all(_scalar_fits(kind, item) for item in operand):
        raise ConditionError(field, f"{op} needs a list of {kind} values, got {operand!r}")


def _check_order(field: str, fact: str, kind: str, op: str, operand: object) -> None:
    if kind != "int":
        raise ConditionError(
            field,
            f"{op} needs a numeric fact; {fact!r} is {kind}"
            + (" (use version: for versions)" if kind == VERSION_FACT_TYPE else ""),
        )
    if not _number(operand):
        raise ConditionError(field, f"{op} needs a number, got {operand!r}")


def _check_version(field: str, fact: str, kind: str, op: str, operand: object) -> None:
    if kind != VERSION_FACT_TYPE:
        raise ConditionError(field, f"version needs a version fact; {fact!r} is {kind}")
    if not isinstance(operand, str) or not operand.strip():
        raise ConditionError(field, f"version needs a PEP 440 specifier string, got {operand!r}")
    try:
        pep440.specifier(operand)
    except pep440.InvalidSpecifier:
        raise ConditionError(field, f"invalid PEP 440 version specifier {operand!r}") from None


def _check_list_membership(field: str, fact: str, kind: str, op: str, operand: object) -> None:
    if not kind.startswith("list["):
        raise ConditionError(field, f"{op} needs a list fact; {fact!r} is {kind} (use in)")
    if not isinstance(operand, list) or not all(_scalar_fits(kind, item) for item in operand):
        raise ConditionError(field, f"{op} needs a list of values fitting {kind}, got {operand!r}")


def _check_contains(field: str, fact: str, kind: str, op: str, operand: object) -> None:
    if not kind.startswith("list["):
        raise ConditionError(field, f"contains needs a list fact; {fact!r} is {kind}")
    if operand is None or not _scalar_fits(kind, operand):
        raise ConditionError(field, f"contains operand {operand!r} does not fit {kind}")


def _check_text(field: str, fact: str, kind: str, op: str, operand: object) -> None:
    if kind != "str":
        raise ConditionError(field, f"{op} needs a string fact; {fact!r} is {kind}")
    if not isinstance(operand, str) or not operand:
        raise ConditionError(field, f"{op} needs a non-empty string, got {operand!r}")


def _check_flag(field: str, fact: str, kind: str, op: str, operand: object) -> None:
    if not isinstance(operand, bool):
        raise ConditionError(field, f"{op} needs true or false, got {operand!r}")
    if op == "set" and not fact.startswith("launch."):
        raise ConditionError(field, f"set applies to launch.* facts only, not {fact!r}")
    if op == "known" and fact.startswith(("launch.", "request.")):
        raise ConditionError(field, f"known applies to snapshot facts; {fact!r} is always known")


_OPERAND_CHECKS: tuple[
    tuple[tuple[str, ...], Callable[[str, str, str, str, object], None]], ...
] = (
    (("eq", "ne"), _check_equality),
    (("in", "not_in", "values"), _check_membership),
    (("lt", "le", "gt", "ge"), _check_order),
    (("version",), _check_version),
    (("any_in", "all_in"), _check_list_membership),
    (("contains",), _check_contains),
    (("glob", "has_token"), _check_text),
    (("known", "set"), _check_flag),
)


# ------------------------------------------------------------------------------------------
# compiling
def compile_condition(
    node: object, field: str = "when", in_pair: bool = False, checked: bool = False
) -> Compiled:
    """Compile a condition as written in a rule file; raise ConditionError naming the bad field.

    checked=True: `node` was compiled without error before (a rule from the knowledge cache), so
    each matcher is compiled when it first runs: a launch reaches about a quarter of the shipped
    rules' matchers (all() and any() stop early), and compiling the others is most of loading the
    rules on a warm start."""
    if isinstance(node, list):
        return _all(
            [
                compile_condition(child, f"{field}[{index}]", in_pair, checked)
                for index, child in enumerate(node)
            ],
            field,
        )
    if not isinstance(node, dict) or not node:
        raise ConditionError(field, f"a condition must be a mapping or a list, got {node!r}")
    if "fact" in node:
        return (
            _deferred(node, field, in_pair) if checked else _compile_matcher(node, field, in_pair)
        )
    if len(node) != 1:
        raise ConditionError(
            field, f"one of {', '.join(COMBINATORS)} or fact: per condition, got {sorted(node)}"
        )
    ((name, child),) = node.items()
    path = f"{field}.{name}"
    if name in ("all", "any"):
        if not isinstance(child, list) or not child:
            raise ConditionError(path, f"{name} needs a non-empty list of conditions")
        parts = [
            compile_condition(part, f"{path}[{index}]", in_pair, checked)
            for index, part in enumerate(child)
        ]
        return _all(parts, path) if name == "all" else _any(parts)
    if name == "not":
        return _not(compile_condition(child, path, in_pair, checked))
    if name in ("every_pair", "any_pair"):
        if in_pair:
            raise ConditionError(path, f"{name} cannot be nested inside another pair quantifier")
        return _quantifier(
            compile_condition(child, path, True, checked),
            every=(name == "every_pair"),
            pair_only=_pair_facts_only(child),
        )
    raise ConditionError(
        field, f"unknown condition {name!r} (use {', '.join(COMBINATORS)} or fact:)"
    )


def _all(parts: list[Compiled], field: str) -> Compiled:
    if not parts:
        raise ConditionError(field, "an empty condition list matches nothing useful")
    if len(parts) == 1:
        return parts[0]

    def run_all(context: Context) -> Tri:
        result: Tri = True
        for part in parts:
            answer = part(context)
            if answer is False:
                return False
            if answer is None:
                result = None
        return result

    return run_all


def _any(parts: list[Compiled]) -> Compiled:
    def run_any(context: Context) -> Tri:
        result: Tri = False
        for part in parts:
            answer = part(context)
            if answer is True:
                return True
            if answer is None:
                result = None
        return result

    return run_any


def _not(part: Compiled) -> Compiled:
    def run_not(context: Context) -> Tri:
        answer = part(context)
        return None if answer is None else not answer

    return run_not


def _pair_facts_only(node: object) -> bool:
    """Whether every fact a condition reads is a pair fact: then its verdict on a pair depends on
    that pair alone, and a quantifier's verdict on the pairs of one group layout is the same in
    every evaluation."""
    if isinstance(node, list):
        return all(_pair_facts_only(child) for child in node)
    if not isinstance(node, dict):
        return True
    if "fact" in node:
        return node["fact"] in PAIR_FACTS
    return all(_pair_facts_only(child) for child in node.values())


def _quantifier(part: Compiled, every: bool, pair_only: bool = False) -> Compiled:
    """every_pair: true for no pairs (vacuous); any_pair: false for no pairs. A quantifier over pair
    facts only is judged once per group layout (the launch's TP groups) and run: recommend judges
    dozens of launches on the same few layouts, each pair rule over up to n^2 pairs."""
    decisive = not every

    def over_pairs(context: Context) -> Tri:
        result: Tri = every
        saved_pair, saved_label = context.pair, context.pair_label
        try:
            for label, facts in context.pairs():
                context.pair, context.pair_label = facts, label
                answer = part(context)
                if answer is decisive:
                    return decisive
                if answer is None:
                    result = None
        finally:
            context.pair, context.pair_label = saved_pair, saved_label
        return result

    def run_pairs(context: Context) -> Tri:
        if not context.pairs_known():
            context.unknown_seen.append("pairs")
            return None
        memo = context.memo("quantifiers") if pair_only else None
        if memo is None:
            return over_pairs(context)
        key = (run_pairs, context.scope())
        found = cast("tuple[Tri, list[str]] | None", memo.get(key))
        if found is None:
            start = len(context.unknown_seen)
            found = memo[key] = (over_pairs(context), context.unknown_seen[start:])
        else:
            context.unknown_seen.extend(found[1])
        return found[0]

    return run_pairs


def _deferred(node: dict[str, object], field: str, in_pair: bool) -> Compiled:
    """A checked matcher, compiled on its first run and kept: what it answers is what compiling it
    at once gives (the same _compile_matcher, the same node)."""
    compiled: Compiled | None = None

    def run_deferred(context: Context) -> Tri:
        nonlocal compiled
        if compiled is None:
            compiled = _compile_matcher(node, field, in_pair)
        return compiled(context)

    return run_deferred


def _compile_matcher(node: dict[str, object], field: str, in_pair: bool) -> Compiled:
    fact = node["fact"]
    if not isinstance(fact, str):
        raise ConditionError(f"{field}.fact", f"fact must be a name, got {fact!r}")
    operators = [key for key in node if key != "fact"]
    if len(operators) != 1:
        raise ConditionError(
            field,
            f"a matcher needs exactly one operator ({', '.join(OPERATORS)}), "
            f"got {operators or 'none'}",
        )
    op = operators[0]
    operand = node[op]
    kind = fact_type(fact)
    if kind is None:
        raise ConditionError(f"{field}.fact", f"unknown fact {fact!r} (see `topoctl rules facts`)")
    if fact in PAIR_FACTS and not in_pair:
        raise ConditionError(
            f"{field}.fact", f"{fact!r} is a pair fact: use it inside every_pair or any_pair"
        )
    if op not in OPERATORS:
        raise ConditionError(
            f"{field}.{op}", f"unknown operator {op!r} (use {', '.join(OPERATORS)})"
        )
    check_operand(f"{field}.{op}", fact, kind, op, operand)

    if fact.startswith("launch."):
        return _launch_matcher(fact[len("launch.") :], op, operand)
    is_pair = fact in PAIR_FACTS
    if op == "known":

        def run_known(context: Context) -> Tri:
            value = context.pair_fact(fact) if is_pair else context.fact(fact)
            return (value is not UNKNOWN) is operand

        return run_known

    test = make_test(op, operand)
    is_version = kind == VERSION_FACT_TYPE

    def run_matcher(context: Context) -> Tri:
        value = context.pair_fact(fact) if is_pair else context.fact(fact)
        if value is UNKNOWN:
            context.unknown_seen.append(f"{context.pair_label}.{fact[5:]}" if is_pair else fact)
            return None
        if is_version and value is not None and parse_version(str(value)) is None:
            context.unknown_seen.append(f"{fact} (not a PEP 440 version: {value!r})")
            return None
        return test(value)

    return run_matcher


def _launch_matcher(setting: str, op: str, operand: object) -> Compiled:
    """Launch settings the launch does not name do not match (a rule about a launch setting fires
    only when the launch sets it); `set: true|false` asks exactly that. Defaults are for
    violations()."""
    if op == "set":
        return lambda context: launch_value(context, setting)[0] is operand
    test = make_test(op, operand)

    def run_launch(context: Context) -> Tri:
        explicit, value = launch_value(context, setting)
        return explicit and test(value)

    return run_launch
