"""A wheel opened as a zip archive: its modules parsed with ast on demand, names followed across
from-imports."""

from __future__ import annotations

import ast
import hashlib
import zipfile
from pathlib import Path


class Wheel:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.zip = zipfile.ZipFile(path)
        self.names = set(self.zip.namelist())
        self._modules: dict[str, "Module | None"] = {}

    def module(self, dotted: str) -> "Module | None":
        if dotted not in self._modules:
            mod = None
            for cand in (
                dotted.replace(".", "/") + ".py",
                dotted.replace(".", "/") + "/__init__.py",
            ):
                if cand in self.names:
                    mod = Module(self, dotted, cand, self.zip.read(cand).decode("utf-8"))
                    break
            self._modules[dotted] = mod
        return self._modules[dotted]

    def sha256(self) -> str:
        h = hashlib.sha256()
        with open(self.path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()


class Module:
    def __init__(self, wheel: Wheel, dotted: str, path: str, text: str) -> None:
        self.wheel = wheel
        self.dotted = dotted
        self.path = path
        self.tree = ast.parse(text)
        self.assigns: dict[str, ast.AST] = {}
        self.imports: dict[str, tuple[str, str]] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        pkg = dotted.rsplit(".", 1)[0] if not path.endswith("__init__.py") else dotted
        for node in self.tree.body:
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                self.assigns[node.targets[0].id] = node.value
            elif (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and node.value is not None
            ):
                self.assigns[node.target.id] = node.value
            elif (
                isinstance(node, ast.ImportFrom)
                and node.module is not None
                or (isinstance(node, ast.ImportFrom) and node.level)
            ):
                base = node.module or ""
                if node.level:
                    parts = pkg.split(".")
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join(parts + ([base] if base else []))
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = (base, alias.name)
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node

    def lookup(self, name: str, depth: int = 0) -> tuple["Module", str, str] | None:
        """Find where `name` is defined: (module, kind 'assign'|'class', name)."""
        if depth > 8:
            return None
        if name in self.classes:
            return self, "class", name
        if name in self.assigns:
            return self, "assign", name
        if name in self.imports:
            mod_name, orig = self.imports[name]
            other = self.wheel.module(mod_name)
            if other is not None:
                return other.lookup(orig, depth + 1)
        return None

    def class_def(self, name: str) -> tuple["Module", ast.ClassDef] | None:
        found = self.lookup(name)
        if found and found[1] == "class":
            return found[0], found[0].classes[found[2]]
        return None
