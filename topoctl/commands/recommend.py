"""`topoctl recommend`: the fastest SGLang launch known to work on a machine, as launch.env (or args, json, yaml).

The machine is a live probe, a snapshot (--topology FILE) or a built-in reference system (--system NAME).
The rules decide what is blocked and carry the evidence; autoconf searches the candidate launches and
writes the winner in the flag names of the target SGLang version. Never imports NVML or torch unless it
has to probe this machine live.
"""
from __future__ import annotations

import click

from topoctl.errors import TopoctlError

FORMATS = ("env", "args", "json", "yaml")


def _list_systems() -> str:
    from topoctl.snapshot import list_systems, system_snapshot

    lines = []
    for name in list_systems():
        try:
            summary = system_snapshot(name).get("summary") or {}
            names = ", ".join(summary.get("gpu_names") or [])
            lines.append(f"{name}\t{summary.get('gpu_count')}x {names}, {summary.get('interconnect')}")
        except TopoctlError:
            lines.append(f"{name}\t(unreadable)")
    return "\n".join(lines) + ("\n" if lines else "")


def target_version(snapshot: dict, requested: str | None) -> str | None:
    if requested:
        return requested
    installed = (snapshot.get("software") or {}).get("sglang")
    return str(installed) if installed else None


def flag_set_for(version: str | None):
    from topoctl.rules.flags import known_versions, load_flag_set

    if version is None:
        from packaging.version import Version

        version = max(known_versions(), key=Version)
    try:
        return load_flag_set(version)
    except TopoctlError:
        raise
    except Exception as exc:  # noqa: BLE001 - an odd version string from a snapshot
        raise TopoctlError(f"cannot read SGLang version {version!r}: {exc}",
                           hint="pass --sglang-version X.Y.Z") from None


def load_rules_for(rules_dirs: tuple[str, ...], disabled: tuple[str, ...]):
    """Built-in rules plus `--rules DIR` folders, less `--disable ID=REASON` (the same options and checks as
    `topoctl rules`: a missing reason is a usage error, exit 2, because every report shows it)."""
    from topoctl.commands.rules import parse_disable
    from topoctl.rules import load_rules

    return load_rules(extra_dirs=list(rules_dirs), disabled=parse_disable(disabled))


def rules_options(function):
    """`--rules DIR` and `--disable ID=REASON`, spelt as in `topoctl rules`."""
    function = click.option("--disable", "disabled", multiple=True, metavar="ID=REASON",
                            help="Switch a built-in rule off by id, with a written reason shown in every report "
                                 "(repeatable).")(function)
    return click.option("--rules", "rules_dirs", multiple=True, metavar="DIR",
                        help="A folder (or file) of site rule files to add (repeatable).")(function)


@click.command("recommend")
@click.option("--topology", metavar="FILE", help="Snapshot written by `topoctl probe` (JSON or YAML).")
@click.option("--system", metavar="NAME", help="A built-in reference system (see --list-systems).")
@click.option("--list-systems", is_flag=True, help="List the built-in reference systems and exit.")
@click.option("--fallback-system", metavar="NAME",
              help="When neither --topology nor --system is given and this machine shows no GPU, use this built-in "
                   "system instead of failing with exit 3 (announced on stderr).")
@click.option("--model", "model_name", metavar="NAME", help="Built-in model profile (kimi-k2.5, deepseek-v3, llama-3.1-70b, qwen3-235b-a22b).")
@click.option("--model-config", metavar="PATH", help="A Hugging Face config.json to read the model from.")
@click.option("--sglang-version", metavar="X.Y.Z", help="SGLang version to write flags for (default: the one installed on the target).")
@click.option("--speculative", type=click.Choice(["eagle3"], case_sensitive=False), help="Ask for speculative decoding.")
@click.option("--draft-model", metavar="PATH", help="Draft model for EAGLE-3 (--speculative-draft-model-path).")
@click.option("--force-speculative", is_flag=True, help="Keep speculative decoding even where evidence says it is slower.")
@click.option("--tp-size", type=click.IntRange(min=1), help="Tensor parallel size (default: every GPU).")
@click.option("--ep-size", type=click.IntRange(min=1), help="Expert parallel size (default 1).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="env", show_default=True, help="Output format.")
@click.option("--explain", is_flag=True, help="Print the reasoning and the blocked alternatives to stderr.")
@rules_options
@click.option("-o", "--output", metavar="FILE", help="Write to FILE atomically instead of stdout.")
def command(topology, system, list_systems, fallback_system, model_name, model_config, sglang_version, speculative, draft_model,
            force_speculative, tp_size, ep_size, fmt, explain, rules_dirs, disabled, output):
    """Recommend the fastest SGLang launch known to work on the target machine.

    \b
    Examples:
      topoctl recommend --system rtx-pro-6000-8x-pcie --model kimi-k2.5 > launch.env
      topoctl recommend --topology machine.yaml --model-config config.json --format args
      topoctl recommend --system h200-4x-nvswitch-vm --model deepseek-v3 \\
          --speculative eagle3 --draft-model /models/eagle3 --explain -o launch.env
    """
    from topoctl.io import emit

    if list_systems:
        emit(_list_systems(), output)
        return 0
    if model_name and model_config:
        raise TopoctlError("give either --model or --model-config, not both")
    if speculative and not draft_model:
        raise TopoctlError("--speculative eagle3 needs --draft-model PATH", hint="the EAGLE-3 draft model to verify with")
    if force_speculative and not speculative:
        raise TopoctlError("--force-speculative needs --speculative eagle3")
    from topoctl.autoconf import models

    model = None
    if model_config:
        model = models.from_hf_config(model_config)
    elif model_name:
        model = models.profile(model_name)
    from topoctl.snapshot import resolve_target

    snapshot = resolve_target(topology=topology, system=system, fallback_system=fallback_system)
    version = target_version(snapshot, sglang_version)
    flags = flag_set_for(version)
    ruleset = load_rules_for(rules_dirs, disabled)
    from topoctl.autoconf.render import explain as explain_text, render
    from topoctl.autoconf.search import search

    result = search(snapshot, model, flags, version, speculative=speculative.lower() if speculative else None,
                    draft_model=draft_model, force_speculative=force_speculative, tp_size=tp_size,
                    ep_size=ep_size, ruleset=ruleset)
    if explain:
        click.echo(explain_text(result), err=True, nl=False)
    emit(render(result, fmt), output)
    return 0
