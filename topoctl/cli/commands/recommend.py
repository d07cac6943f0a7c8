"""`topoctl recommend`: the fastest SGLang launch known to work on a machine, as launch.env (or
args, json, yaml).

The machine is a live probe, a snapshot (--topology FILE) or a built-in reference system (--system
NAME). The rules decide what is blocked and carry the evidence; autoconf searches the candidate
launches and writes the winner in the flag names of the target SGLang version. Never imports NVML or
torch unless it has to probe this machine live.

Layer: commands and CLI (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, TypedDict

import click

from topoctl.cli.commands._options import (  # noqa: F401 - flag_set_for: also imported from here
    flag_set_for,
    load_rules_for,
    requested_version,
    require_value,
    rules_options,
    target_options,
    target_version,
)
from topoctl.cli.commands.completion import complete_models
from topoctl.core.errors import TopoctlError, one_line
from topoctl.snapshot.view import SnapshotView

if TYPE_CHECKING:
    from topoctl.autoconf.multinode import NodeSettings
    from topoctl.autoconf.request import Request
    from topoctl.autoconf.search import Result
    from topoctl.rules.engine.model import RuleSet

    class SystemRow(TypedDict):
        """One built-in system as `recommend --list-systems` lists it."""

        name: str
        gpu_count: int | None
        gpu_names: list[str]
        interconnect: str | None


FORMATS = ("env", "args", "json", "yaml", "table")


def _system_rows() -> list[SystemRow]:
    from topoctl.snapshot.catalogue import list_systems, system_snapshot

    rows: list[SystemRow] = []
    for name in list_systems():
        try:
            view = SnapshotView(system_snapshot(name))
            rows.append(
                {
                    "name": name,
                    "gpu_count": view.gpu_count,
                    "gpu_names": list(view.gpu_names),
                    "interconnect": view.interconnect,
                }
            )
        except TopoctlError:
            rows.append({"name": name, "gpu_count": None, "gpu_names": [], "interconnect": None})
    return rows


def _list_systems(fmt: str = "env") -> str:
    """The built-in systems: name TAB description, one a line; as a document with --format json or
    yaml."""
    rows = _system_rows()
    if fmt in ("json", "yaml"):
        return _listing_document({"systems": rows}, fmt)
    lines = [
        f"{row['name']}\t{row['gpu_count']}x {', '.join(row['gpu_names'])}, {row['interconnect']}"
        if row["gpu_count"] is not None
        else f"{row['name']}\t(unreadable)"
        for row in rows
    ]
    return "\n".join(lines) + ("\n" if lines else "")


def _list_models(fmt: str) -> str:
    from topoctl.autoconf.models import builtin_models, list_models_text, profile

    if fmt not in ("json", "yaml"):
        return list_models_text()
    rows = []
    for name in sorted(builtin_models()):
        prof = profile(name)
        rows.append(
            {
                "name": name,
                "architecture": prof["architecture"],
                "layers": prof["layers"],
                "moe": prof["moe"],
                "attention": prof["attention"],
                "quantization": prof["quantization"]["label"],
                "total_params": prof["total_params"],
                "active_params": prof["active_params"],
                "weight_bytes": prof["weight_bytes"],
                "source": builtin_models()[name].get("source"),
            }
        )
    return _listing_document({"models": rows}, fmt)


def _listing_document(data: dict[str, object], fmt: str) -> str:
    import json

    if fmt == "json":
        return json.dumps(data, indent=2, sort_keys=True) + "\n"
    from topoctl.core.serialize import dump

    return dump(data, "yaml")


def _listing(list_systems: bool, list_models: bool, fmt: str) -> str | None:
    """What --list-systems / --list-models print (tab-separated text, or json/yaml with --format),
    or None."""
    if list_systems and list_models:
        raise TopoctlError("give --list-systems or --list-models, not both")
    if list_systems:
        return _list_systems(fmt)
    if list_models:
        return _list_models(fmt)
    return None


def _check_speculative(
    speculative: str | None, draft_model: str | None, force_speculative: bool
) -> None:
    if speculative and not draft_model:
        raise TopoctlError(
            "--speculative eagle3 needs --draft-model PATH",
            hint="the EAGLE-3 draft model to verify with",
        )
    if draft_model and not speculative:
        raise TopoctlError(
            "--draft-model needs --speculative eagle3",
            hint="add --speculative eagle3, or leave --draft-model out",
        )
    if force_speculative and not speculative:
        raise TopoctlError("--force-speculative needs --speculative eagle3")


def _output(result: Result, fmt: str, top: int) -> str:
    if fmt == "table":
        from topoctl.autoconf.launch_text import document
        from topoctl.autoconf.table import render_table

        return render_table(document(result), top)
    from topoctl.autoconf.launch_text import render

    return render(result, fmt)


@click.command("recommend")
@target_options
@click.option("--list-systems", is_flag=True, help="List the built-in reference systems and exit.")
@click.option(
    "--list-models",
    is_flag=True,
    help="List the built-in model profiles (properties, weight bytes, source) and exit.",
)
@click.option(
    "--model",
    "model_name",
    metavar="NAME",
    shell_complete=complete_models,
    help="Built-in model profile (kimi-k2.5, deepseek-v3, llama-3.1-70b, gpt-oss-120b, ...; "
    "--list-models).",
)
@click.option(
    "--model-path",
    metavar="DIR",
    help="The model folder SGLang is given: its config.json, and the exact weight bytes from "
    "model.safetensors.index.json (or the .safetensors files) when present. A Hugging Face cache "
    "folder (models--org--name) resolves to its snapshot.",
)
@click.option(
    "--model-config",
    metavar="PATH",
    help="A Hugging Face config.json alone: num_hidden_layers and hidden_size (under text_config "
    "for multimodal models), heads, KV heads, MLA ranks; n_routed_experts, num_experts or "
    "num_local_experts mean MoE; the weight bytes are computed from these and its "
    "quantization_config.",
)
@click.option(
    "--sglang-version",
    metavar="X.Y.Z",
    help="SGLang version to write flags for (default: the one installed on the target). A "
    "leading v and a build tag (0.5.12+cu129) are dropped.",
)
@click.option(
    "--speculative",
    type=click.Choice(["eagle3"], case_sensitive=False),
    help="Ask for speculative decoding (EAGLE-3); needs --draft-model.",
)
@click.option(
    "--draft-model",
    metavar="PATH",
    help="Draft model for EAGLE-3 (--speculative-draft-model-path); needs --speculative eagle3.",
)
@click.option(
    "--force-speculative",
    is_flag=True,
    help="Keep speculative decoding even where evidence says it is slower.",
)
@click.option(
    "--tp-size",
    type=click.IntRange(min=1),
    help="Tensor parallel size (default: every GPU; at most the GPU count).",
)
@click.option(
    "--ep-size",
    type=click.IntRange(min=1),
    help="Expert parallel size (default 1; at most --tp-size and a divisor of it).",
)
@click.option(
    "--dp-size",
    type=click.IntRange(min=1),
    help="Data-parallel replicas (default: the GPUs left over by the TP size; TP x DP at most "
    "the GPU count).",
)
@click.option(
    "--nnodes",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Nodes like the target the launch spans: TP and memory are judged over all of them, and "
    "the output adds each node's SGLang flags (--nnodes, --node-rank and --dist-init-addr "
    "as variables the launcher fills) and NCCL's network settings from the probed NICs.",
)
@click.option(
    "--objective",
    type=click.Choice(["latency", "throughput"]),
    default="latency",
    show_default=True,
    help="latency: one stream's tokens/s; throughput: tokens/s of every replica at the batch the "
    "KV cache and the CUDA graphs allow.",
)
@click.option(
    "--context-length",
    type=click.IntRange(min=1),
    help="Longest request in tokens: written as --context-length, and a launch whose KV cache "
    "holds fewer tokens does not fit.",
)
@click.option(
    "--max-running-requests",
    type=click.IntRange(min=1),
    help="Requests decoded at once (written as --max-running-requests).",
)
@click.option(
    "--decode-context",
    type=click.IntRange(min=1),
    metavar="TOKENS",
    help="Mean tokens in the KV cache while a request decodes (its prompt plus half its output), "
    "for the KV reads (default 1000, assumed: a chat turn; capped by the context length; "
    "docs/launch-model.md); with --objective throughput also what each stream holds, so the "
    "batch is KV tokens / this.",
)
@click.option(
    "--accept-length",
    type=click.FloatRange(min=1.0, max=64.0),
    help="EAGLE-3 tokens accepted per verify cycle (default: measured for the same model, else "
    "2.77, a published EAGLE-3 acceptance length; docs/launch-model.md).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="env",
    show_default=True,
    help="env: launch.env to source; args: only SGLang's arguments, on one line (an environment "
    "the launch also needs is named on stderr); json / yaml: everything, with "
    "the evidence; table: the passing launches ranked, best first (--top). With --list-systems or "
    "--list-models, json and yaml print the list as a document.",
)
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    metavar="N",
    help="With --format table: how many ranked launches to show.",
)
@click.option(
    "--explain", is_flag=True, help="Print the reasoning and the blocked alternatives to stderr."
)
@rules_options
@click.option("-o", "--output", metavar="FILE", help="Write to FILE atomically instead of stdout.")
def command(**given: Any) -> int:
    """Recommend the fastest SGLang launch known to work on the target machine.

    \b
    Examples:
      topoctl recommend --system rtx-pro-6000-8x-pcie --model kimi-k2.5 > launch.env
      topoctl recommend --topology machine.yaml --model-config config.json --format args
      topoctl recommend --system h200-4x-nvswitch-vm --model llama-3.1-70b --format table --top 5
      topoctl recommend --system h200-4x-nvswitch-vm --model qwen3-235b-a22b \\
          --speculative eagle3 --draft-model /models/eagle3 --explain -o launch.env
      topoctl recommend --system h100-8x-8nic-ib --model deepseek-v3 --nnodes 2 -o two-nodes.env

    \b
    Exit codes: 0 written; 1 no launch passes the rules, or the model does not fit
    (the hint says what would); 2 bad usage or input.
    """
    return run(RecommendOptions.from_params(given))


@dataclass(frozen=True)
class RecommendOptions:
    """Everything `topoctl recommend` was given: the target, the model, how to write the launch, and
    what the user asks of the launch itself as the search's own Request (autoconf/search.py), so
    that the two cannot drift apart. `request` is as given: run() lower-cases --speculative and
    reads the draft model's folder."""

    topology: str | None = None
    system: str | None = None
    fallback_system: str | None = None
    list_systems: bool = False
    list_models: bool = False
    model_name: str | None = None
    model_path: str | None = None
    model_config: str | None = None
    sglang_version: str | None = None
    request: Request | None = None  # None: nothing asked (Request())
    nnodes: int = 1
    fmt: str = "env"
    top: int = 10
    explain: bool = False
    rules_dirs: tuple[str, ...] = ()
    disabled: tuple[str, ...] = ()
    output: str | None = None

    @classmethod
    def from_params(cls, given: dict[str, Any]) -> RecommendOptions:
        """The options from click's parameters: those named like a Request field go into the
        request."""
        from topoctl.autoconf.request import Request

        params = dict(given)
        asked = {
            item.name: params.pop(item.name) for item in fields(Request) if item.name in params
        }
        return cls(**params, request=Request(**asked))

    @property
    def asked(self) -> Request:
        from topoctl.autoconf.request import Request

        return self.request if self.request is not None else Request()


def run(options: RecommendOptions) -> int:
    """recommend's stages: the listing options answer alone; else the model, the target, the rules,
    the search, then the output (one launch, or one node's part of a multi-node one)."""
    from topoctl.core.io import emit

    listing = _listing(options.list_systems, options.list_models, options.fmt)
    if listing is not None:
        emit(listing, options.output)
        return 0
    model = _model(options)
    requested = requested_version(
        options.sglang_version
    )  # a bad version fails before the target is probed
    from topoctl.cli.target_machine import resolve_target

    # the one view of the target every stage below reads (tests/snapshot/test_snapshot_view_once.py)
    snapshot = SnapshotView(
        resolve_target(
            topology=options.topology,
            system=options.system,
            fallback_system=options.fallback_system,
        )
    )
    version = target_version(snapshot, requested)
    flags = flag_set_for(version)
    ruleset = load_rules_for(options.rules_dirs, options.disabled)
    from topoctl.autoconf.launch_text import explain as explain_text
    from topoctl.autoconf.search import search

    if options.nnodes > 1 and model is not None:
        from topoctl.autoconf.multinode import split_over_nodes

        model = split_over_nodes(model, options.nnodes)
    result = search(snapshot, model, flags, version, ruleset=ruleset, request=_request(options))
    nodes = None
    if options.nnodes > 1:
        result, nodes = _nodes(result, snapshot, options.nnodes, ruleset)
    if options.explain:
        click.echo(explain_text(result), err=True, nl=False)
    emit(_with_nodes(_output(result, options.fmt, options.top), options.fmt, nodes), options.output)
    if options.fmt == "args":
        _note_environment(result, nodes)
    return 0


def _model(options: RecommendOptions) -> dict[str, Any] | None:
    """The model profile the options name (--model-path, --model-config or --model), None for none;
    usage errors (exit 2) for an empty value or more than one of them, and for speculative options
    that do not go together."""
    require_value(
        "--model",
        options.model_name,
        "name a built-in profile (kimi-k2.5, deepseek-v3, ...) or leave it out",
    )
    require_value(
        "--model-config",
        options.model_config,
        "give the path of the model's config.json, or leave it out",
    )
    require_value(
        "--model-path",
        options.model_path,
        "give the model folder (the one holding config.json), or leave it out",
    )
    asked = options.asked
    require_value("--draft-model", asked.draft_model, "give the path of the EAGLE-3 draft model")
    if (
        sum(1 for given in (options.model_name, options.model_path, options.model_config) if given)
        > 1
    ):
        raise TopoctlError(
            "give one of --model, --model-path and --model-config, not both",
            hint="they all name the model; --model-path reads a model folder, --model-config a "
            "config.json",
        )
    _check_speculative(asked.speculative, asked.draft_model, asked.force_speculative)
    from topoctl.autoconf import models

    if options.model_path:
        return models.from_model_dir(options.model_path)
    if options.model_config:
        return models.from_hf_config(options.model_config)
    if options.model_name:
        return models.profile(options.model_name)
    return None


def _request(options: RecommendOptions) -> Request:
    """The search's Request: what the user asks of the launch (speculative decoding, parallel sizes,
    the objective, context, running requests, accept length) and the draft model's own properties
    when its folder is local."""
    from topoctl.autoconf import models

    asked = options.asked
    draft = None
    if asked.draft_model and os.path.isfile(os.path.join(asked.draft_model, "config.json")):
        draft = models.from_model_dir(asked.draft_model)  # a local draft folder: its own bytes
    return replace(
        asked,
        speculative=asked.speculative.lower() if asked.speculative else None,
        draft=draft,
        nodes=options.nnodes,
    )


def _note_environment(result: Result, nodes: NodeSettings | None) -> None:
    """`--format args` is SGLang's argument list only; the environment the launch also needs (no
    P2P, a group of the GPUs, a multi-node network) goes to stderr, named, so that a script using
    the flags cannot lose it unnoticed. launch.env (`--format env`) holds both."""
    from topoctl.autoconf.launch_text import args_environment

    env = args_environment(result)
    if nodes is not None:
        env.update(sorted(nodes.env.items()))
    if not env:
        return
    settings = " ".join(f"{name}={shlex.quote(value)}" for name, value in env.items())
    click.echo(
        f"topoctl: note: the launch also needs this environment, which flags cannot carry: "
        f"{one_line(settings)} (--format env writes it with the flags)",
        err=True,
    )


def _nodes(
    result: Result, snapshot: SnapshotView, nnodes: int, ruleset: RuleSet
) -> tuple[Result, NodeSettings]:
    """One node's part of an N-node launch: TP over every node's GPUs, the node flags and NCCL's
    network settings (autoconf/multinode.py), with the network rules' findings
    (rules/knowledge/network.yaml). The search's result is frozen: the launch at TP over all nodes
    is a new result (its winner, also first of the ranked list, carries the new tp_size), and the
    search's own stays as it was."""
    from topoctl.autoconf.multinode import node_settings
    from topoctl.rules.engine import evaluate

    tp_size = result.tp_size * nnodes
    winner = replace(result.winner, launch={**result.winner.launch, "tp_size": tp_size})
    result = replace(
        result,
        tp_size=tp_size,
        winner=winner,
        memo={},  # memo: what was rendered of the old one
        ranked=[winner if cand is result.winner else cand for cand in result.ranked],
    )
    settings = node_settings(snapshot, nnodes)
    report = evaluate(ruleset, snapshot, {"nnodes": nnodes, "tp_size": result.tp_size})
    settings.notes.extend(
        f"{finding.severity} {finding.rule_id}: {finding.title}"
        for finding in report.findings
        if finding.rule_id.startswith("net-")
        and finding.status == "fired"
        and finding.severity != "info"
    )
    return result, settings


def _with_nodes(text: str, fmt: str, nodes: NodeSettings | None) -> str:
    if nodes is None:
        return text
    from topoctl.autoconf import multinode as network

    if fmt in ("env", "table"):
        return text + "\n".join(network.env_lines(nodes)) + "\n"
    if fmt == "args":
        return text.rstrip("\n") + " " + " ".join(nodes.args) + "\n"
    import json

    from topoctl.core.serialize import dump, safe_load

    doc = json.loads(text) if fmt == "json" else safe_load(text)
    doc["nodes"] = network.document(nodes)
    return dump(doc, fmt)
