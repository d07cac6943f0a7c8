#!/usr/bin/env python3
"""Check autoconf/memory.py's default mem_fraction_static against SGLang's own code, release by
release.

    python scripts/check_memory_rules.py SRC_ROOT

SRC_ROOT holds one unpacked wheel per release (SRC_ROOT/0.5.12/sglang/...). For every release up to
0.5.13.post1 (where the rule is a pair of plain ServerArgs methods), `_handle_gpu_memory_settings`,
`_handle_piecewise_cuda_graph` and the helpers they call are taken from the release's server_args.py
(read with `ast`, run on a stand-in ServerArgs with the dataclass defaults; SGLang itself is not
imported, it needs torch and CUDA) and their mem_fraction_static is compared with topoctl's
data-driven evaluator over GPU sizes, TP, MLA or not, EAGLE or not, graph max batch, text-only or
multimodal (a 27 x 1152 ViT). Later releases build their config through objects this stand-in does
not reproduce and are left to the per-variant tests. Exit 0 when every case agrees, 1 on a
difference (printed), 2 on a bad folder.
"""

import ast
import copy
import functools
import logging
import os
import sys
import types

from packaging.version import Version

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # grep_releases, beside this script
from topoctl.autoconf import memory  # noqa: E402

SRC = ""
for _name in ("sglang", "sglang.srt", "sglang.srt.platforms"):
    sys.modules.setdefault(_name, types.ModuleType(_name))
sys.modules["sglang.srt.platforms"].current_platform = types.SimpleNamespace(  # type: ignore[attr-defined]
    is_out_of_tree=lambda: False
)

NAMES = (
    "_handle_gpu_memory_settings",
    "_generate_cuda_graph_batch_sizes",
    "_generate_piecewise_cuda_graph_tokens",
    "adjust_mem_fraction_for_vlm",
    "_handle_piecewise_cuda_graph",
    "_generate_cpu_graph_batch_sizes",
)
# what the stand-in ServerArgs sets beyond the dataclass defaults: one node, CUDA, nothing else on
STAND_IN = {
    "pp_size": 1,
    "dp_size": 1,
    "chunked_prefill_size": None,
    "cuda_graph_bs": None,
    "mem_fraction_static": None,
    "enable_dp_attention": False,
    "device": "cuda",
    "model_path": "m",
    "max_total_tokens": None,
    "context_length": None,
    "language_only": False,
    "enable_symm_mem": False,
    "moe_a2a_backend": "none",
    "lora_paths": None,
    "disaggregation_mode": "null",
    "dllm_algorithm": None,
    "cpu_offload_gb": 0,
    "enable_hierarchical_cache": False,
    "enable_eplb": False,
    "expert_distribution_recorder_mode": None,
    "attn_cp_size": 1,
}


@functools.lru_cache(maxsize=None)
def load(release: str) -> tuple[dict, dict]:
    """(the rule's functions, the ServerArgs dataclass defaults) of one release's server_args.py."""
    with open(os.path.join(SRC, release, "sglang/srt/server_args.py"), encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ServerArgs")
    env = types.SimpleNamespace(
        SGLANG_SYMM_MEM_PREALLOC_GB_SIZE=types.SimpleNamespace(is_set=lambda: True)
    )
    scope = {
        "is_npu": lambda: False,
        "is_hip": lambda: False,
        "is_cpu": lambda: False,
        "is_mps": lambda: False,
        "is_xpu": lambda: False,
        "current_platform": types.SimpleNamespace(is_out_of_tree=lambda: False),
        "logger": logging.getLogger("check"),
        "check_gguf_file": lambda path: False,
        "envs": env,
    }
    funcs = {}
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name in NAMES:
            exec(compile(ast.Module(body=[node], type_ignores=[]), release, "exec"), scope)  # noqa: S102
            funcs[node.name] = scope[node.name]
    defaults = {}
    for node in cls.body:
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.value is not None
        ):
            try:
                defaults[node.target.id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    return funcs, defaults


def _bind(target: object, func):
    return lambda *args, **kwargs: func(target, *args, **kwargs)


def run(
    release: str, gpu_mib: int, tp: int, mla: bool, spec, graph_bs, multimodal: bool, vision
) -> float:
    """SGLang's own mem_fraction_static for one launch, from the release's code on the stand-in."""
    funcs, defaults = load(release)
    args = types.SimpleNamespace(**copy.deepcopy(defaults))
    for key, value in STAND_IN.items():
        setattr(args, key, value)
    args.tp_size, args.cuda_graph_max_bs, args.speculative_algorithm = tp, graph_bs, spec
    config = types.SimpleNamespace(
        is_multimodal=multimodal,
        is_piecewise_cuda_graph_disabled_model=False,
        hf_config=types.SimpleNamespace(
            **({"vision_config": types.SimpleNamespace(**vision)} if vision else {})
        ),
    )
    args.get_model_config = lambda: config
    args.use_mla_backend = lambda: mla
    for name, func in funcs.items():
        if name != "_handle_gpu_memory_settings":
            setattr(args, name, _bind(args, func))
    if "_handle_piecewise_cuda_graph" in funcs:
        args._handle_piecewise_cuda_graph()
    funcs["_handle_gpu_memory_settings"](args, gpu_mib)
    return float(args.mem_fraction_static)


LAUNCH_CASES = [
    (gpu_mib, tp, mla, spec, graph_bs, mm, vision)
    for gpu_mib in (24564, 46068, 81559, 97887, 143770, 183359)
    for tp in (1, 2, 4, 8)
    for mla in (False, True)
    for spec in (None, "EAGLE3")
    for graph_bs in (None, 128)
    for mm, vision in ((False, None), (True, {"num_hidden_layers": 27, "hidden_size": 1152}))
]


def case_model(mla: bool, mm: bool, vision: dict | None) -> dict:
    """The model profile a case stands for (what topoctl's evaluator reads of it)."""
    return {
        "attention": "mla" if mla else "gqa",
        "vision_config": vision,
        "architectures": ["KimiK25ForConditionalGeneration" if mm else "X"],
    }


def topoctl_fraction(case: dict) -> float:
    """topoctl's data-driven mem_fraction_static for a recorded case."""
    spec = case["speculative_algorithm"]
    model = case_model(case["mla"], case["multimodal"], case["vision"])
    launch = {"speculative_algorithm": spec} if spec else {}
    return memory.sglang_reserve(
        case["gpu_mib"] * 2**20,
        case["tp"],
        case["release"],
        model,
        launch,
        case["cuda_graph_max_bs"],
    ).fraction


def record(src_root: str) -> list[dict]:
    """SGLang's own mem_fraction_static for every release up to 0.5.13.post1 under SRC_ROOT and
    every launch case (a multimodal case only where the release treats the model as multimodal)."""
    global SRC
    SRC = src_root
    from grep_releases import releases as in_order

    releases = [
        name
        for name in in_order(SRC)
        if Version(name) < Version("0.5.14")
        and os.path.isfile(os.path.join(SRC, name, "sglang/srt/server_args.py"))
    ]
    cases = []
    for v in releases:
        for gpu_mib, tp, mla, spec, graph_bs, mm, vision in LAUNCH_CASES:
            if mm and not memory.is_multimodal(case_model(mla, mm, vision), v):
                continue  # not multimodal in this release: the stand-in would force it
            cases.append(
                {
                    "release": v,
                    "gpu_mib": gpu_mib,
                    "tp": tp,
                    "mla": mla,
                    "speculative_algorithm": spec,
                    "cuda_graph_max_bs": graph_bs,
                    "multimodal": mm,
                    "vision": vision,
                    "fraction": run(v, gpu_mib, tp, mla, spec, graph_bs, mm, vision),
                }
            )
    return cases


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not os.path.isdir(argv[0]):
        print(
            "usage: check_memory_rules.py SRC_ROOT (one unpacked SGLang wheel per release folder)",
            file=sys.stderr,
        )
        return 2
    cases = record(argv[0])
    bad = 0
    for case in cases:
        ours = topoctl_fraction(case)
        if abs(case["fraction"] - ours) > 1e-12:
            bad += 1
            print(
                f"{case['release']}: {case['gpu_mib']} MiB TP {case['tp']} mla={case['mla']} "
                f"spec={case['speculative_algorithm']} graphs={case['cuda_graph_max_bs']} "
                f"multimodal={case['multimodal']}: SGLang {case['fraction']}, topoctl {ours}"
            )
    print(
        f"{len({case['release'] for case in cases})} releases, {len(cases)} cases, {bad} "
        "differences"
    )
    return 1 if bad or not cases else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
