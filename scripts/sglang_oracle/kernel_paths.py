"""The decode kernel path each release's own ServerArgs picks, run by the oracle, for autoconf/data/sglang-kernels.yaml.

    python scripts/sglang_oracle/kernel_paths.py --src-root /work/wheels [--python PY] [-o tests/data/oracle/kernel-paths.json]

For each release whose wheel is unpacked under SRC_ROOT/s<version>/ (or SRC_ROOT/<version>/) and
each architecture and quantization the kernel table speaks of, a launch that leaves every backend at
its default (`--tp-size N` only) runs through the release's real parser and post-init
(run_release.py) on the B200 and H100 reference systems; the outcome's moe_runner_backend,
attention_backend, enable_flashinfer_allreduce_fusion and flashinfer_allreduce_fusion_backend are
what SGLang chose, and allreduce_fusion whether its communicator fuses (fused()). The outcomes are
written as JSON and tests/autoconf/test_decode_terms.py holds every entry of sglang-kernels.yaml to
them, release by release. The stand-in config is a plain decoder (model_config.py): an MLA model's
Hopper backend is not answered by it (its attention_arch is MHA), so only the SM100 entries of MLA
models are compared.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))

from sglang_oracle.hardware import load_system  # noqa: E402
from topoctl.core.pep440 import Version  # noqa: E402

# 0.5.1.post3, the oldest release a runner source cites, then every release from 0.5.6 in
# releases.json (a new release is run without an edit here: docs/sglang-versions.md, "Adding a
# release")
_ROWS = json.loads(
    (REPO / "rules" / "sglang" / "generated" / "releases.json").read_text(encoding="utf-8")
)["releases"]
RELEASES = (
    "0.5.1.post3",
    *(r["version"] for r in _ROWS if Version(r["version"]) >= Version("0.5.6")),
)
# the kernel table's architectures and those of the built-in models (autoconf/data/models.yaml),
# with the quant_method of the built-in checkpoint after a `+`
ARCHITECTURES = (
    "GptOssForCausalLM+mxfp4",
    "GptOssForCausalLM",
    "DeepseekV3ForCausalLM+fp8",
    "Qwen3MoeForCausalLM",
    "Glm4MoeForCausalLM",
    "KimiK25ForConditionalGeneration+compressed-tensors",
    "MixtralForCausalLM",
    "LlamaForCausalLM",
    "Qwen3ForCausalLM",
    "Qwen2ForCausalLM",
)
SYSTEMS = {"b200-8x-nvswitch": ("sm100", (4, 8)), "h100-8x-nvswitch": ("sm90", (8,))}
FIELDS = (
    "moe_runner_backend",
    "attention_backend",
    "enable_flashinfer_allreduce_fusion",
    "flashinfer_allreduce_fusion_backend",
)


def fused(final: dict[str, Any]) -> bool:
    """Whether decode runs the fused allreduce: up to 0.5.13 the communicator reads
    enable_flashinfer_allreduce_fusion (0.5.6 communicator.py:767-780); from 0.5.14, the first
    release with flashinfer_allreduce_fusion_backend, it reads that field (`is not None`, 0.5.14
    communicator.py:172, 0.5.23 layers/layer_boundary/residual/add_norm.py:149), and post-init sets
    the old flag back to False after turning it into the backend "auto" (0.5.14
    server_args.py:2732-2741)."""
    if "flashinfer_allreduce_fusion_backend" in final:
        return final["flashinfer_allreduce_fusion_backend"] is not None
    return bool(final.get("enable_flashinfer_allreduce_fusion"))


def _source(root: Path, version: str) -> Path | None:
    for candidate in (root / f"s{version}", root / version):
        if (candidate / "sglang" / "srt" / "server_args.py").is_file():
            return candidate
    return None


def _flashinfer(version: str) -> str | None:
    with open(
        REPO / "rules" / "sglang" / "generated" / "releases.json", encoding="utf-8"
    ) as handle:
        releases = json.load(handle)["releases"]
    return next((r.get("flashinfer") for r in releases if r["version"] == version), None)


def run(python: str, src: Path, version: str) -> list[dict[str, Any]]:
    rows = []
    for system, (sm, sizes) in SYSTEMS.items():
        hw = load_system(REPO / "fixtures", system, _flashinfer(version))
        launches = [
            {"id": f"{arch} tp{tp}", "argv": ["--tp-size", str(tp)], "env": {}, "arch": arch}
            for arch in ARCHITECTURES
            for tp in sizes
        ]
        done = subprocess.run(
            [python, str(HERE / "run_release.py"), str(src), json.dumps(hw.to_json())],
            input="\n".join(json.dumps(launch) for launch in launches),
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode != 0 or len(lines) != len(launches):
            tail = (done.stderr.strip().splitlines() or [""])[-1]
            raise RuntimeError(
                f"{version} on {system}: {len(lines)} of {len(launches)} outcomes ({tail[:200]})"
            )
        for line in lines:
            outcome = json.loads(line)
            arch, _, quant = outcome["id"].split(" ")[0].partition("+")
            final = outcome.get("final") or {}
            rows.append(
                {
                    "release": version,
                    "system": system,
                    "sm": sm,
                    "architecture": arch,
                    "quantization": quant or None,
                    "tp": int(outcome["id"].split("tp")[-1]),
                    "kind": outcome["kind"],
                    "allreduce_fusion": fused(final),
                    **{name: final.get(name) for name in FIELDS},
                }
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src-root", type=Path, required=True)
    parser.add_argument(
        "--python", default=sys.executable, help="a Python with msgspec and packaging"
    )
    parser.add_argument(
        "--releases",
        nargs="*",
        default=list(RELEASES),
        help="the releases to run (default: %(default)s)",
    )
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=REPO / "tests" / "data" / "oracle" / "kernel-paths.json",
    )
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    for version in args.releases:
        src = _source(args.src_root, version)
        if src is None:
            print(f"no unpacked wheel of {version} under {args.src_root}", file=sys.stderr)
            return 1
        try:
            rows += run(args.python, src, version)
        except (
            RuntimeError
        ) as error:  # an incomplete unpack (no sglang/utils.py ...) or a release the stubs miss
            print(error, file=sys.stderr)
            return 1
    doc = {
        "generated_by": "scripts/sglang_oracle/kernel_paths.py (the oracle: each release's "
        "ServerArgs post-init)",
        "launch": "--tp-size N only (every backend at its default, one node, no DP attention)",
        "outcomes": rows,
    }
    args.output.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.output} ({len(rows)} outcomes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
