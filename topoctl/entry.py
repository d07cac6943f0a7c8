"""The console script's door: `topoctl --version` answers without importing click or any command (it is
what scripts and CI logs call most often), everything else goes to topoctl.cli."""
from __future__ import annotations

import sys

_PRE_TAGS = {"a": 0, "b": 1, "rc": 2}


def _number(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _release_key(text: str) -> "tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None":
    """PEP 440 order of `N(.N)*[a|b|rc N][.postN]` (how every SGLang release is spelt) without importing
    packaging: (release without trailing zeros, pre-release, post-release). None for any other spelling,
    which then goes to packaging (tests hold the two orders equal)."""
    main, dot_post, post = text.partition(".post")
    if dot_post and not _number(post):
        return None
    cut = next((at for at, char in enumerate(main) if not (char.isdigit() or char == ".")), len(main))
    release, tag = main[:cut].split("."), main[cut:]
    if not all(_number(part) for part in release):
        return None
    numbers = [int(part) for part in release]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    pre: tuple[int, ...] = (1,)  # a final release sorts after its pre-releases
    if tag:
        letters = tag.rstrip("0123456789")
        if letters not in _PRE_TAGS or not _number(tag[len(letters):]):
            return None
        pre = (0, _PRE_TAGS[letters], int(tag[len(letters):]))
    return tuple(numbers), pre, (int(post),) if dot_post else (-1,)


def _flag_data_versions() -> list[str]:
    """The SGLang versions with flag data (topoctl/sglang/data/sglang-<version>.json), oldest first: the same
    listing as topoctl.sglang.flags.known_versions(), without importing that module (tests hold them equal)."""
    import os

    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sglang", "data")
    try:
        found = [name[len("sglang-"):-len(".json")] for name in os.listdir(folder)
                 if name.startswith("sglang-") and name.endswith(".json") and len(name) > len("sglang-.json")]
    except OSError:
        found = []
    found = [version for version in found  # the names topoctl/sglang/flags.py's _NAME_RE takes
             if version[0].isdigit() and all(char.isascii() and (char.isalnum() or char in ".+-") for char in version)]
    keys = {version: _release_key(version) for version in found}
    if None in keys.values():
        from packaging.version import Version

        return sorted(found, key=Version)
    return sorted(found, key=lambda version: keys[version] or ((), (), ()))


def _is_prerelease(version: str) -> bool:
    key = _release_key(version)
    if key is None:
        from packaging.version import Version

        return Version(version).is_prerelease
    return key[1] != (1,)


def version_text() -> str:
    """topoctl's own version and the SGLang releases it has flag data for, the newest named."""
    from topoctl import __version__

    versions = _flag_data_versions()
    text = f"topoctl {__version__}\n"
    if versions:
        finals = [v for v in versions if not _is_prerelease(v)]
        newest = finals[-1] if finals else versions[-1]
        text += (f"SGLang flag data: {len(versions)} versions, {versions[0]} to {newest}; newest known "
                 f"release {newest} (a newer one is judged with its data, with a warning)\n")
    return text


def _say(text: str) -> None:
    """One line to stderr, dropped when stderr cannot take it (the exit code still says what happened)."""
    try:
        if sys.stderr is not None:
            sys.stderr.write(text)
            sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _print_version() -> int:
    """`topoctl --version` on stdout: 74 (EX_IOERR) with one line when stdout is closed or cannot be written."""
    hint = "  hint: give topoctl a writable stdout\n"
    if sys.stdout is None:  # started with stdout closed (`topoctl --version >&-`)
        _say("topoctl: error: cannot write the output: stdout is closed\n" + hint)
        return 74
    try:
        sys.stdout.write(version_text())
        sys.stdout.flush()
    except BrokenPipeError:
        return 0
    except (OSError, ValueError) as exc:
        _say(f"topoctl: error: cannot write the output to stdout: {getattr(exc, 'strerror', None) or exc}\n" + hint)
        return 74
    return 0


def settle_streams(code: int) -> int:
    """Flush stdout and stderr and close them, inside topoctl, before the interpreter's exit would.

    Python flushes both once more at exit and turns a failure there into exit 120, whatever the command
    returned; closing them here leaves it nothing to flush. A stdout that fails now (a full disk, a read-only
    or closed descriptor) makes a successful run 74; stderr that fails is dropped (the code stays what it was).
    """
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name, None)
        if stream is None:
            continue
        try:
            stream.flush()
        except BrokenPipeError:
            pass
        except (OSError, ValueError) as exc:
            if name == "stdout" and code == 0:
                _say(f"topoctl: error: cannot write the output to stdout: {getattr(exc, 'strerror', None) or exc}\n")
                code = 74
        try:
            stream.close()
        except (OSError, ValueError):
            pass
    return code


def _dispatch(args: list[str], argv: list[str] | None) -> int:
    from topoctl.io import Interrupted

    try:
        if list(args) == ["--version"]:
            return _print_version()
        from topoctl.cli import main as cli_main

        return cli_main(argv)
    except Interrupted as stop:  # SIGTERM/SIGHUP during -o, under a handler that did not end the process
        return 128 + stop.signum


def main(argv: list[str] | None = None) -> int:
    """The console script (`topoctl`, `python -m topoctl`): with no `argv`, stdout and stderr are settled
    here and the exit code is final; with `argv` (tests, embedding), the streams are left open."""
    args = sys.argv[1:] if argv is None else argv
    try:
        code = _dispatch(args, argv)
    except KeyboardInterrupt:  # Ctrl-C while the command's modules were still being imported
        _say("topoctl: interrupted\n")
        code = 130
    return settle_streams(code) if argv is None else code
