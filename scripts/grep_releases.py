#!/usr/bin/env python3
"""Grep one pattern across every unpacked release of a package and print where it is, release by release.

A dev tool for scoping rules by version: the first release where a behaviour holds and the first
where it stops are read from the source of every release in between, not guessed from a few sampled
ones.

    python scripts/grep_releases.py SRC_ROOT PATTERN [--path SUBPATH] [--fixed] [--context N] [--changes]

SRC_ROOT holds one folder per release (SRC_ROOT/0.5.5/, SRC_ROOT/0.5.5.post1/, ... each an unpacked
wheel). Releases are ordered by PEP 440. For each release it prints `release: file:line: text` for
every match (file relative to the release folder), or `release: (absent)`. `--changes` prints only
the releases where the set of matching lines (text, not position) differs from the release before:
the boundaries. Exit 0 always (absent is an answer); exit 2 on a bad pattern or folder.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from packaging.version import InvalidVersion, Version


def releases(root: str) -> list[str]:
    """The release folders under `root`, oldest first (folders that are not PEP 440 versions are
    skipped)."""
    found = []
    for name in os.listdir(root):
        try:
            found.append((Version(name), name))
        except InvalidVersion:
            continue
    return [name for _, name in sorted(found)]


def release_folders(src_root: str) -> list[str] | None:
    """The release folders of an extractor's SRC_ROOT, oldest first; None (the error said on stderr,
    exit 2 for the caller) when it is not a folder or holds no release."""
    if not os.path.isdir(src_root):
        print(
            f"error: {src_root} is not a folder (hint: one unpacked wheel per release under it)",
            file=sys.stderr,
        )
        return None
    found = releases(src_root)
    if not found:
        print(f"error: no release folders under {src_root}", file=sys.stderr)
        return None
    return found


def write_or_print(text: str, output: str | None) -> None:
    """An extractor's result: written to `output` atomically (topoctl.core.io.write_atomic, so a run
    cut short leaves the committed data file whole), or printed when no -o was given."""
    if not output:
        sys.stdout.write(text)
        return
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from topoctl.core.io import write_atomic

    write_atomic(output, text)


def matches(folder: str, pattern: re.Pattern[str], subpath: str) -> list[tuple[str, int, str]]:
    """(file, line number, stripped text) of every line matching `pattern` under folder/subpath
    (*.py only)."""
    base = os.path.join(folder, subpath)
    files: list[str] = []
    if os.path.isfile(base):
        files = [base]
    else:
        for directory, _, names in os.walk(base):
            files.extend(os.path.join(directory, name) for name in names if name.endswith(".py"))
    hits = []
    for path in sorted(files):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                for number, line in enumerate(handle, 1):
                    if pattern.search(line):
                        hits.append((os.path.relpath(path, folder), number, line.strip()))
        except OSError:
            continue
    return hits


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "root", help="folder with one unpacked release per sub-folder, named by version"
    )
    parser.add_argument(
        "pattern", help="regular expression (Python re), or a fixed string with --fixed"
    )
    parser.add_argument(
        "--path", default="", help="search only this file or folder inside each release"
    )
    parser.add_argument("--fixed", action="store_true", help="PATTERN is a fixed string")
    parser.add_argument(
        "--changes", action="store_true", help="print only releases whose matches change"
    )
    parser.add_argument(
        "--first", type=str, default=None, help="oldest release to read (inclusive)"
    )
    parser.add_argument(
        "--pre", action="store_true", help="read pre-releases too (skipped by default)"
    )
    args = parser.parse_args(argv)
    if not os.path.isdir(args.root):
        print(
            f"error: {args.root} is not a folder (hint: unpack one wheel per release into it)",
            file=sys.stderr,
        )
        return 2
    try:
        pattern = re.compile(re.escape(args.pattern) if args.fixed else args.pattern)
    except re.error as exc:
        print(f"error: bad pattern: {exc} (hint: use --fixed for a plain string)", file=sys.stderr)
        return 2
    previous: set[str] | None = None
    for name in releases(args.root):
        if args.first and Version(name) < Version(args.first):
            continue
        if Version(name).is_prerelease and not args.pre:
            continue
        hits = matches(os.path.join(args.root, name), pattern, args.path)
        texts = {f"{path}: {text}" for path, _, text in hits}
        if args.changes and previous is not None and texts == previous:
            continue
        previous = texts
        if not hits:
            print(f"{name}: (absent)")
        for path, number, text in hits:
            print(f"{name}: {path}:{number}: {text}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # piped into head: the reader has what it wanted
        sys.stderr.close()
        sys.exit(0)
