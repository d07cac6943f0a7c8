"""`topoctl check`: is this launch safe on that machine? Exit 0 clean, 1 blocking (or a warning with
--fail-on warn), 2 bad input.

Takes files and folders (launch.env files, Kubernetes manifests, Docker Compose files, shell scripts; each
launch found in them is judged with its file and line) or a full launch command after `--`, and judges each
against a live probe, a snapshot (--topology) or a built-in system (--system), with the same rules and flag
data as `topoctl recommend`.

Layer: commands and CLI (docs/architecture.md, "Layers").
"""
from __future__ import annotations

import click

from topoctl.commands._options import rules_options, target_options
from topoctl.commands.completion import complete_models
from topoctl.errors import EXIT_BLOCKED, TopoctlError, one_line


class _CheckCommand(click.Command):
    """Everything after `--` is a launch command, kept apart from the file arguments."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            cut = args.index("--")
            ctx.meta["topoctl_launch_command"] = args[cut + 1:]
            args = args[:cut]
        return super().parse_args(ctx, args)


@click.command("check", cls=_CheckCommand)
@click.argument("files", nargs=-1, metavar="[PATH]... [-- COMMAND...]")
@target_options
@click.option("--expect", metavar="SNAPSHOT", help="The snapshot the launch was made for: report drift of the target from it.")
@click.option("--sglang-version", metavar="X.Y.Z", help="SGLang version to read flags with (default: the target's installed "
              "one, else the image tag's, else the one the Dynamo release pins, else the launch.env's, else the newest "
              "known; an assumed version is said on stderr).")
@click.option("--dynamo-version", metavar="X.Y.Z", help="ai-dynamo release that runs `python -m dynamo.sglang` launches "
              "(default: the image tag's, else the newest known).")
@click.option("--model", "model_name", metavar="NAME", shell_complete=complete_models,
              help="Built-in model profile the launch serves (optional).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "junit", "github", "sarif"]), default="text",
              show_default=True,
              help="text: for people; json: one result per launch with its findings; junit: JUnit XML, one test case "
                   "per finding; github: ::error/::warning annotations (file and line) for GitHub Actions; sarif: "
                   "SARIF 2.1.0 for code scanning (GitHub, GitLab).")
@click.option("--fail-on", type=click.Choice(["block", "warn"]), default="block", show_default=True,
              help="Exit 1 on blocking findings only, or on warnings too.")
@rules_options
@click.option("-o", "--output", metavar="FILE", help="Write the report to FILE atomically instead of stdout.")
@click.pass_context
def command(ctx, files, topology, system, fallback_system, expect, sglang_version, dynamo_version, model_name, fmt,
            fail_on, rules_dirs, disabled, output):
    """Check the launches in files and folders, or a launch command after `--`, against the target machine.

    \b
    Examples:
      topoctl check launch.env --topology machine.yaml
      topoctl check deploy/ --system h200-4x-nvswitch-vm --format github
      topoctl check deploy/*/launch.env --system h200-4x-nvswitch-vm --format junit -o check.xml
      topoctl check deploy/ --system h200-4x-nvswitch-vm --format sarif -o topoctl.sarif
      topoctl check --system rtx-pro-6000-8x-pcie -- python -m sglang.launch_server --model-path M --tp 8
      topoctl check --system h200-4x-nvswitch-vm -- sglang serve Qwen/Qwen3-8B --tp-size 4

    \b
    PATH: launch.env files, Kubernetes manifests (Pod, Deployment, StatefulSet,
    Job, LeaderWorkerSet, DynamoGraphDeployment, OME and KServe runtimes...),
    Docker Compose files, shell scripts, Dockerfiles, SkyPilot tasks, Helm
    charts, or folders of them (in folders: *.yaml, *.yml, *.sh, Dockerfile*,
    *launch*.env; a folder with Chart.yaml is a chart). Every launch found is
    reported with its file and line; a file with none is said so; a file that
    cannot be read is reported with the others, then exit 2.

    \b
    Launchers: python -m sglang.launch_server, sglang serve [MODEL],
    python -m dynamo.sglang, or the SGLang flags alone; wrapped in NAME=VALUE
    words, env, exec, nohup, numactl, taskset, timeout, stdbuf, srun, mpirun,
    uv run, bash -c '...', docker run / podman run. SGLang's --config FILE.yaml
    is read and merged the way the SGLang version does. A launch over several
    nodes (--nnodes, srun -N, LeaderWorkerSet size) is judged per node.

    \b
    Exit codes:
      0  clean (warnings alone too, unless --fail-on warn)
      1  a blocking finding (or a warning with --fail-on warn)
      2  bad usage or unreadable input (one line on stderr, with a hint)
      3  no target given (--topology, --system) and the probe sees no GPU here
         (--fallback-system NAME uses a built-in system instead)
    """
    from topoctl.autoconf.check import FORMATTERS, failing
    from topoctl.autoconf.target import target_gpu_count
    from topoctl.check import sources as sources_mod
    from topoctl.commands._options import load_rules_for, requested_version, require_value, target_version
    from topoctl.io import emit
    from topoctl.sglang import launchers
    from topoctl.snapshot import load_snapshot
    from topoctl.target import resolve_target

    command_tokens = ctx.meta.get("topoctl_launch_command")
    if not files and not command_tokens:
        raise TopoctlError("nothing to check", hint="give files or folders, or a launch command after `--`")
    require_value("--model", model_name, "name a built-in profile (kimi-k2.5, deepseek-v3, ...) or leave it out")
    require_value("--dynamo-version", dynamo_version, "give an ai-dynamo release such as 1.6.1, or leave it out")
    requested = requested_version(sglang_version)  # a bad version fails before the target is probed
    command_launch = None
    if command_tokens:
        from topoctl.limits import check_tokens

        check_tokens(list(command_tokens), "the command after --")
        try:
            command_launch = launchers.read_command(list(command_tokens))
        except launchers.Unsupported as error:
            raise TopoctlError(error.message, hint=error.hint) from None
        if not command_launch.args:
            raise TopoctlError("the command after `--` has no SGLang flags",
                               hint="e.g. -- python -m sglang.launch_server --model-path M --tp 8")
    snapshot = resolve_target(topology=topology, system=system, fallback_system=fallback_system)
    read_files = [(path, in_folder, *sources_mod.read_file(path, found_in_folder=in_folder))
                  for path, in_folder in sources_mod.expand_paths(list(files))]
    gpu_count = target_gpu_count(snapshot)
    expected = load_snapshot(expect) if expect else None
    ruleset = load_rules_for(rules_dirs, disabled)
    model = None
    if model_name:
        from topoctl.autoconf.models import profile

        model = profile(model_name)
    installed = target_version(snapshot, requested)
    chooser = _VersionChooser(installed, "--sglang-version" if requested else "the target's installed SGLang",
                              dynamo_version)

    entries: list = []  # a ParsedLaunch to judge, an Outcome already decided (no launch, an error), in file order
    for path, in_folder, kind, founds in read_files:
        for found in founds:
            entries.append(_entry(chooser, path, kind, found, in_folder))
    if command_launch is not None:
        entry = chooser.parse(command_launch, "<command>")
        if isinstance(entry, tuple):
            raise TopoctlError(entry[1], hint="topoctl checks SGLang's language-model server launches")
        entries.append(entry)
    outcomes = [_judged(entry, snapshot, ruleset, gpu_count, model, expected) for entry in entries]
    emit(FORMATTERS[fmt](outcomes, fail_on), output)
    for line in chooser.notes:  # after the report is written: a failed write is the only thing said
        click.echo(f"topoctl: note: {one_line(line)}", err=True)
    errors = [o for o in outcomes if o.error]
    if errors:  # every file was reported first; then the run is bad input (exit 2)
        raise TopoctlError(f"{len(errors)} of {len(outcomes)} file(s) or launch(es) could not be checked "
                           f"(first: {one_line(errors[0].origin)}: {one_line(errors[0].error)})",
                           hint="the report names each one; fix or remove them, the others were checked")
    return EXIT_BLOCKED if any(failing(o, fail_on) for o in outcomes) else 0


def _entry(chooser, path: str, kind: str, found, in_folder: bool):
    """What one found launch becomes before judging: a ParsedLaunch, or an Outcome (no launch, not checked). A
    file named on the command line that cannot be checked stops the run at once (exit 2); in a folder run it is
    reported with the others, and the run ends with exit 2."""
    from topoctl.autoconf.check import Outcome

    if kind == "unreadable" or found.kind == "unreadable":
        return Outcome(_label(found), error=found.none_reason)
    try:
        if kind == "launch.env":
            return chooser.env_file(path)
        if found.launch is not None:
            entry = chooser.parse(found.launch, _label(found))
            return Outcome(entry[0], skipped=entry[1]) if isinstance(entry, tuple) else entry
    except TopoctlError as error:  # one launch that cannot be read (a version without data) stops no other
        if not in_folder:
            raise
        return Outcome(_label(found), error=error.message + (f" ({error.hint})" if error.hint else ""))
    return Outcome(_label(found), skipped=found.none_reason)


def _judged(entry, snapshot, ruleset, gpu_count, model, expected):
    from topoctl.autoconf.check import Outcome, judge

    if isinstance(entry, Outcome):
        return entry
    try:
        return judge(entry, snapshot, entry.flags, ruleset, gpu_count, model=model, expect=expected)
    except TopoctlError as error:
        return Outcome(entry.origin, error=error.message)


def _label(found) -> str:
    """`file:line (what)`: the origin a report shows for a launch found in a file."""
    return f"{found.path}:{found.line}" + (f" ({found.label})" if found.label else "")


class _VersionChooser:
    """Which SGLang (and Dynamo) version reads each launch, and the stderr notes saying when one was assumed."""

    def __init__(self, installed: str | None, installed_source: str, dynamo_version: str | None) -> None:
        self.installed = installed
        self.installed_source = installed_source
        self.dynamo_version = dynamo_version
        self.notes: list[str] = []

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def env_file(self, path: str):
        from topoctl.commands._options import flag_set_for, requested_version
        from topoctl.sglang import launch as launch_mod

        def flags_for(metadata: dict[str, str], lines: dict[str, str] | None = None):
            if self.installed:
                return flag_set_for(self.installed)
            made_for = metadata.get("TOPOCTL_SGLANG_VERSION")
            if not made_for:
                flags = flag_set_for(None)
                self._note(f"{path}: SGLang {flags.version} assumed (no --sglang-version, no SGLang on the target, "
                           "no TOPOCTL_SGLANG_VERSION in the file): the newest with flag data")
                return flags
            try:
                return flag_set_for(requested_version(made_for))
            except TopoctlError as error:
                where = (lines or {}).get("TOPOCTL_SGLANG_VERSION")
                raise TopoctlError((f"{where}: " if where else "") + f"TOPOCTL_SGLANG_VERSION: {error.message}",
                                   hint=error.hint) from None

        parsed = launch_mod.parse_env_file(path, flags_for)
        parsed.launcher = "launch.env"
        return parsed

    def _dynamo(self, launch, where: str):
        from topoctl.sglang.launchers import image_dynamo_version
        from topoctl.sglang.prepare import load_dynamo

        if self.dynamo_version:
            return load_dynamo(self.dynamo_version), "--dynamo-version"
        tagged = image_dynamo_version(launch.image)
        if tagged:
            table = load_dynamo(tagged)
            self._note(f"{where}: ai-dynamo {tagged} from the image tag {launch.image}"
                       + (f" ({table.note})" if table.note else ""))
            return table, f"the image tag {launch.image}"
        table = load_dynamo(None)
        self._note(f"{where}: ai-dynamo {table.version} assumed (no --dynamo-version and no Dynamo image tag): "
                   "the newest with option data")
        return table, "assumed"

    def parse(self, launch, origin: str):
        from topoctl.commands._options import flag_set_for, requested_version
        from topoctl.sglang import launch as launch_mod
        from topoctl.sglang.launchers import image_sglang_version
        from topoctl.sglang.prepare import prepare

        where = launch.where or origin
        dynamo, dynamo_from_image = None, False
        if launch.launcher == "dynamo.sglang":
            dynamo, dynamo_source = self._dynamo(launch, where)
            dynamo_from_image = dynamo_source.startswith("the image tag")
        tagged = image_sglang_version(launch.image)
        explicit = self.installed is not None and self.installed_source == "--sglang-version"
        # A container runs the SGLang of its image, not the host's: an image tag (or the pin of a Dynamo image)
        # names the version that will read the flags, ahead of what the target has installed.
        dynamo_image_pin = (dynamo.sglang_pin if dynamo is not None and dynamo_from_image else None)
        if explicit:
            flags, source = flag_set_for(self.installed), self.installed_source
        elif tagged:
            version = requested_version(tagged)
            flags, source = flag_set_for(version), f"the image tag {launch.image}"
            self._note(f"{where}: SGLang {version} from the image tag {launch.image}"
                       + (f" (the target has {self.installed} installed; the container runs its image's)"
                          if self.installed and self.installed != version else ""))
        elif dynamo is not None and dynamo_image_pin:
            version = requested_version(dynamo_image_pin)
            flags, source = flag_set_for(version), f"pinned by ai-dynamo {dynamo.version}"
            self._note(f"{where}: SGLang {version}, the version ai-dynamo {dynamo.version} pins (its wheel's "
                       "Requires-Dist, extra sglang), which the image runs")
        elif self.installed:
            flags, source = flag_set_for(self.installed), self.installed_source
        elif dynamo is not None and dynamo.sglang_pin:
            version = requested_version(dynamo.sglang_pin)
            flags, source = flag_set_for(version), f"pinned by ai-dynamo {dynamo.version}"
            self._note(f"{where}: SGLang {version}, the version ai-dynamo {dynamo.version} pins (its wheel's "
                       "Requires-Dist, extra sglang)")
        else:
            flags, source = flag_set_for(None), "assumed"
            self._note(f"{where}: SGLang {flags.version} assumed (no --sglang-version, no SGLang on the target, no "
                       "version in an image tag): the newest with flag data")
        parsed = launch_mod.ParsedLaunch(origin=origin, launcher=launch.launcher, image=launch.image,
                                         gpus=launch.gpus, where=launch.where, version_source=source,
                                         nodes=launch.nodes)
        _said_problems(parsed, launch, flags, source, self._note)
        for name, value in sorted(launch.env.items()):
            launch_mod.apply_env(parsed, name, value, launch.env_where.get(name, ""))
        prepared = prepare(launch, flags, dynamo)
        if prepared.not_checked:
            return (origin, prepared.not_checked)
        parsed.problems.extend(prepared.problems)
        args, wheres, from_config = _drop_unresolved(prepared, launch, parsed, flags)
        launch_mod.parse_args(args, flags, parsed, where=launch.where, where_of=wheres, from_config=from_config)
        if launch.where:
            parsed.lines["SGLANG_ARGS"] = launch.where
        _gpu_problems(parsed, launch)
        return parsed


_WHOLE_EXPANSION = ("$@", "$*", '"$@"')
# Variables a scheduler gives every process it starts: LeaderWorkerSet (LWS_LEADER_ADDRESS, LWS_WORKER_INDEX,
# LWS_GROUP_SIZE), Slurm (SLURM_NODEID, SLURM_NNODES...), SkyPilot (SKYPILOT_NODE_RANK, SKYPILOT_NODE_IPS),
# Open MPI / PMI ranks.
_SCHEDULER_VALUE = __import__("re").compile(r"\$.*?\b(LWS|SLURM|SKYPILOT|OMPI_COMM_WORLD|PMI|PMIX)_")


def _judged_env(name: str) -> bool:
    """Environment variables whose value check judges (NCCL, CUDA, SGLang, torch, the settings table); an
    unknown HF_TOKEN or a mount path is not worth a warning."""
    from topoctl.sglang import spelling

    return name.startswith(("NCCL_", "CUDA_", "SGLANG_", "TORCH_", "NVSHMEM_", "PYTORCH_")) \
        or name in spelling.env_names()


def _said_problems(parsed, launch, flags, source: str, note) -> None:
    """What the reader of a launch should know before its findings: parts of the file that were skipped, and a
    floating image tag with the version assumed for it and why."""
    from topoctl.sglang.launch import Problem
    from topoctl.sglang.launchers import floating_tag

    for text in launch.notes:
        parsed.problems.append(Problem("skipped" if text.startswith(("skipped", "not rendered")) else "note", "info",
                                       text, "", launch.where))
    why = floating_tag(launch.image)
    if why is not None:
        text = (f"image {launch.image}: {why}; judged as SGLang {flags.version} ({source}), which may not be what "
                "it pulls")
        parsed.problems.append(Problem("floating-image-tag", "info", text,
                                       "pin the image to a release tag (lmsysorg/sglang:v0.5.21-cu129), or pass "
                                       "--sglang-version", launch.where))
        note(f"{launch.where or parsed.origin}: {text}")


def _drop_unresolved(prepared, launch, parsed, flags):
    """Words that are a whole shell/Kubernetes expansion topoctl cannot resolve ($EXTRA_ARGS, "$@") are left
    out (a warning names them): what they hold is not known here."""
    import re

    from topoctl.sglang.launch import Problem

    whole = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\([A-Za-z_][A-Za-z0-9_]*\)|\$[@*]")
    args, wheres, config = [], [], set()
    unknown_words = {u for u in launch.unresolved if u.startswith("$")}
    named: list[str] = []  # each unknown as the reader should see it: "--tp-size from $1", "$EXTRA_ARGS"
    for index, word in enumerate(prepared.args):
        previous = flags.resolve(args[-1]) if args and args[-1].startswith("-") else None
        takes_value = previous is not None and previous.ok and previous.value is None and \
            bool((flags.get(previous.option or "") or {}).get("takes_value"))
        if word in _WHOLE_EXPANSION or whole.fullmatch(word) or (word.startswith("$") and word in unknown_words):
            if not takes_value:  # a value of the flag before it stays (its value is unknown, not checked)
                named.append(word)
                continue
        if "$" in word:
            named.append(f"{args[-1].split('=', 1)[0]} from {word}" if takes_value else word)
        if index in prepared.from_config:
            config.add(len(args))
        args.append(word)
        wheres.append(prepared.where_of[index] if index < len(prepared.where_of) else launch.where)
    named += [f"{name}={value}" for name, value in sorted(launch.env.items())
              if "$" in value and _judged_env(name) and any(u in value for u in launch.unresolved)]
    scheduled = [item for item in dict.fromkeys(named) if _SCHEDULER_VALUE.search(item)]
    others = [item for item in dict.fromkeys(named) if item not in scheduled]
    if others:
        parsed.problems.append(Problem(
            "unresolved-expansion", "warn", f"{', '.join(others)}: not set in what topoctl reads, so not checked",
            "write the value in the file, or check the launch as it is run (topoctl check -- COMMAND)", launch.where))
    if scheduled:  # LeaderWorkerSet, Slurm and MPI set these on each node: a value per node, not a mistake
        parsed.problems.append(Problem(
            "scheduler-value", "info", f"{', '.join(scheduled)}: set on each node by the scheduler, not checked",
            "", launch.where))
    return args, wheres, config


def _gpu_problems(parsed, launch) -> None:
    """A TP size above the GPUs the launch is given (docker --gpus, nvidia.com/gpu) cannot start: SGLang puts
    rank i on GPU i of those it sees; over several nodes, the ranks of one node on that node's GPUs."""
    from topoctl.autoconf.nodes import node_span
    from topoctl.sglang.launch import Problem

    gpus = launch.gpus
    visible = gpus.visible() if gpus is not None else None
    tp = parsed.settings.get("tp_size")
    if visible is None or not isinstance(tp, int) or isinstance(tp, bool) or tp < 1:
        return
    span = node_span(parsed, tp, 1, visible)
    if span.tp_per_node > visible and not span.assumed:
        over = "" if span.nodes == 1 else f" over {span.nodes} nodes places {span.tp_per_node} ranks on each node; it"
        parsed.problems.append(Problem(
            "tp-exceeds-given-gpus", "block",
            f"--tp-size {tp}{over} needs {span.tp_per_node} GPUs; the launch is given {visible} ({gpus.source}); "
            "the server fails when a rank finds no GPU",
            f"give the launch {span.tp_per_node} GPUs, or lower --tp-size to {visible * (span.nodes or 1)}",
            launch.where))
