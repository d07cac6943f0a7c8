"""topoctl.core.pep440 against packaging, the reference it stands in for on the start-up path.

Versions: validity, normalised text, the properties topoctl reads and the order of every pair, over
versions generated in every PEP 440 spelling (separators, letter forms, implicit numbers, epochs,
local labels) and over every release string topoctl ships (SGLang flag data, releases.json with its
FlashInfer releases, ai-dynamo option tables, the memory rules' ranges). Specifiers: plain clause
lists against packaging's `contains(..., prereleases=True)`, and every specifier in the built-in
knowledge.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from conftest import ROOT, examples
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet as PackagingSet
from packaging.version import InvalidVersion as PackagingInvalid
from packaging.version import Version as PackagingVersion

from topoctl.core import pep440

SEPARATORS = st.sampled_from(["", ".", "-", "_"])
NUMBER = st.integers(min_value=0, max_value=30)


@st.composite
def version_texts(draw: st.DrawFn) -> str:
    """A PEP 440 version in one of its accepted spellings (not only the normalised one)."""
    text = draw(st.sampled_from(["", "v", "V", " "]))
    if draw(st.booleans()) and draw(st.booleans()):
        text += f"{draw(NUMBER)}!"
    text += ".".join(str(draw(NUMBER)) for _ in range(draw(st.integers(1, 4))))
    if draw(st.booleans()):
        letter = draw(
            st.sampled_from(["a", "b", "rc", "c", "alpha", "beta", "pre", "preview", "RC"])
        )
        number = draw(st.sampled_from(["", *map(str, range(4))]))
        text += draw(SEPARATORS) + letter + (draw(SEPARATORS) + number if number else "")
    if draw(st.booleans()):
        if draw(st.booleans()):
            text += f"-{draw(NUMBER)}"
        else:
            number = draw(st.sampled_from(["", "0", "1", "2"]))
            text += (
                draw(SEPARATORS)
                + draw(st.sampled_from(["post", "rev", "r"]))
                + (draw(SEPARATORS) + number if number else "")
            )
    if draw(st.booleans()):
        number = draw(st.sampled_from(["", "0", "3"]))
        text += draw(SEPARATORS) + "dev" + (draw(SEPARATORS) + number if number else "")
    if draw(st.booleans()):
        parts = draw(
            st.lists(
                st.sampled_from(["cu129", "CU128", "1", "01", "torch2", "abc", "7"]),
                min_size=1,
                max_size=3,
            )
        )
        text += (
            "+"
            + "".join(part + draw(st.sampled_from([".", "-", "_"])) for part in parts[:-1])
            + parts[-1]
        )
    return text


ANY_TEXT = st.one_of(version_texts(), st.text(alphabet="0123456789.abcdeprvost+-_! ", max_size=14))


def _same_version(ours: pep440.Version, theirs: PackagingVersion) -> None:
    assert str(ours) == str(theirs)
    assert ours.public == theirs.public and ours.base_version == theirs.base_version
    assert ours.release == theirs.release and ours.post == theirs.post and ours.dev == theirs.dev
    assert (ours.is_prerelease, ours.is_postrelease, ours.is_devrelease) == (
        theirs.is_prerelease,
        theirs.is_postrelease,
        theirs.is_devrelease,
    )


@settings(max_examples=examples(500))
@given(ANY_TEXT)
def test_accepts_and_normalises_what_packaging_does(text):
    try:
        theirs = PackagingVersion(text)
    except PackagingInvalid:
        assert pep440.parse(text) is None, text
        with pytest.raises(pep440.InvalidVersion):
            pep440.Version(text)
        return
    ours = pep440.Version(text)
    _same_version(ours, theirs)


@settings(max_examples=examples(400))
@given(version_texts(), version_texts())
def test_orders_every_pair_as_packaging_does(left, right):
    a, b = pep440.Version(left), pep440.Version(right)
    pa, pb = PackagingVersion(left), PackagingVersion(right)
    assert (a < b, a == b, a > b, a <= b, a >= b, a != b) == (
        pa < pb,
        pa == pb,
        pa > pb,
        pa <= pb,
        pa >= pb,
        pa != pb,
    )
    assert (hash(a) == hash(b)) or a != b


def _shipped_release_strings() -> list[str]:
    data = os.path.join(ROOT, "rules", "sglang", "generated")
    names = [
        m.group(2)
        for m in map(re.compile(r"^(sglang|dynamo)-(.+)\.json$").match, os.listdir(data))
        if m
    ]
    with open(os.path.join(data, "releases.json"), encoding="utf-8") as handle:
        doc = json.load(handle)
    names += [row["version"] for row in doc["releases"]] + [
        row["flashinfer"] for row in doc["releases"] if row.get("flashinfer")
    ]
    names += list(doc["flashinfer_releases"])
    from topoctl.autoconf.memory import model_lists, rules

    for section in rules().values():
        names += [
            str(v)
            for entry in section
            if isinstance(entry, dict)
            for v in entry.get("versions", [])
        ]
    names += [
        str(v) for entries in model_lists().values() for entry in entries for v in entry["versions"]
    ]
    return sorted(set(names))


def test_every_shipped_release_string_sorts_and_reads_as_packaging_does():
    names = _shipped_release_strings()
    assert len(names) > 50  # SGLang, FlashInfer and ai-dynamo releases
    for name in names:
        _same_version(pep440.Version(name), PackagingVersion(name))
    assert sorted(names, key=pep440.Version) == sorted(names, key=PackagingVersion)


@st.composite
def specifier_texts(draw: st.DrawFn) -> str:
    clauses = []
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]))
        clauses.append(
            op
            + draw(st.sampled_from(["", " "]))
            + str(PackagingVersion(draw(version_texts())).public)
        )
    return ",".join(clauses)


@settings(max_examples=examples(400))
@given(specifier_texts(), version_texts())
def test_plain_specifiers_match_as_packaging_with_prereleases(specifier, version):
    ours = pep440.SpecifierSet(specifier)
    assert not ours.uses_packaging, specifier  # the clauses are matched here, not handed on
    assert ours.contains(version) == PackagingSet(specifier).contains(version, prereleases=True), (
        specifier,
        version,
    )


@pytest.mark.parametrize(
    "specifier", ["~=0.5.5", "==0.5.*", "!=0.5.*", "===0.5.5", "==0.5.5+cu129"]
)
def test_other_specifiers_go_to_packaging(specifier):
    ours = pep440.SpecifierSet(specifier)
    assert ours.uses_packaging
    for version in ("0.5.5", "0.5.5+cu129", "0.5.6rc1", "0.6.0", "0.5.4"):
        assert ours.contains(version) == PackagingSet(specifier).contains(version, prereleases=True)


@pytest.mark.parametrize("specifier", [">=", "0.5.5", ">=0.5.5,,<x", "=>0.5", ">=0.5.5+cu1"])
def test_a_specifier_packaging_refuses_is_refused(specifier):
    with pytest.raises(pep440.InvalidSpecifier):
        pep440.SpecifierSet(specifier)


def test_a_text_that_is_no_version_meets_no_specifier():
    assert not pep440.SpecifierSet(">=0.5.5").contains("latest")
    assert not pep440.SpecifierSet("").contains("latest")


def _knowledge_specifiers() -> list[str]:
    found = set()
    for folder, _, files in os.walk(os.path.join(ROOT, "rules", "knowledge")):
        for name in files:
            if name.endswith(".yaml"):
                with open(os.path.join(folder, name), encoding="utf-8") as handle:
                    found.update(re.findall(r"\bversion: *\"([^\"]+)\"", handle.read()))
    with open(
        os.path.join(ROOT, "rules", "sglang", "data", "spelling.yaml"), encoding="utf-8"
    ) as handle:
        found.update(re.findall(r"\bsglang: *\"([^\"]+)\"", handle.read()))
    return sorted(found)


def test_every_specifier_in_the_knowledge_is_matched_here_as_packaging_does():
    specifiers = _knowledge_specifiers()
    assert len(specifiers) > 10
    versions = _shipped_release_strings() + [
        "0.5.12rc1",
        "0.5.12.dev3",
        "0.5.12+cu129",
        "0.5.6.post1.dev0",
    ]
    for specifier in specifiers:
        ours = pep440.SpecifierSet(specifier)
        assert not ours.uses_packaging, specifier
        theirs = PackagingSet(specifier)
        for version in versions:
            assert ours.contains(version) == theirs.contains(version, prereleases=True), (
                specifier,
                version,
            )


@pytest.mark.parametrize("text", ["0.5.8", "12", "0.5.08", "1.0.0.0", "2025.12.1"])
def test_a_plain_release_read_without_the_grammar_is_what_the_grammar_reads(text, monkeypatch):
    """Version's plain-release path (no regex) gives the same fields and order as the grammar does."""
    fast = pep440.Version(text)
    monkeypatch.setattr(pep440, "_plain_release", lambda _text: False)  # force the grammar
    slow = pep440.Version(text)
    assert (fast.epoch, fast.release, fast.pre, fast.post, fast.dev, fast.local, fast._key) == (
        slow.epoch,
        slow.release,
        slow.pre,
        slow.post,
        slow.dev,
        slow.local,
        slow._key,
    )
    _same_version(fast, PackagingVersion(text))


@pytest.mark.parametrize(
    "text",
    [
        "",
        ".",
        "1.",
        ".1",
        "1..2",
        "1.2 ",
        " 1.2",
        "v1.2",
        "1.2rc1",
        "1.2+cu129",
        "\u0661.\u0662",
        "1.\u00b2",
        "1_2",
    ],
)
def test_what_is_no_plain_release_goes_to_the_grammar(text):
    """Only ASCII digits and single dots take the plain path; everything else is read (or refused)
    by the grammar, as packaging reads it."""
    assert not (text.isascii() and pep440._plain_release(text)), text
    try:
        theirs = PackagingVersion(text)
    except PackagingInvalid:
        assert pep440.parse(text) is None, text
        return
    _same_version(pep440.Version(text), theirs)


def test_a_specifier_is_built_once_per_text():
    assert pep440.specifier(">=0.5.5,<0.5.8") is pep440.specifier(">=0.5.5,<0.5.8")
    assert pep440.specifier(">=0.5.5,<0.5.8").contains("0.5.7")
    with pytest.raises(pep440.InvalidSpecifier):
        pep440.specifier("<<1")
