"""Give every value of the real launch files each wrong shape, and check each file in-process.

Usage:  python benchmarks/fuzz_shapes.py [--workers 2] [--only TEXT] [--limit N] [--keep DIR] [--json FILE]

Derandomized: the cases are every value of every seed file times every wrong shape, in file order;
two runs on the same seeds are the same cases. The seeds are the launch corpus
(tests/data/launch_corpus) and the deploy examples (examples/deploy), or the folders given with
--corpus. Each value (a whole document, a mapping's value, a list's item) of a YAML file (manifests,
compose files, SkyPilot tasks, Helm values and Chart.yaml, SGLang --config files) becomes in turn a
list holding it, a mapping holding it, a string, an int, a bool, a float, null, an empty list, an
empty mapping and a list 30 deep (within topoctl's YAML depth limit, so that it reaches the
readers); a shape equal to the value's own is left out. Each mapping key becomes in turn an int, a
bool, null and a float. The small built-in snapshots (fixtures/*/snapshot.json, or --snapshot) get
the same value shapes, each given to `show`, `show --format dot`, `export nfd` and `check` as
--topology. Each JSON-form instruction of a Dockerfile
(the array and each item) and each value of a launch.env gets the same shapes written as text.

A case runs `topoctl check TARGET --system h100-8x-nvswitch` in this process (topoctl.cli.app's
`_main`, as the console script runs it, with TOPOCTL_DEBUG=1 so that a bug raises instead of
becoming exit 70); the target is the seed itself, its Helm chart, or its folder when the seed holds
no launch of its own (an SGLang --config file is read with the script that names it). A case fails
as an internal error (an exception topoctl did not turn into an exit code, or a code the interface
does not have) or as slow (over 10 s). Prints the cases, the failures grouped by where they were
raised, and exits 1 if any case failed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterator

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = (
    os.path.join(ROOT, "tests", "data", "launch_corpus"),
    os.path.join(ROOT, "examples", "deploy"),
)
SYSTEM = "h100-8x-nvswitch"
ALLOWED = {0, 1, 2, 3}
SLOW_S = 10.0
DEEP = 30
YAML_NAMES = (".yaml", ".yml")
# Snapshots of the built-in systems whose every value is shaped wrong in turn (the small ones: a
# snapshot of 8 GPUs has some 1,500 values).
SNAPSHOTS = (
    os.path.join(ROOT, "fixtures", "h200-2x-nvswitch-vm", "snapshot.json"),
    os.path.join(ROOT, "fixtures", "rtx-4090-2x-pcie-no-p2p", "snapshot.json"),
)
# The corpus's own answer files (what each launch must give), not launch files.
NOT_SEEDS = ("expected.yaml", "oracle.json")


def _deep(depth: int) -> list[Any]:
    value: list[Any] = ["x"]
    for _ in range(depth - 1):
        value = [value]
    return value


# (name, the wrong value for an original value): a container is wrapped, a scalar replaced.
SHAPES: tuple[tuple[str, Any], ...] = (
    ("list", lambda v: [v]),
    ("mapping", lambda v: {"name": v}),
    ("string", lambda v: "x"),
    ("int", lambda v: 8),
    ("bool", lambda v: True),
    ("float", lambda v: 0.5),
    ("null", lambda v: None),
    ("empty-list", lambda v: []),
    ("empty-mapping", lambda v: {}),
    ("deep", lambda v: _deep(DEEP)),
)
_SAME = {
    "string": str,
    "int": int,
    "bool": bool,
    "float": float,
    "null": type(None),
}


def _is_same(shape: str, value: Any) -> bool:
    if shape == "empty-list":
        return value == [] and isinstance(value, list)
    if shape == "empty-mapping":
        return value == {} and isinstance(value, dict)
    same = _SAME.get(shape)
    return same is not None and type(value) is same


@dataclass(frozen=True)
class Case:
    seed: str  # the seed file, relative to its corpus folder's parent
    where: str  # the value changed: doc 0 spec.template.spec.containers[0].env
    shape: str
    text: str  # the seed's new text


@dataclass(frozen=True)
class Failure:
    seed: str
    where: str
    shape: str
    raised: str  # "AttributeError: 'list' object has no attribute 'get'" or "exit 120"
    site: str  # the innermost topoctl frame: topoctl/deploy/kubernetes.py:410 _config_maps


# -- the cases
# ------------------------------------------------------------------------------------------------
def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every value of a loaded document, parents first."""
    yield path
    if isinstance(value, dict):
        for key in value:
            yield from _paths(value[key], (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: (_replaced(v, rest, new) if k == head else v) for k, v in value.items()}
    return [_replaced(v, rest, new) if i == head else v for i, v in enumerate(value)]


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def _spelled(path: tuple[Any, ...]) -> str:
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else f".{key}"
    return text.lstrip(".") or "(root)"


def _yaml_dump(docs: list[Any]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False, default_flow_style=False)


def _json_dump(docs: list[Any]) -> str:
    return json.dumps(docs[0], indent=1)


def yaml_cases(seed: str, text: str) -> Iterator[Case]:
    """Each value and key of each document of a YAML file in each wrong shape (a Helm template,
    not YAML before it is rendered, gives none)."""
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError:
        return
    yield from _tree_cases(seed, docs, _yaml_dump)


def json_cases(seed: str, text: str) -> Iterator[Case]:
    """Each value of a JSON file (a snapshot) in each wrong shape; JSON keys are strings only."""
    yield from _tree_cases(seed, [json.loads(text)], _json_dump)


def _tree_cases(seed: str, docs: list[Any], dump: Callable[[list[Any]], str]) -> Iterator[Case]:
    for index, doc in enumerate(docs):
        for path in _paths(doc):
            original = _at(doc, path)
            for shape, make in SHAPES:
                if _is_same(shape, original):
                    continue
                changed = list(docs)
                changed[index] = _replaced(doc, path, make(original))
                yield Case(seed, f"doc {index} {_spelled(path)}", shape, dump(changed))
            if dump is _yaml_dump and path and isinstance(path[-1], str):
                yield from _key_cases(seed, docs, index, path)


# A mapping's key as YAML can write it but a reader may expect a string: 8:, true:, null:, 0.5:.
KEY_SHAPES: tuple[tuple[str, Any], ...] = (
    ("key-int", 8),
    ("key-bool", True),
    ("key-null", None),
    ("key-float", 0.5),
)


def _key_cases(seed: str, docs: list[Any], index: int, path: tuple[Any, ...]) -> Iterator[Case]:
    """The key that leads to `path` in each key shape (the mapping's other keys kept)."""
    parent = _at(docs[index], path[:-1])
    for shape, key in KEY_SHAPES:
        if key in parent:
            continue
        renamed = {key if k == path[-1] else k: v for k, v in parent.items()}
        changed = list(docs)
        changed[index] = _replaced(docs[index], path[:-1], renamed)
        yield Case(seed, f"doc {index} {_spelled(path)}", shape, _yaml_dump(changed))


_JSON_FORM = ("CMD", "ENTRYPOINT", "RUN", "SHELL")


def dockerfile_cases(seed: str, text: str) -> Iterator[Case]:
    """Each JSON-form instruction's array and each of its items in each wrong shape."""
    lines = text.split("\n")
    for number, line in enumerate(lines):
        instruction, _, rest = line.strip().partition(" ")
        if instruction.upper() not in _JSON_FORM or not rest.strip().startswith("["):
            continue
        try:
            array = json.loads(rest)
        except ValueError:
            continue
        for path in _paths(array):
            original = _at(array, path)
            for shape, make in SHAPES:
                if _is_same(shape, original):
                    continue
                new = json.dumps(_replaced(array, path, make(original)))
                changed = [*lines[:number], f"{instruction} {new}", *lines[number + 1 :]]
                where = f"line {number + 1} {instruction}{_spelled(path)}"
                yield Case(seed, where, shape, "\n".join(changed))


def env_cases(seed: str, text: str) -> Iterator[Case]:
    """Each NAME=VALUE of a launch.env with a value of each wrong shape, written as YAML flow text."""
    lines = text.split("\n")
    for number, line in enumerate(lines):
        name, equals, _ = line.partition("=")
        if not equals or line.lstrip().startswith("#"):
            continue
        for shape, make in SHAPES:
            value = yaml.safe_dump(make("x"), default_flow_style=True).strip().removesuffix("...")
            changed = [*lines[:number], f"{name}='{value.strip()}'", *lines[number + 1 :]]
            yield Case(seed, f"line {number + 1} {name.strip()}", shape, "\n".join(changed))


def cases_of(seed: str, text: str) -> Iterator[Case]:
    name = os.path.basename(seed)
    if name.endswith(YAML_NAMES):
        yield from yaml_cases(seed, text)
    elif name.startswith("Dockerfile") or name.endswith((".Dockerfile", ".dockerfile")):
        yield from dockerfile_cases(seed, text)
    elif name.endswith(".env"):
        yield from env_cases(seed, text)
    elif name.endswith(".json"):
        yield from json_cases(seed, text)


def seeds(folders: tuple[str, ...]) -> list[tuple[str, str]]:
    """(corpus folder, seed path relative to it) for every file a case can be made of, sorted."""
    out = []
    for folder in folders:
        for root, dirs, files in os.walk(folder):
            dirs.sort()
            for name in sorted(files):
                if root == folder and name in NOT_SEEDS:
                    continue
                path = os.path.relpath(os.path.join(root, name), folder)
                out.append((folder, path))
    return out


# -- one case
# ------------------------------------------------------------------------------------------------
class _Slow(Exception):
    pass


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Slow


def _site(error: BaseException) -> str:
    """The innermost frame in topoctl of where the error was raised."""
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if f"{os.sep}topoctl{os.sep}" in f.filename]
    if not (ours or frames):
        return "?"
    frame = (ours or frames)[-1]
    file = frame.filename
    at = file.rfind(f"{os.sep}topoctl{os.sep}")
    return f"{file[at + 1 :] if at >= 0 else file}:{frame.lineno} {frame.name}"


def run_topoctl(argv: list[str]) -> tuple[int | None, str, str]:
    """(exit code, or None when it raised; what was raised; where) for one command."""
    from topoctl.cli import app

    out, err = io.StringIO(), io.StringIO()
    signal.setitimer(signal.ITIMER_REAL, SLOW_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = app._main(argv)
    except _Slow:
        return None, f"slow: over {SLOW_S:.0f} s", "?"
    except Exception as error:  # every exception that reaches here would be exit 70
        return (
            None,
            f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}",
            _site(error),
        )
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    if code not in ALLOWED:
        return code, f"exit {code}: {err.getvalue().strip()[:200]}", "?"
    return code, "", ""


def run_all(commands: list[list[str]]) -> tuple[str, str]:
    """(what the first failing command raised, with the command; where), or ("", "")."""
    for argv in commands:
        _, raised, site = run_topoctl(argv)
        if raised:
            words = []
            for word in argv:  # the command's name, up to its first option or path
                if word.startswith("-") or os.sep in word:
                    break
                words.append(word)
            return f"{raised} (topoctl {' '.join(words)})", site
    return "", ""


# -- a seed in a worker
# ------------------------------------------------------------------------------------------------
def _commands(copy_root: str, seed: str) -> list[list[str]]:
    """What each case of a seed runs: a snapshot is shown, exported and checked against (a
    launch.env of TP 2, written beside it); a launch file is checked."""
    path = os.path.join(copy_root, seed)
    if seed.endswith(".json"):
        env = os.path.join(copy_root, "tp2_launch.env")
        with open(env, "w", encoding="utf-8") as handle:
            handle.write("SGLANG_ARGS='--model-path m --tp-size 2'\n")
        return [
            ["show", "--topology", path],
            ["show", "--topology", path, "--format", "dot"],
            ["export", "nfd", "--topology", path],
            ["check", env, "--topology", path],
        ]
    return [["check", _target(copy_root, seed), "--system", SYSTEM]]


def _target(copy_root: str, seed: str) -> str:
    """What check is run on: the Helm chart a seed is part of, else the seed file, else (a seed
    holding no launch of its own, or not a launch file) its folder."""
    from topoctl.deploy import registry

    path = os.path.join(copy_root, seed)
    folder = os.path.dirname(path)
    while folder.startswith(copy_root) and folder != copy_root:
        if os.path.isfile(os.path.join(folder, "Chart.yaml")):
            return folder
        folder = os.path.dirname(folder)
    try:
        _, founds = registry.read_file(path)
    except Exception:
        return path
    return path if any(found.launch is not None for found in founds) else os.path.dirname(path)


def run_seed(job: tuple[str, str, str | None, int | None]) -> tuple[int, list[Failure], str]:
    """All cases of one seed in a scratch copy of its corpus folder: (cases run, failures, the
    baseline's problem or "")."""
    folder, seed, only, limit = job
    os.environ["TOPOCTL_DEBUG"] = "1"
    signal.signal(signal.SIGALRM, _on_alarm)
    scratch = tempfile.mkdtemp(prefix="topoctl-shapes-")
    try:
        copy_root = os.path.join(scratch, "corpus")
        shutil.copytree(folder, copy_root, symlinks=True)
        path = os.path.join(copy_root, seed)
        with open(path, encoding="utf-8") as handle:
            original = handle.read()
        commands = _commands(copy_root, seed)
        raised, site = run_all(commands)
        baseline = f"{raised} at {site}" if raised else ""
        count, failures = 0, []
        for case in cases_of(seed, original):
            if only and only not in f"{case.seed} {case.where} {case.shape}":
                continue
            if limit is not None and count >= limit:
                break
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(case.text)
            count += 1
            raised, site = run_all(commands)
            if raised:
                failures.append(Failure(case.seed, case.where, case.shape, raised, site))
        return count, failures, baseline
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# -- the run
# ------------------------------------------------------------------------------------------------
def _keep(keep: str, folder: str, failure: Failure, index: int) -> None:
    """The failing input of a crash class, written to keep/N-<name>."""
    with open(os.path.join(folder, failure.seed), encoding="utf-8") as handle:
        text = handle.read()
    case = next(
        c
        for c in cases_of(failure.seed, text)
        if (c.where, c.shape) == (failure.where, failure.shape)
    )
    os.makedirs(keep, exist_ok=True)
    name = f"{index:02d}-{os.path.basename(failure.seed)}"
    with open(os.path.join(keep, name), "w", encoding="utf-8") as handle:
        handle.write(case.text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", action="append", help="a folder of seed files (repeatable)")
    parser.add_argument("--snapshot", action="append", help="a snapshot seed file (repeatable)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", help="only the cases whose 'seed where shape' holds this text")
    parser.add_argument("--limit", type=int, help="at most this many cases per seed")
    parser.add_argument("--keep", help="write one failing input per crash class here")
    parser.add_argument("--json", help="write every failure here")
    options = parser.parse_args()
    folders = tuple(options.corpus) if options.corpus else CORPUS
    snapshots = tuple(options.snapshot) if options.snapshot else SNAPSHOTS
    found = seeds(folders) + [
        (
            os.path.dirname(os.path.dirname(s)),
            os.path.relpath(s, os.path.dirname(os.path.dirname(s))),
        )
        for s in snapshots
    ]
    jobs = [(folder, seed, options.only, options.limit) for folder, seed in found]
    started = time.monotonic()
    # the largest seeds first, so that no worker is left with one long seed at the end
    order = sorted(range(len(jobs)), key=lambda i: -os.path.getsize(os.path.join(*jobs[i][:2])))
    with multiprocessing.get_context("fork").Pool(options.workers) as pool:
        done = pool.map(run_seed, [jobs[i] for i in order], chunksize=1)
    results = [result for _, result in sorted(zip(order, done, strict=True))]
    seconds = time.monotonic() - started
    total = sum(count for count, _, _ in results)
    failures = [failure for _, found, _ in results for failure in found]
    for (_, seed, _, _), (_, _, baseline) in zip(jobs, results, strict=True):
        if baseline:
            print(f"baseline {seed}: {baseline}")
    classes: dict[tuple[str, str], list[Failure]] = {}
    for failure in failures:
        classes.setdefault((failure.raised.split(":")[0], failure.site), []).append(failure)
    print(
        f"{total} cases from {len(jobs)} seeds, {len(failures)} internal errors in "
        f"{len(classes)} classes, {seconds:.1f} s, {options.workers} workers"
    )
    seed_folder = {seed: folder for folder, seed, _, _ in jobs}
    for index, ((kind, site), group) in enumerate(
        sorted(classes.items(), key=lambda i: -len(i[1]))
    ):
        first = group[0]
        print(f"  {len(group):5d}  {kind} at {site}")
        print(f"         e.g. {first.seed} {first.where} -> {first.shape}: {first.raised[:120]}")
        if options.keep:
            _keep(options.keep, seed_folder[first.seed], first, index)
    if options.json:
        with open(options.json, "w", encoding="utf-8") as handle:
            json.dump([asdict(f) for f in failures], handle, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
