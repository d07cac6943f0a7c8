"""Shell scripts read with a real shell grammar, never run: the commands a script would start, each
with its words as bash would expand them from what the script itself defines, and the environment it
would export.

The grammar is tree-sitter-bash (the tree-sitter project's bash grammar, MIT, compiled wheels for
CPython 3.9 on, releases through 2025): it parses bash arrays (`ARGS=(...)`, `"${ARGS[@]}"`),
functions, `case`, `[[ ]]`, here-documents and `$((...))` as bash does, and keeps every node's line.
bashlex (GPL-3.0, last release 2023) was tried on the same scripts and stops at the first array
assignment ("unexpected token '('"), which SGLang's own launch scripts use.

What is expanded: variables and arrays assigned in the file (`NAME=v`, `export`, `declare -a`,
`local`, `+=`), `${NAME:-default}`, `${NAME:=default}`, `${NAME:+alt}`, `${#ARR[@]}`, `${ARR[i]}`,
`$((...))` over known integers, functions called in the file (their `$1`, `"$@"` bound to the call's
words, `shift` honoured), and `for` loops over literal lists (each value once). What is not known
here (the script's own `$1`, `$(hostname)`, a variable set outside the file) stays written as it is
(`$1`), and is listed as unknown: a reader names it, never guesses it. Control flow is not decided:
every branch of an `if` or `case` is read, so every launch is found. A function defined and never
called is read once with its arguments unknown.

Layer: deployment reading (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from topoctl.core.errors import TopoctlError

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

_LOOP_VALUES = 16  # a `for` over more literal values runs its body once with the variable unknown
_CALL_DEPTH = 8  # function calls inside function calls
_NEST_DEPTH = 200  # nested statements (subshells in subshells...)
_MAX_COMMANDS = 20_000  # commands one script may yield (calls of calls multiply them)
_IFS = re.compile(r"[ \t\n]+")


@dataclass(frozen=True)
class Word:
    """One word of a command after expansion, with the line (1-based) it was written on."""

    text: str
    line: int
    unknown: tuple[
        str, ...
    ] = ()  # expansions in it whose value the file does not give ("$1", "$(hostname)")


@dataclass
class Command:
    """A simple command the script would run: its prefix assignments as NAME=VALUE words, then its
    words."""

    words: list[Word]
    line: int  # the command's first line in the outermost caller's frame
    first_line: int  # the line the command itself starts on
    last_line: int
    env: dict[str, str] = field(default_factory=dict)  # exported before it
    env_line: dict[str, int] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)


class ShellLimitError(TopoctlError):
    """A script that would expand past a bound (a variable that doubles itself, calls nested too
    deep)."""


@functools.lru_cache(maxsize=1)
def _parser() -> Parser:
    try:
        import tree_sitter
        import tree_sitter_bash
    except ImportError as exc:  # a broken install: said in one line, not a traceback
        raise TopoctlError(
            f"cannot read shell scripts: {exc}",
            hint="reinstall topoctl (it needs tree-sitter and tree-sitter-bash)",
        ) from None
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def _bytes(node: Node | None) -> bytes:
    """The source bytes of a node the grammar always gives (the tree is parsed from bytes, so it has
    them)."""
    if node is None or node.text is None:
        raise TopoctlError(
            "cannot read a shell script: tree-sitter-bash left out a node its grammar has",
            hint="reinstall topoctl (it needs tree-sitter and tree-sitter-bash)",
        )
    return node.text


def _text(node: Node | None) -> str:
    return _bytes(node).decode("utf-8", "replace")


def _line(node: Node) -> int:
    return int(node.start_point[0]) + 1


def _unescape_word(text: str) -> str:
    """An unquoted word's backslash escapes (`\\ ` is a space); a line continuation is no character."""
    return re.sub(r"\\(\n|.)", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _unescape_double(text: str) -> str:
    """Inside double quotes a backslash escapes only $ ` " \\ and a newline."""
    return re.sub(r"\\([$`\"\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _ansi_c(text: str) -> str:
    body = text[2:-1]
    table = {
        "n": "\n",
        "t": "\t",
        "\\": "\\",
        "'": "'",
        '"': '"',
        "e": "\x1b",
        "a": "\a",
        "r": "\r",
    }
    return re.sub(r"\\(.)", lambda m: table.get(m.group(1), "\\" + m.group(1)), body)


# A piece of a word being expanded: (text, split) where split marks an unquoted expansion's result
# (field splitting applies to it); a field is a list of pieces; an expansion gives a list of fields.
Piece = tuple[str, bool]
Fields = list[list[Piece]]


def _join(left: Fields, right: Fields) -> Fields:
    """Concatenation of two expansions: the last field of the left joins the first of the right
    ("a$@b")."""
    if not left:
        return right
    if not right:
        return left
    return left[:-1] + [left[-1] + right[0]] + right[1:]


def _split(field_pieces: list[Piece]) -> list[str]:
    """Field splitting on the unquoted pieces of one field (IFS is space, tab, newline)."""
    words: list[str] = []
    current: str | None = None
    for text, split in field_pieces:
        if not split:
            current = (current or "") + text
            continue
        parts = _IFS.split(text)
        for index, part in enumerate(parts):
            if index > 0 and current is not None:
                words.append(current)
                current = None
            if part:
                current = (current or "") + part
    if current is not None:
        words.append(current)
    return words


_ARITH_OK = re.compile(r"[0-9+\-*/%() \t<>=!&|]*\Z")


def _arith(expression: str, lookup: Callable[[str], str | None]) -> str | None:
    """`$((...))` when every name in it is a known integer: + - * / % and parentheses, as integers."""
    import ast

    def name_value(match: re.Match[str]) -> str:
        value = lookup(match.group(1) or match.group(2))
        return (
            value.strip() if value is not None and re.fullmatch(r"\s*-?\d+\s*", value) else "\x00"
        )

    text = re.sub(
        r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?|\b([A-Za-z_][A-Za-z0-9_]*)\b", name_value, expression
    )
    if "\x00" in text or not _ARITH_OK.match(text) or len(text) > 200:
        return None
    try:
        tree = ast.parse(text.strip().replace("/", "//").replace("////", "//"), mode="eval")
    except SyntaxError:
        return None
    allowed = (
        ast.Expression,
        ast.BinOp,
        ast.UnaryOp,
        ast.Constant,
        ast.Add,
        ast.Sub,
        ast.Mult,
        ast.FloorDiv,
        ast.Mod,
        ast.USub,
        ast.UAdd,
    )
    if not all(isinstance(node, allowed) for node in ast.walk(tree)):
        return None
    try:
        value = eval(compile(tree, "<arith>", "eval"), {"__builtins__": {}})  # noqa: S307 - only int arithmetic nodes
    except (ZeroDivisionError, OverflowError, ValueError):
        return None
    return str(value) if isinstance(value, int) and abs(value) < 10**18 else None


class _Frame:
    """A function call's positional parameters (None: the script's own, unknown here)."""

    def __init__(
        self, positional: list[Word] | None, call_line: int | None, name: str = ""
    ) -> None:
        self.positional = positional
        self.call_line = call_line
        self.name = name


class _Reader:
    def __init__(
        self, origin: str, line_offset: int, max_chars: int, inherit_env: dict[str, str] | None
    ) -> None:
        self.origin = origin
        self.offset = line_offset
        self.max_chars = max_chars
        self.chars = 0
        self.variables: dict[str, list[str]] = {
            name: [value] for name, value in (inherit_env or {}).items()
        }
        self.exported: dict[str, int] = {name: 0 for name in (inherit_env or {})}
        self.auto_export = False
        self.variable_unknown: dict[
            str, tuple[str, ...]
        ] = {}  # what a variable's value holds unexpanded
        self.functions: dict[str, Node] = {}
        self.called: set[str] = set()
        self.frames: list[_Frame] = [_Frame(None, None)]
        self.commands: list[Command] = []
        self.depth = 0
        self.unknown: list[str] = []  # unknowns met while expanding the current command

    # -------------------------------------------------------------------------------------------
    # bounds

    def _count(self, text: str, line: int) -> None:
        self.chars += len(text)
        if self.chars > self.max_chars:
            raise ShellLimitError(
                f"{self.origin}:{line}: the script's variable expansions exceed "
                f"{self.max_chars:,} characters (a variable that doubles itself?)",
                hint="write the value in full, or check the launch as it is run",
            )

    # -------------------------------------------------------------------------------------------
    # values

    def lookup(self, name: str) -> list[str] | None:
        """A variable's values, or a positional parameter of the current call; None when not known
        here."""
        if name.isdigit():
            frame = self.frames[-1]
            if frame.positional is None:
                return None
            index = int(name)
            if index == 0:
                return None
            if index > len(frame.positional):
                return [""]
            self.unknown.extend(frame.positional[index - 1].unknown)
            return [frame.positional[index - 1].text]
        if name in self.variables:
            self.unknown.extend(self.variable_unknown.get(name, ()))
        return self.variables.get(name)

    def _scalar(self, name: str) -> str | None:
        values = self.lookup(name)
        return None if values is None else (values[0] if values else "")

    def _unknown(self, written: str) -> Fields:
        self.unknown.append(written)
        return [[(written, False)]]

    def _positional_fields(self, written: str, quoted: bool, star: bool) -> Fields:
        frame = self.frames[-1]
        if frame.positional is None:
            return self._unknown(written)
        texts = [word.text for word in frame.positional]
        for word in frame.positional:
            self.unknown.extend(word.unknown)
        if star and quoted:
            return [[(" ".join(texts), False)]]
        return [[(text, not quoted)] for text in texts]

    def _values_fields(self, values: list[str], quoted: bool, whole: bool) -> Fields:
        if whole and quoted:
            return [[(value, False)] for value in values]
        return [[(" ".join(values), not quoted)]] if values else ([[("", False)]] if quoted else [])

    def expand_parameter(self, node: Node, quoted: bool) -> Fields:
        written = _text(node)
        if node.type == "simple_expansion":
            name_node = node.named_children[0] if node.named_children else None
            name = _text(name_node) if name_node is not None else ""
            if name in ("@", "*"):
                return self._positional_fields(written, quoted, name == "*")
            values = (
                self.lookup(name) if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]", name) else None
            )
            if values is None:
                return self._unknown(written)
            return self._values_fields(values[:1], quoted or self._opaque(name), False)
        return self._expansion(node, written, quoted)

    def _expansion(self, node: Node, written: str, quoted: bool) -> Fields:
        """`${...}`: a name, an array element or all of them, a length, or a default/alternative."""
        children = node.children
        operator = ""
        name = ""
        index: str | None = None
        operand: list[Node] | None = None
        length = False
        for position, child in enumerate(children):
            field_name = node.field_name_for_child(position)
            if child.type == "#" and not name:
                length = True
            elif child.type in ("variable_name", "special_variable_name") and not name:
                name = _text(child)
            elif child.type == "subscript":
                name = _text(child.child_by_field_name("name"))
                index = _text(child.child_by_field_name("index"))
            elif field_name == "operator":
                operator = _text(child)
            elif operator and child.type != "}":
                operand = (operand or []) + [child]
        if not name:
            return self._unknown(written)
        if name in ("@", "*") and not operator and not length:
            return self._positional_fields(written, quoted, name == "*")
        values = self.lookup(name) if not (name.isdigit() and len(name) > 1) else None
        if index is not None and values is not None and index not in ("@", "*"):
            resolved = _arith(index, self._scalar) if not index.isdigit() else index
            values = (
                None
                if resolved is None
                else ([values[int(resolved)]] if 0 <= int(resolved) < len(values) else [""])
            )
        if length:
            if values is None or operator:
                return self._unknown(written)
            count = len(values) if index in ("@", "*") else len(values[0] if values else "")
            return [[(str(count), False)]]
        if operator in (":-", "-", ":=", "=", ":+", "+", ":?", "?"):
            return self._default(name, values, operator, operand, written, quoted)
        if operator:  # ${V%pattern}, ${V/a/b}, ${V:1:2}...: not worked out here
            return self._unknown(written)
        if values is None:
            return self._unknown(written)
        return self._values_fields(
            values if index in ("@", "*") else values[:1],
            quoted or self._opaque(name),
            index == "@",
        )

    def _opaque(self, name: str) -> bool:
        """A value holding something unknown (`$(hostname)`) stays one word: how it would split is
        not known."""
        if name.isdigit():
            frame = self.frames[-1]
            index = int(name)
            return bool(
                frame.positional
                and 0 < index <= len(frame.positional)
                and frame.positional[index - 1].unknown
            )
        return bool(self.variable_unknown.get(name))

    def _default(
        self,
        name: str,
        values: list[str] | None,
        operator: str,
        operand: list[Node] | None,
        written: str,
        quoted: bool,
    ) -> Fields:
        empty_counts = operator.startswith(":")
        is_set = values is not None and (not empty_counts or any(values))
        if operator.lstrip(":") == "+":
            if values is None:
                return self._unknown(written)
            return self.expand(operand, quoted) if is_set and operand is not None else []
        if operator.lstrip(":") == "?":
            return (
                self._values_fields(values[:1], quoted, False)
                if is_set and values is not None
                else self._unknown(written)
            )
        if is_set and values is not None:
            return self._values_fields(values[:1], quoted, False)
        default = self.expand(operand, quoted) if operand is not None else [[("", False)]]
        if operator.lstrip(":") == "=" and not name.isdigit():
            self.variables[name] = [
                " ".join(_split(f)) if not quoted else "".join(t for t, _ in f) for f in default
            ][:1]
        return default

    def expand(self, node: Node | list[Node], quoted: bool = False) -> Fields:
        """The fields one word node gives, before field splitting of its unquoted expansion pieces."""
        if isinstance(node, list):  # the operand of ${V:-...}: its parts, joined
            out_parts: Fields = []
            for part in node:
                out_parts = _join(out_parts, self.expand(part, quoted))
            return out_parts
        kind = node.type
        if kind == "command_name":
            return self.expand(node.named_children[0], quoted) if node.named_children else []
        if kind in ("word", "number", "extglob_pattern", "variable_name", "regex"):
            return [[(_unescape_word(_text(node)), False)]]
        if kind == "raw_string":
            return [[(_text(node)[1:-1], False)]]
        if kind == "ansi_c_string":
            return [[(_ansi_c(_text(node)), False)]]
        if kind in ("string", "translated_string"):
            return self._string(node)
        if kind == "string_content":
            return [[(_unescape_double(_text(node)), False)]]
        if kind == "concatenation":
            out: Fields = []
            for child in node.children:
                out = _join(out, self.expand(child, quoted))
            return out
        if kind in ("simple_expansion", "expansion"):
            return self.expand_parameter(node, quoted)
        if kind == "arithmetic_expansion":
            value = _arith(_text(node)[3:-2], self._scalar)
            return [[(value, False)]] if value is not None else self._unknown(_text(node))
        if kind == "array":
            out = []
            for child in node.named_children:
                out.extend(self.expand(child))
            return out
        return self._unknown(
            _text(node)
        )  # $(...), `...`, <(...): what they print is not known here

    def _string(self, node: Node) -> Fields:
        inner = [child for child in node.children if child.type != '"']
        if (
            len(inner) == 1
            and inner[0].type in ("simple_expansion", "expansion")
            and node.end_byte - node.start_byte == inner[0].end_byte - inner[0].start_byte + 2
        ):
            return self.expand(
                inner[0], quoted=True
            )  # "${ARR[@]}" of an empty array is no word at all
        out: Fields = [[("", False)]]
        last_end = None
        for child in node.children:
            if child.type == '"':
                last_end = child.end_byte if last_end is None else last_end
                continue
            if (
                last_end is not None and child.start_byte > last_end
            ):  # whitespace the grammar leaves out
                gap = _bytes(node)[last_end - node.start_byte : child.start_byte - node.start_byte]
                out = _join(out, [[(_unescape_double(gap.decode("utf-8", "replace")), False)]])
            out = _join(
                out,
                self.expand(child, quoted=True)
                if child.type != "string_content"
                else [[(_unescape_double(_text(child)), False)]],
            )
            last_end = child.end_byte
        end = node.end_byte - 1
        if last_end is not None and end > last_end:
            gap = _bytes(node)[last_end - node.start_byte : end - node.start_byte]
            out = _join(out, [[(_unescape_double(gap.decode("utf-8", "replace")), False)]])
        return out

    def words(self, node: Node, line: int | None = None) -> list[Word]:
        """The words of one argument node after field splitting, each on the line it came from."""
        before = len(self.unknown)
        fields = self.expand(node)
        unknown = tuple(self.unknown[before:])
        at = (_line(node) if line is None else line) + self.offset
        out = []
        for field_pieces in fields:
            positional = self._positional_words(node, field_pieces)
            for text in _split(field_pieces):
                self._count(text, at)
                out.append(Word(text, positional or at, tuple(u for u in unknown if u in text)))
        return out

    def _positional_words(self, node: Node, field_pieces: list[Piece]) -> int | None:
        """A word that is exactly a call's argument keeps the caller's line (`"$1"`, `"$@"`)."""
        frame = self.frames[-1]
        if frame.positional is None or node.type not in ("string", "simple_expansion", "expansion"):
            return None
        text = "".join(t for t, _ in field_pieces)
        for word in frame.positional:
            if word.text == text:
                return word.line
        return None

    # -------------------------------------------------------------------------------------------
    # statements

    def walk(self, node: Node) -> None:
        self.depth += 1
        if self.depth > _NEST_DEPTH:
            raise ShellLimitError(
                f"{self.origin}:{_line(node) + self.offset}: statements nested more than "
                f"{_NEST_DEPTH} deep",
                hint="write the launch command directly",
            )
        try:
            handler = _HANDLERS.get(node.type)
            if handler is not None:
                handler(self, node)
            elif node.type not in (
                "comment",
                "test_command",
                "heredoc_body",
                "heredoc_start",
                "heredoc_end",
                "file_redirect",
                "heredoc_redirect",
                "herestring_redirect",
            ):
                for child in node.named_children:
                    self.walk(child)
        finally:
            self.depth -= 1

    def assign(self, node: Node, export: bool = False, local: bool = False) -> None:
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        if name_node is None:
            return
        if name_node.type == "subscript":  # ARR[2]=x: the array is not followed element by element
            self.variables.pop(_text(name_node.child_by_field_name("name")), None)
            return
        name = _text(name_node)
        appending = any(child.type == "+=" for child in node.children)
        before = len(self.unknown)
        if value_node is None:
            values: list[str] = [""]
        elif value_node.type == "array":
            values = [
                word.text for child in value_node.named_children for word in self.words(child)
            ]
        else:  # a scalar assignment is not field-split
            fields = self.expand(value_node, quoted=True)
            values = ["".join(text for field_pieces in fields for text, _ in field_pieces)]
            self._count(values[0], _line(node) + self.offset)
        if appending:
            previous = self.variables.get(name) or []
            values = (
                previous + values
                if value_node is not None and value_node.type == "array"
                else [(previous[0] if previous else "") + values[0]]
            )
        unknown = tuple(dict.fromkeys(self.unknown[before:]))
        del self.unknown[before:]
        self.variables[name] = values
        self.variable_unknown[name] = unknown + (
            self.variable_unknown.get(name, ()) if appending else ()
        )
        if export or self.auto_export or name in self.exported:
            self.exported[name] = _line(node)

    def command(self, node: Node) -> None:
        name_node = node.child_by_field_name("name")
        prefix = [child for child in node.named_children if child.type == "variable_assignment"]
        if name_node is None:  # assignments alone
            for child in prefix:
                self.assign(child)
            return
        self.unknown = []
        words = self.words(name_node)
        for child in node.children_by_field_name("argument"):
            words.extend(self.words(child))
        if not words:
            return
        program = words[0].text
        if self._builtin(program, words, node):
            return
        if program in self.functions:
            if len(self.frames) <= _CALL_DEPTH and all(
                frame.name != program for frame in self.frames
            ):
                self.call(program, words[1:], _line(node))
            return  # a call past the depth, or a function calling itself: read once already
        env_words = []
        for child in prefix:
            name = _text(child.child_by_field_name("name"))
            value = child.child_by_field_name("value")
            text = (
                ""
                if value is None
                else "".join(t for f in self.expand(value, quoted=True) for t, _ in f)
            )
            env_words.append(Word(f"{name}={text}", _line(child) + self.offset))
        self.emit(env_words + words, node)

    def emit(self, words: list[Word], node: Node) -> None:
        if len(self.commands) >= _MAX_COMMANDS:
            raise ShellLimitError(
                f"{self.origin}: more than {_MAX_COMMANDS:,} commands once functions are called",
                hint="check the launch as it is run",
            )
        outer = next(
            (frame.call_line for frame in self.frames if frame.call_line is not None), None
        )
        env = {
            name: self._scalar(name) or ""
            for name in self.exported
            if self.lookup(name) is not None
        }
        self.commands.append(
            Command(
                words,
                (outer or _line(node)) + self.offset,
                _line(node) + self.offset,
                int(node.end_point[0]) + 1 + self.offset,
                env,
                {
                    name: line + self.offset if line else 0
                    for name, line in self.exported.items()
                    if name in env
                },
                list(dict.fromkeys(self.unknown)),
            )
        )

    def _builtin(self, program: str, words: list[Word], node: Node) -> bool:
        args = [word.text for word in words[1:]]
        if program == "set":
            for arg in args:
                if arg in ("-a", "-o") or (
                    arg.startswith("-") and "a" in arg and not arg.startswith("--")
                ):
                    self.auto_export = self.auto_export or arg != "-o" or "allexport" in args
                elif arg.startswith("+") and "a" in arg:
                    self.auto_export = False
            if args[:2] == ["+o", "allexport"]:
                self.auto_export = False
            return True
        if program == "shift":
            frame = self.frames[-1]
            if frame.positional is not None:
                count = int(args[0]) if args and args[0].isdigit() else 1
                frame.positional = frame.positional[count:]
            return True
        if program == "unset":
            for arg in args:
                self.variables.pop(arg, None)
                self.exported.pop(arg, None)
            return True
        return program in (
            "echo",
            "printf",
            "cd",
            "sleep",
            "mkdir",
            "cat",
            "true",
            ":",
            "wait",
            "trap",
            "source",
            ".",
            "return",
            "exit",
            "read",
            "ulimit",
            "umask",
            "pushd",
            "popd",
            "test",
            "[",
        )

    def call(self, name: str, arguments: list[Word], line: int) -> None:
        self.called.add(name)
        outer = next(
            (frame.call_line for frame in self.frames if frame.call_line is not None), None
        )
        self.frames.append(_Frame(list(arguments), outer or line, name))
        saved_unknown = self.unknown
        try:
            self.walk(self.functions[name])
        finally:
            self.frames.pop()
            self.unknown = saved_unknown

    def declaration(self, node: Node) -> None:
        keyword = _text(node.children[0]) if node.children else ""
        options = [_text(child) for child in node.named_children if child.type == "word"]
        export = keyword == "export" or any(
            option.startswith("-") and "x" in option for option in options
        )
        for child in node.named_children:
            if child.type == "variable_assignment":
                self.assign(child, export=export, local=keyword == "local")
            elif child.type == "variable_name":
                name = _text(child)
                if export:
                    self.exported[name] = _line(child)
                elif keyword == "local":
                    self.variables[name] = [""]

    def loop(self, node: Node) -> None:
        variable = node.child_by_field_name("variable")
        values = node.children_by_field_name("value")
        body = node.child_by_field_name("body")
        if body is None:
            return
        name = _text(variable) if variable is not None else ""
        self.unknown = []
        items = [word.text for value in values for word in self.words(value)] if values else None
        if items is None or self.unknown or len(items) > _LOOP_VALUES or not name:
            if name:
                self.variables.pop(name, None)  # unknown inside the body: `$name` stays written
            self.walk(body)
            return
        for item in items:
            self.variables[name] = [item]
            self.walk(body)

    def unset(self, node: Node) -> None:
        for child in node.named_children:
            self.variables.pop(_text(child), None)
            self.exported.pop(_text(child), None)

    def define(self, node: Node) -> None:
        name = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name is not None and body is not None:
            self.functions[_text(name)] = body

    def finish(self) -> None:
        """Functions never called in the file are read once, their arguments unknown (a launch is
        still found)."""
        for name, body in list(self.functions.items()):
            if name not in self.called:
                self.called.add(name)
                self.frames.append(_Frame(None, None, name))
                try:
                    self.walk(body)
                finally:
                    self.frames.pop()


_HANDLERS: dict[str, Callable[[_Reader, Node], None]] = {
    "command": _Reader.command,
    "variable_assignment": _Reader.assign,
    "declaration_command": _Reader.declaration,
    "function_definition": _Reader.define,
    "for_statement": _Reader.loop,
    "unset_command": _Reader.unset,
}


def commands(
    text: str,
    *,
    origin: str,
    line_offset: int = 0,
    max_chars: int = 10**8,
    inherit_env: dict[str, str] | None = None,
) -> list[Command]:
    """Every simple command of a script in the order a reader meets them (functions at their calls),
    expanded from what the script defines; ShellLimitError past the bounds."""
    tree = _parser().parse(text.encode("utf-8", "surrogateescape"))
    reader = _Reader(origin, line_offset, max_chars, inherit_env)
    reader.walk(tree.root_node)
    reader.finish()
    return reader.commands
