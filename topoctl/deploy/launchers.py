"""Reading the command that starts SGLang, whatever wraps it, without running anything.

A launch command is a list of words (a shell would have split it). `read_command` peels what wraps
the server and keeps what the server will see:

* environment assignments before the command (`NCCL_DEBUG=INFO python ...`), `env [-i] [-u NAME]
  NAME=VALUE`, `exec`, `bash -c 'SCRIPT'` / `sh -c` (the script's last launch line counts, see
  `read_script`);
* `docker run` / `podman run` (`container run` too): the options are skipped, `-e NAME=VALUE` /
  `--env` and `--env-file FILE` are the launch's environment, `--gpus all|N|device=0,1` (and
  podman's `--device nvidia.com/gpu=...`) the GPU set, the image is kept (its tag may name the
  SGLang version), the words after the image are the container's command (`--entrypoint` is its
  first word);
* the launcher: `python -m sglang.launch_server` (python, python3, python3.11 or a path to one,
  interpreter switches before -m), `sglang serve` (the console script, or a path to it), `python -m
  dynamo.sglang` (NVIDIA Dynamo's SGLang worker), or SGLang's flags alone.

What a launcher does with its arguments depends on the version that runs it (`sglang serve MODEL`
from SGLang 0.5.16, Dynamo's own options...): that is `topoctl.deploy.launcher_args`. A known
launcher of another server (vLLM, TensorRT-LLM) is `Unsupported`, anything else `NotALaunch`.

Layer: deployment reading (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from topoctl.core.errors import TopoctlError
from topoctl.core.safe_read import split_words

if TYPE_CHECKING:
    from topoctl.deploy.shell import Command

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_PYTHON_RE = re.compile(r"python(\d+(\.\d+)*)?\Z")
_PYTHON_OPTIONS_WITH_VALUE = ("-X", "-W", "-Q")
_SHELLS = ("bash", "sh", "dash", "zsh", "ash")

# Servers topoctl knows by name but does not check: (program or module prefix, what to call it).
_OTHER_SERVERS_PROGRAMS = {
    "vllm": "vLLM",
    "trtllm-serve": "TensorRT-LLM",
    "trtllm-llmapi-launch": "TensorRT-LLM",
    "tritonserver": "Triton Inference Server",
    "text-generation-launcher": "TGI",
    "lmdeploy": "LMDeploy",
    "ollama": "Ollama",
}
_OTHER_SERVERS_MODULES = {
    "vllm": "vLLM",
    "tensorrt_llm": "TensorRT-LLM",
    "lmdeploy": "LMDeploy",
    "dynamo.vllm": "Dynamo's vLLM worker",
    "dynamo.trtllm": "Dynamo's TensorRT-LLM worker",
}

# docker/podman run options that take a value as the next word (`--name x`); everything else that
# starts with `-` is a switch (`--rm`, `-it`) or carries its value after `=`.
_CONTAINER_VALUE_OPTIONS = frozenset(
    """
-a --attach --add-host --annotation --blkio-weight --blkio-weight-device -c --cpu-shares --cap-add --cap-drop
--cgroup-parent --cgroupns --cgroup-conf --cidfile --cpu-period --cpu-quota --cpu-rt-period --cpu-rt-runtime
--cpus --cpuset-cpus --cpuset-mems --device --device-cgroup-rule --device-read-bps --device-read-iops
--device-write-bps --device-write-iops --dns --dns-option --dns-search --domainname --entrypoint -e --env
--env-file --expose --gpus --group-add --health-cmd --health-interval --health-retries --health-start-period
--health-timeout -h --hostname --ip --ip6 --ipc --isolation --kernel-memory -l --label --label-file --link
--link-local-ip --log-driver --log-opt --mac-address -m --memory --memory-reservation --memory-swap
--memory-swappiness --mount --name --network --net --network-alias --oom-score-adj --pid --pids-limit
--platform --pull -p --publish --restart --runtime --security-opt --shm-size --stop-signal --stop-timeout
--storage-opt --sysctl --tmpfs -u --user --ulimit --userns --uts -v --volume --volume-driver --volumes-from
-w --workdir --arch --os --variant --pod --secret --hooks-dir --uidmap --gidmap --subuidname --subgidname
--init-path --conmon-pidfile --sdnotify --seccomp-policy --timeout --umask --chrootdirs --preserve-fds
--requires --passwd-entry --personality --rdt-class --cgroups --image-volume --log-level
""".split()
)


@dataclass(frozen=True)
class GpuSet:
    """The GPUs a launch is given by what starts it: None for count/ids means "all of the target's".
    Frozen like the Launch that holds it: a later `--device` makes a new one."""

    count: int | None = None
    ids: list[str] | None = None
    source: str = ""  # how it was written, e.g. "docker run --gpus device=0,1"

    def visible(self) -> int | None:
        if self.ids is not None:
            return len(self.ids)
        return self.count


@dataclass(frozen=True)
class Nodes:
    """How many nodes a launch spans, as what starts it says (srun -N, torchrun --nnodes, a
    LeaderWorkerSet's size, Dynamo's multinode.nodeCount); None: several, how many is set elsewhere.
    Frozen like the Launch."""

    count: int | None
    source: str  # how it was written, e.g. "srun -N 2 (run.sh:12)"


@dataclass(frozen=True)
class Launch:
    """One launch as its launcher will start it, before the SGLang version reads the arguments.
    Frozen: what the reading found is what every later stage sees; a stage that adds to it makes a
    new one (dataclasses.replace). The reading itself builds a `_LaunchDraft` step by step and
    freezes it once."""

    launcher: str  # "sglang.launch_server" | "sglang serve" | "dynamo.sglang" | "flags"
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    env_where: dict[str, str] = field(default_factory=dict)  # NAME -> "file:line"
    gpus: GpuSet | None = None
    image: str | None = None
    where: str = ""  # "file:line" of the launch (empty for a command line)
    base_dir: str = "."  # where relative paths of the launch (--config, --env-file) are looked up
    notes: list[str] = field(default_factory=list)  # what was read that a reader may want to know
    unresolved: list[str] = field(
        default_factory=list
    )  # words a shell would expand that topoctl cannot see
    arg_where: list[str] | None = (
        None  # per word of args: "file:line" where it was written (manifests)
    )
    nodes: Nodes | None = (
        # the nodes a launcher or scheduler spans it over (None: not said outside SGLang's flags)
        None
    )
    mounts: dict[str, str] = field(
        default_factory=dict
    )  # mount path -> ConfigMap name (Kubernetes volumes)
    files: dict[str, tuple[str, str, int]] = field(
        default_factory=dict
    )  # path -> (text, file, first line): files
    # the launch sees that live inside the manifest (a ConfigMap's key), read instead of the disk


class _LaunchDraft:
    """A launch while its command is read: the wrappers peeled one by one (env, docker run, srun...)
    each add to it, so it is mutable; `freeze` makes the `Launch` the rest of topoctl sees. The
    fields are Launch's; a plain class with slots, not a dataclass, so that it adds no generated
    code to the import of every check."""

    __slots__ = (
        "launcher",
        "args",
        "env",
        "env_where",
        "gpus",
        "image",
        "where",
        "base_dir",
        "notes",
        "unresolved",
        "arg_where",
        "nodes",
        "mounts",
        "files",
    )

    def __init__(
        self,
        launcher: str,
        where: str = "",
        base_dir: str = ".",
        env: dict[str, str] | None = None,
        env_where: dict[str, str] | None = None,
    ) -> None:
        self.launcher = launcher
        self.args: list[str] = []
        self.env: dict[str, str] = {} if env is None else env
        self.env_where: dict[str, str] = {} if env_where is None else env_where
        self.gpus: GpuSet | None = None
        self.image: str | None = None
        self.where = where
        self.base_dir = base_dir
        self.notes: list[str] = []
        self.unresolved: list[str] = []
        self.arg_where: list[str] | None = None
        self.nodes: Nodes | None = None
        self.mounts: dict[str, str] = {}
        self.files: dict[str, tuple[str, str, int]] = {}

    @classmethod
    def thaw(cls, launch: Launch) -> _LaunchDraft:
        """A draft that starts from a caller's launch (a container's env and image), its lists and
        dicts copied so that reading on never changes the frozen one."""
        draft = cls(
            launch.launcher, launch.where, launch.base_dir, dict(launch.env), dict(launch.env_where)
        )
        draft.args, draft.gpus, draft.image = list(launch.args), launch.gpus, launch.image
        draft.notes, draft.unresolved = list(launch.notes), list(launch.unresolved)
        draft.arg_where = None if launch.arg_where is None else list(launch.arg_where)
        draft.nodes, draft.mounts, draft.files = (
            launch.nodes,
            dict(launch.mounts),
            dict(launch.files),
        )
        return draft

    def freeze(self) -> Launch:
        """The launch as read; the draft is not used after."""
        return Launch(
            self.launcher,
            self.args,
            self.env,
            self.env_where,
            self.gpus,
            self.image,
            self.where,
            self.base_dir,
            self.notes,
            self.unresolved,
            self.arg_where,
            self.nodes,
            self.mounts,
            self.files,
        )


class NotALaunch(TopoctlError):
    """The command does not start a server topoctl knows."""


class Unsupported(TopoctlError):
    """The command starts another server (vLLM, TensorRT-LLM...): named, not checked."""

    def __init__(self, server: str, shown: str) -> None:
        super().__init__(
            f"{server} launch ({shown}): topoctl checks SGLang launches only; not checked",
            hint="topoctl reads python -m sglang.launch_server, sglang serve and python -m "
            "dynamo.sglang",
        )
        self.server = server


def _shown(tokens: list[str]) -> str:
    return " ".join(tokens[:3]) + (" ..." if len(tokens) > 3 else "")


def _not_sglang(tokens: list[str]) -> NotALaunch:
    return NotALaunch(
        "not an SGLang launch (python -m sglang.launch_server / sglang serve ...): "
        f"{_shown(tokens)}",
        hint="after `--` give [NAME=VALUE...] python -m sglang.launch_server ARGS, sglang serve "
        "ARGS, python -m dynamo.sglang ARGS, docker run ... IMAGE python3 -m "
        "sglang.launch_server ARGS, or the SGLang flags alone (--tp-size 8 ...)",
    )


def parse_gpus(value: str, how: str) -> GpuSet:
    """docker's `--gpus` value: all, a count, or device=0,1 (quotes as docker's CSV reader allows)."""
    text = value.strip().strip("'\"")
    fields = [f.strip().strip("'\"") for f in re.split(r",(?=[a-z_]+=)", text)]
    count: int | None = None
    ids: list[str] | None = None
    for item in fields:
        if item == "all":
            count = None
        elif item.isdigit():
            count = int(item)
        elif item.startswith("count="):
            number = item.split("=", 1)[1]
            count = None if number == "all" else int(number) if number.isdigit() else None
        elif item.startswith("device="):
            ids = [d.strip() for d in item.split("=", 1)[1].split(",") if d.strip()]
    return GpuSet(count=count, ids=ids, source=how)


def read_docker_env_file(path: str) -> list[tuple[int, str, str]]:
    """docker's --env-file format: NAME=VALUE per line as written (no quote removal), `#` comments;
    a bare NAME takes the host's value (unknown here, left out)."""
    from topoctl.core import safe_read as limits

    out = []
    hint = "give the path relative to the file that names it, or to the current folder"
    try:  # bounded like a launch.env (an env file of /dev/zero ends, and one line says so)
        raw = limits.read_file(path, limits.MAX_LAUNCH_ENV_BYTES)
    except OSError as exc:
        raise TopoctlError(
            f"cannot read --env-file {path}: {exc.strerror or exc}", hint=hint
        ) from None
    lines = limits.decode(raw, f"env file {path}", hint="save it as UTF-8 text").splitlines()
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#") or "=" not in text:
            continue
        name, _, value = text.partition("=")
        if NAME_RE.match(name.strip()):
            out.append((number, name.strip(), value))
    return out


def _resolve_path(path: str, base_dir: str) -> str:
    if os.path.isabs(path):
        return path
    beside = os.path.join(base_dir, path)
    return beside if os.path.exists(beside) or not os.path.exists(path) else path


def _container_option(name: str, value: str, launch: _LaunchDraft, program: str) -> None:
    """What one `docker run` option gives the launch: environment (-e, --env-file) or GPUs (--gpus,
    --device)."""
    if name in ("-e", "--env"):
        key, eq, val = value.partition("=")
        if eq and NAME_RE.match(key):
            launch.env[key] = val
            launch.env_where[key] = (
                f"{program} run -e ({launch.where})" if launch.where else f"{program} run -e"
            )
    elif name == "--env-file":
        path = _resolve_path(value, launch.base_dir)
        for number, key, val in read_docker_env_file(path):
            launch.env[key] = val
            launch.env_where[key] = f"{path}:{number}"
    elif name == "--gpus":
        launch.gpus = parse_gpus(value, f"{program} run --gpus {value}")
    elif name == "--device" and value.startswith("nvidia.com/gpu="):
        wanted = value.split("=", 1)[1]
        previous = launch.gpus.ids if launch.gpus and launch.gpus.ids is not None else []
        launch.gpus = GpuSet(
            ids=None if wanted == "all" else [*previous, wanted],
            source=f"{program} run --device {value}",
        )


def _container(tokens: list[str], launch: _LaunchDraft, program: str) -> list[str]:
    """Skip `docker run` options, keeping env, GPUs and the image; return the container's command
    words."""
    position = 0
    entrypoint: list[str] = []
    while position < len(tokens):
        token = tokens[position]
        if token == "--":
            position += 1
            break
        if not token.startswith("-") or token == "-":
            break
        name, has_value, inline = token.partition("=")
        if (
            not token.startswith("--") and len(token) > 2 and token[1] in "ev"
        ):  # -eNAME=VALUE, -v/x:/y together
            name, has_value, inline = token[:2], "=", token[2:]
        if not has_value and name in _CONTAINER_VALUE_OPTIONS:
            if position + 1 >= len(tokens):
                raise NotALaunch(
                    f"{program} run: {name} expects a value", hint="complete the command"
                )
            value = tokens[position + 1]
            position += 2
        else:
            value = inline
            position += 1
        if name == "--entrypoint":
            entrypoint = split_words(value, f"{program} run --entrypoint") if value else []
        else:
            _container_option(name, value, launch, program)
    if position >= len(tokens):
        raise NotALaunch(
            f"{program} run: no image named", hint="docker run [OPTIONS] IMAGE [COMMAND] [ARG...]"
        )
    launch.image = tokens[position]
    command = entrypoint + tokens[position + 1 :]
    if not command:
        raise NotALaunch(
            f"{program} run {launch.image}: no command after the image (the image's own default "
            "command is not visible here)",
            hint="write the launch command after the image",
        )
    return command


def _split_env_words(tokens: list[str], launch: _LaunchDraft) -> list[str]:
    position = 0
    while position < len(tokens):
        token = tokens[position]
        if "=" in token and NAME_RE.match(token.split("=", 1)[0]):
            name, _, value = token.partition("=")
            launch.env[name] = value
            if launch.where:
                launch.env_where[name] = launch.where
            position += 1
            continue
        break
    return tokens[position:]


# Programs that run the command after their own options, as their manuals give them: (options that
# take the next word as their value, how many plain words come before the command). An option
# written `--name=value` or `-Xvalue` carries its value; any other word starting with `-` is a
# switch.
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "numactl": (
        frozenset(
            "-N --cpunodebind -m --membind -C --physcpubind -i --interleave -p --preferred "
            "-P --preferred-many -w --weighted-interleave".split()
        ),
        0,
    ),
    "taskset": (frozenset(), 1),  # taskset [-a] [-c] MASK|LIST COMMAND
    "timeout": (
        frozenset("-s --signal -k --kill-after".split()),
        1,
    ),  # timeout [OPTIONS] DURATION COMMAND
    "stdbuf": (frozenset("-i -o -e --input --output --error".split()), 0),
    "nice": (frozenset("-n --adjustment".split()), 0),
    "ionice": (frozenset("-c --class -n --classdata -p -P -u".split()), 0),
    "chrt": (frozenset(), 1),
    "sudo": (
        frozenset(
            "-u --user -g --group -h --host -p --prompt -C --close-from -D --chdir -r -t -U".split()
        ),
        0,
    ),
    "srun": (
        frozenset(
            "-N --nodes -n --ntasks --ntasks-per-node -c --cpus-per-task --gres -G --gpus "
            "--gpus-per-node --gpus-per-task -p --partition -J --job-name -o --output -e --error "
            "-t --time -w --nodelist -x --exclude --mpi --container-image --container-mounts "
            "--container-name --container-workdir --container-env --export --mem --mem-per-gpu "
            "--cpu-bind -m --distribution -A --account -q --qos -D --chdir --het-group -r "
            "--relative --reservation --network --ntasks-per-gpu --cpus-per-gpu --mem-per-cpu -K "
            "--kill-on-bad-exit -W --wait".split()
        ),
        0,
    ),
    "mpirun": (
        frozenset(
            "-np -n -c -N -npernode --npernode -H --host -hostfile --hostfile -machinefile "
            "--machinefile -x --map-by --bind-to --rank-by -wdir --wdir -ppn -hosts -f "
            "--prefix".split()
        ),
        0,
    ),
    "torchrun": (
        frozenset(
            "--nnodes --nproc-per-node --nproc_per_node --node-rank --node_rank --master-addr "
            "--master_addr --master-port --master_port --rdzv-backend --rdzv_backend "
            "--rdzv-endpoint --rdzv_endpoint --rdzv-id --rdzv_id --rdzv-conf --max-restarts "
            "--monitor-interval --log-dir --redirects --tee --local-addr".split()
        ),
        0,
    ),
    "nsys": (
        frozenset("-o --output -t --trace -s --sample -d --duration --delay -y".split()),
        1,
    ),  # nsys profile
    "xvfb-run": (frozenset("-a -n -s".split()), 0),
}
_WRAPPERS["mpiexec"] = _WRAPPERS["mpirun"]
_NODE_OPTIONS = {"srun": ("-N", "--nodes"), "torchrun": ("--nnodes",)}
_TWO_VALUE_OPTIONS = {
    "mpirun": ("-mca", "--mca", "-genv", "-env"),
    "mpiexec": ("-mca", "--mca", "-genv", "-env"),
}


def _peel_wrapper(rest: list[str], launch: _LaunchDraft) -> list[str] | None:
    """The words after a wrapper's own options (`numactl --interleave=all python ...` -> `python
    ...`), or None when `rest` does not start with a wrapper. `srun -N 2` and `torchrun --nnodes 2`
    say the nodes."""
    program = rest[0].rsplit("/", 1)[-1]
    if program == "uv" and rest[1:2] == ["run"]:
        return _skip_options(
            rest[2:],
            frozenset(
                "--with --python -p --project --directory --package --extra "
                "--group --env-file --index --index-url -w --script".split()
            ),
            0,
        )
    if program == "conda" and rest[1:2] == ["run"]:
        return _skip_options(rest[2:], frozenset("-n --name -p --prefix --cwd".split()), 0)
    if program == "nsys" and rest[1:2] == ["profile"]:
        return _skip_options(rest[2:], _WRAPPERS["nsys"][0], 0)
    if program not in _WRAPPERS:
        return None
    options, positional = _WRAPPERS[program]
    for name, value in _option_values(rest[1:], options, program):
        if name in _NODE_OPTIONS.get(program, ()):
            count = value.split(":")[-1]  # torchrun --nnodes 1:4 (elastic): the most
            launch.nodes = Nodes(
                int(count) if count.isdigit() else None,
                f"{program} {name} {value}" + (f" ({launch.where})" if launch.where else ""),
            )
        elif program in ("mpirun", "mpiexec") and name == "-x" and "=" in value:
            key, _, val = value.partition("=")
            launch.env[key] = val
    return _skip_options(rest[1:], options, positional, _TWO_VALUE_OPTIONS.get(program, ()))


def _option_values(
    words: list[str], options: frozenset[str], program: str
) -> list[tuple[str, str]]:
    """(option, value) pairs a wrapper is given before its command."""
    out = []
    position = 0
    while position < len(words) and words[position].startswith("-") and words[position] != "--":
        name, eq, value = words[position].partition("=")
        if not eq and name in options and position + 1 < len(words):
            value = words[position + 1]
            position += 1
        elif not eq and not name.startswith("--") and len(name) > 2 and name[:2] in options:
            name, value = name[:2], name[2:]  # srun -N2
        out.append((name, value))
        position += 1
    return out


def _skip_options(
    words: list[str], options: frozenset[str], positional: int, two_values: tuple[str, ...] = ()
) -> list[str]:
    position = 0
    while position < len(words) and words[position].startswith("-") and len(words[position]) > 1:
        word = words[position]
        position += 1
        if word == "--":
            break
        if word in two_values:
            position += 2
        elif "=" not in word and word in options:
            position += 1
    return words[position + positional :]


def read_command(
    tokens: list[str],
    *,
    where: str = "",
    base_dir: str = ".",
    launch: Launch | None = None,
    env: dict[str, str] | None = None,
    depth: int = 0,
) -> Launch:
    """The launch a command line starts; NotALaunch / Unsupported (both TopoctlError) when it is
    none. `launch` is what the caller already knows of it (a container's env, GPUs, image); it is
    read on, not changed."""
    draft = (
        _LaunchDraft.thaw(launch)
        if launch is not None
        else _LaunchDraft(launcher="", where=where, base_dir=base_dir)
    )
    found = _read_draft(tokens, draft, where, base_dir, env, depth)
    return found if isinstance(found, Launch) else found.freeze()


def _read_draft(
    tokens: list[str],
    launch: _LaunchDraft,
    where: str,
    base_dir: str,
    env: dict[str, str] | None,
    depth: int,
) -> _LaunchDraft | Launch:
    """`launch` read on to the launcher, or the launch of a `bash -c` script inside the command
    (frozen)."""
    if env:
        for name, value in env.items():
            launch.env.setdefault(name, value)
    rest = list(tokens)
    while True:
        rest = _split_env_words(rest, launch)
        if not rest:
            raise NotALaunch(
                "no command after the environment assignments",
                hint="e.g. NCCL_DEBUG=INFO python -m sglang.launch_server --model-path M "
                "--tp-size 8",
            )
        step = _unwrap(rest, launch, where, base_dir, depth)
        if isinstance(step, Launch):
            return step
        if step is None:
            return _launcher(rest, launch)
        rest = step


def _unwrap(
    rest: list[str], launch: _LaunchDraft, where: str, base_dir: str, depth: int
) -> list[str] | Launch | None:
    """One layer around the server peeled: the words inside it, the launch of a `bash -c` script, or
    None when `rest` starts with the launcher itself."""
    program = rest[0].rsplit("/", 1)[-1]
    if program == "env":
        return _env_program(rest[1:], launch)
    if program in ("exec", "nohup", "time", "command", "builtin"):
        rest = rest[1:]
        while program in ("exec", "time") and rest and rest[0].startswith("-"):
            rest = rest[2:] if rest[0] == "-a" else rest[1:]
        return rest
    peeled = _peel_wrapper(rest, launch)
    if peeled is not None:
        return peeled
    if program in _SHELLS:
        return _shell_command(rest, program, launch, where, base_dir, depth)
    if program in ("docker", "podman", "nerdctl") and len(rest) >= 2 and rest[1] == "run":
        return _container(rest[2:], launch, program)
    if (
        program in ("docker", "podman")
        and len(rest) >= 3
        and rest[1] == "container"
        and rest[2] == "run"
    ):
        return _container(rest[3:], launch, program)
    return None


def _env_program(rest: list[str], launch: _LaunchDraft) -> list[str]:
    """`env [-i] [-u NAME] ...`: the words after env's options, its changes made to the launch's
    environment."""
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        if option in ("-i", "--ignore-environment", "-"):
            launch.env.clear()
        elif option in ("-u", "--unset") and rest:
            launch.env.pop(rest.pop(0), None)
        elif option.startswith("--unset="):
            launch.env.pop(option.split("=", 1)[1], None)
        elif option == "--":
            break
    return rest


def _shell_command(
    rest: list[str], program: str, launch: _LaunchDraft, where: str, base_dir: str, depth: int
) -> Launch:
    """`bash -c 'SCRIPT'`: the script's last launch."""
    index, script_at = 1, None
    while index < len(rest) and rest[index].startswith("-"):
        if re.fullmatch(r"-[a-z]*c[a-z]*", rest[index]):
            script_at = index + 1
        index += 2 if rest[index] == "-o" else 1
    if script_at is None:
        raise NotALaunch(
            f"{program} running a script file ({_shown(rest)}): pass the script itself to check it",
            hint="topoctl check SCRIPT.sh reads the launch in it",
        )
    if index >= len(rest):
        raise NotALaunch(f"{program} -c: no script", hint="give the script after -c")
    if depth > 4:
        raise NotALaunch("shells nested too deep", hint="write the launch command directly")
    found = read_script(
        rest[index],
        origin=where or "<command>",
        base_dir=base_dir,
        inherit=launch.freeze(),
        depth=depth + 1,
        report_line=False,
    )
    if not found:
        raise NotALaunch(
            f"{program} -c: no launch in the script", hint="the script should hold the launch"
        )
    return found[-1]


def _launcher(rest: list[str], launch: _LaunchDraft) -> _LaunchDraft:
    """The launcher and the words it hands on: SGLang's flags alone, `sglang serve`, `python -m
    ...`."""
    program = rest[0].rsplit("/", 1)[-1]
    if rest[0].startswith("-"):
        launch.launcher, launch.args = "flags", rest
        return launch
    if program == "sglang":
        if len(rest) >= 2 and rest[1] == "serve":
            launch.launcher, launch.args = "sglang serve", rest[2:]
            return launch
        raise _not_sglang(rest)
    if program in _OTHER_SERVERS_PROGRAMS:
        raise Unsupported(_OTHER_SERVERS_PROGRAMS[program], _shown(rest))
    if _PYTHON_RE.match(program):
        return _python_module(rest, launch)
    raise _not_sglang(rest)


def _python_target(rest: list[str]) -> tuple[str | None, int]:
    """The module of `python [switches] -m MODULE` (or `-mMODULE`) and where its arguments start."""
    index = 1
    while index < len(rest) and rest[index].startswith("-") and not rest[index].startswith("-m"):
        index += 2 if rest[index] in _PYTHON_OPTIONS_WITH_VALUE else 1
    if index >= len(rest):
        return None, index
    if rest[index] == "-m":
        return (rest[index + 1] if index + 1 < len(rest) else None), index + 2
    return (rest[index][2:] if rest[index].startswith("-m") else None), index + 1


def _python_module(rest: list[str], launch: _LaunchDraft) -> _LaunchDraft:
    """`python [switches] -m MODULE ARGS`: SGLang's server or Dynamo's SGLang worker."""
    module, start = _python_target(rest)
    if module in ("sglang.launch_server", "dynamo.sglang"):
        launch.launcher, launch.args = str(module), rest[start:]
        return launch
    if module == "dynamo.frontend":
        raise NotALaunch(
            "Dynamo's frontend (python -m dynamo.frontend): it routes requests and starts no "
            "engine; the workers (python -m dynamo.sglang) are checked",
            hint="check the files that hold the workers",
        )
    for prefix, server in _OTHER_SERVERS_MODULES.items():
        if module and (module == prefix or module.startswith(prefix + ".")):
            raise Unsupported(server, _shown(rest))
    raise _not_sglang(rest)


# -----------------------------------------------------------------------------------------------
# shell scripts

_EXPANSION_RE = re.compile(
    r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-=]([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)"
    r"|\$\(([A-Za-z_][A-Za-z0-9_]*)\)"
)


def expand(
    text: str,
    variables: dict[str, str],
    unresolved: list[str],
    kubernetes: bool = False,
    compose: bool = False,
) -> str:
    """Variables in `text` the way its reader expands them: a shell's $NAME, ${NAME},
    ${NAME:-default}; Kubernetes' $(NAME) only (a $NAME in a manifest reaches the program as
    written); compose's shell-like forms with $$ for a literal $. What is not known stays as written
    and is listed in `unresolved`."""
    if compose:
        parts = text.split("$$")
        return "$".join(expand(part, variables, unresolved) for part in parts)

    def replace(match: re.Match[str]) -> str:
        if kubernetes != (match.group(4) is not None):
            return match.group(0)
        name = match.group(4) if kubernetes else (match.group(1) or match.group(3))
        if name in variables:
            return variables[name]
        if match.group(2) is not None:
            return match.group(2)
        unresolved.append(match.group(0))
        return match.group(0)

    return _EXPANSION_RE.sub(replace, text)


def read_script(
    text: str,
    *,
    origin: str,
    base_dir: str = ".",
    inherit: Launch | None = None,
    depth: int = 0,
    line_offset: int = 0,
    report_line: bool = True,
) -> list[Launch]:
    """Every launch in a shell script (topoctl/deploy/shell.py reads it with bash's grammar), each
    with the variables exported before it: a plain `NAME=value` is a shell variable, seen in
    expansions but not by the server; a launch's own `NAME=value` words are its environment. Every
    branch is read, functions at their calls."""
    from topoctl.core.safe_read import MAX_EXPANSION_CHARS, MAX_LAUNCHES_PER_FILE, LimitError
    from topoctl.deploy import shell

    try:
        commands = shell.commands(
            text,
            origin=origin,
            line_offset=line_offset,
            max_chars=MAX_EXPANSION_CHARS,
            inherit_env=dict(inherit.env) if inherit else None,
        )
    except shell.ShellLimitError as error:
        raise LimitError(error.message, hint=error.hint or "") from None
    launches: list[Launch] = []
    other: Unsupported | None = None
    for command in commands:
        launch = _script_launch(command, origin, base_dir, inherit, depth, report_line)
        if isinstance(launch, Unsupported):
            other = other or launch
        elif launch is not None:
            if len(launches) >= MAX_LAUNCHES_PER_FILE:
                raise LimitError(
                    f"{launch.where}: more than {MAX_LAUNCHES_PER_FILE} SGLang launches in {origin}"
                )
            launches.append(launch)
    if not launches and other is not None:
        raise other
    return launches


def _script_launch(
    command: Command,
    origin: str,
    base_dir: str,
    inherit: Launch | None,
    depth: int,
    report_line: bool,
) -> Launch | Unsupported | None:
    """The launch one command of a script starts, the other server it starts, or None."""
    where = f"{origin}:{command.line}" if report_line else origin
    env_where = {
        name: (inherit.env_where.get(name, "") if inherit and not line else f"{origin}:{line}")
        for name, line in command.env_line.items()
    }
    launch = _LaunchDraft(
        launcher="", where=where, base_dir=base_dir, env=dict(command.env), env_where=env_where
    )
    if inherit is not None:
        launch.gpus, launch.image, launch.nodes = inherit.gpus, inherit.image, inherit.nodes
    launch.unresolved = list(command.unknown)
    tokens = [word.text for word in command.words]
    from topoctl.core.safe_read import check_tokens

    check_tokens(tokens, where)
    try:
        found = _read_draft(tokens, launch, where, base_dir, None, depth)
    except Unsupported as error:  # another server: said when the script starts no SGLang at all
        return error
    except (
        NotALaunch
    ):  # `docker run -d redis`, `sglang version`, `echo`: not a server launch, read on
        return None
    if isinstance(found, Launch):  # the launch of a `bash -c` script inside this command
        return found
    if found.args and tokens[-len(found.args) :] == found.args:
        found.arg_where = [f"{origin}:{word.line}" for word in command.words[-len(found.args) :]]
    return found.freeze()


def image_sglang_version(image: str | None) -> str | None:
    """The SGLang version an image tag names (`lmsysorg/sglang:v0.5.21-cu129` -> 0.5.21), else None."""
    if not image or ":" not in image.rsplit("/", 1)[-1]:
        return None
    repository, tag = image.rsplit(":", 1)
    if "sglang" not in repository.rsplit("/", 1)[-1] or "dynamo" in repository:
        return None
    match = re.match(r"v?(\d+\.\d+\.\d+(?:\.post\d+)?)(?![\d.])", tag)
    return match.group(1) if match else None


_FLOATING_TAGS = re.compile(r"(latest|dev|nightly|main|stable)([-_.].*)?\Z")


def floating_tag(image: str | None) -> str | None:
    """Why an SGLang or Dynamo image names no release (`:latest`, `:dev`, `:nightly-...`, a digest,
    no tag), or None when its tag names one or the image is another program's."""
    if not image:
        return None
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    repository, _, tag = last.partition(":")
    if "sglang" not in repository and "dynamo" not in name:
        return None
    if digest:
        return f"the digest {digest[:19]}... names an image, not a release"
    if not tag:
        return "no tag: Docker takes :latest, which moves"
    if _FLOATING_TAGS.match(tag):
        return f"the tag :{tag} moves from release to release"
    if image_sglang_version(image) is None and image_dynamo_version(image) is None:
        return f"the tag :{tag} names no release"
    return None


def moving_image_tag(image: str | None) -> str | None:
    """The tag of an SGLang image that moves from release to release (`latest`, `dev`,
    `nightly-dev-...`; `latest` for an image without a tag, which Docker pulls as :latest), else
    None (a release tag, a digest, another program's image, a Dynamo runtime)."""
    if not image:
        return None
    name, _, digest = image.partition("@")
    repository, _, tag = name.rsplit("/", 1)[-1].partition(":")
    if digest or "sglang" not in repository or "dynamo" in name:
        return None
    if not tag:
        return "latest"
    return tag if _FLOATING_TAGS.match(tag) else None


def image_tag_build(image: str | None) -> str | None:
    """What an SGLang release tag says beyond its release (`v0.5.21.post1-cu130-amd64` ->
    `-cu130-amd64`: the CUDA and platform the image was built for), else None."""
    if image_sglang_version(image) is None or image is None:
        return None
    tag = image.rsplit(":", 1)[1]
    match = re.match(r"v?\d+\.\d+\.\d+(?:\.post\d+)?", tag)
    return (tag[match.end() :] or None) if match else None


def image_dynamo_version(image: str | None) -> str | None:
    """The ai-dynamo version a Dynamo runtime image tag names
    (`nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.6.1`)."""
    if not image or ":" not in image.rsplit("/", 1)[-1]:
        return None
    repository, tag = image.rsplit(":", 1)
    if "dynamo" not in repository:
        return None
    match = re.match(r"v?(\d+\.\d+\.\d+(?:\.post\d+)?)(?![\d.])", tag)
    return match.group(1) if match else None


def describe(launch: Launch) -> dict[str, object]:
    """A plain summary for reports and tests."""
    return {
        "launcher": launch.launcher,
        "args": list(launch.args),
        "env": dict(launch.env),
        "image": launch.image,
        "gpus": None
        if launch.gpus is None
        else {"count": launch.gpus.count, "ids": launch.gpus.ids, "source": launch.gpus.source},
        "where": launch.where,
    }
