"""The knowledge cache: topoctl's built-in data, parsed and checked once, kept as JSON in the user's
cache dir.

Every `topoctl recommend` and `topoctl check` needs the built-in rules, the launch settings and the
model profiles. Reading them from YAML costs more than the rest of the command (PyYAML's import,
parsing, checking every rule), so the first run stores the checked result as plain JSON and later
runs read that instead:

    $XDG_CACHE_HOME/topoctl/  (else ~/.cache/topoctl/), created with mode 0700
        rules-0.1.0-1a2b3c4d.json        one file per section, topoctl version and fingerprint

What makes a cached section trustworthy:

- The fingerprint lists, for every file the section is made from (the shipped YAML/JSON data and the
  code that turns it into plain data), its path, size and mtime_ns, plus the topoctl version and
  this module's format number. Editing a data file in an editable install, installing elsewhere or
  upgrading gives a new fingerprint, so a stale section is never served. The full fingerprint is
  stored inside the file and compared on every read; the short hash in the file name only keeps
  different installs apart.
- Files are written to a temporary name in the same folder and renamed into place (atomic on POSIX),
  so concurrent CI jobs never read half a file. A file that cannot be read or parsed, or whose
  fingerprint does not match, is ignored and rewritten.
- What is read back is checked, not trusted: the file stores an HMAC-SHA256 of its fingerprint and
  data under a key of this install (`key` in the cache folder: 32 random bytes, mode 0600, made on
  first use and replaced when it is not a private regular file of this user), and a section can name
  what it must contain (`check`: the rules section must hold every rule id the shipped rule files
  define). Content edited by hand, cut short, emptied or rewritten with a recomputed checksum fails,
  is ignored and is rebuilt from the sources: without the key no one can forge a cache file that
  turns a block into info.
- The content is JSON of plain data (no pickle, nothing is executed on load). A section is only
  stored when JSON gives back exactly what was built (so int keys, tuples or dates in some data file
  cannot make a warm run differ from a cold one); otherwise it is simply not cached.
- Site rules (--rules DIR) are cached per folder (store_section/read_section: one file per folder,
  keyed by its real path), each rule file's entry under the SHA-256 of its bytes; every run reads
  every rule file and uses an entry only when its content is the same (rules/engine/loader.py).

When the folder cannot be created or written, or TOPOCTL_NO_CACHE=1 is set, everything still works:
the data is built in memory for this run, as without a cache. Loading a cached section imports only
json.

Shipped sections: topoctl/data/compiled/<section>.json holds the built-in sections as
`scripts/compile_knowledge.py` built them from the shipped files, keyed by the SHA-256 of every
source file's content (so they hold in any install layout). A run whose user cache has no section (a
fresh CI job) uses a shipped section whose sources are byte for byte the installed ones instead of
parsing the YAML, and reads it there every time (a copy in the user cache would save nothing); a
source that differs (an edited file in a checkout) makes it build as before.
tests/core/test_cache.py fails when the shipped sections are stale.

Layer: core types and data (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol, TypeVar

from topoctl import __version__
from topoctl.core import safe_read as limits
from topoctl.core.errors import TopoctlError

SHIPPED_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "compiled"
)
_recording: dict[str, tuple[list[str], object]] | None = (
    None  # scripts/compile_knowledge.py: what was built
)
FORMAT = 2  # bump when the layout of a cached section changes without a data file changing
ENV_DISABLE = "TOPOCTL_NO_CACHE"
KEY_FILE = "key"  # the install's HMAC key, beside the cached sections
KEY_BYTES = 32
_keys: dict[str, bytes | None] = {}  # cache folder -> its key, read once per process
_hashed: dict[
    str, bytes
] = {}  # source path -> the bytes content_stamp hashed, during one cached() call
Stamp = list[
    object
]  # a section's fingerprint: format, version, python, then [path, size, mtime_ns] per source
T = TypeVar("T")  # what a section's build gives, and so what the cache hands back

if TYPE_CHECKING:

    class Digest(Protocol):
        """What content_stamp asks of a SHA-256 object (hashlib's or the interpreter's built-in
        one)."""

        def hexdigest(self) -> str: ...


def cache_dir() -> str | None:
    """The folder for topoctl's cache, or None when caching is switched off (TOPOCTL_NO_CACHE=1)."""
    if os.environ.get(ENV_DISABLE, "").strip() not in ("", "0"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(base):  # the XDG spec: a relative value is invalid and ignored
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "topoctl")


def package_dir(package: str) -> str:
    """The folder an installed topoctl package lives in (its data files are next to its modules)."""
    module = sys.modules.get(package)
    if module is None:
        import importlib

        module = importlib.import_module(package)
    where = module.__file__
    if where is None:  # a namespace package: not how topoctl installs its packages
        raise ImportError(f"{package} has no folder of its own")
    return _through_link(os.path.dirname(os.path.abspath(where)))


def _through_link(folder: str) -> str:
    """A checkout's folder by its own name: topoctl/rules/x -> rules/x where topoctl/rules links to
    ../rules (an installed package has no such link and keeps its path), so messages name the file a
    user edits."""
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    first, _, rest = os.path.relpath(folder, top).partition(os.sep)
    link = os.path.join(top, first)
    if first.startswith(".") or not os.path.islink(link):
        return folder
    return os.path.join(os.path.realpath(link), rest) if rest else os.path.realpath(link)


def data_files(folder: str, suffixes: tuple[str, ...]) -> list[str]:
    """The files of `folder` ending in one of `suffixes`, sorted (an absent folder has none)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(os.path.join(folder, name) for name in names if name.endswith(suffixes))


def fingerprint(sources: Iterable[str]) -> Stamp:
    """What a section is made from: [format, version, python, [path, size, mtime_ns] per source
    file]."""
    parts: Stamp = [FORMAT, __version__, "%d.%d" % sys.version_info[:2]]
    for path in sources:
        try:
            info = os.stat(path)
            parts.append([path, info.st_size, info.st_mtime_ns])
        except OSError:
            parts.append([path, None, None])
    return parts


def cached(
    section: str,
    sources: Iterable[str],
    build: Callable[[], T],
    check: Callable[[T], bool] | None = None,
) -> T:
    """The plain data of `section`: from the cache when its fingerprint and digest match and
    `check(data)` holds, else `build()` (and stored).

    `sources` are every file `build` reads (and the code that shapes its result); `build` returns
    plain JSON-compatible data or raises (a TopoctlError for a bad data file passes through, nothing
    is stored). `check` says whether cached data holds what it must (e.g. every built-in rule); data
    that fails it is rebuilt.
    """
    sources = list(sources)
    # what a check reads through source_text is what this call hashed, never an older read
    _hashed.clear()
    folder = cache_dir()
    if folder is None:
        data = build()
        if _recording is not None:
            _recording[section] = (sources, data)
        return data
    stamp = fingerprint(sources)
    path = _section_path(folder, section, stamp)
    found = _read(path, stamp)
    if found is not None and (check is None or _holds(check, found[0])):
        cached_data: T = found[0]  # JSON the check (when given) held to what the build gives
        return cached_data
    shipped = _read_shipped(section, sources)
    try:
        if shipped is not None and (check is None or _holds(check, shipped[0])):
            shipped_data: T = shipped[0]
            # not copied into the user cache: reading it here costs what a copy would save
            return shipped_data
    finally:
        _hashed.clear()  # held only for the check of the section they were hashed for
    data = build()
    _write(folder, path, stamp, data)
    return data


def _section_path(folder: str, section: str, stamp: Stamp) -> str:
    import zlib

    text = json.dumps(stamp, separators=(",", ":"))
    return os.path.join(folder, f"{section}-{__version__}-{zlib.crc32(text.encode()):08x}.json")


def read_section(section: str, sources: Iterable[str], key: str) -> Any:
    """What store_section stored for (`section`, the fingerprint of `sources`, `key`), or None when
    there is none, it is stale, or it fails its HMAC (or caching is off). `key` tells apart the
    entries of one section (a site rule folder's real path)."""
    folder = cache_dir()
    if folder is None:
        return None
    stamp = [*fingerprint(sources), key]
    found = _read(_section_path(folder, section, stamp), stamp)
    return None if found is None else found[0]


def store_section(section: str, sources: Iterable[str], key: str, data: object) -> None:
    """Store `data` for read_section (plain JSON data; silently nothing when caching is off or
    fails)."""
    folder = cache_dir()
    if folder is None:
        return
    stamp = [*fingerprint(sources), key]
    _write(folder, _section_path(folder, section, stamp), stamp, data)


def install_key(folder: str) -> bytes | None:
    """The HMAC key of the cache folder: read once per process; made (mode 0600, atomically) when
    absent, and replaced when it is not a regular file of this user that only this user can read, or
    is not 32 bytes. None when it can be neither read nor made (then nothing is cached)."""
    if folder in _keys:
        return _keys[folder]
    path = os.path.join(folder, KEY_FILE)
    key = _read_key(path)
    if key is None:
        key = _new_key(folder, path)
    _keys[folder] = key
    return key


def _read_key(path: str) -> bytes | None:
    import stat

    try:
        handle = os.open(
            path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        )
    except OSError:
        return None
    try:
        info = os.fstat(handle)
        private = (
            stat.S_ISREG(info.st_mode)
            and stat.S_IMODE(info.st_mode) & 0o077 == 0
            and info.st_uid == os.getuid()
        )
        key = os.read(handle, KEY_BYTES + 1) if private else b""
    except OSError:
        return None
    finally:
        os.close(handle)
    return key if len(key) == KEY_BYTES else None


def _new_key(folder: str, path: str) -> bytes | None:
    import tempfile

    temporary = None
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".tmp-", suffix=".key", dir=folder)  # mode 0600
        key = os.urandom(KEY_BYTES)
        with os.fdopen(handle, "wb") as out:
            out.write(key)
        os.replace(temporary, path)
        temporary = None
        return key
    except OSError:
        return None
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass


def _mac(folder: str, stamp: Stamp, body: bytes) -> str | None:
    """HMAC-SHA256 of a section's fingerprint and data under the install's key (None: no key, no
    cache)."""
    import hmac

    key = install_key(folder)
    if key is None:
        return None
    return hmac.new(
        key, json.dumps(stamp, separators=(",", ":")).encode() + b"\n" + body, "sha256"
    ).hexdigest()


def sha256(data: bytes) -> Digest:
    """A SHA-256 hash object of `data`: the interpreter's built-in SHA-256 when it has one, else
    hashlib's.

    Every warm `check` and `recommend` hashes the shipped sources (content_stamp); hashlib loads
    OpenSSL's libcrypto for it, about 2 ms of a start-up near 80 ms, while the built-in module (the
    one hashlib itself falls back to without OpenSSL) gives the same digest
    (tests/core/test_cache.py compares them)."""
    try:
        from _sha256 import sha256 as builtin  # CPython 3.11
    except ImportError:
        try:
            from _sha2 import sha256 as builtin  # type: ignore[no-redef]  # CPython 3.12 and later
        except ImportError:
            from hashlib import sha256 as builtin  # type: ignore[no-redef]
    digest: Digest = builtin(data)
    return digest


def content_stamp(sources: Iterable[str]) -> list[str]:
    """The sorted SHA-256 of each source file's bytes ("absent" for a missing one): what a shipped
    section was built from, whatever folder the files are installed in."""
    digests = []
    for path in sources:
        try:
            data = _hashed[path] = limits.read_file(path, limits.MAX_DATA_FILE_BYTES)
            digests.append(sha256(data).hexdigest())
        except (
            OSError,
            TopoctlError,
        ):  # the one reading layer: a FIFO or device in its place is not read
            digests.append("absent")
    return sorted(digests)


def source_text(path: str) -> str:
    """The text of a section's source file for its `check`: the bytes this cached() call already
    hashed (a shipped section's sources are read once, not again by the check), else read now
    (limits.read_text)."""
    data = _hashed.get(path)
    if data is None:
        return limits.read_text(path, limits.MAX_DATA_FILE_BYTES)
    return limits.decode(data, path, "save it as UTF-8 text")


def _read_shipped(section: str, sources: list[str]) -> tuple[Any] | None:
    """(data,) of topoctl/data/compiled/<section>.json when it was built from exactly these sources'
    content."""
    try:
        raw = limits.read_file(os.path.join(SHIPPED_DIR, f"{section}.json"), limits.MAX_CACHE_BYTES)
        header_line, _, body = raw.partition(b"\n")
        header = json.loads(header_line)
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            return None
        if header.get("sources_sha256") != content_stamp(sources):
            return None
        if header.get("sha256") != sha256(body).hexdigest():
            return None
        return (json.loads(body),)
    except (
        OSError,
        ValueError,
        TopoctlError,
    ):  # TopoctlError: past the size limit, a FIFO or device
        return None


def shipped_text(sources: list[str], data: object) -> str:
    """The text of a shipped section file (scripts/compile_knowledge.py writes it)."""
    import hashlib

    body = json.dumps(data, separators=(",", ":"), ensure_ascii=False, sort_keys=False)
    header = {
        "format": FORMAT,
        "sources_sha256": content_stamp(sources),
        "sha256": hashlib.sha256(body.encode("utf-8")).hexdigest(),
    }
    return json.dumps(header, separators=(",", ":")) + "\n" + body


def _holds(check: Callable[[T], bool], data: T) -> bool:
    try:
        return bool(check(data))
    except Exception:  # a malformed section (wrong types inside) fails its check
        return False


def _read(path: str, stamp: Stamp) -> tuple[Any] | None:
    """(data,) from a cache file whose fingerprint equals `stamp` and whose data matches its HMAC;
    None for absent, unreadable, stale or altered. The file is two lines: a header (fingerprint,
    hmac) and the data. hmac (and OpenSSL) is imported only once a file is there to check: a run
    served by the shipped sections has none."""
    try:
        header_line, _, body = limits.read_file(path, limits.MAX_CACHE_BYTES).partition(b"\n")
        header = json.loads(header_line)
        if not isinstance(header, dict) or header.get("fingerprint") != stamp:
            return None
        import hmac

        mac = _mac(os.path.dirname(path), stamp, body)
        if (
            mac is None
            or not isinstance(header.get("hmac"), str)
            or not hmac.compare_digest(header["hmac"], mac)
        ):
            return None
        return (json.loads(body),)
    except (
        OSError,
        ValueError,
        TopoctlError,
    ):  # ValueError: not JSON, or not UTF-8; TopoctlError: a FIFO...
        return None


def _write(folder: str, path: str, stamp: Stamp, data: object) -> None:
    """Store `data` atomically; give up silently when the folder is not writable or the data is not
    plain."""
    try:
        body = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
        if json.loads(body) != data:
            # JSON would change it (int keys, tuples): a warm run must see what a cold run sees
            return
    except (TypeError, ValueError):
        return
    encoded = body.encode("utf-8")
    import tempfile

    temporary = None
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        mac = _mac(folder, stamp, encoded)
        if mac is None:
            return  # no key: nothing this install could trust later
        header = json.dumps({"fingerprint": stamp, "hmac": mac}, separators=(",", ":"))
        handle, temporary = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=folder)
        with os.fdopen(handle, "wb") as out:
            out.write(header.encode("utf-8") + b"\n" + encoded)
        os.replace(temporary, path)
        temporary = None
    except OSError:
        pass
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass
