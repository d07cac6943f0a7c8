"""Limits on every input topoctl reads, checked before (or while) parsing, never after the damage.

Every reader of a file or a launch calls in here: snapshots and captures
(topoctl/snapshot/document.py, probe/capture.py), rule files (rules/engine/loader.py), launch.env
files and launch commands (topoctl/deploy/sglang_launch.py, `check -- ...`) and model configs
(autoconf/models.py). Past a limit the user gets one line and exit 2 (a LimitError is a
TopoctlError), never a traceback, a swap storm or a minute-long wait. docs/reliability.md lists the
limits and what was tried against them.

The numbers are far above anything real (a real 8-GPU capture is about 60 KB, the largest built-in
rule file about 20 KB, a real config.json a few KB) and low enough that the worst input within them
is parsed in bounded time and memory.

YAML goes through the C scanner and parser of libyaml when PyYAML has it (about 6x faster than the
pure-Python one), with PyYAML's own composer and SafeConstructor on top, so the result is what
`yaml.safe_load` gives; the composer here counts depth, aliases and the size the document would have
with every alias expanded, and refuses a recursive alias. A plain document (no alias, merge key or
tag beyond JSON's kinds, within every limit: nearly every real one) is composed by libyaml's C
composer and built in one bounded pass instead, about 3x faster; anything else is read by the
bounded composer.

Layer: core types and data (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import errno
import math
import os
import stat
from functools import lru_cache
from typing import IO, TYPE_CHECKING, Any, Callable, Protocol, cast

from topoctl.core.errors import TopoctlError

KIB, MIB = 1024, 1024 * 1024

# File sizes, in bytes, per kind of input.
MAX_SNAPSHOT_BYTES = 16 * MIB  # snapshots (--topology, --expect) and captures (--from-capture)
MAX_RULE_FILE_BYTES = 1 * MIB  # one site rule file (--rules DIR)
MAX_LAUNCH_ENV_BYTES = 1 * MIB  # one launch.env
MAX_MODEL_CONFIG_BYTES = 4 * MIB  # one config.json (--model-config, --model-path)
MAX_LAUNCH_FILE_BYTES = 4 * MIB  # one manifest, compose file or script `check` reads a launch from
MAX_CACHE_BYTES = 16 * MIB  # one knowledge cache section (the largest shipped one is about 120 KB)
MAX_DATA_FILE_BYTES = 16 * MIB  # one file shipped with topoctl (the largest is about 1 MB)

# Shape of parsed documents (JSON and YAML alike).
MAX_DEPTH = 64  # nested lists/mappings; a snapshot is 5 deep, a rule file about 8
MAX_NODES = 2_000_000  # values in one document, counting every alias as the copy it stands for
MAX_RULE_FILE_NODES = (
    200_000  # the same for one rule file (the built-in ones hold about 2,000 in all)
)
MAX_ALIASES = 1_000  # YAML alias uses (*name) in one document
MAX_INT_DIGITS = (
    40  # digits of one integer (2**64 has 20): anything longer is refused before conversion
)
MAX_INT = 2**64  # |integer| must stay below: every count, size and id topoctl reads fits in 64 bits

# Launches (a launch.env's SGLANG_ARGS, or the command after `check --`).
MAX_TOKENS = 4_096  # words in one launch (SGLang has about 400 flags)
MAX_WORD_CHARS = 64 * KIB  # characters in one word (a --json-model-override-args value fits)
# Characters a script's variable expansions may produce in all ($A$A on each line doubles them): a
# few times the largest script, so a script costs at most that much work and memory whatever it
# says.
MAX_EXPANSION_CHARS = 4 * MAX_LAUNCH_FILE_BYTES
MAX_LAUNCHES_PER_FILE = (
    256  # SGLang launches one manifest, compose file or script may hold (each is judged)
)

# GPUs: the snapshot schema's bound (topoctl.snapshot.document.MAX_GPUS); a capture must also hold
# at least one answer per ordered pair it claims (see check_capture_gpus), so the work of a replay
# follows its size.
HINT = "see docs/reliability.md (Limits)"


class LimitError(TopoctlError):
    """An input past one of the limits above: one line, exit 2."""

    def __init__(self, message: str, hint: str = HINT) -> None:
        super().__init__(message, hint=hint)


def _size(count: int) -> str:
    if count >= MIB and count % MIB == 0:
        return f"{count // MIB} MiB"
    if count >= KIB and count % KIB == 0:
        return f"{count // KIB} KiB"
    return f"{count} bytes"


# ------------------------------------------------------------------------------------------------
# bytes
def read_bounded(handle: IO[bytes], limit: int, origin: str) -> bytes:
    """Read at most `limit` bytes from a binary handle; LimitError if there is more (never reads it
    all)."""
    data = handle.read(limit + 1)
    if len(data) > limit:
        raise _too_large(origin, limit)
    return data


def read_stdin(limit: int, origin: str = "<stdin>") -> bytes:
    """At most `limit` bytes of stdin (its binary buffer; a text-only stand-in, as tests use, is
    encoded)."""
    import sys

    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is not None:
        return read_bounded(buffer, limit, origin)
    text = sys.stdin.read(limit + 1)
    data = text.encode("utf-8", "surrogateescape")
    if len(text) > limit or len(data) > limit:
        raise LimitError(
            f"{origin} is larger than {_size(limit)}, the most topoctl reads for this kind of file"
        )
    return data


class NotAFileError(TopoctlError):
    """A path that names a FIFO, a device or a socket where topoctl reads a file: one line, exit 2.

    Opening a FIFO with no writer blocks forever and a device may never end (or act when opened: a
    watchdog, a tape), so such a path is refused by its type, before it is opened.
    """

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(
            f"{path} is {kind}, not a regular file",
            hint="topoctl reads regular files only: copy the content into a file"
            " (or pipe it to `-` where the option reads stdin)",
        )


_SPECIAL = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _check_regular(path: str, mode: int) -> None:
    if stat.S_ISDIR(mode):  # callers word a folder for what the file is for
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _SPECIAL if test(mode)), "not a regular file")
        raise NotAFileError(path, kind)


def check_regular(path: str) -> None:
    """Refuse `path` by its type without opening it: NotAFileError (exit 2) for a FIFO, device or
    socket, IsADirectoryError for a folder; OSError when it cannot be seen. For callers that choose
    files to read from a folder, so that a special file among them is named rather than passed over.
    """
    _check_regular(path, os.stat(path).st_mode)


def _too_large(origin: str, limit: int) -> LimitError:
    return LimitError(
        f"{origin} is larger than {_size(limit)}, the most topoctl reads for this kind of file"
    )


def open_regular(path: str) -> IO[bytes]:
    """`path` opened for reading in binary, when it is a regular file (the one door every reader
    uses).

    The type is checked before opening (a FIFO, device or socket is a NotAFileError, exit 2) and
    again on the open file, in case the name was swapped in between; O_NONBLOCK keeps even that open
    from blocking. OSError (missing, a folder, no permission) is left to the caller, which knows
    what the file is for.
    """
    _check_regular(path, os.stat(path).st_mode)
    flags = (
        os.O_RDONLY
        | getattr(os, "O_NONBLOCK", 0)
        | getattr(os, "O_NOCTTY", 0)
        | getattr(os, "O_CLOEXEC", 0)
    )
    handle = os.fdopen(os.open(path, flags), "rb")
    try:
        _check_regular(path, os.fstat(handle.fileno()).st_mode)
    except BaseException:
        handle.close()
        raise
    return handle


def read_file(path: str, limit: int) -> bytes:
    """The bytes of the regular file `path`, at most `limit`: its size is checked before reading
    (LimitError) and reading stops at `limit` + 1 bytes whatever the size said. A FIFO, device or
    socket is a NotAFileError; OSError is left to the caller, which knows what the file is for."""
    with open_regular(path) as handle:
        if os.fstat(handle.fileno()).st_size > limit:
            raise _too_large(path, limit)
        return read_bounded(handle, limit, path)


def read_text(path: str, limit: int, hint: str = "save it as UTF-8 text") -> str:
    """read_file, decoded as UTF-8 (a leading byte-order mark dropped); bad bytes are exit 2 naming
    the path."""
    return decode(read_file(path, limit), path, hint)


def read_head(path: str, count: int) -> tuple[bytes, int]:
    """(the first `count` bytes, the size) of the regular file `path`: for headers of files too
    large to read."""
    with open_regular(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        return handle.read(count), size


def read_at(path: str, offset: int, count: int) -> bytes:
    """`count` bytes of the regular file `path` from `offset` (a header past its first bytes)."""
    with open_regular(path) as handle:
        handle.seek(offset)
        return handle.read(count)


def decode(raw: bytes, origin: str, hint: str) -> str:
    """UTF-8 text (a leading byte-order mark dropped), or a one-line TopoctlError naming the first
    bad byte."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TopoctlError(
            f"{origin} is not UTF-8 text (byte {exc.start} is 0x{raw[exc.start]:02x})", hint=hint
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


# ---------------------------------------------------------------------------------------- parsed
# trees
_PLAIN = (str, bool, type(None))


def check_tree(
    data: object, origin: str, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES
) -> None:
    """Refuse a parsed document deeper than `max_depth`, with more than `max_nodes` values, an
    integer of 64 bits or more, a number that is not finite, or a value JSON cannot hold (YAML
    dates, binary, sets).

    Iterative (no recursion), one visit per value: bounded by the document's size.
    """
    stack: list[tuple[object, int]] = [(data, 1)]
    nodes = 0
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if nodes > max_nodes:
            raise LimitError(f"{origin} holds more than {max_nodes:,} values")
        if isinstance(value, _PLAIN):
            continue
        if isinstance(value, int):
            if not -MAX_INT < value < MAX_INT:
                raise LimitError(
                    f"{origin} holds an integer of {value.bit_length()} bits (the most is 64)"
                )
            continue
        if isinstance(value, float):
            if not math.isfinite(value):
                raise LimitError(
                    f"{origin} holds a number that is not finite ({value})",
                    hint="write a finite number, or null for an unknown value",
                )
            continue
        if isinstance(value, (dict, list)):
            if depth > max_depth:
                raise LimitError(f"{origin} is nested deeper than {max_depth} levels")
            if isinstance(value, dict):
                for key, item in value.items():
                    if not isinstance(key, (str, int, float, bool, type(None))):
                        raise LimitError(
                            f"{origin} has a mapping key of type {type(key).__name__}",
                            hint="keys are plain strings or numbers",
                        )
                    stack.append((key, depth + 1))
                    stack.append((item, depth + 1))
            else:
                stack.extend((item, depth + 1) for item in value)
            continue
        raise LimitError(
            f"{origin} holds a value of type {type(value).__name__} (not plain JSON data)",
            hint="quote it as a string (YAML reads 2026-01-01 as a date, !!binary as bytes)",
        )


def loads_json(
    text: str, origin: str, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES
) -> Any:
    """json.loads, with nesting too deep for Python's parser turned into a LimitError, then
    check_tree.

    ValueError (malformed JSON) is left to the caller, which words it for its kind of file.
    """
    import json

    try:
        data = json.loads(text)
    except RecursionError:
        raise LimitError(f"{origin} is nested deeper than {max_depth} levels") from None
    check_tree(data, origin, max_depth=max_depth, max_nodes=max_nodes)
    return data


# -------------------------------------------------------------------------------------------------
# YAML
if (
    TYPE_CHECKING
):  # PyYAML ships no types: what the readers use of its objects (no class made at run time)

    class YamlMark(Protocol):
        """Where a YAML node starts (PyYAML's Mark; PyYAML ships no types)."""

        line: int

    class YamlNode(Protocol):
        """The part of PyYAML's composed Node the readers use: a scalar's text, a sequence's nodes,
        or a mapping's (key, value) node pairs; `id` says which."""

        tag: str
        id: str
        value: str | list[YamlNode] | list[tuple[YamlNode, YamlNode]]
        start_mark: YamlMark
        style: str | None

    class YamlEvent(Protocol):
        """The part of PyYAML's parser events the bounded composer reads."""

        anchor: str | None
        value: str
        implicit: tuple[bool, bool]
        style: str | None

    class YamlLoader(Protocol):
        """A loader yaml_loader makes: PyYAML's SafeLoader interface plus the limits it counts
        against."""

        origin: str
        max_nodes: int
        max_depth: int
        max_aliases: int
        events: int

        def get_single_data(self) -> object: ...

        def get_single_node(self) -> YamlNode | None: ...

        def construct_document(self, node: YamlNode) -> object: ...

        def check_node(self) -> bool: ...

        def get_node(self) -> YamlNode | None: ...

        def dispose(self) -> None: ...

    class _NodeLoader(Protocol):
        """libyaml's composer with SafeLoader's constructors, as _fast_yaml uses it."""

        yaml_constructors: dict[str, Callable[[_NodeLoader, YamlNode], object]]

        def get_single_node(self) -> YamlNode | None: ...

        def dispose(self) -> None: ...

    # _build's work: a node, its depth, and the list (by index) or dict (by key) slot its value
    # fills
    _Slot = tuple[YamlNode, int, list[object] | dict[object, object], object]


_LOADERS: dict[bool, Callable[[str], YamlLoader]] = {}
_FAST_LOADER: list[Callable[[str], _NodeLoader]] = []  # built once, on the first fast read


class _BoundedComposing:
    """The limits, kept while PyYAML's Composer builds the node tree: nesting depth, aliases, values
    with aliases expanded, and integers too long for 64 bits. A mixin placed before Composer
    (_loader_class gives it PyYAML's classes, so that yaml is imported only when a YAML file is
    read)."""

    max_depth = MAX_DEPTH
    max_nodes = MAX_NODES
    max_aliases = MAX_ALIASES
    _composer: Any = None  # yaml.composer.Composer (PyYAML ships no types)
    _alias_event: type = type(None)  # yaml.events.AliasEvent
    _scalar_event: type = type(None)  # yaml.events.ScalarEvent
    _scalar_node: type = type(None)  # yaml.ScalarNode

    def _start_bounds(self) -> None:
        self.depth = 0
        self.aliases = 0
        self.expanded = 0  # values so far, each alias counted as the subtree it stands for
        self.events = 0  # nodes composed: the measure of work the slow-path tests bound
        self._open: set[str] = set()
        self._sizes: dict[str, int] = {}
        self.origin = "<yaml>"

    def _count(self, amount: int) -> None:
        self.expanded += amount
        if self.expanded > self.max_nodes:
            raise LimitError(
                f"{self.origin} would hold more than {self.max_nodes:,} values with its "
                "aliases expanded"
            )

    def compose_node(self, parent: YamlNode | None, index: object) -> YamlNode:
        self.events += 1
        event: YamlEvent = self.peek_event()  # type: ignore[attr-defined]
        if isinstance(event, self._alias_event):
            return self._compose_alias(event, parent, index)
        if isinstance(event, self._scalar_event):
            return self._compose_scalar(event, parent, index)
        return self._compose_collection(event, parent, index)

    def _compose_alias(self, event: YamlEvent, parent: YamlNode | None, index: object) -> YamlNode:
        self.aliases += 1
        if self.aliases > self.max_aliases:
            raise LimitError(f"{self.origin} uses more than {self.max_aliases} YAML aliases")
        if event.anchor in self._open:
            raise LimitError(
                f"{self.origin}: YAML alias *{event.anchor} refers to a value that contains it",
                hint="a recursive YAML alias has no plain-data meaning; write the value out",
            )
        self._count(self._sizes.get(event.anchor or "", 1))
        node: YamlNode = self._composer.compose_node(self, parent, index)
        return node

    def _compose_scalar(self, event: YamlEvent, parent: YamlNode | None, index: object) -> YamlNode:
        if len(event.value) > MAX_INT_DIGITS and event.implicit[0] and not event.style:
            tag = self.resolve(self._scalar_node, event.value, event.implicit)  # type: ignore[attr-defined]
            if tag == "tag:yaml.org,2002:int":
                raise LimitError(
                    f"{self.origin} holds an integer of more than {MAX_INT_DIGITS} digits "
                    "(the most is 64 bits)"
                )
        self._count(1)
        node: YamlNode = self._composer.compose_node(self, parent, index)
        if event.anchor is not None:
            self._sizes[event.anchor] = 1
        return node

    def _compose_collection(
        self, event: YamlEvent, parent: YamlNode | None, index: object
    ) -> YamlNode:
        self.depth += 1
        if self.depth > self.max_depth:
            raise LimitError(f"{self.origin} is nested deeper than {self.max_depth} levels")
        anchor = getattr(event, "anchor", None)
        start = self.expanded
        if anchor is not None:
            self._open.add(anchor)
        self._count(1)
        node: YamlNode = self._composer.compose_node(self, parent, index)
        self.depth -= 1
        if anchor is not None:
            self._open.discard(anchor)
            self._sizes[anchor] = self.expanded - start
        return node


def _loader_class(use_c: bool) -> Callable[[str], YamlLoader]:
    """A SafeLoader whose composer enforces the limits; libyaml's parser underneath when available."""
    cached = _LOADERS.get(use_c)
    if cached is not None:
        return cached
    import yaml
    from yaml.composer import Composer
    from yaml.constructor import SafeConstructor
    from yaml.events import AliasEvent, ScalarEvent
    from yaml.resolver import Resolver

    class BoundedComposer(_BoundedComposing, Composer):
        _composer, _alias_event, _scalar_event, _scalar_node = (
            Composer,
            AliasEvent,
            ScalarEvent,
            yaml.ScalarNode,
        )

        def __init__(self) -> None:
            Composer.__init__(self)
            self._start_bounds()

    if use_c:
        from yaml.cyaml import CParser

        class Loader(BoundedComposer, CParser, SafeConstructor, Resolver):
            def __init__(self, stream: str) -> None:
                CParser.__init__(self, stream)
                BoundedComposer.__init__(self)
                SafeConstructor.__init__(self)
                Resolver.__init__(self)
    else:
        from yaml.parser import Parser
        from yaml.reader import Reader
        from yaml.scanner import Scanner

        class Loader(Reader, Scanner, Parser, BoundedComposer, SafeConstructor, Resolver):  # type: ignore[no-redef]
            def __init__(self, stream: str) -> None:
                Reader.__init__(self, stream)
                Scanner.__init__(self)
                Parser.__init__(self)
                BoundedComposer.__init__(self)
                SafeConstructor.__init__(self)
                Resolver.__init__(self)

    _LOADERS[use_c] = Loader
    return Loader


def has_c_yaml() -> bool:
    import yaml

    return bool(getattr(yaml, "__with_libyaml__", False))


def yaml_loader(
    origin: str,
    max_nodes: int = MAX_NODES,
    max_depth: int = MAX_DEPTH,
    max_aliases: int = MAX_ALIASES,
    text: str = "",
    use_c: bool | None = None,
) -> YamlLoader:
    """A loader instance over `text` with these limits (tests read its `events` after loading)."""
    loader = _loader_class(has_c_yaml() if use_c is None else use_c)(text)
    loader.origin, loader.max_nodes, loader.max_depth, loader.max_aliases = (
        origin,
        max_nodes,
        max_depth,
        max_aliases,
    )
    return loader


def load_yaml(
    text: str,
    origin: str,
    max_nodes: int = MAX_NODES,
    max_depth: int = MAX_DEPTH,
    max_aliases: int = MAX_ALIASES,
    use_c: bool | None = None,
) -> Any:
    """`yaml.safe_load(text)` within the limits, then check_tree. yaml.YAMLError is left to the
    caller.

    Only the first document is read when there are several, as safe_load refuses them: so does this.
    With libyaml (and `use_c` left unset), the plain document (no alias, merge key or tag beyond
    JSON's kinds, within every limit) is read by the C composer and built in one bounded pass
    (_fast_yaml); any other document, and every one a limit refuses, is read again by the bounded
    composer below, so the answer and every error are the ones it gives.
    """
    if use_c is None and has_c_yaml():
        found = _fast_yaml(text, max_nodes, max_depth)
        if found is not _SLOW:
            return found
    loader = yaml_loader(origin, max_nodes, max_depth, max_aliases, text, use_c)
    try:
        data = loader.get_single_data()
    except (
        RecursionError
    ):  # not reachable within MAX_DEPTH; kept so that no input can end in a traceback
        raise LimitError(f"{origin} is nested deeper than {max_depth} levels") from None
    finally:
        loader.dispose()
    check_tree(data, origin, max_depth=max_depth, max_nodes=max_nodes)
    return data


_SLOW = object()  # _fast_yaml's answer for "read this document with the bounded composer"
_STR, _SEQ, _MAP = "tag:yaml.org,2002:str", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"
_SCALAR_TAGS = frozenset(
    {
        _STR,
        "tag:yaml.org,2002:int",
        "tag:yaml.org,2002:float",
        "tag:yaml.org,2002:bool",
        "tag:yaml.org,2002:null",
    }
)
_SCALARS: dict[
    tuple[str, str], object
] = {}  # (tag, text) -> value: a scalar's value depends on nothing else
_MAX_MEMO = 100_000


def _fast_loader_class() -> Callable[[str], _NodeLoader]:
    """libyaml's parser and composer (C) with SafeLoader's resolver and constructor; the resolver's
    answer is memoised (SafeLoader has no path resolvers, so a scalar's tag is a function of its
    text and style)."""
    if _FAST_LOADER:
        return _FAST_LOADER[0]
    from yaml.constructor import SafeConstructor
    from yaml.cyaml import CParser
    from yaml.resolver import Resolver

    tags: dict[tuple[type, str | None, object], str] = {}

    class FastLoader(CParser, SafeConstructor, Resolver):
        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

        def resolve(self, kind: type, value: str | None, implicit: object) -> str:
            key = (kind, value, implicit)
            tag = tags.get(key)
            if tag is None:
                tag = Resolver.resolve(self, kind, value, implicit)
                if len(tags) < _MAX_MEMO and (value is None or len(value) <= 256):
                    tags[key] = tag
            return tag

    _FAST_LOADER.append(FastLoader)
    return FastLoader


@lru_cache(maxsize=1)
def _c_nesting_bounded() -> bool:
    """Whether this libyaml refuses nesting past its own bound (1,000 levels since 0.2.5): the C
    composer recurses once per level, so it may only see documents whose depth libyaml has already
    bounded."""
    import yaml

    try:
        yaml.compose("[" * 2000 + "]" * 2000, Loader=yaml.CSafeLoader)
    except yaml.YAMLError as exc:
        return "nesting" in str(exc)
    return False


def _fast_yaml(text: str, max_nodes: int, max_depth: int) -> object:
    """safe_load's value of a plain document, or _SLOW. Plain: no node reached twice (an alias),
    only the JSON kinds' tags, no merge or duplicate key, within the node and depth limits, every
    integer within 64 bits and every float finite (what check_tree asks). One visit per node, no
    recursion: bounded by the document's size, as libyaml's composition of an alias-free document
    is."""
    import yaml

    if not _c_nesting_bounded():
        return _SLOW
    loader = _fast_loader_class()(text)
    try:
        root = loader.get_single_node()
    except yaml.YAMLError:  # the bounded composer words it (its parser is the same libyaml)
        return _SLOW
    try:
        # without an anchor (`&`) in the text no node can be reached twice; with one, every node is
        # tracked
        return (
            None
            if root is None
            else _build(loader, root, max_nodes, max_depth, set() if "&" in text else None)
        )
    finally:
        loader.dispose()


def _build(
    loader: _NodeLoader, root: YamlNode, max_nodes: int, max_depth: int, seen: set[int] | None
) -> object:
    """The value of the composed document `root` (see _fast_yaml), built iteratively; `seen` tracks
    the nodes visited when the document may share one (an alias), None when it cannot."""
    holder: list[object] = [None]
    stack: list[_Slot] = [(root, 1, holder, 0)]
    nodes = 0
    while stack:
        node, depth, target, slot = stack.pop()
        nodes += 1
        if nodes > max_nodes:
            return _SLOW
        if seen is not None:
            if id(node) in seen:
                return _SLOW
            seen.add(id(node))
        tag, content = node.tag, node.value
        value: object
        if type(content) is str:  # a scalar
            value = (
                content if tag == _STR else _scalar(loader, node) if tag in _SCALAR_TAGS else _SLOW
            )
        elif depth > max_depth:
            return _SLOW
        elif tag == _MAP and node.id == "mapping":
            value = _build_mapping(
                loader, cast("list[tuple[YamlNode, YamlNode]]", content), depth, stack, seen
            )
            nodes += len(content)  # the keys
        elif tag == _SEQ and node.id == "sequence":
            items: list[object] = [None] * len(content)
            stack.extend(
                (child, depth + 1, items, index)
                for index, child in enumerate(cast("list[YamlNode]", content))
            )
            value = items
        else:
            value = _SLOW
        if value is _SLOW:
            return _SLOW
        target[slot] = value  # type: ignore[call-overload]  # a list's index or a mapping's key, as stacked
    return holder[0]


def _build_mapping(
    loader: _NodeLoader,
    pairs: list[tuple[YamlNode, YamlNode]],
    depth: int,
    stack: list[_Slot],
    seen: set[int] | None,
) -> object:
    """A mapping's dict, its values left to the stack; _SLOW for a key that is not a plain scalar
    (merge keys `<<` and `=` have tags of their own) or a key given twice."""
    mapping: dict[object, object] = {}
    for key_node, value_node in pairs:
        tag = key_node.tag
        key: object = key_node.value
        if type(key) is not str or tag not in _SCALAR_TAGS:
            return _SLOW
        if seen is not None:
            if id(key_node) in seen:
                return _SLOW
            seen.add(id(key_node))
        if tag != _STR:
            key = _scalar(loader, key_node)
        if key is _SLOW or key in mapping:
            return _SLOW
        mapping[key] = None
        stack.append((value_node, depth + 1, mapping, key))
    return mapping


def _scalar(loader: _NodeLoader, node: YamlNode) -> object:
    """A plain scalar's value (SafeConstructor's own conversion, memoised), or _SLOW past the
    integer and float limits (the bounded composer words those)."""
    tag, text = node.tag, cast(str, node.value)  # called on scalar nodes only
    if tag == _STR:
        return text
    key = (tag, text)
    value = _SCALARS.get(key, _SLOW)
    if value is not _SLOW:
        return value
    if tag == "tag:yaml.org,2002:int" and len(text) > MAX_INT_DIGITS:
        return _SLOW
    value = loader.yaml_constructors[tag](loader, node)
    if isinstance(value, float) and not math.isfinite(value):
        return _SLOW
    if isinstance(value, int) and not -MAX_INT < value < MAX_INT:
        return _SLOW
    if len(_SCALARS) < _MAX_MEMO and len(text) <= 256:
        _SCALARS[key] = value
    return value


def load_yaml_node(
    text: str, origin: str, max_nodes: int = MAX_NODES
) -> tuple[Any, YamlNode | None]:
    """(load_yaml's result, the composed root node): for readers that also need where each key is
    (lines). yaml.YAMLError is left to the caller."""
    loader = yaml_loader(origin, max_nodes=max_nodes, text=text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except RecursionError:  # as in load_yaml: not reachable within MAX_DEPTH
        raise LimitError(f"{origin} is nested deeper than {MAX_DEPTH} levels") from None
    finally:
        loader.dispose()
    check_tree(data, origin, max_nodes=max_nodes)
    return data, node


def compose_yaml_all(
    text: str, origin: str, max_nodes: int = MAX_RULE_FILE_NODES
) -> list[YamlNode | None]:
    """`yaml.compose_all(text, Loader=SafeLoader)` within the limits (for readers that need the
    nodes' lines: manifests, compose files). The limits count over all the documents of the file."""
    loader = yaml_loader(origin, max_nodes=max_nodes, text=text)
    try:
        nodes = []
        while loader.check_node():
            nodes.append(loader.get_node())
        return nodes
    finally:
        loader.dispose()


# ----------------------------------------------------------------------------------------------
# launches
def check_tokens(tokens: list[str], origin: str) -> None:
    """A launch of at most MAX_TOKENS words of at most MAX_WORD_CHARS characters each."""
    if len(tokens) > MAX_TOKENS:
        raise LimitError(
            f"{origin}: the launch has {len(tokens):,} words, more than {MAX_TOKENS:,}"
        )
    for position, token in enumerate(tokens):
        if len(token) > MAX_WORD_CHARS:
            raise LimitError(
                f"{origin}: word {position + 1} of the launch is {len(token):,} characters long, "
                f"more than {MAX_WORD_CHARS:,}"
            )


def split_words(text: str, origin: str) -> list[str]:
    """`shlex.split(text)` (POSIX rules, no comments) in linear time, within the launch limits.

    shlex builds each word one character at a time by string concatenation, which is quadratic in
    the word's length (a 1 MB word took about 11 s); this gives the same words
    (tests/core/test_limits.py compares the two on generated text) and raises ValueError with
    shlex's messages on a quote or escape left open.
    """
    import re

    special_in_quotes = re.compile(r'["\\]')
    word_end = re.compile(r"[ \t\r\n'\"\\]")
    words: list[str] = []
    current: list[str] = []
    in_word = False
    position, length = 0, len(text)
    while position < length:
        char = text[position]
        if char in " \t\r\n":
            if in_word:
                words.append("".join(current))
                current, in_word = [], False
                if len(words) > MAX_TOKENS:
                    raise LimitError(f"{origin}: the launch has more than {MAX_TOKENS:,} words")
            position += 1
            continue
        in_word = True
        if char == "'":
            end = text.find("'", position + 1)
            if end < 0:
                raise ValueError("No closing quotation")
            current.append(text[position + 1 : end])
            position = end + 1
        elif char == '"':
            position += 1
            while True:
                found = special_in_quotes.search(text, position)
                if found is None:
                    raise ValueError("No closing quotation")
                stop = found.start()
                current.append(text[position:stop])
                position = stop + 1
                if text[stop] == '"':
                    break
                following = text[position : position + 1]  # after a backslash inside double quotes
                if following == "":
                    raise ValueError("No escaped character")
                current.append(following if following in '"\\' else "\\" + following)
                position += 1
        elif char == "\\":
            following = text[position + 1 : position + 2]
            if following == "":
                raise ValueError("No escaped character")
            current.append(following)
            position += 2
        else:
            found = word_end.search(text, position)
            stop = length if found is None else found.start()
            current.append(text[position:stop])
            position = stop
    if in_word:
        words.append("".join(current))
    check_tokens(words, origin)
    return words


# -------------------------------------------------------------------------------------------------
# GPUs
def check_capture_gpus(count: int, nvml_answers: int, origin: str) -> None:
    """A capture claiming `count` GPUs holds at least one NVML answer per ordered pair it claims.

    A real capture holds five P2P answers per ordered pair (errors included), so this never refuses
    one; it makes the work of a replay (which asks about every pair) follow the size of the file,
    not one number in it.
    """
    needed = count * (count - 1)
    if nvml_answers < needed:
        raise LimitError(
            f"{origin}: not a valid capture (it claims {count} GPUs, {needed:,} ordered pairs, but "
            f"holds {nvml_answers:,} NVML answers)",
            hint="re-record it with `topoctl probe --record FILE`",
        )
