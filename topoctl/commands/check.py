"""`topoctl check`: is this launch safe on that machine? Exit 0 clean, 1 blocking (or a warning with
--fail-on warn), 2 bad input.

Takes launch.env files (parsed, never sourced) or a full launch command after `--`, and judges it against a
live probe, a snapshot (--topology) or a built-in system (--system), with the same rules and flag data as
`topoctl recommend`.
"""
from __future__ import annotations

import click

from topoctl.commands._options import rules_options, target_options
from topoctl.errors import EXIT_BLOCKED, TopoctlError


class _CheckCommand(click.Command):
    """Everything after `--` is a launch command, kept apart from the launch.env file arguments."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            cut = args.index("--")
            ctx.meta["topoctl_launch_command"] = args[cut + 1:]
            args = args[:cut]
        return super().parse_args(ctx, args)


@click.command("check", cls=_CheckCommand)
@click.argument("files", nargs=-1, metavar="[LAUNCH_ENV]... [-- COMMAND...]")
@target_options
@click.option("--expect", metavar="SNAPSHOT", help="The snapshot the launch was made for: report drift of the target from it.")
@click.option("--sglang-version", metavar="X.Y.Z",
              help="SGLang version to read flags with (default: the target's installed one, else the launch.env's).")
@click.option("--model", "model_name", metavar="NAME", help="Built-in model profile the launch serves (optional).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "junit", "github"]), default="text", show_default=True,
              help="text: for people; json: one result per launch with its findings; junit: JUnit XML, one test case "
                   "per finding; github: ::error/::warning annotations for GitHub Actions.")
@click.option("--fail-on", type=click.Choice(["block", "warn"]), default="block", show_default=True,
              help="Exit 1 on blocking findings only, or on warnings too.")
@rules_options
@click.option("-o", "--output", metavar="FILE", help="Write the report to FILE atomically instead of stdout.")
@click.pass_context
def command(ctx, files, topology, system, fallback_system, expect, sglang_version, model_name, fmt, fail_on, rules_dirs,
            disabled, output):
    """Check launch.env files, or a launch command after `--`, against the target machine.

    \b
    Examples:
      topoctl check launch.env --topology machine.yaml
      topoctl check --system rtx-pro-6000-8x-pcie -- python -m sglang.launch_server --model-path M --tp 8
      topoctl check deploy/*/launch.env --system h200-4x-nvswitch-vm --format junit -o check.xml

    \b
    The command after `--`: [NAME=VALUE...] python -m sglang.launch_server ARGS,
    [NAME=VALUE...] sglang serve ARGS, or the SGLang flags alone.

    \b
    Exit codes:
      0  clean (warnings alone too, unless --fail-on warn)
      1  a blocking finding (or a warning with --fail-on warn)
      2  bad usage or unreadable input (one line on stderr, with a hint)
    """
    from topoctl.autoconf.check import FORMATTERS, failing, judge
    from topoctl.autoconf.search import target_gpu_count
    from topoctl.commands._options import flag_set_for, load_rules_for, requested_version, require_value, target_version
    from topoctl.io import emit
    from topoctl.sglang import launch as launch_mod
    from topoctl.snapshot import load_snapshot
    from topoctl.target import resolve_target

    command_tokens = ctx.meta.get("topoctl_launch_command")
    if not files and not command_tokens:
        raise TopoctlError("nothing to check", hint="give launch.env files, or a launch command after `--`")
    require_value("--model", model_name, "name a built-in profile (kimi-k2.5, deepseek-v3, ...) or leave it out")
    requested = requested_version(sglang_version)  # a bad version fails before the target is probed
    command_env, command_args = ({}, [])
    if command_tokens:
        command_env, command_args = launch_mod.split_command(list(command_tokens))
        if not command_args and not command_env:
            raise TopoctlError("the command after `--` has no SGLang flags",
                               hint="e.g. -- python -m sglang.launch_server --model-path M --tp 8")
    snapshot = resolve_target(topology=topology, system=system, fallback_system=fallback_system)
    gpu_count = target_gpu_count(snapshot)
    expected = load_snapshot(expect) if expect else None
    ruleset = load_rules_for(rules_dirs, disabled)
    model = None
    if model_name:
        from topoctl.autoconf.models import profile

        model = profile(model_name)
    installed = target_version(snapshot, requested)

    def flags_for(metadata: dict[str, str], lines: dict[str, str] | None = None):
        """The flag set a launch is read with: the target's SGLang, else the version the launch was made for."""
        if installed:
            return flag_set_for(installed)
        made_for = metadata.get("TOPOCTL_SGLANG_VERSION")
        if not made_for:
            return flag_set_for(None)
        try:
            return flag_set_for(requested_version(made_for))
        except TopoctlError as error:
            where = (lines or {}).get("TOPOCTL_SGLANG_VERSION")
            raise TopoctlError((f"{where}: " if where else "") + f"TOPOCTL_SGLANG_VERSION: {error.message}",
                               hint=error.hint) from None

    parsed_all = []
    for path in files:
        parsed_all.append(launch_mod.parse_env_file(path, flags_for))
    if command_tokens:
        parsed = launch_mod.ParsedLaunch(origin="<command>")
        for name, value in sorted(command_env.items()):
            launch_mod.apply_env(parsed, name, value, "")
        launch_mod.parse_args(command_args, flags_for(parsed.metadata), parsed)
        parsed_all.append(parsed)
    outcomes = [judge(parsed, snapshot, parsed.flags, ruleset, gpu_count, model=model, expect=expected)
                for parsed in parsed_all]
    emit(FORMATTERS[fmt](outcomes, fail_on), output)
    return EXIT_BLOCKED if any(failing(o, fail_on) for o in outcomes) else 0
