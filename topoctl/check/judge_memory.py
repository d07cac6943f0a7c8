"""The judge stage of check, memory: the same fit recommend runs (autoconf/memory.py `fit`), for the
model the launch serves (resolve.py launch_model), on the target's GPU, with the launch's own
settings.

The model: `topoctl check --model NAME` (a built-in profile); else the launch's `--model-path` when
it is a folder with a config.json (read as recommend reads one, autoconf/models.py
`from_model_dir`); else a built-in profile whose Hugging Face id the `--model-path` names
(`deepseek-ai/DeepSeek-V3`). None of these: no fit, and nothing said (most launches name a model id
topoctl has no profile of).

The launch's settings go in as SGLang takes them: `--context-length`, `--max-running-requests`,
`--cuda-graph-max-bs`, `--disable-cuda-graph` and the speculative algorithm reach `fit`'s reserve; a
`--mem-fraction-static` the launch gives replaces SGLang's default fraction in the same KV formula
(KV = GPU memory x fraction - weights - draft, autoconf/memory.py), since SGLang then skips its own
reserve. `--chunked-prefill-size` moves only the default reserve; with a given fraction it does not
matter, else the reserve uses SGLang's default for the GPU (not modelled). Weights too large for the
fraction block (SGLang fails to allocate its KV cache); a KV cache smaller than one request of the
launch's --context-length warns (without one, SGLang takes the model's length and caps a request to
what the KV cache holds: its scheduler's max_req_input_len).

Layer: judge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from topoctl.check.parse import written_value
from topoctl.check.resolve import launch_model
from topoctl.core.errors import one_line
from topoctl.core.vocab import Severity
from topoctl.snapshot.view import SnapshotLike, view_of

if TYPE_CHECKING:
    from topoctl.autoconf.evidence import Evidence
    from topoctl.check.outcome import Item
    from topoctl.deploy.sglang_launch import ParsedLaunch
    from topoctl.rules.sglang.flags import FlagSet


def _gpu_bytes(snapshot: SnapshotLike) -> int | None:
    sizes: list[int] = []
    for gpu in view_of(snapshot).indexed_gpus:
        size = gpu.get("memory_total_bytes")
        if isinstance(size, int) and size > 0:
            sizes.append(size)
    return min(sizes) if sizes else None


def _int_setting(parsed: ParsedLaunch, name: str) -> int | None:
    value = parsed.settings.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _measured_running(
    found: list[Evidence], model: dict[str, Any], launch: dict[str, Any], tp: int
) -> Evidence | None:
    """A measured throughput of this model at this TP size under settings the launch has (the rules'
    evidence on this target): a run is a fact, and it wins over the memory model, as in recommend
    (search.measured_to_run)."""
    from topoctl.autoconf.evidence import LEVELS

    for evidence in found:
        config = evidence.config or {}
        if evidence.kind != "throughput" or evidence.rank < LEVELS["measured"]:
            continue
        if (
            str(config.get("model") or "") != str(model.get("name") or "")
            or config.get("tp_size", tp) != tp
        ):
            continue
        if all(
            launch.get(key) == value
            for key, value in config.items()
            if key in launch and key != "tp_size"
        ):
            return evidence
    return None


def memory_items(
    parsed: ParsedLaunch,
    snapshot: SnapshotLike,
    flags: FlagSet,
    tp: int,
    named: dict[str, Any] | None,
    item: type[Item],
    measured: Callable[[], list[Evidence]] | None = None,
) -> list[Item]:
    """Check's findings from the memory fit (`item` builds one: outcome.py's Item; `measured()`
    gives the rules' evidence, asked only when the fit says the launch does not load)."""
    from topoctl.autoconf.memory import FitCase, fit

    model, source = launch_model(parsed, named)
    gpu_bytes = _gpu_bytes(snapshot)
    if model is None or gpu_bytes is None or tp < 1:
        return []
    # keyed by setting names (dp_attention, cuda_graph), as a recommend candidate is: the memory fit
    # reads them through spelling.switch
    launch = {k: v for k, v in parsed.settings.items() if k != "model_path"}
    context = _int_setting(
        parsed, "context_length"
    )  # the model's own length: SGLang caps a request to the pool
    spec = launch.get("speculative_algorithm")
    result = fit(
        FitCase(
            model,
            gpu_bytes,
            tp,
            flags.requested or flags.version,
            bool(spec),
            cuda_graph_max_bs=_int_setting(parsed, "cuda_graph_max_bs"),
            max_running_requests=_int_setting(parsed, "max_running_requests"),
            launch=launch,
        )
    )
    fraction, how = result.mem_fraction_static, f"SGLang's default {result.mem_fraction_static:.3g}"
    given, _ = written_value(parsed, "mem_fraction_static")
    kv = result.kv_cache_bytes
    if given is not None:
        try:
            fraction, how = float(given), f"--mem-fraction-static {given}"
        except ValueError:
            return []
        kv = result.kv_cache_bytes + gpu_bytes * (fraction - result.mem_fraction_static)
    tokens = int(kv // result.kv_bytes_per_token) if kv > 0 and result.kv_bytes_per_token else 0
    weights = result.weights_bytes / 1e9
    facts = (
        f"{model.get('name') or 'the model'} ({source}) at TP {tp}: {weights:.1f} GB of weights "
        "per GPU"
        + (f" + {result.draft_bytes / 1e9:.1f} GB draft" if result.draft_bytes else "")
        + f", {how} of {gpu_bytes / 1e9:.1f} GB"
    )
    where = parsed.lines.get("SGLANG_ARGS", "") or parsed.where
    if (
        kv <= 0
        and measured is not None
        and _measured_running(measured(), model, launch, tp) is not None
    ):
        # measured running on this machine: the estimate gives way, as recommend's search does
        return []
    if kv <= 0:
        return [
            item(
                "topoctl-model-does-not-fit",
                Severity.BLOCK,
                "the model does not fit in GPU memory",
                one_line(
                    f"{facts}: no room is left for the KV cache; SGLang stops at start-up (not "
                    "enough "
                    "memory for the KV cache)"
                ),
                "use more GPUs (a larger --tp-size), a quantized checkpoint, or a larger "
                "--mem-fraction-static (topoctl recommend --model ... says what fits)",
                where,
            )
        ]
    out: list[
        Item
    ] = []  # a launch that fits adds nothing to the report (reports of today stay as they are)
    if isinstance(context, int) and context > 0 and tokens < context:
        out.append(
            item(
                "topoctl-kv-below-one-request",
                Severity.WARN,
                "KV cache below one full-context request",
                one_line(
                    f"{facts}: the KV cache holds {tokens} tokens, less than one request of the "
                    f"full context ({context}); SGLang caps such a request or fails it"
                ),
                "give --context-length a smaller value, use more GPUs, or raise "
                "--mem-fraction-static",
                where,
            )
        )
    return out
