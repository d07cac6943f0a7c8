"""The launches the oracle judges: every reference system, TP sizes that fit it, and the flags and
environment variables topoctl's rules speak of, alone and in pairs.

Deterministic: the same release gets the same launches on every run. Singles cover every option at
every TP size of every system; each release adds a different window of option pairs at the system's
largest TP size, so that the releases together cover every pair; the MoE architecture is crossed
with the options whose outcome depends on it (FlashInfer fusion's auto-on, expert parallelism, DP
attention). After the grid come the checkpoint launches (CHECKPOINT_LAUNCHES): a quantized
checkpoint's architecture with the MoE runner and quantization flags SGLang judges against it, at
the largest TP size of the systems that decide it; they are numbered after the grid, so adding one
leaves every grid launch's id as it was.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

SYSTEMS = (
    "h200-1x-vm",
    "h200-2x-nvswitch-vm",
    "h200-4x-nvswitch-vm",
    "h100-8x-nvswitch",
    "b200-8x-nvswitch",
    "l40s-4x-pcie-2numa",
    "rtx-4090-2x-pcie-no-p2p",
    "rtx-pro-6000-8x-pcie",
)
GPU_COUNTS = {
    "h200-1x-vm": 1,
    "h200-2x-nvswitch-vm": 2,
    "h200-4x-nvswitch-vm": 4,
    "h100-8x-nvswitch": 8,
    "b200-8x-nvswitch": 8,
    "l40s-4x-pcie-2numa": 4,
    "rtx-4090-2x-pcie-no-p2p": 2,
    "rtx-pro-6000-8x-pcie": 8,
}
DENSE, MOE = "LlamaForCausalLM", "Qwen3MoeForCausalLM"
DRAFT = ["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "draft"]


@dataclass(frozen=True)
class Option:
    name: str
    argv: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    moe: bool = False  # crossed with the MoE architecture too
    expert: bool = False  # takes --ep-size TP


OPTIONS = (
    Option("base", moe=True),
    Option("disable-custom-ar", ("--disable-custom-all-reduce",)),
    Option("torch-symm-mem", ("--enable-torch-symm-mem",)),
    Option("nccl-symm-mem", ("--enable-symm-mem",)),
    Option("fusion-flag", ("--enable-flashinfer-allreduce-fusion",), moe=True),
    Option("fusion-backend-auto", ("--flashinfer-allreduce-fusion-backend", "auto"), moe=True),
    Option("fusion-backend-cutedsl", ("--flashinfer-allreduce-fusion-backend", "cutedsl")),
    Option("fusion-enforce-off", ("--enforce-disable-flashinfer-allreduce-fusion",), moe=True),
    Option("deterministic", ("--enable-deterministic-inference",), moe=True),
    Option("dp-attention", ("--enable-dp-attention",), moe=True),
    Option("a2a-flashinfer", ("--moe-a2a-backend", "flashinfer"), moe=True, expert=True),
    Option(
        "a2a-flashinfer-cutlass",
        ("--moe-a2a-backend", "flashinfer", "--moe-runner-backend", "flashinfer_cutlass"),
        moe=True,
        expert=True,
    ),
    Option("a2a-deepep", ("--moe-a2a-backend", "deepep"), expert=True),
    Option("eagle3-default", tuple(DRAFT)),
    Option("eagle3-partial", (*DRAFT, "--speculative-num-steps", "3")),
    Option(
        "eagle3-all",
        (
            *DRAFT,
            "--speculative-num-steps",
            "3",
            "--speculative-eagle-topk",
            "1",
            "--speculative-num-draft-tokens",
            "4",
        ),
    ),
    Option(
        "eagle3-partial-adaptive",
        (*DRAFT, "--speculative-num-steps", "3", "--speculative-adaptive"),
    ),
    Option("eagle3-topk-only", (*DRAFT, "--speculative-eagle-topk", "1")),
    Option(
        "eagle3-topk-adaptive", (*DRAFT, "--speculative-eagle-topk", "1", "--speculative-adaptive")
    ),
    Option("p2p-check", ("--enable-p2p-check",)),
    Option("nccl-nvls", ("--enable-nccl-nvls",)),
    Option("no-cuda-graph", ("--disable-cuda-graph",)),
    Option("cuda-graph-bs-128", ("--cuda-graph-max-bs", "128")),
    Option("skip-p2p-check", env=(("SGLANG_SKIP_P2P_CHECK", "1"),)),
    Option("pcie-ipc", env=(("SGLANG_ENABLE_PCIE_IPC_ALLREDUCE", "1"),)),
    Option("custom-ar-v1", env=(("SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2", "0"),)),
    Option("symm-no-multicast", env=(("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),)),
    Option("nccl-ll128", env=(("NCCL_PROTO", "LL128"),)),
    Option("nccl-tree", env=(("NCCL_ALGO", "Tree"),)),
    Option("nccl-p2p-disable", env=(("NCCL_P2P_DISABLE", "1"),)),
    Option("nccl-nchannels", env=(("NCCL_NCHANNELS", "4"),)),
    Option("nccl-min-channels", env=(("NCCL_MIN_NCHANNELS", "8"),)),
)
PAIRS_PER_RELEASE = 24

# Checkpoint launches: (name, architecture with the checkpoint's quant_method after "+", options),
# on CHECKPOINT_SYSTEMS (SM90, SM100, SM120). The FP8 DeepSeek checkpoint takes --quantization fp8
# from its config on SM100 before the MoE runner's checks. Its stand-in is no MLA model
# (model_config.py): on SM12x 0.5.6.post1- 0.5.6.post2 pick the TRT-LLM MHA backend for it and
# refuse it, which the real MLA model never meets, so it is not run there (STAND_IN_OFF).
DEEPSEEK_FP8 = "DeepseekV3ForCausalLM+fp8"
_A2A_DPA = ("--moe-a2a-backend", "flashinfer", "--enable-dp-attention")
CHECKPOINT_SYSTEMS = ("h200-4x-nvswitch-vm", "b200-8x-nvswitch", "rtx-pro-6000-8x-pcie")
STAND_IN_OFF = {DEEPSEEK_FP8: ("rtx-pro-6000-8x-pcie",)}
CHECKPOINT_LAUNCHES = (
    ("base", DEEPSEEK_FP8, Option("x")),
    (
        "runner-flashinfer-cutlass",
        DEEPSEEK_FP8,
        Option("x", ("--moe-runner-backend", "flashinfer_cutlass")),
    ),
    (
        "runner-flashinfer-cutlass-ep",
        DEEPSEEK_FP8,
        Option("x", ("--moe-runner-backend", "flashinfer_cutlass"), expert=True),
    ),
    (
        "a2a-flashinfer-cutlass",
        DEEPSEEK_FP8,
        Option(
            "x",
            ("--moe-a2a-backend", "flashinfer", "--moe-runner-backend", "flashinfer_cutlass"),
            expert=True,
        ),
    ),
    ("a2a-dpa-auto", DEEPSEEK_FP8, Option("dp-attention", _A2A_DPA, expert=True)),
    *(
        (
            f"a2a-dpa-{runner}",
            DEEPSEEK_FP8,
            Option("dp-attention", (*_A2A_DPA, "--moe-runner-backend", runner), expert=True),
        )
        for runner in (
            "flashinfer_cutlass",
            "flashinfer_trtllm",
            "flashinfer_trtllm_routed",
            "flashinfer_cutedsl",
            "deep_gemm",
        )
    ),
    (
        "runner-flashinfer-trtllm",
        DEEPSEEK_FP8,
        Option("x", ("--moe-runner-backend", "flashinfer_trtllm")),
    ),
    (
        "quant-fp8-runner-flashinfer-cutlass",
        MOE,
        Option("x", ("--quantization", "fp8", "--moe-runner-backend", "flashinfer_cutlass")),
    ),
    *(
        (
            f"quant-fp8-a2a-dpa-{runner}",
            MOE,
            Option(
                "dp-attention",
                ("--quantization", "fp8", *_A2A_DPA, "--moe-runner-backend", runner),
                expert=True,
            ),
        )
        for runner in (
            "auto",
            "flashinfer_cutlass",
            "flashinfer_trtllm",
            "flashinfer_trtllm_routed",
        )
    ),
    ("quant-nvfp4-online", DENSE, Option("x", ("--quantization", "nvfp4_online"))),
    ("quant-nvfp4-online", MOE, Option("x", ("--quantization", "nvfp4_online"))),
    # The MoE runners' own quantization assertions: flashinfer_trtllm on an unquantized (BF16)
    # checkpoint, and flashinfer_cutedsl with and without the NVFP4 quantizations it takes.
    ("runner-flashinfer-trtllm", MOE, Option("x", ("--moe-runner-backend", "flashinfer_trtllm"))),
    (
        "quant-fp8-runner-flashinfer-trtllm",
        MOE,
        Option("x", ("--quantization", "fp8", "--moe-runner-backend", "flashinfer_trtllm")),
    ),
    ("runner-flashinfer-cutedsl", MOE, Option("x", ("--moe-runner-backend", "flashinfer_cutedsl"))),
    (
        "runner-flashinfer-cutedsl",
        DEEPSEEK_FP8,
        Option("x", ("--moe-runner-backend", "flashinfer_cutedsl")),
    ),
    *(
        (
            f"quant-{name}-runner-flashinfer-cutedsl",
            MOE,
            Option(
                "x", ("--quantization", quantization, "--moe-runner-backend", "flashinfer_cutedsl")
            ),
        )
        for name, quantization in (
            ("fp8", "fp8"),
            ("modelopt-fp4", "modelopt_fp4"),
            ("nvfp4-online", "nvfp4_online"),
        )
    ),
    # flashinfer_trtllm with the weight-only int4 quantizations its list does not take, and two of
    # them without the runner (SGLang's default runner takes them).
    *(
        (
            f"quant-{quantization.replace('_', '-')}-runner-flashinfer-trtllm",
            MOE,
            Option(
                "x", ("--quantization", quantization, "--moe-runner-backend", "flashinfer_trtllm")
            ),
        )
        for quantization in ("awq", "awq_marlin", "gptq", "gptq_marlin", "moe_wna16")
    ),
    *(
        (f"quant-{quantization}", MOE, Option("x", ("--quantization", quantization)))
        for quantization in ("awq", "gptq")
    ),
)


@dataclass
class Launch:
    id: int
    system: str
    arch: str
    tp: int
    options: tuple[str, ...]
    argv: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


def tp_sizes(system: str) -> list[int]:
    return [tp for tp in (1, 2, 4, 8) if tp <= GPU_COUNTS[system]]


def _build(options: tuple[Option, ...], system: str, arch: str, tp: int) -> Launch:
    argv = ["--tp-size", str(tp)]
    env: dict[str, str] = {}
    for option in options:
        argv.extend(option.argv)
        env.update(dict(option.env))
        if option.name == "dp-attention":
            argv.extend(["--dp-size", str(tp)])
    if any(option.expert for option in options):
        argv.extend(["--ep-size", str(tp)])
    names = tuple(option.name for option in options if option.name != "base")
    return Launch(0, system, arch, tp, names or ("base",), argv, env)


def _pairs(release_index: int) -> list[tuple[Option, Option]]:
    every = list(itertools.combinations(OPTIONS[1:], 2))
    start = (release_index * PAIRS_PER_RELEASE) % len(every)
    window = every[start : start + PAIRS_PER_RELEASE]
    return window + every[: PAIRS_PER_RELEASE - len(window)]


def launches(release_index: int) -> list[Launch]:
    """Every launch of the grid for the release at this index (of releases.json's list)."""
    out: list[Launch] = []
    for system in SYSTEMS:
        for tp in tp_sizes(system):
            for option in OPTIONS:
                out.append(_build((option,), system, DENSE, tp))
                if option.moe:
                    out.append(_build((option,), system, MOE, tp))
        for first, second in _pairs(release_index):
            out.append(_build((first, second), system, DENSE, max(tp_sizes(system))))
    out.extend(checkpoint_launches())
    for number, launch in enumerate(out):
        launch.id = number
    return out


def checkpoint_launches() -> list[Launch]:
    """The checkpoint launches (numbered by launches(), after the grid), on every system that
    decides them."""
    out = []
    for system in CHECKPOINT_SYSTEMS:
        for name, arch, option in CHECKPOINT_LAUNCHES:
            if system in STAND_IN_OFF.get(arch, ()):
                continue
            launch = _build((option,), system, arch, max(tp_sizes(system)))
            launch.options = (name,)
            out.append(launch)
    return out
