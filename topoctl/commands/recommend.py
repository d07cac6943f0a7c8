"""`topoctl recommend`: the fastest SGLang launch known to work on a machine, as launch.env (or args, json, yaml).

The machine is a live probe, a snapshot (--topology FILE) or a built-in reference system (--system NAME).
The rules decide what is blocked and carry the evidence; autoconf searches the candidate launches and
writes the winner in the flag names of the target SGLang version. Never imports NVML or torch unless it
has to probe this machine live.
"""
from __future__ import annotations

import os

import click

from topoctl.commands._options import (  # noqa: F401 - flag_set_for: also imported from here
    flag_set_for,
    load_rules_for,
    requested_version,
    require_value,
    rules_options,
    target_options,
    target_version,
)
from topoctl.errors import TopoctlError

FORMATS = ("env", "args", "json", "yaml")


def _list_systems() -> str:
    from topoctl.catalogue import list_systems, system_snapshot
    from topoctl.snapshot_view import SnapshotView

    lines = []
    for name in list_systems():
        try:
            view = SnapshotView(system_snapshot(name))
            lines.append(f"{name}\t{view.gpu_count}x {', '.join(view.gpu_names)}, {view.interconnect}")
        except TopoctlError:
            lines.append(f"{name}\t(unreadable)")
    return "\n".join(lines) + ("\n" if lines else "")


@click.command("recommend")
@target_options
@click.option("--list-systems", is_flag=True, help="List the built-in reference systems and exit.")
@click.option("--list-models", is_flag=True, help="List the built-in model profiles (properties, weight bytes, source) and exit.")
@click.option("--model", "model_name", metavar="NAME",
              help="Built-in model profile (kimi-k2.5, deepseek-v3, llama-3.1-70b, gpt-oss-120b, ...; --list-models).")
@click.option("--model-path", metavar="DIR",
              help="The model folder SGLang is given: its config.json, and the exact weight bytes from "
                   "model.safetensors.index.json (or the .safetensors files) when present. A Hugging Face cache "
                   "folder (models--org--name) resolves to its snapshot.")
@click.option("--model-config", metavar="PATH",
              help="A Hugging Face config.json alone: num_hidden_layers and hidden_size (under text_config for multimodal "
                   "models), heads, KV heads, MLA ranks; n_routed_experts, num_experts or num_local_experts mean MoE; "
                   "the weight bytes are computed from these and its quantization_config.")
@click.option("--sglang-version", metavar="X.Y.Z",
              help="SGLang version to write flags for (default: the one installed on the target). A leading v and a "
                   "build tag (0.5.12+cu129) are dropped.")
@click.option("--speculative", type=click.Choice(["eagle3"], case_sensitive=False),
              help="Ask for speculative decoding (EAGLE-3); needs --draft-model.")
@click.option("--draft-model", metavar="PATH",
              help="Draft model for EAGLE-3 (--speculative-draft-model-path); needs --speculative eagle3.")
@click.option("--force-speculative", is_flag=True, help="Keep speculative decoding even where evidence says it is slower.")
@click.option("--tp-size", type=click.IntRange(min=1), help="Tensor parallel size (default: every GPU; at most the GPU count).")
@click.option("--ep-size", type=click.IntRange(min=1),
              help="Expert parallel size (default 1; at most --tp-size and a divisor of it).")
@click.option("--dp-size", type=click.IntRange(min=1),
              help="Data-parallel replicas (default: the GPUs left over by the TP size; TP x DP at most the GPU count).")
@click.option("--objective", type=click.Choice(["latency", "throughput"]), default="latency", show_default=True,
              help="latency: one stream's tokens/s; throughput: tokens/s of every replica at the batch the KV cache "
                   "and the CUDA graphs allow.")
@click.option("--context-length", type=click.IntRange(min=1),
              help="Longest request in tokens: written as --context-length, and a launch whose KV cache holds fewer "
                   "tokens does not fit.")
@click.option("--max-running-requests", type=click.IntRange(min=1),
              help="Requests decoded at once (written as --max-running-requests).")
@click.option("--accept-length", type=click.FloatRange(min=1.0, max=64.0),
              help="EAGLE-3 tokens accepted per verify cycle (default: measured for the same model, else 2.77, a "
                   "published EAGLE-3 acceptance length; docs/launch-model.md).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="env", show_default=True,
              help="env: launch.env to source; args: the SGLang flags on one line; json / yaml: everything, with "
                   "the evidence.")
@click.option("--explain", is_flag=True, help="Print the reasoning and the blocked alternatives to stderr.")
@rules_options
@click.option("-o", "--output", metavar="FILE", help="Write to FILE atomically instead of stdout.")
def command(topology, system, list_systems, fallback_system, list_models, model_name, model_path, model_config,
            sglang_version, speculative, draft_model,
            force_speculative, tp_size, ep_size, dp_size, objective, context_length, max_running_requests, accept_length,
            fmt, explain, rules_dirs, disabled, output):
    """Recommend the fastest SGLang launch known to work on the target machine.

    \b
    Examples:
      topoctl recommend --system rtx-pro-6000-8x-pcie --model kimi-k2.5 > launch.env
      topoctl recommend --topology machine.yaml --model-config config.json --format args
      topoctl recommend --system h200-4x-nvswitch-vm --model qwen3-235b-a22b \\
          --speculative eagle3 --draft-model /models/eagle3 --explain -o launch.env

    \b
    Exit codes: 0 written; 1 no launch passes the rules, or the model does not fit
    (the hint says what would); 2 bad usage or input.
    """
    from topoctl.io import emit

    if list_systems:
        emit(_list_systems(), output)
        return 0
    if list_models:
        from topoctl.autoconf.models import list_models_text

        emit(list_models_text(), output)
        return 0
    require_value("--model", model_name, "name a built-in profile (kimi-k2.5, deepseek-v3, ...) or leave it out")
    require_value("--model-config", model_config, "give the path of the model's config.json, or leave it out")
    require_value("--model-path", model_path, "give the model folder (the one holding config.json), or leave it out")
    require_value("--draft-model", draft_model, "give the path of the EAGLE-3 draft model")
    if sum(1 for given in (model_name, model_path, model_config) if given) > 1:
        raise TopoctlError("give one of --model, --model-path and --model-config, not both",
                           hint="they all name the model; --model-path reads a model folder, --model-config a config.json")
    if speculative and not draft_model:
        raise TopoctlError("--speculative eagle3 needs --draft-model PATH", hint="the EAGLE-3 draft model to verify with")
    if draft_model and not speculative:
        raise TopoctlError("--draft-model needs --speculative eagle3",
                           hint="add --speculative eagle3, or leave --draft-model out")
    if force_speculative and not speculative:
        raise TopoctlError("--force-speculative needs --speculative eagle3")
    from topoctl.autoconf import models

    model = None
    if model_path:
        model = models.from_model_dir(model_path)
    elif model_config:
        model = models.from_hf_config(model_config)
    elif model_name:
        model = models.profile(model_name)
    requested = requested_version(sglang_version)  # a bad version fails before the target is probed
    from topoctl.target import resolve_target

    snapshot = resolve_target(topology=topology, system=system, fallback_system=fallback_system)
    version = target_version(snapshot, requested)
    flags = flag_set_for(version)
    ruleset = load_rules_for(rules_dirs, disabled)
    from topoctl.autoconf.render import explain as explain_text
    from topoctl.autoconf.render import render
    from topoctl.autoconf.search import Request, search

    draft = None
    if draft_model and os.path.isfile(os.path.join(draft_model, "config.json")):
        draft = models.from_model_dir(draft_model)  # a local draft folder: its own bytes
    request = Request(speculative.lower() if speculative else None, draft_model, force_speculative, tp_size, ep_size,
                      dp_size, objective, context_length, max_running_requests, accept_length, draft)
    result = search(snapshot, model, flags, version, ruleset=ruleset, request=request)
    if explain:
        click.echo(explain_text(result), err=True, nl=False)
    emit(render(result, fmt), output)
    return 0
