"""SGLang's own argparse parser, built from an unpacked release wheel with every non-standard import stubbed.

    python scripts/sglang_flags/real_parser.py SRC_DIR dump [PROBES]   # JSON: every action of the parser
                                                                       # (and the parse of each PROBES argv)
    python scripts/sglang_flags/real_parser.py SRC_DIR parse -- ARGV   # JSON: what parse_args does with ARGV

SRC_DIR is a folder with the wheel's `sglang/` package in it. SGLang's modules are imported for real from
there; every module outside the standard library (torch, triton, the kernels, transformers, numpy, orjson,
...) is replaced by a stub whose attributes are stubs too (callable, subclassable, iterable, falsy). Then
SGLang's own `prepare_server_args(argv)` runs, as `python -m sglang.launch_server` calls it, and the first
`parse_args` / `parse_known_args` on an ArgumentParser is where it stops: `dump` reports that parser, `parse`
lets argparse read ARGV and reports its namespace or its error message and exit status.

Run one SRC_DIR per process (the imports stay in sys.modules): `check.py` does that in a subprocess.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.abc
import importlib.machinery
import io
import json
import sys
import types
from typing import Any

# Third-party packages imported for real: SGLang builds its option declarations on them
# (msgspec.Struct field classes from 0.5.13 on), so a stub would change the parser. A wheel that
# imports one needs it installed (pip install msgspec): without it the import fails, loudly, rather
# than being stubbed.
REAL_PACKAGES = {"msgspec"}


class _StubMeta(type):
    """Metaclass of every stub: a stub is a class, so `class X(torch.nn.Module)` works."""

    def __new__(mcs, name: str, bases: tuple, namespace: dict, **kwargs: Any) -> Any:
        return super().__new__(
            mcs, name, bases, namespace
        )  # class keywords (total=False, ...) dropped

    def __init__(cls, name: str, bases: tuple, namespace: dict, **kwargs: Any) -> None:
        super().__init__(name, bases, namespace)

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub(f"{cls.__name__}.{name}")

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if not cls.__dict__.get("_topoctl_stub"):  # a real class that subclasses a stub
            return type.__call__(cls, *args, **kwargs)
        if (
            len(args) == 1
            and not kwargs
            and callable(args[0])
            and not isinstance(args[0], _StubMeta)
        ):
            return args[0]  # used as a decorator: keep the function
        return _stub(f"{cls.__name__}()")

    def __getitem__(cls, key: Any) -> Any:
        return cls

    def __iter__(cls) -> Any:
        return iter(())

    def __len__(cls) -> int:
        return 0

    def __bool__(cls) -> bool:
        return False

    def __contains__(cls, item: Any) -> bool:
        return False

    def __int__(cls) -> int:
        return 0

    def __index__(cls) -> int:
        return 0

    def __float__(cls) -> float:
        return 0.0

    def __enter__(cls) -> Any:
        return cls

    def __exit__(cls, *exc: Any) -> None:
        return None  # exceptions propagate

    def __lt__(cls, other: Any) -> bool:
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def __or__(cls, other: Any) -> Any:
        return cls

    __ror__ = __and__ = __rand__ = __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = (
        __or__
    )
    __truediv__ = __rtruediv__ = __floordiv__ = __mod__ = __pow__ = __or__

    def __neg__(cls) -> Any:  # unary: `-torch.finfo(...).max` at module level
        return cls

    __pos__ = __abs__ = __invert__ = __neg__

    def __hash__(cls) -> int:
        return id(cls)

    def __eq__(cls, other: Any) -> bool:
        return cls is other

    def __repr__(cls) -> str:
        return f"<stub {cls.__name__}>"


def _stub(name: str) -> Any:
    return _StubMeta(name, (), {"_topoctl_stub": True})


def is_stub(value: Any) -> bool:
    return isinstance(value, _StubMeta) or isinstance(value, _StubModule)


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = _stub(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _StubModule(spec.name)
        module.__path__ = []  # a package, so that `import torch.distributed` works
        module.__version__ = "0.0.0"  # type: ignore[attr-defined]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


class _Forgiving(importlib.abc.Loader):
    """Runs an SGLang module for real; one that fails part-way (its code needs a real torch) keeps
    what it defined before the failure and answers stubs for the rest. The failures are recorded."""

    def __init__(self, real: importlib.abc.Loader, failed: dict[str, str], keep: set[str]) -> None:
        self.real = real
        self.failed = failed
        self.keep = keep

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self.real.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        try:
            self.real.exec_module(module)
        except Exception as exc:  # noqa: BLE001 - recorded, and the module becomes part stub
            missing = getattr(exc, "name", None) if isinstance(exc, ImportError) else None
            if module.__name__ in self.keep or (missing or "").split(".")[0] in REAL_PACKAGES:
                raise
            self.failed[module.__name__] = f"{type(exc).__name__}: {exc}"[:200]
            module.__class__ = _StubModule


class StubFinder(importlib.abc.MetaPathFinder):
    """Stub every module whose top-level package is neither the standard library nor `sglang`."""

    def __init__(self, src_dir: str, keep: set[str]) -> None:
        self.src_dir = src_dir
        self.keep = keep
        self.stubbed: set[str] = set()
        self.failed: dict[str, str] = {}

    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        top = fullname.split(".")[0]
        if top == "sglang":
            spec = importlib.machinery.PathFinder.find_spec(
                fullname, path if path is not None else [self.src_dir]
            )
            if spec is not None and spec.loader is not None:
                spec.loader = _Forgiving(spec.loader, self.failed, self.keep)
            return spec
        if (
            top in sys.stdlib_module_names
            or top in sys.builtin_module_names
            or top in REAL_PACKAGES
        ):
            return None
        self.stubbed.add(top)
        return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)


class _Stop(Exception):
    def __init__(self, parser: argparse.ArgumentParser, args: list[str] | None) -> None:
        self.parser = parser
        self.argv = args


def capture_parser(
    src_dir: str, argv: list[str]
) -> tuple[argparse.ArgumentParser, list[str], StubFinder]:
    """(the parser SGLang's prepare_server_args builds, the argv it hands to argparse, the finder:
    what it stubbed and which SGLang modules failed part-way)."""
    finder = StubFinder(src_dir, {"sglang.srt.server_args"})
    sys.meta_path.insert(0, finder)
    original = argparse.ArgumentParser.parse_args, argparse.ArgumentParser.parse_known_args

    def stop(self: argparse.ArgumentParser, args: Any = None, namespace: Any = None) -> Any:
        raise _Stop(self, None if args is None else list(args))

    argparse.ArgumentParser.parse_args = stop  # type: ignore[assignment,method-assign]
    argparse.ArgumentParser.parse_known_args = stop  # type: ignore[assignment,method-assign]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            from sglang.srt import server_args  # type: ignore[import-not-found]

            try:
                server_args.prepare_server_args(list(argv))
            except _Stop as stopped:
                return (
                    stopped.parser,
                    (stopped.argv if stopped.argv is not None else list(argv)),
                    finder,
                )
        raise RuntimeError("prepare_server_args returned without calling parse_args")
    finally:
        argparse.ArgumentParser.parse_args, argparse.ArgumentParser.parse_known_args = original  # type: ignore[method-assign]


_ACTION_NAMES = {
    "_StoreAction": "store",
    "_StoreTrueAction": "store_true",
    "_StoreFalseAction": "store_false",
    "_StoreConstAction": "store_const",
    "_AppendAction": "append",
    "_AppendConstAction": "append_const",
    "_CountAction": "count",
    "_HelpAction": "help",
    "_VersionAction": "version",
    "_ExtendAction": "extend",
}


def plain(value: Any) -> Any:
    """A JSON-able form of a default/choice/const; stub-derived values become {"stub": name}."""
    if is_stub(value):
        return {"stub": getattr(value, "__name__", repr(value))}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((plain(v) for v in value), key=repr)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if (
        hasattr(value, "value")
        and hasattr(value, "name")
        and type(value).__class__.__name__ == "EnumType"
    ):
        return plain(value.value)
    return {"repr": repr(value)}


def describe(parser: argparse.ArgumentParser) -> dict[str, Any]:
    actions = []
    for action in parser._actions:
        kind = type(action).__name__
        actions.append(
            {
                "options": list(action.option_strings),
                "dest": action.dest,
                "action": _ACTION_NAMES.get(kind, kind),
                "nargs": action.nargs,
                "default": plain(action.default),
                "choices": None if action.choices is None else plain(list(action.choices)),
                "const": plain(action.const),
                "required": bool(action.required),
                "type": None
                if action.type is None
                else getattr(action.type, "__name__", repr(action.type)),
                "help_suppressed": action.help == argparse.SUPPRESS,
            }
        )
    return {
        "allow_abbrev": parser.allow_abbrev,
        "conflict_handler": parser.conflict_handler,
        "prefix_chars": parser.prefix_chars,
        "actions": actions,
    }


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> dict[str, Any]:
    err = io.StringIO()
    parser.exit_on_error = True
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            namespace = argparse.ArgumentParser.parse_args(parser, argv)
    except SystemExit as exc:
        lines = [line for line in err.getvalue().splitlines() if line.strip()]
        return {"ok": False, "exit": exc.code, "error": lines[-1] if lines else ""}
    return {"ok": True, "namespace": {k: plain(v) for k, v in sorted(vars(namespace).items())}}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2 or args[1] not in ("dump", "parse"):
        print(__doc__, file=sys.stderr)
        return 2
    src, mode, rest = args[0], args[1], args[2:]
    if rest[:1] == ["--"]:
        rest = rest[1:]
    probe_argv = rest if mode == "parse" else ["--model-path", "model"]
    parser, handed, finder = capture_parser(src, probe_argv)
    out: dict[str, Any] = {
        "python": sys.version.split()[0],
        "stubbed": sorted(finder.stubbed),
        "sglang_modules_failed": dict(sorted(finder.failed.items())),
    }
    if mode == "dump":
        out.update(describe(parser))
        if rest:  # a JSON list of argv lists, each parsed after --model-path model
            out["probes"] = [
                parse(parser, ["--model-path", "model", *probe]) for probe in json.loads(rest[0])
            ]
    else:
        out["argv"] = handed
        out.update(parse(parser, handed))
    json.dump(out, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
