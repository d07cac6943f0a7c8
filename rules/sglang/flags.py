"""SGLang's real server flag sets, per release, read from
rules/sglang/generated/sglang-<version>.json.

The data files are extracted from SGLang's release wheels by scripts/extract_sglang_flags.py;
nothing here is typed by hand. Rules and renderers ask a FlagSet whether a flag exists in the SGLang
version a launch targets, whether it takes a value, whether it is deprecated (and by what), and how
argparse would read a token:

    fs = load_flag_set("0.5.23")
    fs.has("--cuda-graph-max-bs-decode")        # True
    fs.resolve("--cuda-graph-max-bs").kind      # "ambiguous": argparse prefix matching, start-up error
    fs.suggest("--cuda-graph-max-bs")           # ["--cuda-graph-max-bs-decode", ...]

Versions are matched to data files by match_version (docs/sglang-versions.md): a local build
(+cu129) is its release; a pre-release or dev build without data of its own (0.5.12rc1, 0.5.12.dev3)
uses the data of the release it leads to, else the nearest older release; a version without data
uses the nearest older release, and one newer than every data file the newest (FlagSet.exact is
False; FlagSet.note and FlagSet.warning say so). A version older than every data file is an error.

Only json loading happens here (no SGLang, torch or network), so this is cheap to import and call.

Layer: knowledge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

from topoctl.core.errors import TopoctlError, one_line
from topoctl.core.pep440 import InvalidVersion, Version

_DATA_DIR = "generated"
_NAME_RE = re.compile(r"^sglang-(?P<version>[0-9][0-9A-Za-z.+-]*)\.json$")
# argparse adds these to every parser (add_help=True); they take part in prefix matching.
_HELP_OPTIONS = ("-h", "--help")
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def _data_dir() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), _DATA_DIR)


@functools.lru_cache(maxsize=1)
def _index() -> dict[str, str]:
    """{version string: path} for every data file shipped (a listing only: no file is read here)."""
    out = {}
    try:
        names = os.listdir(_data_dir())
    except OSError:
        names = []
    for name in names:
        m = _NAME_RE.match(name)
        if m:
            out[m.group("version")] = os.path.join(_data_dir(), name)
    return out


def known_versions() -> list[str]:
    """SGLang versions with flag data, oldest first."""
    return sorted(_index(), key=Version)


MAX_VERSION_CHARS = 64  # the longest real spelling (0.5.12rc1.post3+cu129.torch2.8) is about 30


def _parse_version(text: str) -> Version:
    """The public part of a version (`v0.5.12`, ` 0.5.12 `, `0.5.12+cu129` -> 0.5.12): a local label
    such as +cu129 is a build tag of the same release, with the same flags."""
    try:
        if (
            not str(text).strip() or len(str(text)) > MAX_VERSION_CHARS
        ):  # a 5000-digit number is no release
            raise InvalidVersion(text)
        return Version(Version(str(text).strip()).public)
    except (
        InvalidVersion,
        ValueError,
    ):  # ValueError: a component past Python's 4,300-digit int conversion
        raise TopoctlError(
            f"{one_line(repr(str(text)), 80)} is not an SGLang version",
            hint="give a release version such as "
            + ", ".join(known_versions()[-2:] or ["0.5.23"])
            + " (a leading v and a build tag such as +cu129 are accepted)",
        ) from None


def normalise_version(text: str) -> str:
    """`v0.5.12`, ` 0.5.12 `, `0.5.12+cu129` -> "0.5.12"; TopoctlError (exit 2) for anything that is
    not one."""
    return str(_parse_version(text))


@dataclass(frozen=True)
class Resolution:
    """How argparse would read one command-line token.

    kind: "exact" (an option string as written, or written `--opt=value`), "prefix" (a unique
    abbreviation argparse accepts when allow_abbrev is on), "ambiguous" (argparse stops: "ambiguous
    option: ... could match ..."), "unknown" (argparse: "unrecognized arguments"), or "positional"
    (not an option token).
    """

    token: str
    kind: str
    flag: str | None = (
        None  # primary name of the flag matched (key of FlagSet.flags); "--help" for -h/--help
    )
    option: str | None = None  # the option string argparse matched
    value: str | None = None  # the explicit value after "=" (or after a short option), if any
    candidates: tuple[str, ...] = ()  # option strings argparse saw as matches (ambiguous)
    candidate_flags: tuple[str, ...] = ()  # the distinct flags behind `candidates` (aliases folded)

    @property
    def ok(self) -> bool:
        return self.kind in ("exact", "prefix")


@dataclass
class FlagSet:
    version: str  # the SGLang version whose data is used
    requested: str  # the version that was asked for
    exact: bool
    note: str
    allow_abbrev: bool
    flags: dict[str, dict[str, Any]]
    env: list[dict[str, Any]] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=dict)
    newer_than_all: bool = (
        False  # the version asked for is newer than every data file (the newest was used)
    )
    # how `requested` was matched to `version`: exact, release, older, newest (match_version)
    match: str = "exact"
    _option_index: dict[str, str] | None = field(default=None, repr=False, compare=False)

    @property
    def warning(self) -> str | None:
        """One line for stderr when the flags are not this very version's, else None."""
        if self.exact:
            return None
        return (
            f"no SGLang flag data for {self.requested}; its flags are judged as SGLang "
            f"{self.version}'s, "
            + _MATCH_REASON.get(self.match, "the nearest older")
            + (
                f" (topoctl knows {known_versions()[0]} to {newest_version()})"
                if self.match == "newest"
                else ""
            )
        )

    @property
    def _options(self) -> dict[str, str]:
        """Every option string -> its primary flag; built on first use (most runs look up a few
        flags)."""
        index = self._option_index
        if index is None:
            index = {}
            for primary, info in self.flags.items():
                for opt in info.get("options") or [primary]:
                    index[opt] = primary
            for opt in _HELP_OPTIONS:
                index.setdefault(opt, "--help")
            self._option_index = index
        return index

    # ---- lookups
    # -------------------------------------------------------------------------------------

    @staticmethod
    def _name(flag: str) -> str:
        flag = flag.strip()
        if "=" in flag and flag.startswith("-"):
            flag = flag.split("=", 1)[0]
        return flag

    def primary(self, flag: str) -> str | None:
        """The primary name of `flag` (which may be an alias such as --tp for --tp-size), exact
        match only."""
        return self._options.get(self._name(flag))

    def has(self, flag: str) -> bool:
        """True when `flag` (or `--flag=value`) is an option string of this version, exactly as
        written."""
        p = self.primary(flag)
        return p is not None and p != "--help"

    def get(self, flag: str) -> dict[str, Any] | None:
        """The extracted record of a flag (any of its option strings), or None."""
        p = self.primary(flag)
        return None if p is None else self.flags.get(p)

    def is_deprecated(self, flag: str) -> bool:
        info = self.get(flag)
        return bool(info and info.get("deprecated"))

    def replacement(self, flag: str) -> str | None:
        """What SGLang says to use instead of a deprecated flag, when it says so."""
        info = self.get(flag)
        return ((info or {}).get("deprecation") or {}).get("replacement")

    def takes_value(self, flag: str) -> bool:
        """Whether the flag consumes a value (`--tp-size 8`) or is a switch (`--enable-p2p-check`).

        Raises KeyError for a flag this version does not have.
        """
        info = self.get(flag)
        if info is None:
            raise KeyError(f"{flag} is not a flag of SGLang {self.version}")
        return bool(info.get("takes_value"))

    def choices(self, flag: str) -> list[Any] | None:
        info = self.get(flag)
        return None if info is None else info.get("choices")

    def env_names(self) -> list[str]:
        """SGLANG_* environment variables found in this version's wheel (communication-related)."""
        return [e["name"] for e in self.env]

    def has_env(self, name: str) -> bool:
        return name in self.env_names()

    def all_options(self) -> list[str]:
        """Every option string argparse registers (aliases and --no-X forms included, -h/--help
        too)."""
        return sorted(self._options)

    # ---- argparse behaviour
    # --------------------------------------------------------------------------

    def resolve(self, token: str) -> Resolution:
        """Read `token` the way SGLang's argparse parser (Python 3.11 semantics) reads one argument."""
        opts = self._options
        if not token or token[0] != "-":
            return Resolution(token, "positional")
        if token in opts:
            return Resolution(token, "exact", opts[token], token)
        if len(token) == 1:
            return Resolution(token, "positional")
        value: str | None
        if "=" in token:
            name, value = token.split("=", 1)
            if name in opts:
                return Resolution(token, "exact", opts[name], name, value)
        matches: list[tuple[str, str | None]] = []
        if token[1] == "-":
            if self.allow_abbrev:
                prefix, given = token.split("=", 1) if "=" in token else (token, None)
                matches = [(o, given) for o in opts if o.startswith(prefix)]
        else:
            short, short_value = token[:2], token[2:]
            for o in opts:
                if o == short:
                    matches.append((o, short_value))
                elif o.startswith(token):
                    matches.append((o, None))
        if len(matches) > 1:
            cands = tuple(o for o, _ in matches)
            flags = tuple(dict.fromkeys(opts[o] for o in cands))
            return Resolution(token, "ambiguous", candidates=cands, candidate_flags=flags)
        if len(matches) == 1:
            o, matched_value = matches[0]
            return Resolution(token, "prefix", opts[o], o, matched_value)
        if _NEGATIVE_NUMBER.match(token) or " " in token:
            return Resolution(token, "positional")
        return Resolution(token, "unknown")

    def suggest(self, flag: str, n: int = 3) -> list[str]:
        """Close option strings for a "did you mean" hint (longest-common-prefix matches first)."""
        import difflib

        name = self._name(flag)
        pool = [o for o in self._options if o.startswith("--")]
        out: list[str] = []
        # a retired name usually survives as the stem of its successor (--cuda-graph-max-bs-decode)
        for o in sorted(pool):
            if o.startswith(name + "-") and self._options[o] != "--help":
                out.append(o)
        for o in difflib.get_close_matches(name, pool, n=n + len(out), cutoff=0.6):
            if o not in out and o != name:
                out.append(o)
        return out[:n]

    def argv_flags(self, argv: list[str]) -> list[Resolution]:
        """Resolve the option tokens of an argv list, skipping the values that flags consume."""
        out: list[Resolution] = []
        skip = 0
        for tok in argv:
            if skip and not (
                tok.startswith("-") and len(tok) > 1 and not _NEGATIVE_NUMBER.match(tok)
            ):
                skip -= 1
                continue
            skip = 0
            r = self.resolve(tok)
            if r.kind == "positional":
                continue
            out.append(r)
            if r.ok and r.value is None and r.flag in self.flags:
                info = self.flags[r.flag]
                if info.get("takes_value"):
                    nargs = info.get("nargs")
                    skip = (
                        nargs if isinstance(nargs, int) else (10**6 if nargs in ("+", "*") else 1)
                    )
        return out


@functools.lru_cache(maxsize=None)
def _load_doc(version: str) -> dict[str, Any]:
    from topoctl.core import safe_read as limits

    return json.loads(limits.read_file(_index()[version], limits.MAX_DATA_FILE_BYTES))


def newest_version() -> str | None:
    """The newest SGLang release topoctl has flag data for (pre-releases count only when nothing
    else)."""
    versions = known_versions()
    finals = [v for v in versions if not Version(v).is_prerelease]
    return finals[-1] if finals else (versions[-1] if versions else None)


def _release_of(want: Version) -> Version:
    """The release a pre-release or dev build leads to: 0.5.12rc1 and 0.5.12.dev3 -> 0.5.12,
    0.5.12.post1.dev0 -> 0.5.12.post1."""
    text = want.base_version + (f".post{want.post}" if want.post is not None else "")
    return Version(text)


def match_version(version: str) -> tuple[str, str]:
    """(the data version to use, how it was matched) for an SGLang version string.

    how: "exact" (data for this very version; a local label such as +cu129 is dropped first),
    "release" (a pre-release or dev build judged with the data of the release it leads to), "older"
    (no data: the nearest older release), "newest" (newer than every release with data: the newest).
    TopoctlError when the version is older than every data file, or not a version.
    """
    versions = known_versions()
    if not versions:
        raise TopoctlError(
            "no SGLang flag data is installed",
            hint="reinstall topoctl; rules/sglang/generated/sglang-*.json ship with it",
        )
    want = _parse_version(version)
    for v in versions:
        if Version(v) == want:
            return v, "exact"
    finals = [v for v in versions if not Version(v).is_prerelease]
    target = _release_of(want) if (want.is_prerelease or want.is_devrelease) else want
    for v in finals:
        if Version(v) == target:
            return v, "release"
    older = [v for v in finals if Version(v) <= target]
    if not older:
        raise TopoctlError(
            f"no SGLang flag data for {version} or any older version",
            hint="known versions: "
            + ", ".join(versions)
            + " (add one with scripts/extract_sglang_flags.py, see docs/sglang-versions.md)",
        )
    return older[-1], ("newest" if older[-1] == finals[-1] else "older")


_MATCH_REASON = {
    "release": "the release this pre-release or dev build leads to",
    "newest": "the newest known version",
    "older": "the nearest older",
}


def load_flag_set(version: str) -> FlagSet:
    """The flag set of SGLang `version`, matched as match_version says (noted on the result)."""
    chosen, how = match_version(version)
    note = (
        f"flag data for SGLang {chosen}"
        if how == "exact"
        else f"no flag data for {version}; using {chosen}, {_MATCH_REASON[how]}"
    )
    doc = _load_doc(chosen)
    return FlagSet(
        version=chosen,
        requested=str(version),
        exact=how == "exact",
        note=note,
        match=how,
        newer_than_all=how == "newest",
        allow_abbrev=bool(doc.get("allow_abbrev", True)),
        flags=doc["flags"],
        env=list(doc.get("env", [])),
        source=dict(doc.get("source", {})),
    )
