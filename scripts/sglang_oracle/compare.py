"""topoctl check's verdict on every committed oracle launch, against what the release's own code did.

    python scripts/sglang_oracle_compare.py [--data tests/data/oracle] [--only 0.5.12 ...]

Check is called through its CLI (`topoctl check FILE --system S --sglang-version V --format json`),
one shell script of launches per release, system and model, so that the comparison holds whatever
check's internals become. A launch SGLang refuses (argparse, a raise or assert of post-init, a crash
of its own code, a communicator that crashes in its constructor) must be blocked; a launch SGLang
starts must not be blocked, unless the block comes from a behaviour the oracle cannot reach
(BEYOND_REACH: a runtime hang or OOM that a measurement showed, a kernel's failure on the GPU),
which is listed with its reason.

Exit 0 when they agree on every launch, 1 with the disagreements listed.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import gzip
import io
import json
import shlex
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent.parent
DEFAULT_DATA = REPO / "tests" / "data" / "oracle"

# The built-in model profile check is given for each architecture the oracle served.
MODELS = {
    "LlamaForCausalLM": "llama-3.1-8b",
    "Qwen3MoeForCausalLM": "qwen3-30b-a3b",
    "DeepseekV3ForCausalLM+fp8": "deepseek-v3",
}

# Blocks whose failure happens after ServerArgs and outside the gates the oracle runs: each is a
# rule with its own source lines or measurement, and must-fire / must-not-fire cases
# (docs/sglang-oracle.md lists them).
BEYOND_REACH = {
    "nccl-tree-cuda-graph-sm120-pcie": "a measured hang of NCCL's Tree algorithm in CUDA graph "
    "capture on SM120 over PCIe",
    "nccl-fewer-channels-oom-sm120-pcie": "a measured out-of-memory at CUDA graph capture with "
    "fewer NCCL channels",
    "p2p-failed-health-check": "a P2P health check that failed on the machine (a measurement, "
    "not SGLang's code)",
    "custom-allreduce-without-p2p": "the driver reports P2P but the measured P2P test fails: "
    "custom allreduce starts and corrupts or hangs at run time",
    "ep-flashinfer-a2a-sm120": "FlashInfer's all-to-all kernels fail on SM120 at run time",
    "nccl-nvls-needs-nvswitch-sm90": "NCCL's NVLink SHARP set-up fails inside libnccl without "
    "NVSwitch",
    "topoctl-kernel-not-built": "the release's wheels hold no kernel of the named backend for the "
    "GPU's SM (rules/sglang/generated/kernel-matrix.json): the first forward pass fails, and the "
    "oracle runs no kernel",
    "flashinfer-allreduce-fusion-sm12x": "the fusion workspace set-up refuses GPUs outside "
    "SM90/SM10x from 0.5.14 and FlashInfer's fusion kernels fail on SM12x inside it",
    "flashinfer-allreduce-fusion-auto-on-sglang-0.5.5-sm12x": "FlashInfer's fusion kernels fail "
    "on SM12x",
    "topoctl-model-does-not-fit": "the model's weights and KV cache against GPU memory "
    "(topoctl's memory model)",
}
# What SGLang decides where the oracle does not run its code (docs/sglang-oracle.md, "Gates not
# run"): the reason, and the rules that state it instead, each with source lines and must-fire /
# must-not-fire cases (tests/integration/test_sglang_oracle.py holds them to that).
GATES_NOT_RUN = {
    "FlashInfer allreduce fusion workspace set-up": (
        "FlashInfer's IPC / MNNVL workspace needs a live process group and CUDA IPC (the final "
        "fusion setting is compared instead)",
        (
            "flashinfer-allreduce-fusion-sm12x",
            "flashinfer-allreduce-fusion-sm12x-ignored",
            "flashinfer-allreduce-fusion-sm12x-tp1-ignored",
            "flashinfer-allreduce-fusion-auto-on-sglang-0.5.5-sm12x",
        ),
    ),
    "PCIe IPC allreduce (0.5.21+)": (
        "chosen in the model runner from IPC handles of live buffers",
        ("pcie-ipc-allreduce-sm120", "pcie-ipc-allreduce-outside-scope"),
    ),
    "custom allreduce classes from 0.5.16": (
        "their constructors build JIT kernel modules through tvm_ffi, which the stubs cannot; "
        "ServerArgs alone is compared for those launches",
        (
            "custom-allreduce-without-p2p",
            "custom-allreduce-pcie-gate",
            "custom-allreduce-forced-pcie",
        ),
    ),
    "NCCL symmetric memory and NVLS": (
        "inside libnccl at communicator set-up",
        ("nccl-nvls-needs-nvswitch-sm90",),
    ),
    "the engine's _set_envs_and_config": (
        "the variables SGLang sets when the server process starts, after ServerArgs",
        ("sglang-nvls-flags-set-nccl-nvls-enable",),
    ),
}
# Findings of topoctl's own about the launch file rather than SGLang (never compared).
NOT_SGLANG = ("topoctl-gpu-group", "topoctl-tp-size-not-given", "topoctl-sglang-version-mismatch")


@dataclass
class Verdict:
    blocked: bool
    blocks: list[str]
    warns: list[str]
    wheres: dict[str, list[str]]  # block id -> the setting conditions it says the launch breaks


# A launch setting of topoctl's rules, as the release ended with it: ServerArgs' final fields and
# the gates.
def _fusion(final: dict[str, Any], gates: dict[str, Any]) -> bool:
    backend = final.get("flashinfer_allreduce_fusion_backend")
    return bool(final.get("enable_flashinfer_allreduce_fusion")) or backend not in (None, "<stub>")


def _custom_ar(final: dict[str, Any], gates: dict[str, Any]) -> bool:
    gate = gates.get("custom_allreduce")
    return not final.get("disable_custom_all_reduce") and (
        gate is None or gate.get("runs") is not False
    )


FINAL_SETTINGS = {
    "flashinfer_allreduce_fusion": _fusion,
    "custom_all_reduce": _custom_ar,
    "torch_symm_mem": lambda final, gates: bool(final.get("enable_torch_symm_mem")),
    "nccl_symm_mem": lambda final, gates: bool(final.get("enable_symm_mem")),
    "nccl_nvls": lambda final, gates: bool(final.get("enable_nccl_nvls")),
    "cuda_graph": lambda final, gates: not final.get("disable_cuda_graph"),
    "moe_a2a_backend": lambda final, gates: final.get("moe_a2a_backend"),
}


def final_setting(setting: str, launch: dict[str, Any]) -> tuple[bool, Any]:
    """(known, value) of a setting as SGLang ended with it for this launch."""
    outcome = launch["outcome"]
    if setting.startswith("env:"):
        env = {**launch["env"], **(outcome.get("env_set") or {})}
        return True, env.get(setting[4:])
    reader = FINAL_SETTINGS.get(setting)
    if reader is None or outcome["kind"] != "ok":
        return False, None
    return True, reader(outcome.get("final") or {}, outcome.get("gates") or {})


def still_broken(where: str, launch: dict[str, Any]) -> bool:
    """Whether the condition a block names ("torch_symm_mem must not be values [True]",
    "custom_all_reduce must be False") still holds once SGLang has finished with the launch; True
    when it cannot be told."""
    setting, _, rest = where.partition(" ")
    known, value = final_setting(setting, launch)
    if not known:
        return True
    try:
        if rest.startswith("must not be values "):
            return value in ast.literal_eval(rest[len("must not be values ") :].split(" (")[0])
        if rest.startswith("must be "):
            return value != ast.literal_eval(rest[len("must be ") :].split(" (")[0])
    except (ValueError, SyntaxError):
        return True
    return True


@dataclass
class Disagreement:
    version: str
    launch: dict[str, Any]
    kind: str  # missed-failure | false-block
    detail: str

    def line(self) -> str:
        env = " ".join(f"{k}={v}" for k, v in sorted(self.launch["env"].items()))
        argv = " ".join(self.launch["argv"])
        return (
            f"{self.version} {self.launch['system']} {self.launch['arch']}: "
            f"{env + ' ' if env else ''}{argv}: {self.kind}: {self.detail}"
        )


def load(data: Path, only: list[str] | None = None) -> list[dict[str, Any]]:
    docs = []
    for path in files(data):
        doc = load_file(path)
        if not only or doc["version"] in only:
            docs.append(doc)
    return docs


def files(data: Path) -> list[Path]:
    """The committed outcome files, one per release."""
    return sorted(data.glob("sglang-*.json.gz"))


def load_file(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        doc: dict[str, Any] = json.load(handle)
    return doc


def _script(launches: list[dict[str, Any]]) -> str:
    lines = []
    for launch in launches:
        env = [f"{name}={shlex.quote(value)}" for name, value in sorted(launch["env"].items())]
        words = [
            *env,
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "model",
            *launch["argv"],
        ]
        lines.append(" ".join(shlex.quote(w) if "=" not in w else w for w in words))
    return "\n".join(lines) + "\n"


def run_check(
    version: str, system: str, model: str, launches: list[dict[str, Any]], workdir: Path
) -> dict[int, Verdict]:
    """check's verdict on each launch (by launch id), from one run of its CLI over a script of them."""
    from topoctl.entry import main as topoctl_main

    script = workdir / f"{version}-{system}-{model}.sh"
    report = script.with_suffix(".json")
    script.write_text(_script(launches))
    argv = [
        "check",
        str(script),
        "--system",
        system,
        "--sglang-version",
        version,
        "--model",
        model,
        "--format",
        "json",
        "-o",
        str(report),
    ]
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        code = topoctl_main(argv)
    if code not in (0, 1):
        raise RuntimeError(f"topoctl {' '.join(argv)} exited {code}")
    verdicts: dict[int, Verdict] = {}
    for result in json.loads(report.read_text())["results"]:
        line = int(result["origin"].rsplit(":", 1)[1])
        found = [f for f in result["findings"] if f["id"] not in NOT_SGLANG]
        blocks = sorted({f["id"] for f in found if f["severity"] == "block"})
        warns = sorted({f["id"] for f in found if f["severity"] == "warn"})
        wheres: dict[str, list[str]] = {}
        for finding in found:
            if finding["severity"] == "block":
                wheres.setdefault(finding["id"], []).append(finding.get("where") or "")
        verdicts[launches[line - 1]["id"]] = Verdict(bool(blocks), blocks, warns, wheres)
    return verdicts


def sglang_failure(outcome: dict[str, Any]) -> str | None:
    """Why the release refuses or crashes on the launch, or None when it starts."""
    if outcome["kind"] in ("argparse-error", "startup-error"):
        return (
            f"{outcome['kind']}: {outcome.get('type', '')} {outcome.get('message', '')[:120]} "
            f"{outcome.get('at', '')}"
        )
    for gate, result in (outcome.get("gates") or {}).items():
        # A gate's own crash (KeyError 12, an assertion) is SGLang's; a TypeError or AttributeError
        # comes from the stubs under it (tvm_ffi, the kernels) and is no verdict.
        if result.get("error") and not str(result["error"]).startswith(
            ("TypeError", "AttributeError")
        ):
            return f"{gate} crashes: {result['error'][:120]}"
    return None


def judge(
    doc: dict[str, Any], outcome: dict[str, Any], launch: dict[str, Any], verdict: Verdict
) -> Disagreement | None:
    failure = sglang_failure(outcome)
    if failure is not None and not verdict.blocked:
        return Disagreement(doc["version"], launch, "missed-failure", failure)
    if failure is not None or outcome["kind"] != "ok":
        return None
    unexplained = [b for b in verdict.blocks if b not in BEYOND_REACH]
    if unexplained:
        return Disagreement(
            doc["version"], launch, "false-block", f"check blocks {unexplained}; SGLang starts"
        )
    # A block on a behaviour the oracle cannot reach still needs the setting it names to survive
    # post-init and the gates: what SGLang turns off by itself is a warning at most.
    undone = [
        f"{block} ({where})"
        for block in verdict.blocks
        for where in verdict.wheres.get(block, [])
        if where and not still_broken(where, launch)
    ]
    if undone:
        return Disagreement(
            doc["version"],
            launch,
            "false-block",
            f"check blocks {undone}; SGLang turns it off itself",
        )
    return None


# What post-init sets by itself that topoctl's rules state as `implies` (the settings check judges
# the launch with): the value the oracle ended with must be the implied one, and where post-init
# changes one of these from what the launch says, a rule must imply it.
IMPLIED_FROM_POST_INIT = (
    "env:NCCL_ALGO",
    "env:NCCL_MIN_NCHANNELS",
    "env:NCCL_MAX_NCHANNELS",
    "torch_symm_mem",
    "flashinfer_allreduce_fusion",
)


class ImpliedSettings:
    """topoctl's `implies` for a launch, through its public rules API (the same engine check runs)."""

    def __init__(self) -> None:
        from topoctl.cli.target_machine import resolve_target
        from topoctl.rules.engine import load_rules

        self.ruleset = load_rules()
        self.snapshots: dict[str, Any] = {}
        self.facts: dict[
            str, dict[str, Any]
        ] = {}  # per system: the snapshot's facts, read once (same results)
        self.resolve = resolve_target

    def of(
        self, version: str, launch: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        """(the launch's settings as topoctl reads them, {setting: value} topoctl says SGLang sets
        itself, the defaults rules say SGLang uses in their scope for settings the launch leaves
        out)."""
        from topoctl.autoconf.models import profile
        from topoctl.deploy.sglang_launch import ParsedLaunch, apply_env, parse_args
        from topoctl.rules.engine import evaluate
        from topoctl.rules.sglang.flags import load_flag_set

        system = launch["system"]
        if system not in self.snapshots:
            self.snapshots[system] = self.resolve(system=system)
            self.facts[system] = {}
        parsed = ParsedLaunch()
        for name, value in launch["env"].items():
            apply_env(parsed, name, value, "")
        parsed = parse_args(
            ["--model-path", "model", *launch["argv"]], load_flag_set(version), parsed
        )
        settings = {k: v for k, v in parsed.settings.items() if k != "model_path"}
        tp = settings.get("tp_size") or 1
        request = {
            "tp_size": tp,
            "ep_size": settings.get("ep_size") or 1,
            "dp_size": 1,
            "gpus": None,
            "sglang_version": version,
            "launch": settings,
            "model": profile(MODELS[launch["arch"]]),
            "speculative": str(settings.get("speculative_algorithm") or "").lower() or None,
        }
        from topoctl.rules.engine.evaluation import launch_defaults

        report = evaluate(self.ruleset, self.snapshots[system], request, self.facts[system])
        return (
            settings,
            {setting: value for setting, (value, _) in report.implied.items()},
            launch_defaults(report),
        )


def implied_disagreements(
    doc: dict[str, Any], launch: dict[str, Any], implied: ImpliedSettings
) -> list[str]:
    """Where topoctl's picture of the settings SGLang ends with differs from SGLang's own."""
    if launch["outcome"]["kind"] != "ok":
        return []
    settings, says, defaults = implied.of(doc["version"], launch)
    found = []
    for setting in IMPLIED_FROM_POST_INIT:
        known, final = final_setting(setting, launch)
        if not known:
            continue
        believed = says.get(
            setting, settings.get(setting, defaults.get(setting, _written_default(setting)))
        )
        if _norm(believed) != _norm(final):
            found.append(f"{setting}: topoctl {believed!r}, SGLang {final!r}")
    return found


def _written_default(setting: str) -> Any:
    from topoctl.rules.sglang import settings as launch_settings

    return (
        launch_settings.default_of(setting) if launch_settings.is_known_setting(setting) else None
    )


def _norm(value: Any) -> Any:
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value if value is not None else None


def compare(
    docs: list[dict[str, Any]], settings: bool = False
) -> tuple[list[Disagreement], dict[str, int]]:
    """Every disagreement of check's verdicts (and with `settings`, of the settings topoctl believes
    SGLang ends with) with the oracle's outcomes."""
    implied = ImpliedSettings() if settings else None
    disagreements: list[Disagreement] = []
    counts = {"launches": 0, "compared": 0, "oracle-error": 0}
    with tempfile.TemporaryDirectory() as tmp:
        for doc in docs:
            groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
            for launch in doc["launches"]:
                counts["launches"] += 1
                if launch["outcome"]["kind"] == "oracle-error":
                    counts["oracle-error"] += 1
                    continue
                groups.setdefault((launch["system"], launch["arch"]), []).append(launch)
            for (system, arch), launches in sorted(groups.items()):
                verdicts = run_check(doc["version"], system, MODELS[arch], launches, Path(tmp))
                for launch in launches:
                    counts["compared"] += 1
                    found = judge(doc, launch["outcome"], launch, verdicts[launch["id"]])
                    if found is not None:
                        disagreements.append(found)
                    if implied is not None:
                        disagreements.extend(
                            Disagreement(doc["version"], launch, "settings", text)
                            for text in implied_disagreements(doc, launch, implied)
                        )
    return disagreements, counts


def _compare_file(
    job: tuple[Path, bool, list[str] | None],
) -> tuple[list[Disagreement], dict[str, int]]:
    path, settings, only = job
    doc = load_file(path)
    return compare([doc] if not only or doc["version"] in only else [], settings)


def compare_files(
    paths: list[Path], settings: bool = False, jobs: int = 1, only: list[str] | None = None
) -> tuple[list[Disagreement], dict[str, int]]:
    """compare() over outcome files, `jobs` processes at a time (one release a task): each release
    is judged on its own, so the result is the same as one process's, in file order, in about 1/jobs
    of the time."""
    tasks = [(path, settings, only) for path in paths]
    if jobs <= 1 or len(tasks) < 2:
        results = [_compare_file(task) for task in tasks]
    else:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(_compare_file, tasks))
    disagreements: list[Disagreement] = []
    counts = {"launches": 0, "compared": 0, "oracle-error": 0}
    for found, counted in results:
        disagreements.extend(found)
        for key, value in counted.items():
            counts[key] += value
    return disagreements, counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--limit", type=int, default=200, help="disagreements printed")
    parser.add_argument(
        "--settings", action="store_true", help="compare the settings SGLang ends with too"
    )
    parser.add_argument(
        "--jobs", type=int, default=1, help="processes, one release each at a time (default 1)"
    )
    args = parser.parse_args(argv)
    disagreements, counts = compare_files(
        files(args.data), args.settings, max(1, args.jobs), args.only
    )
    for item in disagreements[: args.limit]:
        print(item.line())
    print(
        f"{counts['compared']} launches compared ({counts['oracle-error']} the oracle could not "
        f"run), {len(disagreements)} disagreements"
    )
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
