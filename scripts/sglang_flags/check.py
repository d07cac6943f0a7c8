"""Hold the extracted flag data to SGLang's own argparse parser, release by release.

    python scripts/check_sglang_parser.py --src-root DIR            # DIR/<version>/sglang/... (unpacked wheels)
    python scripts/check_sglang_parser.py --wheels DIR              # DIR/sglang-<version>-*.whl (unpacked here)

For every version with both a data file (rules/sglang/generated/sglang-<v>.json) and sources,
SGLang's parser is built by real_parser.py in a subprocess and each of its actions is compared with
the data: option strings (aliases and their order), action, nargs, whether it takes a value,
default, choices, const, required and hidden. Then each argv probe (PROBES) is parsed by the real
parser and its outcome recorded, so that the tests can hold topoctl's own reading of those command
lines (FlagSet.resolve) to what argparse did.

Writes a JSON report (default tests/data/sglang_real_parser_check.json) and a Markdown summary
(default docs/real-parser-check.md). Exit 1 when any field disagrees.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
DATA_DIR = REPO_ROOT / "rules" / "sglang" / "generated"
DEFAULT_JSON = REPO_ROOT / "tests" / "data" / "sglang_real_parser_check.json"
DEFAULT_MD = REPO_ROOT / "docs" / "real-parser-check.md"

NO_VALUE = {"store_true", "store_false", "store_const", "append_const", "count", "help", "version"}

# Command lines whose real outcome is recorded for every release (after `--model-path model`).
PROBES: list[list[str]] = [
    ["--cuda-graph-max-bs", "8"],
    ["--cuda-graph-bs", "8", "16"],
    ["--cuda-graph-max-bs-decode", "8"],
    ["--tp", "2"],
    ["--tp-size", "2"],
    ["--tensor-parallel-size", "2"],
    ["--ep", "2"],
    ["--dp", "2"],
    ["--disable-custom-all-reduce"],
    ["--enable-torch-symm-mem"],
    ["--enable-symm-mem"],
    ["--enable-dp-attention"],
    ["--enable-flashinfer-allreduce-fusion"],
    ["--disable-cuda-graph"],
    ["--speculative-algorithm", "EAGLE3"],
    ["--enable-p2p-check"],
    ["--enable-fused-qk-norm-rope"],
    ["--disable-hicache-numa-detect"],
    ["--enforce-disable-flashinfer-allreduce-fusion"],
    ["--enable-aiter-allreduce-fusion"],
    ["--disable-piecewise-cuda-graph"],
    ["--enable-torch-symm"],
    ["--cuda-graph-max-bs=8"],
    ["--tp=2", "--enable-p2p-check"],
    ["--speculative-algo", "EAGLE3"],
    ["--enable-dp"],
    ["--disable-custom"],
    ["--cuda-graph"],
    ["--no-such-flag-at-all"],
]


def _eq(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _has_stub(value: Any) -> bool:
    if isinstance(value, dict):
        return "stub" in value or "repr" in value or any(_has_stub(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_stub(v) for v in value)
    return False


def compare(real: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """Every disagreement between the real parser's description and one data file."""
    flags: dict[str, dict[str, Any]] = data["flags"]
    disagree: list[str] = []
    unresolved: list[str] = []  # the data keeps source text where the real parser has a value
    not_comparable: list[str] = []  # the real value comes from a stubbed import
    compared = 0
    seen: set[str] = set()
    if real["allow_abbrev"] != data.get("allow_abbrev", True):
        disagree.append(
            f"allow_abbrev: real {real['allow_abbrev']}, data {data.get('allow_abbrev')}"
        )
    for act in real["actions"]:
        if act["action"] == "help":
            continue
        opts = act["options"]
        if not opts:
            disagree.append(f"positional {act['dest']} in the real parser")
            continue
        key = opts[0]
        rec = flags.get(key)
        if rec is None:
            disagree.append(f"{key}: in the real parser, not in the data")
            continue
        seen.add(key)

        def check(field: str, real_value: Any, data_value: Any, key: str = key) -> None:
            nonlocal compared
            compared += 1
            if _has_stub(real_value):
                not_comparable.append(f"{key} {field}")
            elif not _eq(real_value, data_value):
                disagree.append(
                    f"{key} {field}: real {json.dumps(real_value)}, data {json.dumps(data_value)}"
                )

        check("options", opts, rec.get("options"))
        check("action", act["action"], rec.get("action"))
        takes = act["action"] not in NO_VALUE and act["nargs"] != 0
        check("takes_value", takes, rec.get("takes_value"))
        if act["action"] not in NO_VALUE:
            check("nargs", act["nargs"], rec.get("nargs"))
        if "default_expr" in rec:
            compared += 1
            (not_comparable if _has_stub(act["default"]) else unresolved).append(
                f"{key} default: real {json.dumps(act['default'])}, data keeps "
                f"{rec['default_expr']!r}"
            )
        elif rec.get("default_suppressed"):
            check("default", act["default"], "==SUPPRESS==")
        else:
            check("default", act["default"], rec.get("default"))
        if "choices_unresolved" in rec:
            compared += 1
            (not_comparable if _has_stub(act["choices"]) else unresolved).append(
                f"{key} choices: real {json.dumps(act['choices'])}, data keeps "
                f"{rec['choices_unresolved']!r}"
            )
        else:
            # argparse only tests membership, and SGLang builds some choices from a set
            # (--sampling-backend), whose order changes from one process to the next: compare them
            # as sorted lists
            def srt(v: Any) -> Any:
                return None if v is None else sorted(v, key=lambda x: json.dumps(x, sort_keys=True))

            check("choices", srt(act["choices"]), srt(rec.get("choices")))
        # store_true / store_false carry const True / False by definition: the action says it
        if act["action"] not in ("store_true", "store_false") and (
            act["const"] is not None or "const" in rec
        ):
            check("const", act["const"], rec.get("const"))
        check("required", act["required"], rec.get("required") is True)
        check("hidden", act["help_suppressed"], bool(rec.get("hidden")))
    for key in sorted(set(flags) - seen):
        disagree.append(f"{key}: in the data, not in the real parser")
    return {
        "compared_fields": compared,
        "flags_real": sum(1 for a in real["actions"] if a["action"] != "help"),
        "flags_data": len(flags),
        "disagreements": disagree,
        "unresolved_in_data": unresolved,
        "not_comparable": not_comparable,
    }


def resolve_choices(real: dict[str, Any], data: dict[str, Any]) -> list[str]:
    """Give each flag whose choices the wheel computes at run time (`choices_unresolved`: a parser
    registry, an enum comprehension) the list SGLang's own parser holds, where that list is not a
    stub's. The source text is kept as `choices_expr`; `choices_from` says where the list came from.
    Returns the flags resolved."""
    flags: dict[str, dict[str, Any]] = data["flags"]
    resolved = []
    for act in real["actions"]:
        rec = flags.get(act["options"][0]) if act["options"] else None
        if (
            rec is None
            or "choices_unresolved" not in rec
            or act["choices"] is None
            or _has_stub(act["choices"])
        ):
            continue
        rec["choices"] = act["choices"]
        rec["choices_expr"] = rec.pop("choices_unresolved")
        rec["choices_from"] = "SGLang's own parser (scripts/check_sglang_parser.py --write-choices)"
        resolved.append(act["options"][0])
    return resolved


def write_choices(version: str, src: Path, data_dir: Path = DATA_DIR) -> list[str]:
    """resolve_choices on one release's data file, written back in the extractor's format."""
    path = data_dir / f"sglang-{version}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    resolved = resolve_choices(run_real(src, "dump"), data)
    if resolved:
        path.write_text(
            json.dumps(data, sort_keys=True, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    return resolved


def run_real(src: Path, mode: str, argv: list[str] | None = None) -> dict[str, Any]:
    cmd = [sys.executable, str(HERE / "real_parser.py"), str(src), mode]
    if argv is not None:
        cmd += argv
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"real_parser.py {src} {mode} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout)


def check_version(version: str, src: Path, data_dir: Path = DATA_DIR) -> dict[str, Any]:
    data = json.loads((data_dir / f"sglang-{version}.json").read_text(encoding="utf-8"))
    real = run_real(src, "dump", [json.dumps(PROBES)])
    result = compare(real, data)
    probes = [
        {"argv": argv, "ok": out["ok"], "error": out.get("error"), "exit": out.get("exit")}
        for argv, out in zip(PROBES, real["probes"], strict=False)
    ]
    result.update(
        {
            "version": version,
            "wheel_sha256": data["source"]["sha256"],
            "python": real["python"],
            "stubbed_packages": real["stubbed"],
            "sglang_modules_failed": sorted(real["sglang_modules_failed"]),
            "probes": probes,
        }
    )
    return result


def _version_key(v: str) -> Any:
    from packaging.version import Version

    return Version(v)


def _unpack(wheels: Path, dest: Path) -> dict[str, Path]:
    out = {}
    for wheel in sorted(wheels.glob("sglang-*.whl")):
        version = wheel.name.split("-")[1]
        target = dest / version
        with zipfile.ZipFile(wheel) as archive:
            members = [
                n for n in archive.namelist() if n.startswith("sglang/") and n.endswith(".py")
            ]
            archive.extractall(target, members)
        out[version] = target
    return out


def render_md(results: list[dict[str, Any]]) -> str:
    lines = [
        "# Flag data against SGLang's own parser",
        "",
        "Generated by `python scripts/check_sglang_parser.py` from the release wheels; do not "
        "edit by hand.",
        "For each release, SGLang's parser is built from the wheel's own "
        "`sglang/srt/server_args.py` (its",
        "`prepare_server_args`, with torch, the kernels and every other non-standard import "
        "stubbed) and every",
        "option of it is compared with `rules/sglang/generated/sglang-<version>.json`: option "
        "strings and their",
        "order, action, nargs, takes-a-value, default, choices (as a set: argparse tests "
        "membership), const,",
        "required, hidden.",
        "",
        "*unresolved*: the data keeps the source text of a default or choices computed at run "
        "time, where the",
        "real parser has a value. *not comparable*: the real value itself comes from a stubbed "
        "import.",
        "",
        "| version | flags (real / data) | fields compared | disagreements | unresolved | not "
        "comparable |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['version']} | {r['flags_real']} / {r['flags_data']} | {r['compared_fields']} "
            f"| {len(r['disagreements'])} | {len(r['unresolved_in_data'])} | "
            f"{len(r['not_comparable'])} |"
        )
    lines += [
        "",
        "## Command lines parsed by the real parser",
        "",
        "Each after `--model-path model`: *ok*, or argparse's error (*ambiguous option*, "
        "*unrecognized arguments*), by runs of consecutive releases.",
        "",
        "| argv | outcome |",
        "|---|---|",
    ]
    for i, argv in enumerate(PROBES):
        runs: list[list[str]] = []  # [outcome, first, last]
        for r in results:
            p = r["probes"][i]
            err = p["error"] or ""
            out = (
                "ok"
                if p["ok"]
                else (
                    "ambiguous option"
                    if "ambiguous option" in err
                    else "unrecognized arguments"
                    if "unrecognized arguments" in err
                    else err
                )
            )
            if runs and runs[-1][0] == out:
                runs[-1][2] = r["version"]
            else:
                runs.append([out, r["version"], r["version"]])
        text = "; ".join(f"{o}: {a}" + (f" to {b}" if b != a else "") for o, a, b in runs)
        lines.append(f"| `{' '.join(argv)}` | {text} |")
    problems = [
        r for r in results if r["disagreements"] or r["unresolved_in_data"] or r["not_comparable"]
    ]
    if problems:
        lines += ["", "## Details", ""]
        for r in problems:
            lines.append(f"### {r['version']}")
            for kind in ("disagreements", "unresolved_in_data", "not_comparable"):
                for item in r[kind]:
                    lines.append(f"- {kind.replace('_', ' ')}: {item}")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def save(
    results: list[dict[str, Any]], json_path: Path = DEFAULT_JSON, md_path: Path = DEFAULT_MD
) -> None:
    """Write `results` into the JSON report (replacing those versions' earlier results, keeping the
    others) and re-render the Markdown summary from the whole report."""
    merged: dict[str, dict[str, Any]] = {}
    if json_path.exists():
        merged = {
            r["version"]: r for r in json.loads(json_path.read_text(encoding="utf-8"))["results"]
        }
    merged.update({r["version"]: r for r in results})
    ordered = [merged[v] for v in sorted(merged, key=_version_key)]
    doc = {
        "generated_by": "scripts/check_sglang_parser.py",
        "probes_after": ["--model-path", "model"],
        "results": ordered,
    }
    for path, text in (
        (json_path, json.dumps(doc, indent=1, sort_keys=True) + "\n"),
        (md_path, render_md(ordered)),
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp_path = path.with_suffix(path.suffix + ".tmp")
        tmp_path.write_text(text, encoding="utf-8")
        tmp_path.replace(path)


def check_wheel(wheel: Path, data_dir: Path = DATA_DIR) -> dict[str, Any]:
    """check_version on one wheel, unpacked into a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="sglang-src-") as tmp:
        wheel_dir = Path(tmp) / "wheel"
        wheel_dir.mkdir()
        (wheel_dir / wheel.name).symlink_to(wheel.resolve())
        sources = _unpack(wheel_dir, Path(tmp) / "src")
        ((version, src),) = sources.items()
        return check_version(version, src, data_dir)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--src-root", type=Path, help="folder of unpacked wheels: <version>/sglang/..."
    )
    src.add_argument("--wheels", type=Path, help="folder of sglang-<version>-*.whl files")
    ap.add_argument(
        "--versions",
        nargs="*",
        help="only these versions (default: every one with data and sources)",
    )
    ap.add_argument("--data", type=Path, default=DATA_DIR)
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    ap.add_argument("--md", type=Path, default=DEFAULT_MD)
    ap.add_argument(
        "--write-choices",
        action="store_true",
        help="write the real parser's list into the data for choices the wheel computes at run time",
    )
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sglang-src-") as tmp:
        if args.wheels:
            sources = _unpack(args.wheels, Path(tmp))
        else:
            sources = {
                p.name: p
                for p in args.src_root.iterdir()
                if (p / "sglang" / "srt" / "server_args.py").exists()
            }
        have = {p.name[len("sglang-") : -len(".json")] for p in args.data.glob("sglang-*.json")}
        versions = sorted(set(args.versions or sources) & have & set(sources), key=_version_key)
        results = []
        for v in versions:
            if args.write_choices:
                print(
                    f"{v}: choices from the real parser for "
                    f"{', '.join(write_choices(v, sources[v], args.data)) or 'none'}"
                )
            r = check_version(v, sources[v], args.data)
            results.append(r)
            print(
                f"{v}: {r['flags_real']} real / {r['flags_data']} data flags, "
                f"{r['compared_fields']} fields, {len(r['disagreements'])} disagree, "
                f"{len(r['unresolved_in_data'])} unresolved, {len(r['not_comparable'])} not "
                "comparable",
                flush=True,
            )
    save(results, args.json, args.md)
    return 1 if any(r["disagreements"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
