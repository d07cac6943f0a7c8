"""Version boundaries of rules, held to the releases their evidence names.

A rule that matches `software.sglang` (or a FlashInfer version) through a PEP 440 specifier draws a
line between two releases. That line must be where the behaviour changed, read in the source: every
bound of a specifier must be a release named in the rule's evidence as the first release where the
behaviour holds (`releases.holds_from`) or the first where it stops (`releases.stops_at`), with the
file and line in that release, and both must be real releases. `problems()` lists what breaks this;
the test suite runs it over the built-in rules, and `scripts/grep_releases.py` is the tool for
reading a behaviour across releases.

Layer: knowledge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

# Facts whose version specifiers are SGLang / FlashInfer release bounds.
PACKAGE_OF_FACT = {
    "software.sglang": "sglang",
    "software.sglang_installed": "sglang",
    "request.sglang_version": "sglang",
    "software.flashinfer": "flashinfer",
    "software.flashinfer_target": "flashinfer",
}
SOURCE_PACKAGE = {"upstream:sglang": "sglang", "upstream:flashinfer": "flashinfer"}
_AT = re.compile(r"^[A-Za-z0-9_./-]+:[0-9]+$")


def known_releases() -> dict[str, list[str]]:
    """Releases per package: SGLang 0.5.5.. and flashinfer-python, oldest first."""
    from topoctl.rules.sglang.releases import flashinfer_release_versions, release_versions

    return {"sglang": release_versions(), "flashinfer": flashinfer_release_versions()}


def specifier_bounds(condition: object) -> Iterator[tuple[str, str, str]]:
    """(package, operator, version) of every version specifier in a condition tree, for the facts
    above."""
    if isinstance(condition, list):
        for part in condition:
            yield from specifier_bounds(part)
        return
    if not isinstance(condition, dict):
        return
    if "fact" in condition:
        package = PACKAGE_OF_FACT.get(condition["fact"])
        if package and "version" in condition:
            try:
                specifiers = SpecifierSet(str(condition["version"]))
            except InvalidSpecifier:
                return
            for specifier in specifiers:
                yield package, specifier.operator, specifier.version.removesuffix(".*")
        return
    for key in ("all", "any"):
        if key in condition:
            yield from specifier_bounds(condition[key])
    for key in ("not", "every_pair", "any_pair"):
        if key in condition:
            yield from specifier_bounds(condition[key])


def _same(left: str, right: str) -> bool:
    try:
        return Version(left) == Version(right)
    except InvalidVersion:
        return False


def problems(
    rule_id: str,
    when: object,
    evidence: list[dict[str, Any]],
    releases: dict[str, list[str]] | None = None,
) -> list[str]:
    """Everything wrong with one rule's version boundaries (empty: they are all read from the
    source)."""
    releases = releases if releases is not None else known_releases()
    found: list[str] = []
    named: dict[str, set[str]] = {"sglang": set(), "flashinfer": set()}
    for index, entry in enumerate(evidence):
        found += _evidence_problems(f"{rule_id}: evidence[{index}]", entry, releases, named)
    for package, operator, version in specifier_bounds(when):
        if not any(_same(version, release) for release in releases.get(package, [])):
            found.append(f"{rule_id}: bound {operator}{version} is not a known {package} release")
        if not any(_same(version, release) for release in named[package]):
            found.append(
                f"{rule_id}: bound {operator}{version} of {package} is not a boundary release the"
                " evidence names (releases.holds_from / stops_at with file:line)"
            )
    return found


def _evidence_problems(
    where: str, entry: dict[str, Any], releases: dict[str, list[str]], named: dict[str, set[str]]
) -> list[str]:
    """What is wrong with one evidence item's `releases` block; the boundary releases it names go to
    `named`."""
    source = str(entry.get("source", ""))
    wanted_package = next(
        (
            package
            for prefix, package in SOURCE_PACKAGE.items()
            if source == prefix or source.startswith(prefix + " ")
        ),
        None,
    )
    block = entry.get("releases")
    if block is None:
        return (
            [f"{where}: source {source!r} names no releases (holds_from, stops_at, read_through)"]
            if wanted_package
            else []
        )
    package = block.get("package")
    if package not in releases:
        return [f"{where}: releases.package {package!r} is not sglang or flashinfer"]
    known = releases[package]
    found: list[str] = []
    versions: dict[str, str] = {}
    for key in ("holds_from", "last_holding", "stops_at"):
        boundary = block.get(key)
        if boundary is None:
            continue
        release, at = str(boundary.get("release", "")), str(boundary.get("at", ""))
        if not any(_same(release, version) for version in known):
            found.append(f"{where}: releases.{key} {release!r} is not a known {package} release")
        if not _AT.match(at):
            found.append(f"{where}: releases.{key}.at {at!r} is not file:line")
        versions[key] = release
        if key != "last_holding":
            named[package].add(release)
    if "holds_from" not in versions:
        return found + [f"{where}: releases needs holds_from"]
    read_through = str(block.get("read_through", ""))
    if not any(_same(read_through, version) for version in known):
        return found + [
            f"{where}: releases.read_through {read_through!r} is not a known {package} release"
        ]
    return found + _order_problems(where, package, versions, read_through, known)


def _order_problems(
    where: str, package: str, versions: dict[str, str], read_through: str, known: list[str]
) -> list[str]:
    """The boundaries in order, read through the newest of them (and, while it holds, the newest
    release)."""
    try:
        order = [
            Version(versions[key])
            for key in ("holds_from", "last_holding", "stops_at")
            if key in versions
        ]
    except InvalidVersion:
        return []
    found = []
    if order != sorted(order) or len(set(order)) != len(order):
        found.append(f"{where}: releases are not in order (holds_from < last_holding < stops_at)")
    if Version(read_through) < order[-1]:
        found.append(
            f"{where}: releases.read_through {read_through} is older than a boundary it names"
        )
    if "stops_at" not in versions and package == "sglang" and not _same(read_through, known[-1]):
        found.append(
            f"{where}: behaviour still holds in {read_through}, but the newest release is "
            f"{known[-1]}:"
            " read it too (or name stops_at)"
        )
    return found
