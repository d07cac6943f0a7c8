"""The layers of docs/architecture.md ("Layers") as written down: the docs' table and picture are
the import-linter contract (.importlinter), every module's docstring names the layer the contract
puts it in, the contract is kept (tests/test_import_contracts.py runs import-linter), and every
import inside a function is listed with its start-up reason or as known debt
(tests/data/function_imports.txt)."""

from __future__ import annotations

import ast
import configparser
import os
import re

import pytest
from architecture_imports import ROOT, function_imports, imports, product_modules

LAYER_NAMES = [
    "commands and CLI",
    "judge",
    "launch model and search",
    "deployment reading",
    "knowledge",
    "probe",
    "snapshot",
    "core types and data",
]
# the package itself spans every layer: it imports nothing
NAMESPACES = {"topoctl"}


def contract_layers() -> list[list[str]]:
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, ".importlinter"))
    lines = config["importlinter:contract:layers"]["layers"].strip().splitlines()
    return [[name.strip() for name in re.split(r"[:|]", line)] for line in lines]


def docs_layers() -> list[tuple[str, list[str]]]:
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as handle:
        text = handle.read()
    block = text[text.index("<!-- layers:begin") : text.index("<!-- layers:end -->")]
    rows = [
        line
        for line in block.splitlines()
        if line.startswith("| ") and not line.startswith("| layer")
    ]
    return [
        (cells[0], re.findall(r"`([^`]+)`", cells[1]))
        for cells in ([cell.strip() for cell in row.strip("|").split("|")] for row in rows)
    ]


def layer_of(module: str) -> str | None:
    best: tuple[int, str] | None = None
    for name, members in zip(LAYER_NAMES, contract_layers(), strict=False):
        for member in members:
            if (module == member or module.startswith(member + ".")) and (
                best is None or len(member) > best[0]
            ):
                best = (len(member), name)
    return best[1] if best else None


def test_no_two_product_modules_share_a_basename():
    """A module's name says what it holds: two `render.py` in two folders made every traceback and grep
    ambiguous (issue 35). Package __init__ files and the entry points are exempt."""
    seen: dict[str, list[str]] = {}
    for module in product_modules():
        if module.rsplit(".", 1)[-1] not in ("__main__",) and module not in _PACKAGES:
            seen.setdefault(module.rsplit(".", 1)[-1], []).append(module)
    shared = {name: found for name, found in seen.items() if len(found) > 1}
    assert not shared, shared


_PACKAGES = {m for m, path in product_modules().items() if path.endswith("__init__.py")}


def test_the_docs_table_is_the_contract():
    assert docs_layers() == list(zip(LAYER_NAMES, contract_layers(), strict=False))


PICTURE_LABEL_WIDTH = (
    28  # the picture's first column: a layer's name, then its modules from this column on
)


def docs_picture() -> list[tuple[str, str]]:
    """(layer, the text of its rows) for each layer of the picture under "## Layers", top to bottom."""
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as handle:
        text = handle.read()
    section = text[text.index("## Layers") :]
    block = section.split("```\n", 2)[1]
    rows: list[tuple[str, str]] = []
    for line in block.splitlines():
        label, body = line[:PICTURE_LABEL_WIDTH].strip(" |v"), line[PICTURE_LABEL_WIDTH:]
        if label:
            rows.append((label, body))
        elif rows:
            rows[-1] = (rows[-1][0], rows[-1][1] + " " + body)
    return rows


def test_the_docs_picture_is_the_contract():
    """The picture's layers are the contract's, in its order, and each names every module the
    contract puts in that layer (by its last name: `autoconf/: check` for topoctl.autoconf.check).
    """
    picture = docs_picture()
    assert [label for label, _ in picture] == LAYER_NAMES
    for (label, body), members in zip(picture, contract_layers(), strict=False):
        for member in members:
            short = member.rsplit(".", 1)[-1]
            assert re.search(rf"(?<![\w]){re.escape(short)}(?![\w])", body), (
                f"{label}: the picture lacks {member}"
            )


def test_every_module_is_in_a_layer_or_is_an_empty_namespace():
    for module, path in product_modules().items():
        if module in NAMESPACES:
            assert not [name for name, _ in imports(module, path) if name.startswith("topoctl")], (
                module
            )
        else:
            assert layer_of(module) is not None, f"{module} is in no layer of .importlinter"


@pytest.mark.parametrize("module", sorted(set(product_modules()) - NAMESPACES))
def test_each_module_docstring_names_its_layer(module):
    with open(product_modules()[module], encoding="utf-8") as handle:
        docstring = ast.get_docstring(ast.parse(handle.read())) or ""
    said = re.findall(r"^Layer: ([a-zA-Z ]+?)(?: \(|\.|$)", docstring, re.M)
    assert said == [layer_of(module)], (
        f"{module}: docstring says {said}, .importlinter says {layer_of(module)}"
    )


def _function_import_list() -> tuple[list[str], dict[tuple[str, str], int]]:
    reasons: list[str] = []
    debt: dict[tuple[str, str], int] = {}
    with open(
        os.path.join(ROOT, "tests", "data", "function_imports.txt"), encoding="utf-8"
    ) as handle:
        for line in handle:
            if line.startswith("reason "):
                module, _, why = line[len("reason ") :].partition(":")
                assert why.strip(), line
                reasons.append(module.strip())
            elif line.startswith("debt "):
                importer, _, rest = line[len("debt ") :].partition(":")
                module, count = rest.split()
                debt[(importer.strip(), module)] = int(count)
    return reasons, debt


def test_imports_inside_functions_have_a_reason_or_are_listed_debt():
    reasons, debt = _function_import_list()
    actual = function_imports()
    unlisted = {
        key: count
        for key, count in actual.items()
        if not any(key[1] == prefix or key[1].startswith(prefix + ".") for prefix in reasons)
    }
    assert unlisted == debt, (
        "tests/data/function_imports.txt is not what the code does: a new import inside "
        "a function needs a start-up reason; a moved one leaves the debt list",
        {k: (v, debt.get(k)) for k, v in unlisted.items() if debt.get(k) != v},
        {k: v for k, v in debt.items() if k not in unlisted},
    )
