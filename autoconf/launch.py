"""Reading a launch without running it: launch.env files and `python -m sglang.launch_server ...` commands.

launch.env is parsed, never sourced: each line is blank, a `# comment`, or `[export ]NAME=VALUE` where
VALUE uses sh quoting ('single', "double" without expansions, or bare words without shell
metacharacters). Anything a shell would expand or run ($, backticks, ;, |, &, redirections) is
rejected with its line number, because its meaning depends on running it.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from topoctl.autoconf import settings as table
from topoctl.errors import TopoctlError

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
BARE_FORBIDDEN = set("$`;|&<>()\\\"'*?[]{}!~")
ARGS_KEY = "SGLANG_ARGS"


def parse_env_text(text: str, origin: str) -> list[tuple[int, str, str]]:
    """(line number, NAME, value) for each assignment; TopoctlError (exit 2) on anything else."""
    out: list[tuple[int, str, str]] = []
    position, line, length = 0, 1, len(text)

    def fail(at_line: int, why: str) -> None:
        raise TopoctlError(f"{origin}:{at_line}: {why}",
                           hint="launch.env lines are NAME='value' (sh quoting, no expansions or commands)")

    while position < length:
        # Skip blank space and whole-line comments.
        char = text[position]
        if char == "\n":
            line += 1
            position += 1
            continue
        if char in " \t\r":
            position += 1
            continue
        if char == "#":
            end = text.find("\n", position)
            position = length if end < 0 else end
            continue
        start_line = line
        match = re.compile(r"(export[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)=").match(text, position)
        if not match:
            bad = text[position:text.find("\n", position) if "\n" in text[position:] else length]
            fail(start_line, f"not a NAME=VALUE assignment: {bad.strip()[:60]!r}")
        name = match.group(2)
        position = match.end()
        value: list[str] = []
        while position < length and text[position] not in " \t\n#":
            char = text[position]
            if char == "'":
                end = text.find("'", position + 1)
                if end < 0:
                    fail(start_line, "unterminated single quote")
                chunk = text[position + 1:end]
                line += chunk.count("\n")
                value.append(chunk)
                position = end + 1
            elif char == '"':
                position += 1
                while True:
                    if position >= length:
                        fail(start_line, "unterminated double quote")
                    char = text[position]
                    if char == '"':
                        position += 1
                        break
                    if char in "$`":
                        fail(line, f"{char!r} inside double quotes would be expanded by the shell; use single quotes")
                    if char == "\\":
                        following = text[position + 1:position + 2]
                        if following in ('"', "\\", "$", "`"):
                            value.append(following)
                            position += 2
                            continue
                        if following == "\n":
                            line += 1
                            position += 2
                            continue
                    if char == "\n":
                        line += 1
                    value.append(char)
                    position += 1
            elif char == "\\":
                following = text[position + 1:position + 2]
                if following == "\n" or following == "":
                    fail(line, "line continuation is not supported in launch.env")
                value.append(following)
                position += 2
            elif char in BARE_FORBIDDEN:
                fail(line, f"unquoted {char!r}: the shell would interpret it; quote the value with single quotes")
            else:
                value.append(char)
                position += 1
        # After the value: only blanks and an optional comment may follow on the line.
        while position < length and text[position] in " \t\r":
            position += 1
        if position < length and text[position] not in "\n#":
            fail(line, "more than one word after '=' (a shell would run it as a command); quote the value")
        if position < length and text[position] == "#":
            end = text.find("\n", position)
            position = length if end < 0 else end
        out.append((start_line, name, "".join(value)))
    return out


def read_env_file(path: str) -> tuple[str, list[tuple[int, str, str]]]:
    if path == "-":
        import sys

        return "<stdin>", parse_env_text(sys.stdin.read(), "<stdin>")
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise TopoctlError(f"no such file: {path}", hint="write one with `topoctl recommend -o launch.env`") from None
    except IsADirectoryError:
        raise TopoctlError(f"{path} is a folder, not a launch.env", hint="pass the file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TopoctlError(f"cannot read {path}: {exc}", hint="check the path and its permissions") from None
    return path, parse_env_text(text, path)


@dataclass
class Problem:
    """Something wrong with a launch that is not a rule's finding (flags SGLang will not accept...)."""

    code: str
    severity: str  # block | warn | info
    message: str
    remediation: str = ""
    where: str = ""


@dataclass
class ParsedLaunch:
    """A launch understood as SGLang would understand it: logical settings plus what could not be."""

    settings: dict[str, Any] = field(default_factory=dict)
    written: dict[str, str] = field(default_factory=dict)  # setting -> how it was written (flag or env)
    env: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)  # TOPOCTL_* from launch.env
    problems: list[Problem] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    origin: str = ""


def apply_env(parsed: ParsedLaunch, name: str, value: str, where: str) -> None:
    envs = table.env_names()
    if name.startswith("TOPOCTL_"):
        parsed.metadata[name] = value
        return
    parsed.env[name] = value
    setting = envs.get(name) or f"env:{name}"
    spec = table.specs().get(setting, {"kind": "str"})
    parsed.settings[setting] = table.parse_value(setting, value) if spec.get("kind") == "bool" else value
    parsed.written[setting] = f"{name}={value} ({where})" if where else f"{name}={value}"


def parse_args(tokens: list[str], flags: Any, parsed: ParsedLaunch | None = None, where: str = "") -> ParsedLaunch:
    """Map SGLang flags back to logical settings for the version of `flags`."""
    parsed = parsed or ParsedLaunch()
    reverse = table.reverse_map()
    position = 0
    given_spec: set[str] = set()
    while position < len(tokens):
        token = tokens[position]
        position += 1
        if not token.startswith("--") or token == "--":
            if token.startswith("-") and token not in ("-", "--"):
                parsed.problems.append(Problem("unknown-flag", "block", f"{token}: SGLang does not accept short options here",
                                               "use the long flag names", where))
            continue
        resolution = flags.resolve(token)
        name = token.split("=", 1)[0]
        if resolution.kind == "ambiguous":
            choices = ", ".join(resolution.candidates)
            parsed.problems.append(Problem(
                "ambiguous-flag", "block",
                f"{name}: ambiguous option for SGLang {flags.version} (could match {choices}); the server will not start",
                f"write the full flag name{_did_you_mean(flags, name)}", where))
            continue
        if not resolution.ok or resolution.flag == "--help":
            parsed.problems.append(Problem(
                "unknown-flag", "block",
                f"{name}: SGLang {flags.version} does not accept this flag; the server will not start",
                f"remove it{_did_you_mean(flags, name)}", where))
            continue
        canonical = resolution.option or resolution.flag
        info = flags.get(canonical) or {}
        value = resolution.value
        if info.get("takes_value") and value is None:
            nargs = info.get("nargs")
            if nargs in ("+", "*"):
                values = []
                while position < len(tokens) and not tokens[position].startswith("--"):
                    values.append(tokens[position])
                    position += 1
                value = " ".join(values)
            elif position < len(tokens) and not (tokens[position].startswith("--") and len(tokens[position]) > 2):
                value = tokens[position]
                position += 1
            else:
                parsed.problems.append(Problem("missing-value", "block", f"{name}: expects a value",
                                               "give it one", where))
                continue
        if flags.is_deprecated(canonical):
            instead = flags.replacement(canonical)
            parsed.problems.append(Problem(
                "deprecated-flag", "warn", f"{name}: deprecated in SGLang {flags.version}",
                f"use {instead}" if instead else "use its current name", where))
        entry = reverse.get(canonical) or _alias_entry(info, reverse)
        if entry is None:
            continue
        setting, role, meaning = entry
        if role == "enable":
            parsed.settings[setting] = True if meaning is None else str(value).lower() not in table.FALSE_WORDS
        elif role == "disable":
            parsed.settings[setting] = False
        else:
            parsed.settings[setting] = table.parse_value(setting, value if value is not None else "")
        parsed.written[setting] = f"{name}" + (f" {value}" if value is not None else "") + (f" ({where})" if where else "")
        if setting in table.table()["speculative_group"]:
            given_spec.add(setting)
    group = table.table()["speculative_group"]
    if given_spec and len(given_spec) < len(group):
        missing = [s for s in group if s not in given_spec]
        parsed.problems.append(Problem(
            "speculative-partial", "block",
            "speculative parameters given partly: " + ", ".join(sorted(given_spec)) + " without " + ", ".join(missing),
            "give --speculative-num-steps, --speculative-eagle-topk and --speculative-num-draft-tokens together, or none",
            where))
    parsed.args.extend(tokens)
    return parsed


def _alias_entry(info: dict[str, Any], reverse: dict[str, tuple[str, str, Any]]) -> tuple[str, str, Any] | None:
    """The table entry for a flag written under another of its option names (e.g. --tensor-parallel-size)."""
    for option in info.get("options") or []:
        if option in reverse:
            return reverse[option]
    return None


def _did_you_mean(flags: Any, name: str) -> str:
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


def split_command(tokens: list[str]) -> tuple[dict[str, str], list[str]]:
    """Split `[env] [NAME=VALUE...] python -m sglang.launch_server ARGS` into (env, SGLang args)."""
    env: dict[str, str] = {}
    position = 0
    if tokens and tokens[0] == "env":
        position = 1
    while position < len(tokens) and "=" in tokens[position] and NAME_RE.match(tokens[position].split("=", 1)[0]):
        name, _, value = tokens[position].partition("=")
        env[name] = value
        position += 1
    rest = tokens[position:]
    for index, token in enumerate(rest):
        if token == "-m" and index + 1 < len(rest):
            return env, rest[index + 2:]
    if rest and rest[0].startswith("-"):
        return env, rest
    if len(rest) >= 2 and rest[0].rsplit("/", 1)[-1] == "sglang" and rest[1] in ("serve", "launch_server"):
        return env, rest[2:]
    for index, token in enumerate(rest):
        if token.startswith("--"):
            return env, rest[index:]
    return env, []


def parse_env_file(path: str, flags_for: Any) -> ParsedLaunch:
    """A launch.env read into a ParsedLaunch; `flags_for(metadata)` gives the FlagSet to read flags with."""
    origin, assignments = read_env_file(path)
    parsed = ParsedLaunch(origin=origin)
    args_line = None
    for number, name, value in assignments:
        if name == ARGS_KEY:
            args_line = (number, value)
            continue
        apply_env(parsed, name, value, f"{origin}:{number}")
    flags = flags_for(parsed.metadata)
    if args_line is not None:
        number, value = args_line
        try:
            tokens = shlex.split(value)
        except ValueError as exc:
            raise TopoctlError(f"{origin}:{number}: {ARGS_KEY} is not a valid argument list: {exc}",
                               hint="quote the flags the way a shell would") from None
        parse_args(tokens, flags, parsed, where=f"{origin}:{number}")
    return parsed
