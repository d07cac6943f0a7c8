"""Reformat the tree to lines of at most 100 characters, and prove that nothing a program sees changed.

Per file: rewrap `#` comment blocks and docstring prose paragraphs, move a trailing comment that pushes its
line over the limit onto its own line above, split long string literals inside brackets into implicit
concatenations at spaces, and run `ruff format`; repeated until the text stops changing. A file is written
only if its AST (implicit concatenations joined, docstring prose paragraphs compared word by word, every
other docstring paragraph exactly) and the words of its comments are equal before and after.

    .venv/bin/python scripts/reformat_100.py            # the whole tracked tree
    .venv/bin/python scripts/reformat_100.py --check    # change nothing; exit 1 if a file would change
    .venv/bin/python scripts/reformat_100.py PATH ...   # only these files

It prints, per folder, how many lines are still over the limit (long words, URLs, tables, code ruff keeps).
"""

from __future__ import annotations

import argparse
import ast
import inspect
import io
import re
import subprocess
import sys
import time
import tokenize
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

LIMIT = 100
ROOT = Path(__file__).resolve().parent.parent
RUFF = str(Path(sys.executable).with_name("ruff"))
# A comment that a tool reads where it stands: never moved, rewrapped or merged with its neighbours.
PRAGMA = re.compile(
    r"#\s*(noqa|type:|pragma|fmt:|isort:|pyright:|mypy:|nosec|pylint:|ruff:|-\*-)|^#!"
)
BULLET = re.compile(r"(?:[-*+\u2022]|\d+[.)]) ")
# A docstring line that is not prose: click's no-rewrap mark, a bullet, a doctest, a table row, a
# layer tag.
STRUCTURED = re.compile(r"(?:\\b|\x08|[-*+\u2022] |\d+[.)] |>>>|\||Layer:)")


def _tokens(src: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(src).readline))


def _fill(words: list[str], first_prefix: str, prefix: str, width: int = LIMIT) -> list[str]:
    """Greedy fill: a word longer than the room left goes on a line of its own, never broken."""
    lines: list[str] = []
    line = first_prefix
    bare = True
    for word in words:
        if not bare and len(line) + 1 + len(word) > width:
            lines.append(line)
            line, bare = prefix, True
        line = line + word if bare else f"{line} {word}"
        bare = False
    lines.append(line)
    return lines


# ---------------------------------------------------------------- comments


def _comment_only_lines(src: str) -> dict[int, str]:
    """Line index -> text of every line that holds nothing but a comment (not a pragma)."""
    out: dict[int, str] = {}
    lines = src.splitlines()
    for tok in _tokens(src):
        if tok.type == tokenize.COMMENT and lines[tok.start[0] - 1][: tok.start[1]].strip() == "":
            if not PRAGMA.search(tok.string):
                out[tok.start[0] - 1] = lines[tok.start[0] - 1]
    return out


def _comment_paragraphs(
    lines: list[str], comment_at: dict[int, str]
) -> Iterator[tuple[int, int, str, int, int]]:
    """(first, end, indent, lead, hang) of each run of comment lines that read as one paragraph."""
    i = 0
    while i < len(lines):
        if i not in comment_at:
            i += 1
            continue
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
        body = lines[i].lstrip()[1:]
        lead = len(body) - len(body.lstrip(" "))
        text = body.lstrip(" ")
        bullet = BULLET.match(text)
        hang = lead + (len(bullet.group(0)) if bullet else 0)
        j = i + 1
        while j in comment_at and text and lead <= 1:
            nxt = lines[j]
            nbody = nxt.lstrip()[1:]
            nlead = len(nbody) - len(nbody.lstrip(" "))
            ntext = nbody.lstrip(" ")
            same_indent = nxt[: len(nxt) - len(nxt.lstrip())] == indent
            if (
                not same_indent
                or not ntext
                or nlead != hang
                or BULLET.match(ntext)
                or "  " in ntext
            ):
                break
            j += 1
        yield i, j, indent, lead, hang
        i = j


def wrap_comments(src: str) -> str:
    """Rewrap full-line comment paragraphs that have a line over the limit; preformatted lines stay."""
    lines = src.splitlines()
    comment_at = _comment_only_lines(src)
    out: list[str] = []
    last = 0
    for first, end, indent, lead, hang in _comment_paragraphs(lines, comment_at):
        block = lines[first:end]
        body = block[0].lstrip()[1:].lstrip(" ")
        if (
            lead > 1
            or not body
            or all(len(line) <= LIMIT for line in block)
            or "  " in body.rstrip()
        ):
            continue
        words = " ".join(line.lstrip()[1:].strip() for line in block).split(" ")
        out.extend(lines[last:first])
        first_prefix = indent + "#" + " " * lead
        out.extend(_fill(words, first_prefix, indent + "#" + " " * hang))
        last = end
    out.extend(lines[last:])
    return "\n".join(out) + "\n"


def lift_trailing_comments(src: str) -> str:
    """A trailing comment that pushes its line over the limit moves onto its own line above that
    line."""
    lines = src.splitlines()
    starts_here: set[int] = set()
    moves: dict[int, str] = {}
    for tok in _tokens(src):
        if tok.type not in (
            tokenize.NL,
            tokenize.NEWLINE,
            tokenize.INDENT,
            tokenize.DEDENT,
            tokenize.COMMENT,
        ):
            starts_here.add(tok.start[0] - 1)
        if tok.type != tokenize.COMMENT or PRAGMA.search(tok.string):
            continue
        row = tok.start[0] - 1
        code = lines[row][: tok.start[1]]
        if code.strip() and len(lines[row]) > LIMIT:
            moves[row] = tok.string
    out: list[str] = []
    for row, line in enumerate(lines):
        comment = moves.get(row)
        first_token_here = line.strip() and line.lstrip()[0] != "#" and row in starts_here
        after_backslash = row > 0 and lines[row - 1].endswith("\\")
        if comment and first_token_here and not after_backslash and _line_begins_fresh(src, row):
            indent = line[: len(line) - len(line.lstrip())]
            out.append(indent + comment)
            out.append(line[: line.rindex(comment)].rstrip())
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def _line_begins_fresh(src: str, row: int) -> bool:
    """No token (a multi-line string) runs into this line from the one before."""
    return all(
        not (tok.start[0] - 1 < row <= tok.end[0] - 1)
        for tok in _tokens(src)
        if tok.type == tokenize.STRING
    )


# ---------------------------------------------------------------- docstrings


def _docstring_nodes(tree: ast.Module) -> Iterator[ast.Constant]:
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
        ):
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if isinstance(first.value.value, str):
                    yield first.value


def _prose(lines: list[str]) -> bool:
    """Lines that click and a reader take as one paragraph of words: same margin, no structure."""
    texts = [line.strip() for line in lines]
    margins = {len(line) - len(line.lstrip()) for line in lines[1:]}
    return len(margins) <= 1 and not any(STRUCTURED.match(t) or "  " in t for t in texts)


def _margin(body: list[str], fallback: str) -> str:
    """The common indentation of a docstring's lines after its first (cleandoc removes it)."""
    rest = [line for line in body[1:] if line.strip()]
    if not rest:
        return fallback
    return min((line[: len(line) - len(line.lstrip())] for line in rest), key=len)


def _refill(para: list[str], head: str, margin: str, first: bool, shown: bool) -> list[str] | None:
    """One paragraph refilled, or None where it is not prose (or, unless shown as help, bullets)."""
    probe = [margin + para[0].lstrip()] + para[1:] if first else para
    if any(line[: len(margin)] != margin for line in probe):
        return None
    if _prose(probe) and not any(line[len(margin) : len(margin) + 1] == " " for line in probe):
        words = " ".join(line.strip() for line in para).split(" ")
        filled = _fill(words, head if first else margin, margin)
        return [filled[0][len(head) :]] + filled[1:] if first else filled
    return None if shown or first else _refill_bullets(para, margin)


def _refill_bullets(para: list[str], margin: str) -> list[str] | None:
    """A list of `- item` paragraphs, each continued at the item's text column, refilled item by
    item."""
    items: list[tuple[str, list[str]]] = []
    for line in para:
        text = line[len(margin) :]
        bullet = BULLET.match(text)
        if bullet:
            items.append((bullet.group(0), [text[bullet.end() :]]))
        elif items and text.startswith(" " * len(items[-1][0])) and text[len(items[-1][0])] != " ":
            items[-1][1].append(text.strip())
        else:
            return None
    out: list[str] = []
    for marker, texts in items:
        if any("  " in t.strip() for t in texts):
            return None
        words = " ".join(t.strip() for t in texts).split(" ")
        out.extend(_fill(words, margin + marker, margin + " " * len(marker)))
    return out


def _rewrap_docstring(
    block: list[str], fallback_margin: str, shown: bool, keep_first: bool
) -> list[str] | None:
    """The docstring's source lines with its prose paragraphs that cross the limit refilled, or
    None."""
    joined = "\n".join(block)
    if "\\\n" in joined or not block[-1].rstrip().endswith(('"""', "'''")):
        return None
    opener = re.match(r"\s*[rRuU]?(\"\"\"|''')", block[0])
    if not opener:
        return None
    quote = opener.group(1)
    head = block[0][: opener.end()]
    body = [block[0][opener.end() :]] + block[1:]
    body[-1] = body[-1].rstrip()[: -len(quote)]
    margin = _margin(body, fallback_margin)
    out: list[str] = []
    changed = False
    i = 0
    while i < len(body):
        j = i + 1
        while (
            j < len(body)
            and body[i].strip()
            and body[j].strip()
            and not body[j].lstrip().startswith("Layer:")
        ):
            j += 1
        para = body[i:j]
        widths = [len(line) for line in para]
        widths[0] += len(head) if i == 0 else 0
        widths[-1] += len(quote) if j == len(body) else 0
        kept = keep_first and i == 0 or not para[0].strip() or max(widths) <= LIMIT
        filled = None if kept else _refill(para, head, margin, i == 0, shown)
        out.extend(filled if filled is not None else para)
        changed = changed or filled is not None
        i = j
    if not changed:
        return None
    out[0] = head + out[0]
    if out[-1].strip() and len(out[-1]) + len(quote) > LIMIT:
        out.append(margin)
    out[-1] = out[-1] + quote
    return out


def _prints_doc(src: str) -> bool:
    """The file prints its module docstring as written (not only its first line, through argparse)."""
    return "print(__doc__" in src or "Raw" in src and "HelpFormatter" in src


def _shown_docstrings(tree: ast.Module) -> set[int]:
    """ids of docstrings a user reads as help through click, which refills prose paragraphs only."""
    shown: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and ast.get_docstring(node, clean=False) is not None:
            calls = [d.func for d in node.decorator_list if isinstance(d, ast.Call)]
            if any(isinstance(f, ast.Attribute) and f.attr in ("command", "group") for f in calls):
                shown.add(id(node.body[0].value))  # type: ignore[attr-defined]
    return shown


def wrap_docstrings(src: str) -> str:
    """Refill docstring paragraphs with a line over the limit; code, tables, `\\b` blocks stay."""
    tree = ast.parse(src)
    lines = src.splitlines()
    shown = _shown_docstrings(tree)
    module_doc = ast.get_docstring(tree, clean=False) is not None
    edits: list[tuple[int, int, list[str]]] = []
    for node in _docstring_nodes(tree):
        keep_first = module_doc and node is tree.body[0].value  # type: ignore[attr-defined]
        if keep_first and _prints_doc(src):
            continue  # the program's own help, printed as written
        start, end = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        keep_first = (
            keep_first and "__doc__" in src
        )  # argparse's description: its first line or paragraph
        new = _rewrap_docstring(
            lines[start : end + 1], " " * node.col_offset, id(node) in shown, keep_first
        )
        if new is not None:
            edits.append((start, end, new))
    for start, end, new in sorted(edits, key=lambda e: e[0], reverse=True):
        lines[start : end + 1] = new
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- long strings


def _split_points(body: str, is_f: bool) -> list[int] | None:
    """Positions in the literal's body just after a space, outside f-string braces; None if unsafe."""
    if "\\N{" in body:
        return None
    points: list[int] = []
    depth = 0
    k = 0
    while k < len(body):
        ch = body[k]
        if is_f and ch in "{}" and body[k : k + 2] in ("{{", "}}") and depth == 0:
            k += 2
            continue
        if is_f and ch == "{":
            depth += 1
        elif is_f and ch == "}":
            depth -= 1
        elif ch == " " and depth == 0 and 0 < k + 1 < len(body) and body[k + 1] != " ":
            points.append(k + 1)
        k += 1
    return points


def _piece(prefix: str, quote: str, text: str) -> str:
    """One literal of the concatenation; an f-string part with no placeholder loses its `f` (ruff
    F541)."""
    if "f" in prefix.lower() and not re.search(r"(?<!\{)\{(?!\{)", text.replace("{{", "")):
        return (
            prefix.replace("f", "").replace("F", "")
            + quote
            + text.replace("{{", "{").replace("}}", "}")
            + quote
        )
    return prefix + quote + text + quote


def _split_literal(tok: str, first_room: int, room: int) -> list[str] | None:
    m = re.fullmatch(r"([rRuUfF]{0,2})(['\"])(.*)\2", tok, re.S)
    if not m or "b" in m.group(1).lower() or m.group(3).startswith(m.group(2) * 2):
        return None  # bytes, or a triple-quoted literal on one line
    prefix, quote, body = m.groups()
    points = _split_points(body, "f" in prefix.lower())
    if not points:
        return None
    pieces: list[str] = []
    begin = 0
    cap = first_room
    overhead = len(prefix) + 2
    for p_index, point in enumerate(points):
        following = points[p_index + 1] if p_index + 1 < len(points) else len(body)
        if following - begin + overhead > cap and point > begin:
            pieces.append(body[begin:point])
            begin, cap = point, room
    pieces.append(body[begin:])
    if len(pieces) < 2:
        return None
    return [_piece(prefix, quote, text) for text in pieces]


def _string_runs(src: str) -> Iterator[tuple[list[tokenize.TokenInfo], bool]]:
    """Runs of adjacent one-line literals (an implicit concatenation), each with whether it needs
    parentheses to be cut: a whole right-hand side or return value outside brackets."""
    toks = [t for t in _tokens(src) if t.type not in (tokenize.NL, tokenize.COMMENT)]
    depth = 0
    k = 0
    while k < len(toks):
        tok = toks[k]
        if tok.type == tokenize.STRING and tok.start[0] == tok.end[0]:
            j = k
            while (
                j + 1 < len(toks)
                and toks[j + 1].type == tokenize.STRING
                and toks[j + 1].start[0] == toks[j + 1].end[0]
            ):
                j += 1
            if depth > 0:
                yield toks[k : j + 1], False
            elif (
                toks[k - 1].string in ("=", "+=", "return") and toks[j + 1].type == tokenize.NEWLINE
            ):
                yield toks[k : j + 1], True
            k = j + 1
            continue
        if tok.type == tokenize.OP and tok.string in ("(", "[", "{"):
            depth += 1
        elif tok.type == tokenize.OP and tok.string in (")", "]", "}"):
            depth -= 1
        k += 1


def _merged(run: list[tokenize.TokenInfo]) -> str | None:
    """The run as one literal where its parts share prefix and quote, so it can be re-cut as one."""
    parts = [re.fullmatch(r"([rRuUfF]{0,2})(['\"])(.*)\2", tok.string, re.S) for tok in run]
    if any(m is None or m.group(3).startswith(m.group(2) * 2) for m in parts):
        return None
    keys = {(m.group(1).lower(), m.group(2)) for m in parts if m}
    if len(keys) != 1:
        return None
    first = parts[0]
    assert first is not None
    return (
        first.group(1) + first.group(2) + "".join(m.group(3) for m in parts if m) + first.group(2)
    )


def split_long_strings(src: str) -> str:
    """Cut literals inside brackets that cross the limit into implicit concatenations at spaces."""
    lines = src.splitlines()
    edits: list[tuple[int, int, int, int, str]] = []
    for run, bare in _string_runs(src):
        if all(tok.end[1] <= LIMIT for tok in run):
            continue
        merged = _merged(run) if len(run) > 1 else run[0].string
        targets = (
            [(run, merged)]
            if merged
            else [([tok], tok.string) for tok in run if tok.end[1] > LIMIT]
        )
        for toks, literal in targets:
            row, col = toks[0].start[0] - 1, toks[0].start[1]
            indent = len(lines[row]) - len(lines[row].lstrip())
            room = LIMIT - min(col, indent + 8) - 2
            pieces = _split_literal(literal, max(LIMIT - col - 2, 20), max(room, 30))
            if pieces:
                text = f"({' '.join(pieces)})" if bare else " ".join(pieces)
                edits.append((row, col, toks[-1].end[0] - 1, toks[-1].end[1], text))
    for row, col, end_row, end_col, text in sorted(edits, reverse=True):
        lines[row : end_row + 1] = [lines[row][:col] + text + lines[end_row][end_col:]]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- ruff and the proof


def ruff_format(src: str, path: Path) -> str:
    cmd = [RUFF, "format", "--line-length", str(LIMIT), "--stdin-filename", str(path), "-"]
    done = subprocess.run(cmd, input=src, capture_output=True, text=True, check=False, cwd=ROOT)
    if done.returncode:
        raise RuntimeError(f"ruff format failed on {path}: {done.stderr.strip()}")
    return done.stdout


def _docstring_key(value: str, shown: bool, module_help: str) -> str:
    """Help text: exactly as written (printed), first paragraph exactly (argparse's description),
    or, in click, prose paragraphs as their words and the others exactly; otherwise paragraphs as
    words."""
    if module_help == "printed":
        return value
    if module_help == "first":
        first, _, rest = inspect.cleandoc(value).partition("\n\n")
        return first + "\n\n" + _docstring_key(rest, False, "")
    if not shown:
        return "\n\n".join(
            " ".join(para.split()) for para in re.split(r"\n\s*\n", inspect.cleandoc(value))
        )
    paras = []
    for para in re.split(r"\n\s*\n", inspect.cleandoc(value)):
        segments = re.split(r"\n(?=Layer:)", para)
        if all(_prose(seg.splitlines()) and not seg.startswith((" ", "\t")) for seg in segments):
            paras.append("\n".join(" ".join(seg.split()) for seg in segments))
        else:
            paras.append("\n".join(line.rstrip() for line in para.splitlines()))
    return "\n\n".join(paras)


class _Fold(ast.NodeTransformer):
    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        self.generic_visit(node)
        merged: list[ast.expr] = []
        for value in node.values:
            last = merged[-1] if merged else None
            if isinstance(value, ast.Constant) and isinstance(last, ast.Constant):
                merged[-1] = ast.Constant(str(last.value) + str(value.value))
            else:
                merged.append(value)
        if all(isinstance(v, ast.Constant) for v in merged):
            return ast.Constant(
                "".join(str(v.value) for v in merged if isinstance(v, ast.Constant))
            )
        node.values = merged
        return node


def ast_key(src: str) -> str:
    tree = ast.parse(src)
    shown = _shown_docstrings(tree)
    help_kind = ("printed" if _prints_doc(src) else "first") if "__doc__" in src else ""
    module_doc = tree.body[0].value if ast.get_docstring(tree, clean=False) is not None else None  # type: ignore[attr-defined]
    for node in _docstring_nodes(tree):
        module_help = help_kind if node is module_doc else ""
        node.value = _docstring_key(str(node.value), id(node) in shown, module_help)
    return ast.dump(_Fold().visit(tree), include_attributes=False)


def comment_words(src: str) -> list[str]:
    return [
        w
        for tok in _tokens(src)
        if tok.type == tokenize.COMMENT
        for w in tok.string.lstrip("#").split()
    ]


def reformat(src: str, path: Path) -> str:
    text = src
    for _ in range(5):
        formatted = ruff_format(text, path)
        fixed = wrap_comments(lift_trailing_comments(formatted))
        fixed = split_long_strings(wrap_docstrings(fixed))
        if fixed == formatted:
            return formatted
        text = fixed
    return ruff_format(text, path)


def tracked_files() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return [
        ROOT / name for name in out.stdout.split("\0") if name and not (ROOT / name).is_symlink()
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Reformat to lines of at most 100 characters, proven AST-neutral."
    )
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a file would change"
    )
    args = parser.parse_args(argv)
    began = time.monotonic()
    paths = [p.resolve() for p in args.paths] or tracked_files()
    changed, refused = 0, []
    still: Counter[str] = Counter()
    for path in paths:
        src = path.read_text()
        try:
            new = reformat(src, path)
            same = new == src or (
                ast_key(new) == ast_key(src) and comment_words(new) == comment_words(src)
            )
        except (SyntaxError, RuntimeError, tokenize.TokenError) as error:
            print(f"{path.relative_to(ROOT)}: {error}", file=sys.stderr)
            new, same = src, False
        if not same:
            refused.append(path)
            new = src
        elif new != src:
            changed += 1
            if not args.check:
                path.write_text(new)
        rel = path.relative_to(ROOT)
        still[str(rel.parent)] += sum(len(line) > LIMIT for line in new.splitlines())
    for folder, count in sorted(still.items()):
        if count:
            print(f"{count:6d}  {folder}/")
    print(
        f"{sum(still.values()):6d}  lines over {LIMIT} in {len(paths)} files; {changed} changed",
        end="",
    )
    print(f"{' (not written: --check)' if args.check else ''}; {time.monotonic() - began:.1f} s")
    for path in refused:
        print(f"REFUSED (AST or comments would differ): {path.relative_to(ROOT)}", file=sys.stderr)
    return 1 if refused or (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
