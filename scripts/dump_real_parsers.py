#!/usr/bin/env python3
"""Record what SGLang's and Dynamo's own code does, run from their release wheels, for the tests to replay.

    python scripts/dump_real_parsers.py --sglang-wheels DIR [--dynamo-wheels DIR] [--only NAME,...]

DIR holds sglang-<version>-*.whl (ai_dynamo-<version>-*.whl) as `pip download --no-deps sglang==X`
gives them. Writes xz-compressed JSON with sorted keys (the same wheels give the same bytes) into
tests/data/real_parsers/:

* sglang-parsers.json.xz: every action of each release's argparse parser as SGLang's own
  prepare_server_args builds it (scripts/sglang_flags/real_parser.py `dump`), and the real outcome
  of each probe of scripts/sglang_flags/check.py; tests/rules/test_sglang_real_parser.py compares
  the shipped flag data with it.
* sglang-config.json.xz: the argument list SGLang's ConfigArgumentMerger hands argparse for each
  `--config` file of CONFIGS (tests/deploy/test_sglang_config_real.py holds
  topoctl.deploy.launcher_args to it).
* dynamo-probes.json.xz: what Dynamo's own parsers leave for SGLang of each probe of DYNAMO_PROBES,
  or the argparse error they stop with (tests/deploy/test_dynamo_real_parser.py).
* sglang-memory.json.xz: the mem_fraction_static SGLang's `_handle_gpu_memory_settings` computes,
  per release up to 0.5.13.post1 and launch case (scripts/check_memory_rules.py;
  tests/autoconf/test_memory_rules.py).

Each file names the wheels (version and SHA-256) it was recorded from. The tests that run the wheels
themselves (where TOPOCTL_SGLANG_WHEELS / TOPOCTL_DYNAMO_WHEELS are set) also hold these files equal
to a fresh run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
OUT_DIR = REPO_ROOT / "tests" / "data" / "real_parsers"
sys.path.insert(0, str(HERE))

# --config files whose merge is recorded, and the releases they are recorded for (the boundaries of
# topoctl/deploy/launcher_args.py's --config behaviours and the newest releases).
CONFIGS = {
    "scalars-and-store-true": "tp-size: 8\nenable-metrics: true\nskip-server-warmup: "
    "false\nmem-fraction-static: 0.7\n",
    "lists": "served-model-name: [a]\nmem-fraction-static: 0.8\n",
}
CONFIG_RELEASES = ("0.5.5", "0.5.7", "0.5.8", "0.5.12", "0.5.14", "0.5.18", "0.5.22", "0.5.23")
CONFIG_COMMAND = ["--model-path", "m", "--config", "{config}", "--tp-size", "4"]
# real_parser.py with PyYAML imported for real, so that SGLang reads the config file itself
CONFIG_DRIVER = (
    "import sys; sys.path.insert(0, sys.argv[1]); import real_parser; "
    "real_parser.REAL_PACKAGES.add('yaml'); sys.argv = ['real_parser.py', *sys.argv[2:]]; "
    "sys.exit(real_parser.main())"
)
DYNAMO_PROBES = [
    [
        "--model-path",
        "m",
        "--namespace",
        "ns",
        "--endpoint",
        "dyn://a.b.c",
        "--tp-size",
        "4",
        "--page-size",
        "16",
    ],
    [
        "--model-path",
        "m",
        "--router-mode",
        "kv",
        "--enable-metrics",
        "--connector",
        "nixl",
        "--tp",
        "2",
    ],
    [
        "--namesp",
        "ns",
        "--model-path=m",
        "--custom-jinja-template=t.jinja",
        "--mem-fraction-static",
        "0.8",
    ],
    ["--tcp-tls", "x", "--model-path", "m"],
]
DUMPS = ("sglang-parsers", "sglang-config", "dynamo-probes", "sglang-memory")


def read_dump(name: str) -> Any:
    """A committed dump, as the tests read it."""
    with lzma.open(OUT_DIR / f"{name}.json.xz", "rt", encoding="utf-8") as handle:
        return json.load(handle)


def write_dump(name: str, doc: Any) -> Path:
    """xz (its window spans the releases, which repeat most of each other: 2.6 MB of parser tables
    become 20 KB, where gzip's 32 KB window leaves 290 KB); the same content gives the same bytes.
    """
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    path = OUT_DIR / f"{name}.json.xz"
    body = (
        json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
    ).encode("utf-8")
    path.write_bytes(lzma.compress(body, preset=9 | lzma.PRESET_EXTREME))
    return path


def wheel_version(wheel: Path) -> str:
    return wheel.name.split("-")[1]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def unpack_sglang(wheel: Path, dest: Path) -> Path:
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(
            dest, [n for n in archive.namelist() if n.startswith("sglang/") and n.endswith(".py")]
        )
    return dest


def real_parser_dump(src: Path) -> dict[str, Any]:
    """The parser's actions, each probe's outcome (ok, or argparse's error and exit status) and the
    SGLang modules that failed to import under the stubs (names only); the namespace a probe parses
    to and the interpreter's version are left out."""
    from sglang_flags.check import PROBES, run_real

    real = run_real(src, "dump", [json.dumps(PROBES)])
    real.pop("python", None)
    real["sglang_modules_failed"] = sorted(
        real["sglang_modules_failed"]
    )  # their messages name a temporary folder
    for action in real[
        "actions"
    ]:  # sorted as compare() compares them: SGLang builds some from a set, whose
        if isinstance(action.get("choices"), list):  # order changes from one process to the next
            action["choices"] = _sorted_choices(action["choices"])
    real["probes"] = [
        {"argv": argv, "ok": out["ok"], "error": out.get("error"), "exit": out.get("exit")}
        for argv, out in zip(PROBES, real["probes"], strict=False)
    ]
    return real


def _sorted_choices(choices: list[Any]) -> list[Any]:
    return sorted(choices, key=lambda value: json.dumps(value, sort_keys=True))


def config_argv(src: Path, config_text: str, folder: Path) -> list[str]:
    """The argument list SGLang's prepare_server_args hands argparse, with `{config}` for the config
    file's path."""
    config = folder / "c.yaml"
    config.write_text(config_text, encoding="utf-8")
    cli = [str(config) if word == "{config}" else word for word in CONFIG_COMMAND]
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            CONFIG_DRIVER,
            str(HERE / "sglang_flags"),
            str(src),
            "parse",
            "--",
            *cli,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"{src}: SGLang's parser failed on the config run:\n{proc.stderr[-2000:]}"
        )
    return ["{config}" if word == str(config) else word for word in json.loads(proc.stdout)["argv"]]


def dynamo_outcome(wheel: Path, probe: list[str]) -> dict[str, Any]:
    """probe_rest (what Dynamo's parsers leave for SGLang) or probe_error, run in a fresh process
    per wheel."""
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); from extract_dynamo_flags import "
        "extract; r = extract(__import__('pathlib').Path(sys.argv[2]), json.loads(sys.argv[3])); "
        "print(json.dumps({k: r[k] for k in ('probe_rest', 'probe_error') if k in r}))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(HERE), str(wheel), json.dumps(probe)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{wheel.name}: Dynamo's parsers failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _sources(wheels: list[Path]) -> dict[str, str]:
    return {wheel_version(w): sha256(w) for w in wheels}


def dump_sglang(wheels: list[Path], only: set[str]) -> None:
    parsers: dict[str, Any] = {}
    configs: dict[str, Any] = {}
    memory_src = Path(tempfile.mkdtemp(prefix="sglang-src-"))
    for wheel in wheels:
        version = wheel_version(wheel)
        with tempfile.TemporaryDirectory() as folder:
            src = unpack_sglang(wheel, Path(folder) / "src")
            if "sglang-parsers" in only:
                parsers[version] = real_parser_dump(src)
            if "sglang-config" in only and version in CONFIG_RELEASES:
                configs[version] = {
                    name: config_argv(src, text, Path(folder))
                    for name, text in sorted(CONFIGS.items())
                }
        if "sglang-memory" in only:
            unpack_sglang(wheel, memory_src / version)
        print(f"sglang {version}", file=sys.stderr)
    sources = _sources(wheels)
    if "sglang-parsers" in only:
        write_dump(
            "sglang-parsers",
            {"wheels": sources, "probes_after": ["--model-path", "model"], "releases": parsers},
        )
    if "sglang-config" in only:
        write_dump(
            "sglang-config",
            {
                "wheels": {v: s for v, s in sources.items() if v in configs},
                "command": CONFIG_COMMAND,
                "configs": CONFIGS,
                "releases": configs,
            },
        )
    if "sglang-memory" in only:
        import check_memory_rules

        cases = check_memory_rules.record(str(memory_src))
        releases = sorted({case["release"] for case in cases})
        write_dump(
            "sglang-memory",
            {"wheels": {v: s for v, s in sources.items() if v in releases}, "cases": cases},
        )


def dump_dynamo(wheels: list[Path]) -> None:
    releases = {}
    for wheel in wheels:
        version = wheel_version(wheel)
        if int(version.split(".")[0]) < 1:
            continue  # 0.x releases read the launch with one parser
        releases[version] = [dynamo_outcome(wheel, probe) for probe in DYNAMO_PROBES]
        print(f"ai-dynamo {version}", file=sys.stderr)
    write_dump(
        "dynamo-probes",
        {
            "wheels": _sources([w for w in wheels if wheel_version(w) in releases]),
            "probes": DYNAMO_PROBES,
            "releases": releases,
        },
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sglang-wheels", type=Path, help="folder of sglang-<version>-*.whl")
    parser.add_argument("--dynamo-wheels", type=Path, help="folder of ai_dynamo-<version>-*.whl")
    parser.add_argument(
        "--only", default=",".join(DUMPS), help="comma list of: " + ", ".join(DUMPS)
    )
    options = parser.parse_args(argv)
    only = set(options.only.split(","))
    if only - set(DUMPS):
        parser.error(f"--only: unknown dump(s) {sorted(only - set(DUMPS))}")
    from packaging.version import Version

    if only - {"dynamo-probes"}:
        if options.sglang_wheels is None:
            parser.error(
                "--sglang-wheels is needed for " + ", ".join(sorted(only - {"dynamo-probes"}))
            )
        dump_sglang(
            sorted(
                options.sglang_wheels.glob("sglang-*.whl"), key=lambda w: Version(wheel_version(w))
            ),
            only,
        )
    if "dynamo-probes" in only:
        if options.dynamo_wheels is None:
            parser.error("--dynamo-wheels is needed for dynamo-probes")
        dump_dynamo(
            sorted(
                options.dynamo_wheels.glob("ai_dynamo-*.whl"),
                key=lambda w: Version(wheel_version(w)),
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
