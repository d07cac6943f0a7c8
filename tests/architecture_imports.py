"""The imports of the product modules, read from their source (ast), for tests/test_architecture.py.

Modules are named as installed (probe/ is topoctl.probe through the link topoctl/probe, ...). An
import counts as inside a function when a def or lambda encloses it; imports under `if
TYPE_CHECKING:` are not counted (they never run).
"""

from __future__ import annotations

import ast
import os
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def product_modules() -> dict[str, str]:
    """Every installed module -> its source file, walked from topoctl/ through its links
    (topoctl/autoconf -> ../autoconf, ...), the tree setuptools packages."""
    out = {}
    top = os.path.join(ROOT, "topoctl")
    for folder, dirs, files in os.walk(top, followlinks=True):
        dirs[:] = sorted(d for d in dirs if os.path.exists(os.path.join(folder, d, "__init__.py")))
        package = ".".join(["topoctl", *os.path.relpath(folder, top).split(os.sep)])
        package = "topoctl" if folder == top else package
        for name in sorted(files):
            if name.endswith(".py"):
                out[package if name == "__init__.py" else f"{package}.{name[:-3]}"] = os.path.join(
                    folder, name
                )
    return out


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module: str, path: str) -> list[tuple[str, bool]]:
    """(imported name, inside a function) for each name an import statement of the module binds."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            inside = in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
            )
            if isinstance(child, ast.Import):
                found.extend((alias.name, inside) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = _absolute(module, path.endswith("__init__.py"), child)
                found.extend((f"{base}.{alias.name}", inside) for alias in child.names)
            visit(child, inside)

    visit(tree, False)
    return found


def imported_module(name: str, known: dict[str, str]) -> str:
    """The module an imported name belongs to: the longest product module it names, else its top
    package."""
    if name.startswith("topoctl"):
        while name not in known and "." in name:
            name = name.rpartition(".")[0]
        return name
    return name.split(".")[0]


def function_imports() -> Counter[tuple[str, str]]:
    """(importing module, imported module) -> how many imports of it sit inside functions of that
    module."""
    known = product_modules()
    counts: Counter[tuple[str, str]] = Counter()
    for module, path in known.items():
        for name, inside in imports(module, path):
            if inside:
                counts[(module, imported_module(name, known))] += 1
    return counts
