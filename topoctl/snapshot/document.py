"""Loading and checking the Snapshot that everything downstream of the probe reads.

Layer: snapshot (the format everything downstream of the probe reads; docs/architecture.md, "Layers").

A snapshot is plain data whose shape is published as a JSON Schema
(topoctl/snapshot/schema/snapshot.schema.json, `topoctl.snapshot.document.schema()`). A snapshot
file is validated against that file by the jsonschema package (a well-kept implementation of the
whole standard, rather than an interpreter of our own beside it), compiled once per process and
imported only when a file is loaded: the built-in systems are shipped data that the test suite
validates, so `--system` runs never pay for the import. Only the checks across fields and the
wording of the one-line errors are written here. Readers that want typed answers use
topoctl/snapshot/view.py. The built-in systems live in topoctl/snapshot/catalogue.py, choosing the
target of a command in topoctl/cli/target_machine.py.
"""

from __future__ import annotations

import functools
import json
import os
from typing import TYPE_CHECKING, Any, Iterable, cast

from topoctl.core.errors import TopoctlError
from topoctl.core.p2p import measured_health, pair_verdicts

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator
    from typing_extensions import TypeGuard

    from topoctl.core.schema_check import Check
    from topoctl.snapshot.shape import Snapshot

SCHEMA_VERSION = (
    1  # the probe writes it (probe/collect.py imports it from here); loading accepts only it
)
# The most GPUs one snapshot (one host) may list. The largest single machines hold 16 (HGX-2 / DGX-2
# class); 128 leaves eight times that, keeps every command within its speed goals
# (docs/performance.md) and a probed snapshot near 5 MB, within the 16 MiB snapshot limit. A
# snapshot or capture listing more is refused (exit 2).
MAX_GPUS = 128
SCHEMA_FILE = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "schema", "snapshot.schema.json"
)


def parse_snapshot_text(text: str, origin: str) -> Snapshot:
    """Parse JSON or YAML snapshot text (YAML via safe_load only).

    Errors name the parser's position (line, column), never a line of the file: the file may be
    anything (`--topology /etc/shadow`), and its content must not end up in a CI log.
    """
    hint = "pass the file written by `topoctl probe`"
    stripped = text.lstrip()
    if not stripped:
        raise TopoctlError(f"{origin} is empty", hint=hint)
    from topoctl.core import safe_read as limits

    if stripped.startswith("{"):
        try:
            data = limits.loads_json(text, origin)
        except ValueError as exc:
            where = (
                f" at line {exc.lineno}, column {exc.colno}"
                if isinstance(exc, json.JSONDecodeError)
                else ""
            )
            problem = getattr(exc, "msg", None) or "malformed"
            raise TopoctlError(f"{origin}: not valid JSON: {problem}{where}", hint=hint) from None
    else:
        try:
            data = limits.load_yaml(
                text, origin
            )  # safe_load semantics, within the limits (topoctl/core/safe_read.py)
        except limits.LimitError:
            raise
        except Exception as exc:  # yaml.YAMLError and friends
            raise TopoctlError(
                f"{origin}: not valid YAML: {_yaml_problem(exc)}", hint=hint
            ) from None
    if data is None:
        raise TopoctlError(f"{origin} is empty", hint=hint)
    validate_snapshot(data, origin=origin)
    reconcile_summary(data)
    return cast("Snapshot", data)  # validated above: the schema's shape, which Snapshot types


def _yaml_problem(exc: Exception) -> str:
    """The parser's words and position, without the snippet of the file PyYAML shows."""
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None)
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if not isinstance(problem, str):
        return type(exc).__name__
    problem = problem[:120]
    if mark is not None and isinstance(getattr(mark, "line", None), int):
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
    return problem


def load_snapshot(path: str) -> Snapshot:
    """Read a snapshot file written by `topoctl probe` (JSON or YAML)."""
    if path == "":
        raise TopoctlError(
            "the snapshot file name is empty",
            hint="pass the file written by `topoctl probe -o FILE`",
        )
    if path == "-":
        from topoctl.core.safe_read import MAX_SNAPSHOT_BYTES, read_stdin

        return parse_snapshot_text(
            _decode(read_stdin(MAX_SNAPSHOT_BYTES), "<stdin>"), origin="<stdin>"
        )
    if os.path.isdir(path):
        raise TopoctlError(
            f"{path} is a folder, not a snapshot file",
            hint="pass the file written by `topoctl probe -o FILE`",
        )
    try:
        from topoctl.core.safe_read import MAX_SNAPSHOT_BYTES, read_file

        raw = read_file(path, MAX_SNAPSHOT_BYTES)
    except FileNotFoundError:
        raise TopoctlError(
            f"no such file: {path}", hint="write one with `topoctl probe -o FILE`"
        ) from None
    except OSError as exc:
        raise TopoctlError(
            f"cannot read {path}: {exc.strerror or type(exc).__name__}",
            hint="check the path and its permissions",
        ) from None
    return parse_snapshot_text(_decode(raw, path), origin=path)


def _decode(raw: bytes, origin: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TopoctlError(
            f"{origin} is not UTF-8 text",
            hint="pass the file written by `topoctl probe` (YAML or JSON)",
        ) from None


# ------------------------------------------------------------------------------------------
# validation
class _Invalid(Exception):
    pass


@functools.lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The published JSON Schema of a snapshot (topoctl/snapshot/schema/snapshot.schema.json)."""
    from topoctl.core import safe_read as limits

    document: dict[str, Any] = json.loads(limits.read_file(SCHEMA_FILE, limits.MAX_DATA_FILE_BYTES))
    return document


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


_TYPE_WORDS = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


@functools.lru_cache(maxsize=1)
def validator() -> Validator:
    """The schema compiled by jsonschema, once per process. An integer is a Python int, as in the
    probe's output: JSON Schema would take 2.0 as an integer, and a GPU index or byte count is never
    2.0."""
    import jsonschema  # start-up: ~0.1 s of imports, paid only when a snapshot file is loaded

    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine("integer", lambda _checker, value: _is_int(value))
    strict = jsonschema.validators.extend(base, type_checker=checker)
    return strict(schema())


def _field(path: Iterable[str | int]) -> str:
    """A jsonschema error path in the messages' form: gpus[0].pcie.link_width."""
    field = ""
    for step in path:
        field = (
            f"{field}[{step}]"
            if isinstance(step, int)
            else (f"{field}.{step}" if field else str(step))
        )
    return field


def _schema_problem(error: ValidationError) -> str:
    """One jsonschema error in topoctl's words, naming the field and never echoing the file's values
    (only their type or a number)."""
    field, check, expected, value = (
        _field(error.absolute_path),
        error.validator,
        error.validator_value,
        error.instance,
    )
    if check == "type":
        names = [expected] if isinstance(expected, str) else expected
        return (
            f"{field} must be {' or '.join(_TYPE_WORDS[name] for name in names)}, got "
            f"{_kind(value)}"
        )
    if check == "const":
        return f"{field} must be {json.dumps(expected)}"
    if check == "enum":
        words = " ".join(sorted(str(choice) for choice in expected if choice is not None))
        return f"{field} must be one of {words}" + (" or null" if None in expected else "")
    if check == "pattern":
        example = (error.schema.get("examples") or [None])[0]
        return (
            f"{field} must be a string like {json.dumps(example)}"
            if example is not None
            else f"{field} does not have the form {expected}"
        )
    if check == "minimum":
        return f"{field} must be >= {expected}, got {value}"
    if check == "minItems":
        return (
            f"{field} is empty"
            if expected == 1
            else f"{field} lists {len(value)} items, fewer than {expected}"
        )
    if check == "maxItems":
        return f"{field} lists {len(value)} items, more than {expected}"
    if check == "required":
        missing = next(key for key in expected if key not in value)
        return f"{f'{field}.' if field else ''}{missing} is missing"
    return f"{field or 'the snapshot'} does not meet the schema's {check!r}"


@functools.lru_cache(maxsize=1)
def _valid() -> Check:
    """The schema compiled into plain Python checks (topoctl/core/schema_check.py): valid or not,
    with integers as strict as validator()'s. jsonschema takes about 5 s over a 128-GPU snapshot and
    0.1 s to import; this answers for a valid snapshot in a small fraction of that, and jsonschema
    words the problem of one that is not (tests/core/test_schema_check.py holds the two to the same
    verdict)."""
    from topoctl.core.schema_check import compile_schema  # only when a snapshot file is validated

    return compile_schema(schema(), strict_integers=True)


def _first_schema_problem(data: object) -> str | None:
    """The first schema problem in the schema's order (the document's fields, depth first); None if
    valid."""
    if _valid()(data):
        return None
    error = next(iter(validator().iter_errors(data)), None)
    return None if error is None else _schema_problem(error)


def _check_schema_version(data: object) -> dict[str, Any]:
    """`data` as the mapping a snapshot is, once its schema_version is the one read here."""
    if not isinstance(data, dict):
        raise _Invalid(f"a snapshot must be a mapping, got {_kind(data)}")
    if "schema_version" not in data:
        raise _Invalid("missing schema_version (is this a topoctl snapshot?)")
    version = data["schema_version"]
    if not _is_int(version):
        raise _Invalid(f"schema_version must be the integer {SCHEMA_VERSION}, got {_kind(version)}")
    if version != SCHEMA_VERSION:
        raise _Invalid(
            f"schema_version {version} is not supported (this topoctl reads {SCHEMA_VERSION})"
        )
    if data.get("gpus") == []:  # the schema's minItems, said for people
        raise _Invalid("gpus is empty: no GPU in this snapshot (a snapshot describes at least one)")
    return data


def _check_across_fields(data: dict[str, Any]) -> None:
    """What a schema cannot say: GPU indices unique and in range, every ordered pair once, counts
    agree."""
    gpus = data["gpus"]
    count = len(gpus)
    seen: set[int] = set()
    for position, gpu in enumerate(gpus):
        index = gpu["index"]
        if index >= count:
            raise _Invalid(
                f"gpus[{position}].index {index} is out of range (0..{count - 1} for {count} GPUs)"
            )
        if index in seen:
            raise _Invalid(f"gpus[{position}].index {index} appears twice")
        seen.add(index)
    pairs = data["pairs"]
    seen_pairs: set[tuple[int, int]] = set()
    for position, pair in enumerate(pairs):
        field = f"pairs[{position}]"
        src, dst = pair["src"], pair["dst"]
        for key, value in (("src", src), ("dst", dst)):
            if value >= count:
                raise _Invalid(
                    f"{field}.{key} {value} is out of range (0..{count - 1} for {count} GPUs)"
                )
        if src == dst:
            raise _Invalid(f"{field} pairs GPU {src} with itself")
        if (src, dst) in seen_pairs:
            raise _Invalid(f"{field} ({src}->{dst}) appears twice")
        seen_pairs.add((src, dst))
    expected = count * (count - 1)
    if len(pairs) != expected:
        missing = next(
            (
                (i, j)
                for i in range(count)
                for j in range(count)
                if i != j and (i, j) not in seen_pairs
            ),
            None,
        )
        what = f"; {missing[0]}->{missing[1]} is missing" if missing else ""
        raise _Invalid(
            f"pairs lists {len(pairs)} ordered pairs, {count} GPUs have {expected}{what}"
        )
    summary = data["summary"]
    if summary["gpu_count"] != count:
        raise _Invalid(f"summary.gpu_count is {summary['gpu_count']} but gpus lists {count}")
    for field, index in _gpu_indices(data):
        if index >= count:
            raise _Invalid(f"{field} must be a GPU index (0..{count - 1})")


def _gpu_indices(data: dict[str, Any]) -> list[tuple[str, int]]:
    """(field, value) of every GPU index the snapshot names outside gpus and pairs: each must be
    below the count."""
    summary = data["summary"]
    indexed = [("summary.downtrained_gpus", summary.get("downtrained_gpus"))]
    indexed += [
        (f"summary.root_complex_groups[{n}]", group)
        for n, group in enumerate(summary.get("root_complex_groups") or [])
    ]
    indexed += [
        (f"pcie.root_complexes[{n}].gpus", (entry or {}).get("gpus"))
        for n, entry in enumerate((data.get("pcie") or {}).get("root_complexes") or [])
    ]
    visible = (
        data.get("cuda_visible_devices") or {}
    )  # the record CUDA_VISIBLE_DEVICES leaves (probe/visible.py)
    named = [
        (f"{field}[{position}]", index)
        for field, indices in indexed
        for position, index in enumerate(indices or [])
    ]
    named += [
        (f"cuda_visible_devices.cuda_devices[{n}].gpu", device["gpu"])
        for n, device in enumerate(visible.get("cuda_devices") or [])
        if device["gpu"] is not None
    ]
    named += [
        (f"cuda_visible_devices.hidden[{position}]", index)
        for position, index in enumerate(visible.get("hidden") or [])
    ]
    return named


def _check(data: object) -> None:
    document = _check_schema_version(data)
    problem = _first_schema_problem(document)
    if problem is not None:
        raise _Invalid(problem)
    _check_across_fields(document)


def reconcile_summary(data: dict[str, Any]) -> None:
    """Make the summary's P2P and NVLink verdicts say what the pairs say (the pairs are what was
    measured).

    Downstream code reads `summary.all_pairs_p2p` first; a hand-edited snapshot whose summary claims
    working P2P while a pair says NS must not make `recommend` drop --disable-custom-all-reduce.
    Call after validate_snapshot.
    """
    pairs, summary = data["pairs"], data["summary"]
    if not pairs:
        return
    health = measured_health(
        data
    )  # a pair that failed `topoctl bench`'s P2P check has no working P2P
    summary.update(
        pair_verdicts(pairs, health)
    )  # topoctl/core/p2p.py: the same derivation the probe writes
    failed = sorted([src, dst] for (src, dst), (healthy, _) in health.items() if not healthy)
    if failed:
        summary["p2p_failed_health_check"] = failed


def validate_shipped_snapshot(data: object, origin: str) -> None:
    """The checks of validate_snapshot that the schema cannot make, for a built-in system: shipped
    data that tests/snapshot/test_snapshot_schema.py validates against the schema, so a `--system`
    run skips that part."""
    try:
        _check_across_fields(_check_schema_version(data))
    except _Invalid as problem:
        raise TopoctlError(
            f"{origin}: {problem}", hint="reinstall topoctl: a built-in system is damaged"
        ) from None


def validate_snapshot(data: object, origin: str) -> None:
    """Check every field downstream code relies on; raise a one-line TopoctlError naming the field
    otherwise.

    The schema (snapshot.schema.json) through jsonschema, then the checks across fields. Values from
    the file are never echoed, only their type or a number.
    """
    gpus = data.get("gpus") if isinstance(data, dict) else None
    if isinstance(gpus, list) and len(gpus) > MAX_GPUS:
        raise TopoctlError(
            f"{origin}: lists {len(gpus)} GPUs, more than {MAX_GPUS}, the most one snapshot may "
            "hold",
            hint="a snapshot describes one host: probe each machine on its own (`topoctl probe "
            "-o FILE`)",
        )
    try:
        _check(data)
    except _Invalid as problem:
        raise TopoctlError(
            f"{origin}: {problem}", hint="regenerate it with `topoctl probe -o FILE`"
        ) from None
