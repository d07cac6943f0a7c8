"""The launch corpus through SGLang's own parser and ServerArgs: what each release says of each corpus launch.

    python scripts/sglang_oracle/corpus.py --src-root DIR [--python PYTHON] [--out FILE]
    python scripts/sglang_oracle/corpus.py --src-root DIR --verify-citations

Each launch of tests/data/launch_corpus/ is read as `topoctl check` reads it (its file's sources,
the SGLang version check picks for it, the argv and environment SGLang's parser is handed), then run
through that release's `prepare_server_args` and post-init on the file's reference system
(scripts/sglang_oracle/ run_release.py, stubbed hardware answered from
fixtures/<system>/snapshot.json), then through `check_server_args`, which the engine runs before it
starts any process (`engine_check`: the multi-node size assertions live there). DIR holds one
unpacked wheel per release (DIR/0.5.23/sglang/...), PYTHON an interpreter with msgspec (SGLang >=
0.5.13 needs it).

Writes tests/data/launch_corpus/oracle.json: per file, per launch, the release, the argv and
environment, and SGLang's outcome (ok, argparse-error with its message, startup-error with the
raise's file:line). tests/check/test_check_corpus.py holds every expected verdict to it without the
wheels: a launch SGLang's parser refuses must block with a flag finding, one it accepts must not,
one whose post-init raises must block; and the argv topoctl reads today must be the argv recorded
(else: run this again).

The model architecture a launch serves is not in the file; the oracle's fake model config is chosen
from the model's name (MoE names: Qwen3MoeForCausalLM; gpt-oss: GptOssForCausalLM; else
LlamaForCausalLM) and recorded with the outcome.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))

CORPUS = REPO / "tests" / "data" / "launch_corpus"
DEFAULT_OUT = CORPUS / "oracle.json"
RELEASES = REPO / "rules" / "sglang" / "generated" / "releases.json"
DEFAULT_SYSTEM = "h100-8x-nvswitch"
SIZES = (
    "tp_size",
    "dp_size",
    "pp_size",
    "ep_size",
    "nnodes",
    "enable_dp_attention",
    "disable_custom_all_reduce",
    "enable_p2p_check",
)
MOE_NAME = re.compile(
    r"deepseek|kimi|qwen3-\d+b-a\d+b|qwen3-coder|mixtral|glm-4\.5|-a\d+b", re.IGNORECASE
)


def expected() -> dict[str, Any]:
    import yaml

    with open(CORPUS / "expected.yaml", encoding="utf-8") as handle:
        return dict(yaml.safe_load(handle))


def _line(origin: str) -> int:
    match = re.match(r"^(.*?):(\d+)(?: \(.*\))?$", origin or "")
    return int(match.group(2)) if match else 1


def architecture(args: list[str]) -> str:
    """The fake model config's architecture for a launch, from the model it names."""
    model = ""
    for index, word in enumerate(args):
        if word in ("--model-path", "--model") and index + 1 < len(args):
            model = args[index + 1]
        elif word.startswith(("--model-path=", "--model=")):
            model = word.split("=", 1)[1]
    if "gpt-oss" in model.lower():
        return "GptOssForCausalLM"
    return "Qwen3MoeForCausalLM" if MOE_NAME.search(model) else "LlamaForCausalLM"


def corpus_launches(relative: str, system: str) -> list[dict[str, Any]]:
    """Each launch of one corpus file as check reads it: {line, version, argv, env}; a file or
    container with no launch gives none. The same reading as `topoctl check FILE --system SYSTEM`.
    """
    from topoctl.check.pipeline import parsed_launches
    from topoctl.check.resolve import VersionChooser
    from topoctl.cli.commands._options import flag_set_for, requested_version, target_version
    from topoctl.snapshot.catalogue import system_snapshot

    chooser = VersionChooser(
        target_version(system_snapshot(system), None),
        "the target's installed SGLang",
        None,
        flag_set_for,
        requested_version,
    )
    out = []
    for parsed in parsed_launches([str(CORPUS / relative)], chooser):
        env = {name: str(value) for name, value in sorted(parsed.env.items())}
        argv, stand_ins = with_stand_ins(list(parsed.args), parsed.flags)
        nodes = parsed.nodes
        if (
            parsed.launcher == "dynamo.sglang"
            and nodes
            and nodes.count
            and nodes.count > 1
            and "--nnodes" not in argv
        ):
            argv += [
                "--nnodes",
                str(nodes.count),
            ]  # what the Dynamo operator adds to each worker of a multinode service
            stand_ins["--nnodes"] = f"{nodes.count}, added by the Dynamo operator ({nodes.source})"
        version = parsed.flags.version if parsed.flags else None  # parse_args always sets it
        out.append(
            _relative(
                {
                    "line": _line(parsed.origin),
                    "version": version,
                    "argv": argv,
                    "env": env,
                    "read": list(parsed.args),
                    "stand_ins": stand_ins,
                }
            )
        )
    return out


def _relative(value: Any) -> Any:
    """Paths of the corpus written from its folder, so that the record is the same in every
    checkout."""
    if isinstance(value, str):
        return value.replace(str(CORPUS) + os.sep, "")
    if isinstance(value, list):
        return [_relative(item) for item in value]
    if isinstance(value, dict):
        return {key: _relative(item) for key, item in value.items()}
    return value


def with_stand_ins(args: list[str], flags: Any) -> tuple[list[str], dict[str, str]]:
    """The argv with each value the file leaves to run time (`--node-rank $(LWS_WORKER_INDEX)`,
    `--tp-size $1`) replaced by the flag's own default, so that SGLang's parser judges everything
    else the file writes; check names those values as not checked (a warning or a scheduler note),
    and so does the record ("stand_ins")."""
    out, stand_ins = list(args), {}
    for index, word in enumerate(args[:-1]):
        value = args[index + 1]
        if not word.startswith("-") or "=" in word or "$" not in value:
            continue
        resolution = flags.resolve(word)
        info = (
            (flags.get(resolution.option or resolution.flag) or {})
            if getattr(resolution, "ok", False)
            else {}
        )
        default = info.get("default")
        if (
            info.get("takes_value")
            and default is not None
            and not isinstance(default, (list, dict))
        ):
            out[index + 1] = str(default)
            stand_ins[word] = f"{value} -> {default} (its default)"
    return out, stand_ins


def _flashinfer(version: str) -> str | None:
    with open(RELEASES, encoding="utf-8") as handle:
        for entry in json.load(handle)["releases"]:
            if entry["version"] == version:
                return entry.get("flashinfer")
    return None


def run(
    python: str, src_root: Path, version: str, system: str, launches: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The release's outcomes for the launches, in order, run as the grid's are
    (regenerate.run_system)."""
    from sglang_oracle.grid import Launch
    from sglang_oracle.regenerate import run_system

    batch = [
        Launch(
            id=index,
            system=system,
            arch=architecture(launch["argv"]),
            tp=0,
            options=("corpus",),
            argv=launch["argv"],
            env=launch["env"],
        )
        for index, launch in enumerate(launches)
    ]
    by_id = {
        outcome["id"]: outcome
        for outcome in run_system(python, src_root / version, system, _flashinfer(version), batch)
    }
    return [by_id[index] for index in range(len(launches))]


def _outcome(raw: dict[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = {"kind": raw["kind"]}
    for key in ("message", "type", "at"):
        if raw.get(key):
            kept[key] = str(raw[key])[:300]
    final = raw.get("final") or {}
    kept["final"] = {name: final[name] for name in SIZES if name in final}
    if raw.get("engine_check"):
        check = raw["engine_check"]
        kept["engine_check"] = {
            key: str(check[key])[:300]
            for key in ("kind", "type", "message", "at")
            if check.get(key)
        }
    return kept


def build(python: str, src_root: Path) -> dict[str, Any]:
    files: dict[str, list[dict[str, Any]]] = {}
    batches: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]] = {}
    for relative, entry in sorted(expected().items()):
        system = entry.get("system", DEFAULT_SYSTEM)
        files[relative] = corpus_launches(relative, system)
        for launch in files[relative]:
            launch["arch"] = architecture(launch["argv"])
            batches.setdefault((launch["version"], system), []).append((relative, launch))
    for (version, system), batch in sorted(batches.items()):
        for (_, launch), raw in zip(
            batch, run(python, src_root, version, system, [item for _, item in batch]), strict=False
        ):
            launch["sglang"] = _outcome(raw)
    return {
        "_comment": "Generated by scripts/sglang_oracle/corpus.py from the release wheels; do "
        "not edit by hand.",
        "files": files,
    }


CITATION = re.compile(r"^(?:oracle )?sglang==(\S+) (sglang/\S+\.py):(\d+) ")


def verify_citations(src_root: Path) -> int:
    """Each `sglang==V path:LINE` of expected.yaml's `why` against the release's own file: the line
    exists; it is printed, so that a reader sees what each verdict rests on."""
    bad = 0
    for relative, entry in sorted(expected().items()):
        for text in entry.get("why") or []:
            match = CITATION.match(text)
            path = src_root / match.group(1) / match.group(2) if match else None
            if match is None or path is None or not path.is_file():
                print(f"{relative}: cannot read {text[:80]!r}")
                bad += 1
                continue
            lines = path.read_text(encoding="utf-8").splitlines()
            number = int(match.group(3))
            if not 1 <= number <= len(lines):
                print(f"{relative}: {match.group(2)} has {len(lines)} lines, not {number}")
                bad += 1
                continue
            print(
                f"{relative}: sglang {match.group(1)} {match.group(2)}:{number}: "
                f"{lines[number - 1].strip()[:90]}"
            )
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--src-root", required=True, type=Path, help="one unpacked wheel per release folder"
    )
    parser.add_argument(
        "--python", default=sys.executable, help="interpreter with msgspec installed"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--verify-citations", action="store_true", help="print each cited line of expected.yaml"
    )
    args = parser.parse_args(argv)
    if args.verify_citations:
        return verify_citations(args.src_root)
    os.environ.setdefault("TOPOCTL_NO_CACHE", "1")
    doc = build(args.python, args.src_root)
    args.out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    kinds: dict[str, int] = {}
    for launches in doc["files"].values():
        for launch in launches:
            kinds[launch["sglang"]["kind"]] = kinds.get(launch["sglang"]["kind"], 0) + 1
    print(f"{sum(kinds.values())} launches of {len(doc['files'])} files: {kinds}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
