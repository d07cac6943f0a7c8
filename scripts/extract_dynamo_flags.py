#!/usr/bin/env python3
"""Extract what NVIDIA Dynamo's SGLang worker (`python -m dynamo.sglang`) takes from a command line, per
ai-dynamo release, into rules/sglang/generated/dynamo-<version>.json.

    python scripts/extract_dynamo_flags.py 1.5.1 1.6.1
    python scripts/extract_dynamo_flags.py --wheel path/to/ai_dynamo-1.6.1-py3-none-any.whl

`dynamo/sglang/args.py:parse_args` (1.0 and later) reads a launch in three steps, and this script
records what each step consumes:

1. Dynamo's own parser (`DynamoRuntimeArgGroup` + `DynamoSGLangArgGroup`, an argparse parser with
   the default allow_abbrev=True) runs `parse_known_args`: it takes its own options, prefixes of
   them included;
2. from 1.5 on, `parse_worker_router_config` runs a second `parse_known_args` with the router
   advertisement options (`add_worker_router_arguments`);
3. what is left goes to SGLang's own parser (`ServerArgs.add_cli_args`), after `--config` merging.

Only steps 1 and 2 are extracted here (SGLang's flags come from scripts/extract_sglang_flags.py).
The argument-group code of the wheel is imported from a temporary folder with the modules it needs
that are not part of it (dynamo._core, dynamo.llm, sglang) replaced by empty stand-ins, and each
`add_argument` call is recorded with its option strings, nargs and the wheel file and line that
declares it. Choices are not recorded: some are computed by the stand-ins. Needs msgspec, pyyaml,
packaging and typing_extensions (imported by the argument-group modules). The SGLang version each
release pins is read from the wheel's METADATA (`Requires-Dist: sglang...==X; extra == 'sglang'`).

Output is deterministic (sorted keys), so re-running on the same wheel gives the same file.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import re
import subprocess
import sys
import tempfile
import types
import zipfile
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "rules" / "sglang" / "generated"
STUBBED = (
    "dynamo._core",
    "dynamo.llm",
    "dynamo.runtime",
    "sglang",
)  # always stand-ins; any other module
# that is neither in the wheel's extracted folders nor installed (prometheus_client, ...) too


class _Anything:
    """Stands in for any name a stubbed module is asked for (callable, iterable, subscriptable)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return []

    def __getattr__(self, name: str) -> Any:
        return _Anything()

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(())

    def __mro_entries__(self, bases: tuple) -> tuple:
        return (object,)


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything()


class _StubFinder:
    """Meta-path finder that answers the stubbed module names with empty modules."""

    fallback = False  # the finder placed last: answers any module nothing else found

    @classmethod
    def find_spec(cls, name: str, path: Any = None, target: Any = None) -> Any:
        if any(name == s or name.startswith(s + ".") for s in STUBBED) or cls.fallback:
            import importlib.machinery

            return importlib.machinery.ModuleSpec(name, _StubLoader(), is_package=True)  # type: ignore[arg-type]
        return None


class _StubLoader:
    @staticmethod
    def create_module(spec: Any) -> types.ModuleType:
        module = _StubModule(spec.name)
        module.__path__ = []  # type: ignore[attr-defined]
        return module

    @staticmethod
    def exec_module(module: types.ModuleType) -> None:
        return None


def _capture(root: str) -> tuple[list[dict[str, Any]], Any]:
    """Patch argparse's add_argument to record where each option is declared (the first frame in the
    wheel)."""
    records: list[dict[str, Any]] = []
    original = argparse._ActionsContainer.add_argument

    def add_argument(self: Any, *args: Any, **kwargs: Any) -> Any:
        action = original(self, *args, **kwargs)
        frame = sys._getframe(1)
        where = ""
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename.startswith(root) and "configuration/utils.py" not in filename:
                where = f"{filename[len(root) + 1 :]}:{frame.f_lineno}"
                break
            frame = frame.f_back  # type: ignore[assignment]
        records.append({"action": action, "where": where})
        return action

    argparse._ActionsContainer.add_argument = add_argument  # type: ignore[method-assign]
    return records, original


def _describe(action: argparse.Action, where: str) -> dict[str, Any]:
    nargs = action.nargs
    takes_value = nargs != 0
    if isinstance(
        action,
        (
            argparse._StoreConstAction,
            argparse._CountAction,
            argparse._HelpAction,
            argparse._VersionAction,
        ),
    ):
        takes_value = False
    if isinstance(action, argparse.BooleanOptionalAction):
        takes_value = False
    return {
        "options": list(action.option_strings),
        "dest": action.dest,
        "takes_value": takes_value,
        "nargs": None if not takes_value else (nargs if nargs not in (None,) else None),
        "action": type(action).__name__,
        "declared": where,
    }


def extract(wheel: Path, probe: list[str] | None = None) -> dict[str, Any]:
    """The option tables of one wheel; with `probe` (an argv), also what Dynamo's own parsers leave
    of it for SGLang (`probe_rest`), or the argparse error they stop with (`probe_error`), as
    dynamo/sglang/args.py runs them: parse_known_args with Dynamo's parser, then the router's (used
    by tests/deploy/test_dynamo_real_parser.py)."""
    probe_result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(wheel) as archive:
        names = [
            n for n in archive.namelist() if n.startswith(("dynamo/common/", "dynamo/sglang/"))
        ]
        for name in names:
            archive.extract(name, tmp)
        metadata_name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(metadata_name).decode("utf-8")
        Path(tmp, "dynamo", "__init__.py").write_text("")
        sys.path.insert(0, tmp)
        sys.meta_path.insert(0, _StubFinder)  # type: ignore[arg-type]
        last = type("_Last", (_StubFinder,), {"fallback": True})
        sys.meta_path.append(last)  # type: ignore[arg-type]
        for loaded in [m for m in sys.modules if m == "dynamo" or m.startswith("dynamo.")]:
            del sys.modules[loaded]
        records, original = _capture(tmp)
        try:
            runtime = importlib.import_module("dynamo.common.configuration.groups.runtime_args")
            backend = importlib.import_module("dynamo.sglang.backend_args")
            dynamo_parser = argparse.ArgumentParser()
            start = len(records)
            runtime.DynamoRuntimeArgGroup().add_arguments(dynamo_parser)
            backend.DynamoSGLangArgGroup().add_arguments(dynamo_parser)
            dynamo_records = records[start:]
            router_records: list[dict[str, Any]] = []
            try:
                router = importlib.import_module("dynamo.common.configuration.groups.router_args")
            except ImportError:
                router = None
            adder = getattr(router, "add_worker_router_arguments", None) if router else None
            if adder is not None:
                start = len(records)
                adder(argparse.ArgumentParser(add_help=False))
                router_records = records[start:]
            if probe is not None:
                import contextlib
                import io

                try:
                    with contextlib.redirect_stderr(io.StringIO()) as said:
                        _, rest = dynamo_parser.parse_known_args(list(probe))
                        if adder is not None:
                            router_parser = argparse.ArgumentParser(add_help=False)
                            adder(router_parser)
                            _, rest = router_parser.parse_known_args(rest)
                    probe_result["probe_rest"] = rest
                except SystemExit:
                    probe_result["probe_error"] = said.getvalue().strip().splitlines()[-1:]
        finally:
            argparse._ActionsContainer.add_argument = original  # type: ignore[method-assign]
            sys.path.remove(tmp)
            sys.meta_path[:] = [
                f for f in sys.meta_path if not (isinstance(f, type) and issubclass(f, _StubFinder))
            ]
            for loaded in [
                m
                for m in sys.modules
                if m == "dynamo"
                or m.startswith("dynamo.")
                or m == "sglang"
                or m.startswith("sglang.")
            ]:
                del sys.modules[loaded]
        args_py = Path(tmp, "dynamo", "sglang", "args.py").read_text(encoding="utf-8")
    version = re.search(r"^Version: (\S+)", metadata, re.M).group(1)  # type: ignore[union-attr]
    pin = re.search(
        r"^Requires-Dist: sglang(?:\[[^\]]*\])?\s*==\s*([0-9][^;\s]*)\s*;\s*extra == .sglang.",
        metadata,
        re.M,
    )
    steps = [
        f"dynamo/sglang/args.py:{number}"
        for number, line in enumerate(args_py.splitlines(), 1)
        if re.search(
            r"parse_known_args\(args\)|parse_worker_router_config\(unknown\)|"
            r"merge_config_with_args\(unknown\)|sglang_only_parser\.parse_args\(unknown\)",
            line,
        )
    ]

    def table(items: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for item in items:
            action = item["action"]
            if not action.option_strings:
                continue
            out[action.option_strings[0]] = _describe(action, item["where"])
        return dict(sorted(out.items()))

    return {
        "ai_dynamo_version": version,
        "sglang_pin": pin.group(1) if pin else None,
        "sglang_pin_source": "METADATA Requires-Dist (extra == 'sglang')",
        "allow_abbrev": True,
        "allow_abbrev_source": "dynamo/sglang/args.py: argparse.ArgumentParser(...) without "
        "allow_abbrev",
        "parse_steps": steps,
        "dynamo_options": table(dynamo_records),
        "router_options": table(router_records),
        "source": {"wheel": wheel.name, "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()},
        "extracted_by": "scripts/extract_dynamo_flags.py",
        **probe_result,
    }


def download(version: str, dest: Path) -> Path:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "-q",
            f"ai-dynamo=={version}",
            "-d",
            str(dest),
        ],
        check=True,
    )
    return next(dest.glob(f"ai_dynamo-{version}-*.whl"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*")
    parser.add_argument("--wheel", action="append", default=[], type=Path)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    wheels = list(args.wheel)
    with tempfile.TemporaryDirectory() as tmp:
        for version in args.versions:
            wheels.append(download(version, Path(tmp)))
        for wheel in wheels:
            doc = extract(wheel)
            out = args.out / f"dynamo-{doc['ai_dynamo_version']}.json"
            out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            print(
                f"{out}: {len(doc['dynamo_options'])} Dynamo options, "
                f"{len(doc['router_options'])} router options, SGLang pin {doc['sglang_pin']}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
