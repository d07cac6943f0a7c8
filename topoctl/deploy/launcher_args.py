"""What a launcher hands SGLang's parser, for the version that runs it: the step between reading a
launch (topoctl.deploy.launchers) and reading SGLang's flags
(topoctl.deploy.sglang_launch.parse_args).

Each behaviour cites the release wheels it was read from (sglang==X / ai-dynamo==X from PyPI, every
release between the boundaries read):

* `sglang serve` (sglang/cli/main.py, sglang/cli/serve.py; the console script from 0.5.5, absent in
  0.5.4): from 0.5.10 `--model-type NAME` is taken by serve itself (`_extract_model_type_override`,
  absent in 0.5.9); from 0.5.16 a first word that is not an option is the model
  (`_normalize_positional_model_path`: `["--model-path", argv[0], *argv[1:]]`, absent in 0.5.15).
  Before 0.5.16 it is an unrecognized argument.
* `--config FILE` (sglang/srt/server_args.py `prepare_server_args`, ConfigArgumentMerger in
  sglang/srt/server_args_config_parser.py, sglang/srt/utils/ from 0.5.19; present from 0.5.3, absent
  in 0.5.2): only the word `--config` exactly is merged (`--config=FILE` is accepted by argparse and
  then ignored); more than one `--config`, a missing path, a suffix other than .yaml/.yml, a file
  that is not a mapping fail at start-up. The file's keys become `--KEY VALUE` words placed BEFORE
  the command line (`config_args + before_config + after_config`), so argparse's last-wins makes the
  command line win. Values: a list gives `--KEY v1 v2` (nothing when empty); a mapping gives `--KEY`
  and its JSON from 0.5.14 (Python's str() before); booleans: 0.5.3-0.5.7 `True` gives `--KEY` and
  `False` nothing (the list of "boolean actions" read `action.action`, which argparse actions do not
  have, so it is always empty); from 0.5.8 a store_true flag's key gives `--KEY` for true and
  nothing for false, any other key `--KEY true|false`, and a key of a flag that is neither
  store_true nor store (from 0.5.23: nor a single-value action) is "Unsupported config option"
  (start-up error). From 0.5.23 a key may name any long spelling of the flag (`_config_keys`);
  before, the key is compared with the flag's dest.
* `python -m dynamo.sglang` (ai-dynamo, dynamo/sglang/args.py `parse_args`, 1.0 and later): Dynamo's
  parser takes its options first (`parse_known_args`: argparse's prefix matching applies, so a word
  that abbreviates one Dynamo option is Dynamo's, one that abbreviates several is an "ambiguous
  option" error); from 1.5 the router advertisement options are taken next
  (`parse_worker_router_config`); the rest, `--config` merged as above, is SGLang's. The option
  tables per release are in rules/sglang/generated/dynamo-<version>.json
  (scripts/extract_dynamo_flags.py).

Layer: deployment reading (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from topoctl.core.errors import TopoctlError
from topoctl.core.pep440 import Version
from topoctl.deploy.launchers import Launch
from topoctl.deploy.sglang_launch import Problem

if TYPE_CHECKING:
    from topoctl.rules.sglang.flags import FlagSet

SERVE_FROM = Version("0.5.5")
SERVE_MODEL_TYPE_FROM = Version("0.5.10")
SERVE_POSITIONAL_FROM = Version("0.5.16")
CONFIG_FROM = Version("0.5.3")
CONFIG_PARSER_FROM = Version(
    "0.5.8"
)  # ConfigArgumentMerger(parser): store_true keys, unsupported actions
CONFIG_DICT_JSON_FROM = Version("0.5.14")
CONFIG_ANY_SPELLING_FROM = Version("0.5.23")
_NAME_RE = re.compile(r"^dynamo-(?P<version>[0-9][0-9A-Za-z.+-]*)\.json$")


@dataclass
class Prepared:
    args: list[str]
    where_of: list[str]  # per word: where it was written ("file:line")
    from_config: set[int] = field(
        default_factory=set
    )  # indices of words that came from the config file
    problems: list[Problem] = field(default_factory=list)
    dynamo: dict[str, list[str]] = field(default_factory=dict)  # what Dynamo and its router took
    config_file: str | None = None
    not_checked: str = ""  # the launch starts a server whose flags topoctl does not read (why)


def _version(flags: FlagSet) -> Version:
    try:
        return Version(str(flags.requested))
    except Exception:  # noqa: BLE001 - the data version is the fallback
        return Version(str(flags.version))


# -----------------------------------------------------------------------------------------------
# Dynamo data


def _data_dir() -> str:
    # Dynamo's option data is engine knowledge, kept beside SGLang's flag data
    # (topoctl/rules/sglang/generated)
    return os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rules", "sglang", "generated"
    )


@functools.lru_cache(maxsize=1)
def dynamo_versions() -> list[str]:
    """ai-dynamo releases with option tables, oldest first."""
    names = os.listdir(_data_dir())
    return sorted((m.group("version") for m in map(_NAME_RE.match, names) if m), key=Version)


@dataclass
class DynamoTable:
    version: str
    requested: str
    exact: bool
    sglang_pin: str | None
    dynamo_options: dict[str, dict[str, Any]]
    router_options: dict[str, dict[str, Any]]
    note: str = ""


@functools.lru_cache(maxsize=None)
def load_dynamo(version: str | None) -> DynamoTable:
    """The option tables of ai-dynamo `version` (the nearest older release with data), newest when
    None."""
    known = dynamo_versions()
    if not known:
        raise TopoctlError("no Dynamo option data is installed", hint="reinstall topoctl")
    if version is None:
        chosen, exact, note = (
            known[-1],
            True,
            f"no ai-dynamo version given; assumed {known[-1]}, the newest known",
        )
        requested = known[-1]
    else:
        try:
            want = Version(version.lstrip("v"))
        except Exception:  # noqa: BLE001
            raise TopoctlError(
                f"{version!r} is not an ai-dynamo version", hint="e.g. 1.6.1"
            ) from None
        # an image tag names the release (1.3.0) that PyPI may only have as a post release
        # (1.3.0.post1)
        same = [
            v
            for v in known
            if Version(v).release == want.release
            and Version(v).is_postrelease
            and not want.is_postrelease
        ]
        if same:
            want = Version(same[-1])
        older = [v for v in known if Version(v) <= want]
        if not older:
            raise TopoctlError(
                f"no Dynamo option data for ai-dynamo {version} or older",
                hint="known: " + ", ".join(known) + " (0.x releases parse the launch differently)",
            )
        chosen = older[-1]
        exact = Version(chosen) == want
        note = (
            ""
            if exact
            else f"no option data for ai-dynamo {version}; using {chosen}, the nearest older"
        )
        requested = str(want)
    from topoctl.core import safe_read as limits

    doc = json.loads(
        limits.read_file(
            os.path.join(_data_dir(), f"dynamo-{chosen}.json"), limits.MAX_DATA_FILE_BYTES
        )
    )
    return DynamoTable(
        chosen,
        requested,
        exact,
        doc.get("sglang_pin"),
        doc.get("dynamo_options") or {},
        doc.get("router_options") or {},
        note,
    )


def _option_index(table: dict[str, dict[str, Any]], with_help: bool) -> dict[str, dict[str, Any]]:
    index = {}
    for info in table.values():
        for option in info.get("options") or []:
            index[option] = info
    if with_help:
        index.setdefault("-h", {"takes_value": False, "options": ["-h", "--help"]})
        index.setdefault("--help", {"takes_value": False, "options": ["-h", "--help"]})
    return index


def _known_args(
    words: list[str],
    wheres: list[str],
    table: dict[str, dict[str, Any]],
    who: str,
    problems: list[Problem],
    with_help: bool,
) -> tuple[list[str], list[str], list[str]]:
    """argparse `parse_known_args` over `words` with the options of `table` (prefix matching on):
    returns (taken words, the rest, where of the rest)."""
    index = _option_index(table, with_help)
    taken: list[str] = []
    rest: list[str] = []
    rest_where: list[str] = []
    position = 0
    while position < len(words):
        word, where = words[position], wheres[position]
        position += 1
        if word == "--":
            rest.extend(words[position - 1 :])
            rest_where.extend(wheres[position - 1 :])
            break
        if not word.startswith("--") and not (
            word.startswith("-") and word[1:2].isalpha() and word[:2] in index
        ):
            rest.append(word)
            rest_where.append(where)
            continue
        name, eq, _ = word.partition("=")
        info = index.get(word) or (index.get(name) if eq else None)
        if info is None and word.startswith("--"):
            matches = sorted({o for o in index if o.startswith(name)})
            owners = {id(index[o]) for o in matches}
            if len(matches) > 1:
                problems.append(
                    Problem(
                        "ambiguous-flag",
                        "block",
                        f"{name}: {who} reads it as an abbreviation of {', '.join(matches)} "
                        "(argparse: ambiguous "
                        "option) before SGLang sees it; the worker will not start",
                        "write the full flag name",
                        where,
                    )
                )
                continue
            if len(matches) == 1 and owners:
                info = index[matches[0]]
                problems.append(
                    Problem(
                        "flag-taken-by-launcher",
                        "warn",
                        f"{name}: {who} takes it as an abbreviation of its own {matches[0]}; "
                        "SGLang never sees it",
                        f"write {matches[0]} in full if it is meant for {who}, or the SGLang "
                        "flag's full name",
                        where,
                    )
                )
        if info is None:
            rest.append(word)
            rest_where.append(where)
            continue
        taken.append(word)
        if info.get("takes_value") and not eq:
            nargs = info.get("nargs")
            wanted = 1 if nargs in (None, "?") else 10**6 if nargs in ("*", "+") else int(nargs)
            count = 0
            while (
                position < len(words)
                and count < wanted
                and not (words[position].startswith("-") and len(words[position]) > 1)
            ):
                taken.append(words[position])
                position += 1
                count += 1
            if count == 0 and nargs not in ("?", "*"):
                problems.append(
                    Problem(
                        "missing-value",
                        "block",
                        f"{word}: {who} expects a value (argparse: expected one argument)",
                        "give it one",
                        where,
                    )
                )
    return taken, rest, rest_where


# -----------------------------------------------------------------------------------------------
# --config


def _compose_yaml(path: str, text: str | None = None) -> tuple[Any, dict[str, int]]:
    """The YAML document and the line (1-based) of each top-level key; `text`: the file's text when
    it is held elsewhere (a ConfigMap's key)."""
    import yaml

    from topoctl.core import safe_read as limits

    # the one reading layer: a regular file within the size limit, UTF-8, YAML within the limits
    if text is None:
        text = limits.read_text(path, limits.MAX_LAUNCH_FILE_BYTES)
    data, node = limits.load_yaml_node(text, path)
    lines: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key_node, _value in node.value:
            lines[str(key_node.value)] = key_node.start_mark.line + 1
    return data, lines


def _flag_for_key(flags: FlagSet, key: str, any_spelling: bool) -> dict[str, Any] | None:
    norm = key.replace("-", "_")
    for info in flags.flags.values():
        if info.get("dest") == norm:
            return info
        if any_spelling and any(
            o.startswith("--") and o[2:].replace("-", "_") == norm
            for o in info.get("options") or []
        ):
            return info
    return None


def config_words(
    path: str, flags: FlagSet, shown: str, held: tuple[str, str, int] | None = None
) -> tuple[list[str], list[str], list[Problem]]:
    """The words SGLang's ConfigArgumentMerger makes of a config file, with where each came from.
    `held`: the file as a manifest holds it (text, manifest, line of its first line): lines point
    into the manifest."""
    version = _version(flags)
    problems: list[Problem] = []
    if held is not None:
        shown = held[1]
    try:
        data, lines = _compose_yaml(path, held[0] if held is not None else None)
        if held is not None:
            lines = {key: line + held[2] - 1 for key, line in lines.items()}
    except OSError as exc:
        raise FileNotFoundError(str(exc)) from None
    except (
        TopoctlError
    ):  # past topoctl's limits, a FIFO, not UTF-8: exit 2 naming the file, never a verdict
        raise
    except Exception as exc:  # noqa: BLE001 - yaml's errors: SGLang fails on them too
        mark = getattr(exc, "problem_mark", None)
        at = f"{shown}:{mark.line + 1}" if mark is not None else shown
        return (
            [],
            [],
            [
                Problem(
                    "config-unreadable",
                    "block",
                    f"--config {shown}: not valid YAML "
                    f"({str(exc).splitlines()[0]}); SGLang fails at start-up",
                    "fix the YAML",
                    at,
                )
            ],
        )
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return (
            [],
            [],
            [
                Problem(
                    "config-not-a-mapping",
                    "block",
                    f'--config {shown}: SGLang needs a mapping at the top level ("Config file must '
                    'contain a dictionary at root level"); the server will not start',
                    "write the flags as keys: tp-size: 8",
                    f"{shown}:1",
                )
            ],
        )
    words: list[str] = []
    wheres: list[str] = []
    for key, value in data.items():
        key = str(key)
        where = f"{shown}:{lines.get(key, 1)}"
        info = _flag_for_key(flags, key, version >= CONFIG_ANY_SPELLING_FROM)
        action = str((info or {}).get("action") or "")
        store_true = action == "store_true"
        if version >= CONFIG_PARSER_FROM and info is not None:
            supported = (
                store_true
                or action == "store"
                or (
                    version >= CONFIG_ANY_SPELLING_FROM
                    and (info.get("nargs") is None and info.get("takes_value"))
                )
            )
            if not supported and action and action not in ("store", "store_true"):
                problems.append(
                    Problem(
                        "config-unsupported-option",
                        "block",
                        f"--config {shown}: {key}: SGLang {flags.version} refuses this key "
                        f'("Unsupported config option ... with action {action}"); the server will '
                        "not start",
                        "give this flag on the command line instead",
                        where,
                    )
                )
                continue
        new = _value_words(key, value, store_true, version)
        words.extend(new)
        wheres.extend([where] * len(new))
    return words, wheres, problems


def _value_words(key: str, value: object, store_true: bool, version: Version) -> list[str]:
    """The words ConfigArgumentMerger writes for one key of the config file, by version."""
    if isinstance(value, bool):
        if version < CONFIG_PARSER_FROM or store_true:
            return [f"--{key}"] if value else []
        return [f"--{key}", str(value).lower()]
    if isinstance(value, list):
        return [f"--{key}", *(str(item) for item in value)] if value else []
    if isinstance(value, dict):
        return [f"--{key}", json.dumps(value) if version >= CONFIG_DICT_JSON_FROM else str(value)]
    return [f"--{key}", str(value)]


def _merge_config(
    args: list[str], wheres: list[str], flags: FlagSet, launch: Launch, prepared: Prepared
) -> tuple[list[str], list[str]]:
    version = _version(flags)
    for word, where in zip(args, wheres, strict=False):
        if word.startswith("--config="):
            prepared.problems.append(
                Problem(
                    "config-not-merged",
                    "warn",
                    f"{word}: SGLang merges a config file only when written `--config FILE` (two "
                    f"words); argparse takes --config={word.split('=', 1)[1]} and the file's "
                    "flags are ignored",
                    "write --config FILE",
                    where,
                )
            )
    indices = [i for i, word in enumerate(args) if word == "--config"]
    if not indices:
        return args, wheres
    if version < CONFIG_FROM:
        return args, wheres
    if len(indices) > 1:
        prepared.problems.append(
            Problem(
                "config-repeated",
                "block",
                '--config given more than once: SGLang allows one ("Multiple config files '
                'specified!"); the server will not start',
                "give one --config",
                wheres[indices[1]],
            )
        )
        return args, wheres
    at = indices[0]
    if at == len(args) - 1:
        prepared.problems.append(
            Problem(
                "config-missing-path",
                "block",
                "--config with no file after it; the server will not start",
                "give --config FILE.yaml",
                wheres[at],
            )
        )
        return args, wheres
    shown = args[at + 1]
    prepared.config_file = shown
    if os.path.splitext(shown)[1].lower() not in (".yaml", ".yml"):
        prepared.problems.append(
            Problem(
                "config-not-yaml",
                "block",
                f'--config {shown}: SGLang reads only .yaml/.yml config files ("Config file '
                'must be YAML format"); the server will not start',
                "rename the file to .yaml",
                wheres[at],
            )
        )
        return args[:at] + args[at + 2 :], wheres[:at] + wheres[at + 2 :]
    path = shown if os.path.isabs(shown) else os.path.join(launch.base_dir, shown)
    if not os.path.exists(path) and os.path.exists(shown):
        path = shown
    held = launch.files.get(shown)  # a ConfigMap of the manifest, mounted where the launch reads it
    try:
        words, word_wheres, problems = config_words(
            path, flags, os.path.relpath(path) if not os.path.isabs(shown) else shown, held
        )
    except (FileNotFoundError, IsADirectoryError, PermissionError, UnicodeDecodeError):
        prepared.problems.append(
            Problem(
                "config-not-read",
                "warn",
                f"--config {shown}: not found beside the launch, so the flags in it are not "
                "checked (it may exist where the server runs)",
                "keep the config file in the repository next to the launch, or check it "
                "with `topoctl check -- python -m sglang.launch_server --config FILE`",
                wheres[at],
            )
        )
        return args[:at] + args[at + 2 :], wheres[:at] + wheres[at + 2 :]
    prepared.problems.extend(problems)
    before, after = args[:at], args[at + 2 :]
    prepared.from_config = set(range(len(words)))
    return words + before + after, word_wheres + wheres[:at] + wheres[at + 2 :]


# -----------------------------------------------------------------------------------------------
# all steps


def prepare(launch: Launch, flags: FlagSet, dynamo: DynamoTable | None = None) -> Prepared:
    """The argument list SGLang's parser will read for `launch` under `flags` (its version), with
    the problems the launcher itself would stop on."""
    version = _version(flags)
    args = list(launch.args)
    wheres = (
        list(launch.arg_where)
        if launch.arg_where and len(launch.arg_where) == len(args)
        else [launch.where] * len(args)
    )
    prepared = Prepared(args=[], where_of=[])
    if launch.launcher == "dynamo.sglang" and dynamo is not None:
        who = f"Dynamo {dynamo.version}"
        taken, args, wheres = _known_args(
            args, wheres, dynamo.dynamo_options, who, prepared.problems, True
        )
        prepared.dynamo["dynamo"] = taken
        if dynamo.router_options:
            router_taken, args, wheres = _known_args(
                args, wheres, dynamo.router_options, f"{who}'s router", prepared.problems, False
            )
            prepared.dynamo["router"] = router_taken
    if launch.launcher == "sglang serve":
        if version < SERVE_FROM:
            prepared.problems.append(
                Problem(
                    "launcher-missing",
                    "block",
                    f"sglang serve: the `sglang` command exists from SGLang 0.5.5; "
                    f"{flags.requested} has none",
                    "use python -m sglang.launch_server",
                    launch.where,
                )
            )
        if version >= SERVE_MODEL_TYPE_FROM:
            kept, kept_where, skip = [], [], False
            model_type = "auto"
            for index, word in enumerate(args):
                if skip:
                    skip = False
                    model_type = word
                    continue
                if word == "--model-type":
                    skip = True
                    continue
                if word.startswith("--model-type="):
                    model_type = word.split("=", 1)[1]
                    continue
                kept.append(word)
                kept_where.append(wheres[index])
            args, wheres = kept, kept_where
            if model_type not in (
                "auto",
                "llm",
            ):  # serve's own choice of backend (diffusion, a plug-in's)
                prepared.not_checked = (
                    f"sglang serve --model-type {model_type}: SGLang's {model_type} server, whose "
                    "flags topoctl does not read; not checked"
                )
                return prepared
        if args and not args[0].startswith("-"):
            if version >= SERVE_POSITIONAL_FROM:
                args = ["--model-path", *args]
                wheres = [wheres[0], *wheres]
            else:
                prepared.problems.append(
                    Problem(
                        "positional-model",
                        "block",
                        f"sglang serve {args[0]}: SGLang {flags.requested} takes no positional "
                        "model (from 0.5.16 it "
                        "does); the server will not start",
                        f"write --model-path {args[0]}",
                        launch.where,
                    )
                )
                args, wheres = args[1:], wheres[1:]
    args, wheres = _merge_config(args, wheres, flags, launch, prepared)
    prepared.args, prepared.where_of = args, wheres
    return prepared
