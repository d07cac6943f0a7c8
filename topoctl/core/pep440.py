"""PEP 440 versions and plain version specifiers, ordered as packaging orders them, without
importing it.

Layer: core types and data (docs/architecture.md, "Layers").

Why not packaging: `recommend`, `check` and `show` compare SGLang, FlashInfer and ai-dynamo release
strings on every run, and importing packaging.version and packaging.specifiers costs about 20 ms of
a start-up floor near 100 ms. The order here is PEP 440's (epoch, release with trailing zeros
dropped, pre-release, post release, dev release, local label), the same as
packaging.version.Version; tests/core/test_pep440.py holds the two equal on generated versions and
on every release string topoctl ships.

Specifiers: a comma list of `<`, `<=`, `>`, `>=`, `==`, `!=` clauses over versions without a
wildcard or a local label (every specifier in topoctl's knowledge) is matched here, with PEP 440's
exclusions and pre-releases admitted (packaging's `contains(..., prereleases=True)`): `<0.5.8`
leaves out 0.5.8rc1, `>0.5.6` leaves out 0.5.6.post1 and 0.5.6+cu129. Anything else (`~=`, `===`,
`==0.5.*`) is handed to packaging, imported then and only then.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet as PackagingSet

_PATTERN_TEXT = r"""^\s*v?
    (?:(?P<epoch>[0-9]+)!)?
    (?P<release>[0-9]+(?:\.[0-9]+)*)
    (?:[-_.]?(?P<pre_l>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?P<pre_n>[0-9]+)?)?
    (?:-(?P<post_n1>[0-9]+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>[0-9]+)?)?
    (?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>[0-9]+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?
    \s*$"""
_PRE_LETTER = {
    "alpha": "a",
    "a": "a",
    "beta": "b",
    "b": "b",
    "c": "rc",
    "pre": "rc",
    "preview": "rc",
    "rc": "rc",
}
_LOCAL_SEPARATORS = r"[-_.]"


@functools.lru_cache(maxsize=1)
def _pattern() -> re.Pattern[str]:
    """The version grammar, compiled on first use: `show` and `--help` import this module and parse
    none."""
    return re.compile(_PATTERN_TEXT, re.VERBOSE | re.IGNORECASE)


def _plain_release(text: str) -> bool:
    """Whether ASCII `text` is digits separated by single dots, nothing around them (the grammar's
    release alone: "0.5.8", "12"): str.isdigit on ASCII is exactly [0-9]."""
    return all(part.isdigit() for part in text.split("."))


class InvalidVersion(ValueError):
    """Not a PEP 440 version."""


class InvalidSpecifier(ValueError):
    """Not a PEP 440 version specifier."""


class Version:
    """One PEP 440 version: compares, hashes and prints (normalised) as packaging.version.Version
    does."""

    __slots__ = ("epoch", "release", "pre", "post", "dev", "local", "_key")

    def __init__(self, text: str) -> None:
        if isinstance(text, str) and text.isascii() and _plain_release(text):
            self._plain(text)
            return
        match = _pattern().match(text) if isinstance(text, str) else None
        if match is None:
            raise InvalidVersion(f"invalid version: {text!r}")
        try:
            self.epoch = int(match["epoch"] or 0)
            self.release = tuple(int(part) for part in match["release"].split("."))
            self.pre = (
                (_PRE_LETTER[match["pre_l"].lower()], int(match["pre_n"] or 0))
                if match["pre_l"]
                else None
            )
            post = match["post_n1"] or match["post_n2"]
            self.post = int(post or 0) if (match["post_n1"] or match["post_l"]) else None
            self.dev = int(match["dev_n"] or 0) if match["dev_l"] else None
        except ValueError:  # a part past Python's 4,300-digit int conversion limit
            raise InvalidVersion(f"invalid version: {text[:40]!r}...") from None
        local = match["local"]
        self.local = (
            tuple(
                int(part) if part.isdigit() else part.lower()
                for part in re.split(_LOCAL_SEPARATORS, local)
            )
            if local
            else None
        )
        self._key = self._sort_key()

    def _plain(self, text: str) -> None:
        """A release and nothing else ("0.5.8"): what nearly every string topoctl reads is, set
        without the grammar (the regex costs about 1 ms to compile, more than the parses of a run).
        """
        try:
            self.release = tuple(int(part) for part in text.split("."))
        except ValueError:  # a part past Python's 4,300-digit int conversion limit
            raise InvalidVersion(f"invalid version: {text[:40]!r}...") from None
        self.epoch, self.pre, self.post, self.dev, self.local = 0, None, None, None, None
        self._key = self._sort_key()

    def _sort_key(self) -> tuple[object, ...]:
        """PEP 440's order as a tuple: a dev release of a final comes before its pre-releases; no
        pre-release sorts after every pre-release; no post or dev release before / after any; local
        labels after none, numbers after words."""
        release = list(self.release)
        while len(release) > 1 and release[-1] == 0:
            release.pop()
        if self.pre is not None:
            pre: tuple[object, ...] = (1, *self.pre)
        else:
            pre = (0,) if self.post is None and self.dev is not None else (2,)
        post = (0,) if self.post is None else (1, self.post)
        dev = (1,) if self.dev is None else (0, self.dev)
        local = (
            ()
            if self.local is None
            else tuple(
                (1, part, "") if isinstance(part, int) else (0, 0, part) for part in self.local
            )
        )
        return (self.epoch, tuple(release), pre, post, dev, local)

    @property
    def base_version(self) -> str:
        return (f"{self.epoch}!" if self.epoch else "") + ".".join(map(str, self.release))

    @property
    def public(self) -> str:
        text = self.base_version
        if self.pre is not None:
            text += f"{self.pre[0]}{self.pre[1]}"
        if self.post is not None:
            text += f".post{self.post}"
        if self.dev is not None:
            text += f".dev{self.dev}"
        return text

    @property
    def is_prerelease(self) -> bool:
        return self.pre is not None or self.dev is not None

    @property
    def is_postrelease(self) -> bool:
        return self.post is not None

    @property
    def is_devrelease(self) -> bool:
        return self.dev is not None

    def __str__(self) -> str:
        return self.public + ("+" + ".".join(map(str, self.local)) if self.local else "")

    def __repr__(self) -> str:
        return f"<Version({str(self)!r})>"

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self._key == other._key

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __lt__(self, other: Version) -> bool:
        return self._key < other._key

    def __le__(self, other: Version) -> bool:
        return self._key <= other._key

    def __gt__(self, other: Version) -> bool:
        return self._key > other._key

    def __ge__(self, other: Version) -> bool:
        return self._key >= other._key


def parse(text: str) -> Version | None:
    """The version `text` spells, or None when it is not a PEP 440 version."""
    try:
        return Version(text)
    except InvalidVersion:
        return None


@functools.lru_cache(maxsize=1024)
def specifier(text: str) -> SpecifierSet:
    """SpecifierSet(text), built once per text and process: a rule's specifier is checked when the
    rule is compiled and matched by the compiled test, and rules share specifiers. InvalidSpecifier
    as SpecifierSet."""
    return SpecifierSet(text)


def version_key(text: str) -> Version:
    """A sort key for release strings (`sorted(names, key=version_key)`); InvalidVersion for others."""
    return Version(text)


# ------------------------------------------------------------------------------------------
# specifiers compiled on first use (re's cache)
_CLAUSE = r"^\s*(?P<op><=|>=|==|!=|<|>)\s*(?P<version>[^\s,*+]+)\s*$"
Clause = Callable[[Version], bool]


def _less(spec: Version) -> Clause:
    final = not spec.is_prerelease
    return lambda v: (
        v < spec
        and not (
            final and v.is_prerelease and Version(v.base_version) == Version(spec.base_version)
        )
    )


def _greater(spec: Version) -> Clause:
    post = spec.is_postrelease
    base = Version(spec.base_version)

    def greater(v: Version) -> bool:
        if not v > spec:
            return False
        same_base = Version(v.base_version) == base
        return not (same_base and ((not post and v.is_postrelease) or v.local is not None))

    return greater


def _public(v: Version) -> Version:
    return Version(v.public) if v.local is not None else v


def _clause(op: str, spec: Version) -> Clause:
    if op == "<":
        return _less(spec)
    if op == ">":
        return _greater(spec)
    if op == "<=":
        return lambda v: _public(v) <= spec
    if op == ">=":
        return lambda v: _public(v) >= spec
    if op == "==":
        return lambda v: _public(v) == spec
    return lambda v: _public(v) != spec


class SpecifierSet:
    """A PEP 440 specifier set, matched with pre-releases admitted:
    `SpecifierSet(">=0.5.5,<0.5.8")`.

    InvalidSpecifier when packaging would refuse the text too."""

    __slots__ = ("text", "_clauses", "_packaging")

    def __init__(self, text: str) -> None:
        self.text = text
        self._clauses: list[Clause] | None = []
        self._packaging: PackagingSet | None = None
        for part in (p for p in text.split(",") if p.strip()) if isinstance(text, str) else ():
            match = re.match(_CLAUSE, part)
            spec = parse(match["version"]) if match else None
            if match is None or spec is None or spec.local is not None:
                self._clauses = None
                break
            self._clauses.append(_clause(match["op"], spec))
        if self._clauses is None or not isinstance(text, str):
            self._packaging = _packaging_specifier(text)

    @property
    def uses_packaging(self) -> bool:
        """Whether this specifier is one the clauses here do not cover, matched by packaging."""
        return self._packaging is not None

    def contains(self, version: Version | str) -> bool:
        """Whether `version` (pre-releases included) meets every clause; False for a text that is no
        version."""
        if self._packaging is not None:
            return bool(self._packaging.contains(str(version), prereleases=True))
        parsed = version if isinstance(version, Version) else parse(version)
        return parsed is not None and all(clause(parsed) for clause in self._clauses or ())

    def __contains__(self, version: Version | str) -> bool:
        return self.contains(version)

    def __repr__(self) -> str:
        return f"<SpecifierSet({self.text!r})>"


def _packaging_specifier(text: str) -> PackagingSet:
    """packaging's SpecifierSet for what the clauses above do not cover (imported here: start-up
    speed)."""
    from packaging.specifiers import InvalidSpecifier as PackagingInvalid
    from packaging.specifiers import SpecifierSet as PackagingSet

    try:
        return PackagingSet(text)
    except (PackagingInvalid, TypeError, AttributeError) as exc:
        raise InvalidSpecifier(str(exc)) from None
