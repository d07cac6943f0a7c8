"""Reading a launch without running it: launch.env files and `python -m sglang.launch_server ...`
commands.

launch.env is parsed, never sourced: each line is blank, a `# comment`, or `[export ]NAME=VALUE`
where VALUE uses sh quoting ('single', "double" without expansions, or bare words without shell
metacharacters). Anything a shell would expand or run ($, backticks, ;, |, &, redirections) is
rejected with its line number, because its meaning depends on running it.

Layer: deployment reading (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, NoReturn

from topoctl.core.errors import TopoctlError
from topoctl.rules.sglang import spelling as table

if TYPE_CHECKING:
    from topoctl.deploy.launchers import GpuSet, Nodes
    from topoctl.rules.sglang.flags import FlagSet, Resolution

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
BARE_FORBIDDEN = set("$`;|&<>()\\\"'*?[]{}!~")
ARGS_KEY = "SGLANG_ARGS"
_ASSIGNMENT_RE = re.compile(r"(export[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)=")
_ENV_HINT = "launch.env lines are NAME='value' (sh quoting, no expansions or commands)"


def parse_env_text(text: str, origin: str) -> list[tuple[int, str, str]]:
    """(line number, NAME, value) for each assignment; TopoctlError (exit 2) on anything else."""
    if text.startswith(
        "\ufeff"
    ):  # a UTF-8 byte-order mark some editors write: not part of the first line
        text = text[1:]
    reader = _EnvReader(text, origin)
    out: list[tuple[int, str, str]] = []
    while not reader.at_end():
        if not reader.skip_blank_or_comment():
            out.append(reader.assignment())
    return out


class _EnvReader:
    """One pass over launch.env text, in the stages of a line: blanks and comments, `[export
    ]NAME=`, the value's words (quoted or bare), then what may follow the value. Errors name the
    line they are on."""

    def __init__(self, text: str, origin: str) -> None:
        self.text, self.origin = text, origin
        self.position, self.line, self.length = 0, 1, len(text)

    def fail(self, at_line: int, why: str) -> NoReturn:
        raise TopoctlError(f"{self.origin}:{at_line}: {why}", hint=_ENV_HINT)

    def at_end(self) -> bool:
        return self.position >= self.length

    def _skip_to_end_of_line(self) -> None:
        end = self.text.find("\n", self.position)
        self.position = self.length if end < 0 else end

    def skip_blank_or_comment(self) -> bool:
        """Step over one newline, blank or whole-line comment; False when an assignment starts here."""
        char = self.text[self.position]
        if char == "\n":
            self.line += 1
            self.position += 1
        elif char in " \t\r":
            self.position += 1
        elif char == "#":
            self._skip_to_end_of_line()
        else:
            return False
        return True

    def assignment(self) -> tuple[int, str, str]:
        start_line = self.line
        match = _ASSIGNMENT_RE.match(self.text, self.position)
        if not match:
            rest = self.text[self.position :]
            bad = rest[: rest.find("\n")] if "\n" in rest else rest
            self.fail(start_line, f"not a NAME=VALUE assignment: {bad.strip()[:60]!r}")
        self.position = match.end()
        value = self._value(start_line)
        self._end_of_value()
        return start_line, match.group(2), value

    def _value(self, start_line: int) -> str:
        value: list[str] = []
        while not self.at_end() and self.text[self.position] not in " \t\n#":
            char = self.text[self.position]
            if char == "'":
                value.append(self._single_quoted(start_line))
            elif char == '"':
                self._double_quoted(start_line, value)
            elif char == "\\":
                following = self.text[self.position + 1 : self.position + 2]
                if following in ("\n", ""):
                    self.fail(self.line, "line continuation is not supported in launch.env")
                value.append(following)
                self.position += 2
            elif char in BARE_FORBIDDEN:
                self.fail(
                    self.line,
                    f"unquoted {char!r}: the shell would interpret it; quote the value with "
                    "single quotes",
                )
            else:
                value.append(char)
                self.position += 1
        return "".join(value)

    def _single_quoted(self, start_line: int) -> str:
        end = self.text.find("'", self.position + 1)
        if end < 0:
            self.fail(start_line, "unterminated single quote")
        chunk = self.text[self.position + 1 : end]
        self.line += chunk.count("\n")
        self.position = end + 1
        return chunk

    def _double_quoted(self, start_line: int, value: list[str]) -> None:
        """The characters of "...", as sh reads them without expansions: $ and backticks are
        refused."""
        self.position += 1
        while True:
            if self.at_end():
                self.fail(start_line, "unterminated double quote")
            char = self.text[self.position]
            if char == '"':
                self.position += 1
                return
            if char in "$`":
                self.fail(
                    self.line,
                    f"{char!r} inside double quotes would be expanded by the shell; use single "
                    "quotes",
                )
            following = self.text[self.position + 1 : self.position + 2]
            if char == "\\" and following in ('"', "\\", "$", "`"):
                value.append(following)
                self.position += 2
                continue
            if char == "\\" and following == "\n":
                self.line += 1
                self.position += 2
                continue
            if char == "\n":
                self.line += 1
            value.append(char)
            self.position += 1

    def _end_of_value(self) -> None:
        """After the value: only blanks and an optional comment may follow on the line."""
        while not self.at_end() and self.text[self.position] in " \t\r":
            self.position += 1
        if not self.at_end() and self.text[self.position] not in "\n#":
            self.fail(
                self.line,
                "more than one word after '=' (a shell would run it as a command); quote the value",
            )
        if not self.at_end() and self.text[self.position] == "#":
            self._skip_to_end_of_line()


def read_env_file(path: str) -> tuple[str, list[tuple[int, str, str]]]:
    if path == "-":
        from topoctl.core.safe_read import MAX_LAUNCH_ENV_BYTES, decode, read_stdin

        raw = read_stdin(MAX_LAUNCH_ENV_BYTES)
        return "<stdin>", parse_env_text(
            decode(raw, "<stdin>", hint="launch.env is UTF-8 text"), "<stdin>"
        )
    from topoctl.core import safe_read as limits

    try:
        text = limits.read_file(path, limits.MAX_LAUNCH_ENV_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise TopoctlError(
            f"no such file: {path}", hint="write one with `topoctl recommend -o launch.env`"
        ) from None
    except IsADirectoryError:
        raise TopoctlError(f"{path} is a folder, not a launch.env", hint="pass the file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TopoctlError(
            f"cannot read {path}: {exc}", hint="check the path and its permissions"
        ) from None
    return path, parse_env_text(text, path)


@dataclass
class Problem:
    """Something wrong with a launch that is not a rule's finding (flags SGLang will not accept...)."""

    code: str
    severity: str  # block | warn | info
    message: str
    remediation: str = ""
    where: str = ""


# A launch.env's FlagSet from its TOPOCTL_* metadata (and where each name is assigned: check's
# resolve stage)
FlagsFor = Callable[..., "FlagSet"]


@dataclass
class ParsedLaunch:
    """A launch understood as SGLang would understand it: logical settings plus what could not be."""

    settings: dict[str, Any] = field(default_factory=dict)
    written: dict[str, str] = field(
        default_factory=dict
    )  # setting -> how it was written (flag or env)
    env: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)  # TOPOCTL_* from launch.env
    problems: list[Problem] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    origin: str = ""
    lines: dict[str, str] = field(
        default_factory=dict
    )  # NAME -> "file:line" of the assignment that counts
    flags: FlagSet | None = (
        None  # the SGLang FlagSet the flags were read with (parse_args sets it), for judging them
    )
    gpus: GpuSet | None = (
        # launchers.GpuSet: the GPUs the launch is given (docker --gpus, nvidia.com/gpu), None: all
        None
    )
    nodes: Nodes | None = (
        None  # launchers.Nodes: the nodes its launcher starts it on (srun -N, LeaderWorkerSet size)
    )
    launcher: str = (
        ""  # "sglang.launch_server", "sglang serve", "dynamo.sglang", "flags", "launch.env"
    )
    image: str | None = None  # the container image, when the launch names one
    where: str = ""  # "file:line" of the launch line (empty for a command after `--`)
    version_source: str = (
        ""  # why this SGLang version judges the launch (said on stderr when it was assumed)
    )


def apply_env(parsed: ParsedLaunch, name: str, value: str, where: str) -> None:
    envs = table.env_names()
    if name.startswith("TOPOCTL_"):
        parsed.metadata[name] = value
        return
    parsed.env[name] = value
    setting = envs.get(name) or f"env:{name}"
    spec = table.specs().get(setting, {"kind": "str"})
    parsed.settings[setting] = (
        table.parse_value(setting, value) if spec.get("kind") == "bool" else value
    )
    parsed.written[setting] = f"{name}={value} ({where})" if where else f"{name}={value}"


# Parallel sizes (--tp-size, --ep-size, --dp-size, --pp-size, --attn-dp-size...): argparse takes any
# int, but a size below 1 is nonsense and SGLang fails later, after loading.
_SIZE_DEST = re.compile(
    r"(^|_)(tp|ep|dp|pp|tensor_parallel|expert_parallel|data_parallel|pipeline_parallel)_size$"
)
# --speculative-algorithm without argparse choices (0.5.12+): the names SGLang ships, read from its
# help text ("Builtins: EAGLE, EAGLE3, ..."); these when the help does not list them (0.5.5's
# choices).
_SPEC_BUILTINS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM")
_CONVERTERS = {"int": int, "float": float}


def _takes_values(info: dict[str, Any]) -> int | str | None:
    """argparse's nargs for the flag: None (one value), an int, "?", "*", "+"; 0 for a switch."""
    if not info.get("takes_value"):
        return 0
    nargs = info.get("nargs")
    return nargs if nargs is not None else None


def _shipped_algorithms(info: dict[str, Any]) -> tuple[str, ...]:
    match = re.search(r"Builtins:\s*([A-Z0-9_,\s]+)", str(info.get("help") or ""))
    if match:
        names = tuple(name.strip() for name in match.group(1).split(",") if name.strip())
        if names:
            return names
    return _SPEC_BUILTINS


def _check_value(
    flags: FlagSet, name: str, info: dict[str, Any], text: str, where: str
) -> Problem | None:
    """What argparse (type conversion, choices) and SGLang (sizes, speculative names) make of one
    value."""
    if (
        "$" in text
    ):  # a shell or Kubernetes expansion topoctl could not resolve: its value is not known here
        return None
    kind = info.get("type")
    converted: object = text
    convert = (
        _CONVERTERS.get(kind) if isinstance(kind, str) and not info.get("type_parser") else None
    )
    if convert is not None:
        try:
            converted = convert(text)
        except ValueError:
            return Problem(
                "invalid-value",
                "block",
                f"{name} {text}: invalid {kind} value {text!r} for SGLang {flags.version}; the "
                "server will not start",
                f"give {name} an {kind}" if kind == "int" else f"give {name} a {kind}",
                where,
            )
    choices = info.get("choices")
    # choices_note: SGLang extends the set at run time (0.5.19+ --sampling-backend adds
    # "token_oracle" under an env variable), so a value outside the wheel's base set is not shown to
    # fail
    if choices and not info.get("choices_unresolved") and not info.get("choices_note"):
        if converted not in choices and str(converted) not in {str(c) for c in choices}:
            shown = ", ".join(str(c) for c in choices)
            return Problem(
                "invalid-choice",
                "block",
                f"{name} {text}: invalid choice for SGLang {flags.version} (choose from {shown}); "
                "the server will not start",
                f"use one of {shown}",
                where,
            )
    if (
        kind == "int"
        and isinstance(converted, int)
        and converted < 1
        and _SIZE_DEST.search(str(info.get("dest") or ""))
    ):
        return Problem(
            "invalid-value",
            "block",
            f"{name} {text}: a parallel size must be 1 or more",
            f"give {name} a positive size",
            where,
        )
    if str(info.get("dest")) == "speculative_algorithm" and not choices:
        shipped = _shipped_algorithms(info)
        if text.upper() not in shipped:  # SGLang upper-cases the name when it looks it up
            return Problem(
                "unknown-speculative-algorithm",
                "warn",
                f"{name} {text}: not a speculative algorithm SGLang {flags.version} ships "
                f"({', '.join(shipped)}); only a plug-in registered under that name would make "
                "it start",
                f"use one of {', '.join(shipped)}",
                where,
            )
    return None


def _is_option(flags: FlagSet, token: str) -> bool:
    """argparse's 'O' (an option token) versus 'A' (an argument: a value or a stray positional)."""
    return token != "--" and flags.resolve(token).kind != "positional"


def parse_args(
    tokens: list[str],
    flags: FlagSet,
    parsed: ParsedLaunch | None = None,
    where: str = "",
    where_of: list[str] | None = None,
    from_config: set[int] | None = None,
) -> ParsedLaunch:
    """Read SGLang's arguments as its argparse parser would (flag data: type, choices, nargs,
    action) and map them back to logical settings for the version of `flags`. What argparse would
    refuse blocks.

    `where_of` (one entry per token) says where each word was written ("file:line": a config file's
    key, a manifest's args line); `from_config` the indices of words a --config file contributed
    (the command line given after them overriding one is SGLang's precedence, not a repeated flag).
    """
    parsed = parsed or ParsedLaunch()
    parsed.flags = flags
    reader = _ArgsReader(tokens, flags, parsed, where, where_of, from_config or set())
    while reader.position < len(tokens) and reader.read_next():
        pass
    reader.report_stray()
    parsed.args.extend(tokens)
    return parsed


class _ArgsReader:
    """One pass of argparse over a launch's words, in its stages for each option: resolve the name
    (a positional, an ambiguous prefix, an unknown flag), take its values by nargs, check them, note
    a repeat or a deprecation, then set the logical setting. Problems go to `parsed`; the reader
    goes on as far as it can."""

    def __init__(
        self,
        tokens: list[str],
        flags: FlagSet,
        parsed: ParsedLaunch,
        where: str,
        where_of: list[str] | None,
        from_config: set[int],
    ) -> None:
        self.tokens, self.flags, self.parsed = tokens, flags, parsed
        self.default_where, self.where_of, self.from_config = where, where_of or [], from_config
        self.reverse = table.reverse_map()
        self.position = 0
        self.seen: dict[str, str] = {}  # primary flag -> how it was first written
        self.seen_in_config: set[str] = set()
        self.stray: list[str] = []
        self.stray_where = ""

    def _problem(
        self, code: str, severity: str, message: str, remediation: str, where: str
    ) -> None:
        self.parsed.problems.append(Problem(code, severity, message, remediation, where))

    def _where(self, at: int) -> str:
        return (
            self.where_of[at]
            if at < len(self.where_of) and self.where_of[at]
            else self.default_where
        )

    def _more_values(self) -> bool:
        """Whether the next word is a value (argparse's 'A'), not an option or `--`."""
        return (
            self.position < len(self.tokens)
            and not _is_option(self.flags, self.tokens[self.position])
            and self.tokens[self.position] != "--"
        )

    def read_next(self) -> bool:
        """Read one option with its values (or one stray word); False once `--` ends the options."""
        token, where = self.tokens[self.position], self._where(self.position)
        in_config = self.position in self.from_config
        self.position += 1
        if (
            token == "--"
        ):  # argparse: everything after `--` is positional, and SGLang takes no positionals
            self.stray.extend(self.tokens[self.position :])
            self.stray_where = self.stray_where or where
            return False
        resolution = self.flags.resolve(token)
        name = token.split("=", 1)[0]
        if resolution.kind == "positional":
            self.stray.append(token)
            self.stray_where = self.stray_where or where
        elif resolution.kind == "ambiguous":
            self._ambiguous(resolution, token, name, where)
        elif not resolution.ok or resolution.flag == "--help":
            self._problem(
                "unknown-flag",
                "block",
                f"{name}: SGLang {self.flags.version} does not accept this flag; the server will "
                "not start",
                f"remove it{_did_you_mean(self.flags, name)}",
                where,
            )
        else:
            self._option(resolution, token, name, where, in_config)
        return True

    def _ambiguous(self, resolution: Resolution, token: str, name: str, where: str) -> None:
        choices = ", ".join(resolution.candidates)
        self._problem(
            "ambiguous-flag",
            "block",
            f"{name}: ambiguous option for SGLang {self.flags.version} (could match {choices}); "
            "the server will not start",
            f"write the full flag name{_did_you_mean(self.flags, name)}",
            where,
        )
        # argparse stops here; to report the rest sensibly, let the ambiguous flag take the values
        # its candidates would all take (`--cuda-graph-max-bs 128` is one mistake, not two).
        arities = {
            _takes_values(self.flags.get(candidate) or {}) for candidate in resolution.candidates
        }
        if "=" not in token and arities and 0 not in arities:
            while self._more_values():
                self.position += 1
                if arities <= {None, "?"}:
                    break

    def _option(
        self, resolution: Resolution, token: str, name: str, where: str, in_config: bool
    ) -> None:
        canonical = (
            resolution.option or resolution.flag or ""
        )  # both set for an exact or prefix match
        info = self.flags.get(canonical) or {}
        values = self._values(resolution, token, name, info, where)
        if values is None:
            return
        bad = next(
            (p for p in (_check_value(self.flags, name, info, v, where) for v in values) if p), None
        )
        if bad is not None:
            self.parsed.problems.append(bad)
            if bad.severity == "block":
                return
        self._note_repeat(resolution.flag or canonical, name, values, where, in_config)
        if info.get("deprecated"):
            instead = self.flags.replacement(canonical)
            fails = bool((info.get("deprecation") or {}).get("fails_launch"))
            self._problem(
                "deprecated-flag",
                "block" if fails else "warn",
                f"{name}: deprecated in SGLang {self.flags.version}"
                + ("; the server will not start" if fails else ""),
                f"use {instead}" if instead else "use its current name",
                where,
            )
        self._set(canonical, info, name, " ".join(values) if values else None, where)

    def _values(
        self, resolution: Resolution, token: str, name: str, info: dict[str, Any], where: str
    ) -> list[str] | None:
        """The option's values as argparse takes them (its nargs); None when argparse would refuse
        them."""
        nargs = _takes_values(info)
        explicit = resolution.value
        if nargs == 0:
            if explicit is None:
                return []
            self._problem(
                "unexpected-value",
                "block",
                f"{token}: {resolution.option} takes no value (argparse: ignored explicit argument "
                f"{explicit!r}); the server will not start",
                f"write {resolution.option} alone",
                where,
            )
            return None
        if explicit is not None:
            return [explicit]
        wanted_min = 1 if nargs in (None, "+") else (0 if nargs in ("?", "*") else int(nargs))
        wanted_max = 1 if nargs in (None, "?") else (10**9 if nargs in ("*", "+") else int(nargs))
        values: list[str] = []
        while len(values) < wanted_max and self._more_values():
            values.append(self.tokens[self.position])
            self.position += 1
        if len(values) >= wanted_min:
            return values
        expected = (
            "one argument"
            if nargs is None
            else ("at least one argument" if nargs == "+" else f"{nargs} arguments")
        )
        self._problem(
            "missing-value",
            "block",
            f"{name}: expects a value (argparse: expected {expected})",
            "give it one",
            where,
        )
        return None

    def _note_repeat(
        self, primary: str, name: str, values: list[str], where: str, in_config: bool
    ) -> None:
        """A flag given twice warns (argparse keeps the last), unless a --config file gave the
        first."""
        written_now = name + ("" if not values else " " + " ".join(values))
        if primary in self.seen and primary not in self.seen_in_config:
            self._problem(
                "repeated-flag",
                "warn",
                f"{primary} given more than once ({self.seen[primary]}, then {written_now}); "
                "argparse keeps the last",
                "give each flag once",
                where,
            )
        self.seen[primary] = written_now
        if in_config:
            self.seen_in_config.add(primary)
        else:
            self.seen_in_config.discard(primary)

    def _set(
        self, canonical: str, info: dict[str, Any], name: str, value: str | None, where: str
    ) -> None:
        entry = self.reverse.get(canonical) or _alias_entry(info, self.reverse)
        if entry is None:
            return
        setting, role, meaning = entry
        if role == "enable":
            self.parsed.settings[setting] = (
                True if meaning is None else str(value).lower() not in table.FALSE_WORDS
            )
        elif role == "disable":
            self.parsed.settings[setting] = False
        else:
            self.parsed.settings[setting] = table.parse_value(
                setting, value if value is not None else ""
            )
        self.parsed.written[setting] = (
            f"{name}"
            + (f" {value}" if value is not None else "")
            + (f" ({where})" if where else "")
        )

    def report_stray(self) -> None:
        if self.stray:
            self._problem(
                "unrecognized-arguments",
                "block",
                f"unrecognized arguments: {' '.join(self.stray)} (SGLang takes no positional "
                "arguments); "
                "the server will not start",
                "remove them, or give them to the flag they belong to (a switch such as "
                "--disable-custom-all-reduce takes no value)",
                self.stray_where or self.default_where,
            )


def _alias_entry(
    info: dict[str, Any], reverse: dict[str, tuple[str, str, Any]]
) -> tuple[str, str, Any] | None:
    """The table entry for a flag written under another of its option names (e.g.
    --tensor-parallel-size)."""
    for option in info.get("options") or []:
        if option in reverse:
            return reverse[option]
    return None


def _did_you_mean(flags: FlagSet, name: str) -> str:
    try:
        suggestions = flags.suggest(name)
    except Exception:  # noqa: BLE001 - a suggestion is a courtesy
        suggestions = None
    if isinstance(suggestions, str):
        suggestions = [suggestions]
    suggestions = [s for s in (suggestions or []) if s != name]
    if not suggestions:
        return ""
    return "; did you mean " + " or ".join(suggestions[:3]) + "?"


_PYTHON_RE = re.compile(r"python(\d+(\.\d+)?)?\Z")
_PYTHON_OPTIONS_WITH_VALUE = ("-X", "-W")
LAUNCHERS = "python -m sglang.launch_server ARGS, sglang serve ARGS, or the SGLang flags alone"


def _not_sglang(tokens: list[str]) -> TopoctlError:
    shown = " ".join(tokens[:3]) + (" ..." if len(tokens) > 3 else "")
    return TopoctlError(
        f"not an SGLang launch (python -m sglang.launch_server / sglang serve ...): {shown}",
        hint="after `--` give [NAME=VALUE...] python -m sglang.launch_server ARGS, "
        "[NAME=VALUE...] sglang serve ARGS, or the SGLang flags alone (--tp-size 8 ...)",
    )


def split_command(tokens: list[str]) -> tuple[dict[str, str], list[str]]:
    """Split a launch command into (env, SGLang args); TopoctlError (exit 2) for a command that is
    not SGLang.

    Accepted: `[env] [NAME=VALUE...] LAUNCHER ARGS` where LAUNCHER is `python -m
    sglang.launch_server` (python, python3, python3.11 or a path to one, interpreter switches such
    as -u before -m) or `sglang serve` (the console script, or a path to it); or the SGLang flags
    alone (first token an option).
    """
    env: dict[str, str] = {}
    position = 0
    if tokens and tokens[0].rsplit("/", 1)[-1] == "env":
        position = 1
    while (
        position < len(tokens)
        and "=" in tokens[position]
        and NAME_RE.match(tokens[position].split("=", 1)[0])
    ):
        name, _, value = tokens[position].partition("=")
        env[name] = value
        position += 1
    rest = tokens[position:]
    if not rest:
        return env, []
    if rest[0].startswith("-"):
        return env, rest
    program = rest[0].rsplit("/", 1)[-1]
    if program == "sglang":
        if len(rest) >= 2 and rest[1] == "serve":
            return env, rest[2:]
        raise _not_sglang(rest)
    if _PYTHON_RE.match(program):
        index = 1
        while (
            index < len(rest)
            and rest[index].startswith("-")
            and rest[index] != "-m"
            and not rest[index].startswith("-m")
        ):
            index += 2 if rest[index] in _PYTHON_OPTIONS_WITH_VALUE else 1
        if index < len(rest):
            module = (
                (rest[index + 1] if index + 1 < len(rest) else None)
                if rest[index] == "-m"
                else rest[index][2:]
                if rest[index].startswith("-m")
                else None
            )
            step = 2 if rest[index] == "-m" else 1
            if module == "sglang.launch_server":
                return env, rest[index + step :]
    raise _not_sglang(rest)


def parse_env_file(path: str, flags_for: FlagsFor) -> ParsedLaunch:
    """A launch.env read into a ParsedLaunch, as `set -a; . ./launch.env` would leave it (the last
    assignment of a name counts); `flags_for(metadata, lines)` gives the FlagSet to read flags with.
    """
    origin, assignments = read_env_file(path)
    if not assignments:
        raise TopoctlError(
            f"{origin}: nothing to check (no NAME=VALUE assignment)",
            hint="write one with `topoctl recommend -o launch.env`; it needs SGLANG_ARGS='...'",
        )
    parsed = ParsedLaunch(origin=origin)
    last: dict[str, tuple[int, str]] = {}
    for number, name, value in assignments:
        if name in last:
            parsed.problems.append(
                Problem(
                    "duplicate-assignment",
                    "warn",
                    f"{name} is assigned on line {last[name][0]} and again on line {number}; the "
                    f"shell keeps the last (line {number}), which is what is checked",
                    f"remove the assignment on line {last[name][0]}",
                    f"{origin}:{number}",
                )
            )
        last[name] = (number, value)
    for name, (number, value) in sorted(last.items(), key=lambda item: item[1][0]):
        parsed.lines[name] = f"{origin}:{number}"
        if name == ARGS_KEY:
            continue
        apply_env(parsed, name, value, f"{origin}:{number}")
    flags = parsed.flags = flags_for(
        parsed.metadata, parsed.lines
    )  # read once: check judges with it too
    if ARGS_KEY not in last:
        parsed.problems.append(
            Problem(
                "args-missing",
                "warn",
                f"{origin} has no {ARGS_KEY}: only environment settings checked",
                f"add {ARGS_KEY}='--tp-size ...' with the SGLang flags to check them too",
                f"{origin}:1",
            )
        )
        return parsed
    number, value = last[ARGS_KEY]
    try:
        from topoctl.core.safe_read import split_words

        tokens = split_words(
            value, f"{origin}:{number}"
        )  # shlex.split, in linear time and within the limits
    except ValueError as exc:
        raise TopoctlError(
            f"{origin}:{number}: {ARGS_KEY} is not a valid argument list: {exc}",
            hint="quote the flags the way a shell would",
        ) from None
    parse_args(tokens, flags, parsed, where=f"{origin}:{number}")
    return parsed
