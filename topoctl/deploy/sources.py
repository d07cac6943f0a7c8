"""Finding launches where deployments keep them: Kubernetes manifests, Docker Compose files, shell scripts,
launch.env files, and folders of them. Nothing is run or sourced; every launch keeps its file and line.

* Kubernetes (multi-document YAML): Pod, Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob, Argo
  Rollouts' Rollout, Knative's Service and Configuration, LeaderWorkerSet (leader and worker templates) and
  Dynamo's DynamoGraphDeployment (nvidia.com/v1beta1, `spec.components[].podTemplate.spec`, the form of
  ai-dynamo's dynamo/profiler/templates/dgd/sglang/*.yaml). Per container: `command` + `args` (Kubernetes' `$(NAME)`
  expanded from the container's `env`), `env` (`value`; `valueFrom` is not visible here), the image, and
  `resources.limits["nvidia.com/gpu"]` (else requests) as the GPU count the container is given.
* Docker Compose: `services.NAME` with `entrypoint` + `command` (a string is split as compose does, shell
  words), `environment` (list or mapping), `env_file`, the image, and the GPU reservation
  (`deploy.resources.reservations.devices` with `capabilities: [gpu]`, `count`/`device_ids`).
* Shell scripts (`*.sh`, or a `#!` line naming a shell): every launch line, with the variables exported
  before it (topoctl.deploy.launchers.read_script).
* launch.env files (`*.env`; in folders only names holding "launch"): topoctl.deploy.sglang_launch.parse_env_file. A
  file named on the command line whose name says nothing (`recommend > launch.out`, `recommended.txt`,
  `.env.prod`) is one by its text when it is neither YAML, a Dockerfile nor a shell script: topoctl recommend's
  header, or NAME=VALUE lines as a launch.env has them that assign SGLANG_ARGS (_env_form). A folder walk never
  reaches that test: it takes only the names above.

Line numbers come from PyYAML's node marks (compose), so a finding points at the line that wrote the word.

Layer: deployment reading (docs/architecture.md, "Layers").
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from typing import Any

from topoctl import LAUNCH_ENV_TITLE
from topoctl.core.errors import TopoctlError, one_line
from topoctl.core.safe_read import MAX_LAUNCHES_PER_FILE, LimitError
from topoctl.deploy.launchers import (
    GpuSet,
    Launch,
    Nodes,
    NotALaunch,
    Unsupported,
    expand,
    parse_gpus,
    read_command,
    read_docker_env_file,
    read_script,
)

_POD_PATHS: dict[str, list[tuple[str, ...]]] = {
    "Pod": [("spec",)],
    "Deployment": [("spec", "template", "spec")],
    "StatefulSet": [("spec", "template", "spec")],
    "ReplicaSet": [("spec", "template", "spec")],
    "DaemonSet": [("spec", "template", "spec")],
    "Job": [("spec", "template", "spec")],
    "CronJob": [("spec", "jobTemplate", "spec", "template", "spec")],
}
# Pod templates of other projects' kinds, by API group: Argo Rollouts' Rollout (argoproj.io/v1alpha1, a
# Deployment's template under a rollout strategy) and Knative Serving's Service and Configuration
# (serving.knative.dev/v1, `spec.template.spec`).
_GROUP_POD_PATHS: dict[tuple[str, str], list[tuple[str, ...]]] = {
    ("argoproj.io/", "Rollout"): [("spec", "template", "spec")],
    ("serving.knative.dev/", "Service"): [("spec", "template", "spec")],
    ("serving.knative.dev/", "Configuration"): [("spec", "template", "spec")],
}
_SCRIPT_SUFFIXES = (".sh", ".bash")
_YAML_SUFFIXES = (".yaml", ".yml")
_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".mypy_cache", ".pytest_cache"}


@dataclass
class Found:
    """One launch found in a file, or why a file (or a container in it) holds none."""

    path: str
    line: int
    label: str = ""  # "Deployment sglang / container server", "service sglang"
    launch: Launch | None = None
    none_reason: str = ""  # a file or container with no SGLang launch: why
    unsupported: str = ""  # the other server it starts (vLLM...), when it starts one
    kind: str = ""  # launch.env | kubernetes | compose | script

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass
class _Node:
    """A YAML value with the line it starts on (1-based) and, for collections, its children."""

    value: Any
    line: int
    style: str | None = None
    children: Any = field(default=None)

    def get(self, key: str) -> _Node | None:
        if isinstance(self.children, dict):
            return self.children.get(key)
        return None

    def at(self, *keys: str) -> _Node | None:
        node: _Node | None = self
        for key in keys:
            node = node.get(key) if node is not None else None
        return node


def _convert(node: Any, loader: Any) -> _Node:
    """A composed YAML node as plain values plus the line of every part (PyYAML's start_mark.line)."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        children = {}
        for key_node, value_node in node.value:
            children[str(key_node.value)] = _convert(value_node, loader)
        return _Node({k: v.value for k, v in children.items()}, node.start_mark.line + 1, None, children)
    if isinstance(node, yaml.SequenceNode):
        items = [_convert(item, loader) for item in node.value]
        return _Node([i.value for i in items], node.start_mark.line + 1, None, items)
    return _Node(loader.construct_object(node, deep=True), node.start_mark.line + 1, node.style)


def _yaml_documents(path: str, text: str) -> list[_Node]:
    import yaml

    from topoctl.core.safe_read import compose_yaml_all

    try:  # within the limits of topoctl/core/safe_read.py: depth, aliases (expanded size), integer size
        nodes = compose_yaml_all(text, path)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"{path}:{mark.line + 1}" if mark is not None else path
        raise TopoctlError(f"{at}: not valid YAML: {str(exc).splitlines()[0]}", hint="fix the YAML") from None
    loader = yaml.SafeLoader("")
    try:
        return [_convert(node, loader) for node in nodes if node is not None]
    except yaml.YAMLError as exc:
        raise TopoctlError(f"{path}: cannot read a YAML value: {str(exc).splitlines()[0]}", hint="fix the YAML") from None
    finally:
        loader.dispose()


def _read_text(path: str) -> str:
    from topoctl.core import safe_read as limits
    try:
        text = limits.read_file(path, limits.MAX_LAUNCH_FILE_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise TopoctlError(f"no such file: {path}", hint="give launch files, manifests, scripts or folders") from None
    except UnicodeDecodeError as exc:
        raise TopoctlError(f"cannot read {path}: not UTF-8 text ({exc.reason} at byte {exc.start})",
                           hint="check reads text files: launch.env files, manifests, compose files, Dockerfiles "
                                "and shell scripts") from None
    except OSError as exc:
        raise TopoctlError(f"cannot read {path}: {exc}", hint="check the path and its permissions") from None
    return text.lstrip("\ufeff")


# ----------------------------------------------------------------------------------------------- commands

def _words(node: _Node | None) -> list[tuple[str, int, _Node]]:
    """A command/args value as (word, line, node) items; a string is one word (Kubernetes) ."""
    if node is None:
        return []
    if isinstance(node.children, list):
        return [(str(item.value), item.line, item) for item in node.children if item.value is not None]
    if node.value is None:
        return []
    return [(str(node.value), node.line, node)]


@dataclass
class _Container:
    """What a manifest says of one container or compose service around its command words."""

    label: str
    kind: str  # kubernetes | compose
    env: dict[str, str]
    env_where: dict[str, str]
    gpus: GpuSet | None
    image: str | None


def _from_words(path: str, container: _Container, words: list[tuple[str, int, _Node]], base_dir: str, line: int,
                interpolate: dict[str, str] | None = None) -> Found:
    """The launch a container's command words (Kubernetes command + args, compose entrypoint + command) run:
    Kubernetes expands $(VAR) from the container's env, compose interpolates ${VAR} from the project's .env."""
    label, env, env_where, gpus, image = container.label, container.env, container.env_where, container.gpus, \
        container.image
    found = Found(path, line, label, kind=container.kind)
    unresolved: list[str] = []
    if container.kind == "kubernetes":
        tokens = [expand(word, env, unresolved, kubernetes=True) for word, _, _ in words]
    else:  # compose: interpolated from the project's .env, not from the container's environment
        tokens = [expand(word, interpolate or {}, unresolved, compose=True) for word, _, _ in words]
    wheres = [f"{path}:{word_line}" for _, word_line, _ in words]
    where = f"{path}:{line}"
    launch = Launch(launcher="", where=where, base_dir=base_dir, env=dict(env), env_where=dict(env_where), gpus=gpus,
                    image=image, unresolved=unresolved)
    shell = _shell_script(tokens)
    try:
        if shell is not None:
            index = shell
            script_node = words[index][2]
            offset = script_node.line - 1 + (1 if script_node.style in ("|", ">") else 0)
            launches = read_script(tokens[index], origin=path, base_dir=base_dir, inherit=launch, line_offset=offset)
            if not launches:
                found.none_reason = f"{label}: the shell script in its command starts no SGLang launch"
                return found
            chosen = replace(launches[-1], gpus=gpus, image=image, unresolved=unresolved + launches[-1].unresolved)
            found.launch = chosen
            found.line = int(chosen.where.rsplit(":", 1)[1])
            return found
        found.launch = read_command(tokens, where=where, base_dir=base_dir, launch=launch)
    except Unsupported as error:
        found.unsupported = error.server
        found.none_reason = f"{label}: {error.message}"
        return found
    except NotALaunch as error:
        found.none_reason = f"{label}: {error.message}"
        return found
    args = found.launch.args
    if args and tokens[-len(args):] == args:
        found.launch = replace(found.launch, arg_where=wheres[-len(args):])
    return found


def _shell_script(tokens: list[str]) -> int | None:
    """Index of the script word of `sh -c SCRIPT` / `bash -lc SCRIPT`, when the command is one."""
    if not tokens or tokens[0].rsplit("/", 1)[-1] not in ("bash", "sh", "dash", "zsh", "ash"):
        return None
    index, script_at = 1, None
    while index < len(tokens) and tokens[index].startswith("-"):
        if re.fullmatch(r"-[a-z]*c[a-z]*", tokens[index]):
            script_at = index
        index += 1
    return index if script_at is not None and index < len(tokens) else None


# ----------------------------------------------------------------------------------------------- Kubernetes

def _k8s_env(container: _Node, path: str) -> tuple[dict[str, str], dict[str, str]]:
    return _named_values(container.get("env"), path)


def _k8s_gpus(container: _Node, path: str) -> GpuSet | None:
    for section in ("limits", "requests"):
        node = container.at("resources", section, "nvidia.com/gpu")
        if node is not None and node.value is not None:
            try:
                count = int(str(node.value))
            except ValueError:
                return None
            return GpuSet(count=count, source=f"resources.{section} nvidia.com/gpu: {count} ({path}:{node.line})")
    return None


def _kubernetes(path: str, doc: _Node, base_dir: str) -> list[Found]:
    kind = str(doc.value.get("kind"))
    metadata = doc.value.get("metadata")
    name = str(metadata.get("name") or "") if isinstance(metadata, dict) else ""
    out: list[Found] = []
    if kind == "List":
        items = doc.get("items")
        for item in (items.children if items is not None and isinstance(items.children, list) else []):
            if isinstance(item.value, dict):
                out.extend(_kubernetes(path, item, base_dir))
        return out
    if kind == "DynamoGraphDeployment":
        return _dynamo_graph(path, doc, f"{kind} {name}", base_dir)
    if kind == "LeaderWorkerSet":
        return _leader_worker_set(path, doc, f"{kind} {name}", base_dir)
    api = str(doc.value.get("apiVersion") or "")
    if api.startswith("ome.io/") and kind in ("ClusterServingRuntime", "ServingRuntime"):
        return _ome_runtime(path, doc, f"{kind} {name}", base_dir)
    if api.startswith("serving.kserve.io/"):
        return _kserve(path, doc, kind, name, base_dir)
    paths: list[tuple[str, ...]] | None = next(
        (found for (group, named), found in _GROUP_POD_PATHS.items() if api.startswith(group) and kind == named),
        _POD_PATHS.get(kind))
    if paths is None:
        return []
    for keys in paths:
        spec = doc.at(*keys)
        if spec is None:
            continue
        role = "" if len(paths) == 1 else (" leader" if "leaderTemplate" in keys else " worker")
        out.extend(_pod_spec(path, spec, f"{kind} {name}{role}", base_dir))
    return out


def _dynamo_graph(path: str, doc: _Node, owner: str, base_dir: str) -> list[Found]:
    """Dynamo's DynamoGraphDeployment: nvidia.com/v1beta1 `spec.components[].podTemplate.spec` (the form of
    ai-dynamo's dynamo/profiler/templates/dgd/sglang/*.yaml) and v1alpha1 `spec.services.NAME.extraPodSpec.
    mainContainer` with `resources.limits.gpu` and `envs` (the form of ai-dynamo's components/backends/sglang/
    deploy/*.yaml); `multinode.nodeCount` is the nodes one worker spans (the operator adds --nnodes)."""
    out: list[Found] = []
    components = doc.at("spec", "components")
    for component in (components.children if components is not None and isinstance(components.children, list)
                      else []):
        if not isinstance(component.value, dict):
            continue
        spec = component.at("podTemplate", "spec")
        if spec is not None:
            out.extend(_pod_spec(path, spec, f"{owner} / component {component.value.get('name')}", base_dir,
                                 nodes=_multinode(component, path)))
    services = doc.at("spec", "services")
    for service_name, service in (services.children.items() if services is not None
                                  and isinstance(services.children, dict) else []):
        main = service.at("extraPodSpec", "mainContainer")
        if main is None or not isinstance(main.value, dict):
            continue
        found = _container_found(path, main, f"{owner} / service {service_name}", base_dir,
                                 extra_env=_named_values(service.get("envs"), path),
                                 gpus=_dynamo_gpus(service, path), nodes=_multinode(service, path))
        out.append(found)
    return out


def _multinode(node: _Node, path: str) -> Nodes | None:
    count = node.at("multinode", "nodeCount")
    if count is None or count.value is None:
        return None
    text = str(count.value)
    return Nodes(int(text) if text.isdigit() else None, f"multinode.nodeCount: {text} ({path}:{count.line})")


def _dynamo_gpus(service: _Node, path: str) -> GpuSet | None:
    for section in ("limits", "requests"):
        node = service.at("resources", section, "gpu")
        if node is not None and node.value is not None and str(node.value).isdigit():
            count = int(str(node.value))
            return GpuSet(count=count, source=f"resources.{section}.gpu: {count} ({path}:{node.line})")
    return None


def _named_values(node: _Node | None, path: str) -> tuple[dict[str, str], dict[str, str]]:
    env: dict[str, str] = {}
    where: dict[str, str] = {}
    for item in (node.children if node is not None and isinstance(node.children, list) else []):
        name, value = item.get("name"), item.get("value")
        if name is None or value is None or value.value is None:
            continue
        text = value.value
        env[str(name.value)] = "true" if text is True else "false" if text is False else str(text)
        where[str(name.value)] = f"{path}:{name.line}"
    return env, where


def _ome_runtime(path: str, doc: _Node, owner: str, base_dir: str) -> list[Found]:
    """OME's ClusterServingRuntime / ServingRuntime (ome.io/v1beta1, the form of sgl-project/ome
    config/runtimes/srt/*.yaml): `engineConfig` and `decoderConfig` each run a `runner` container on one node,
    or a `leader` and `worker` (size workers) as one LeaderWorkerSet group of size + 1 nodes; `routerConfig`
    runs the router. OME sets MODEL_PATH and PARALLELISM_SIZE from the model it serves (not in the file)."""
    out: list[Found] = []
    for section in ("engineConfig", "decoderConfig", "routerConfig"):
        config = doc.at("spec", section)
        if config is None:
            continue
        runner = config.get("runner")
        if runner is not None and isinstance(runner.value, dict):
            out.append(_container_found(path, runner, f"{owner} / {section} runner", base_dir))
        size_node = config.at("worker", "size")
        size = int(size_node.value) + 1 if size_node is not None and str(size_node.value).isdigit() else None
        nodes = Nodes(size, f"{section}.worker.size: {size_node.value} + the leader ({path}:{size_node.line})"
                      if size_node is not None and size is not None else f"{section}: leader and workers, size not given")
        extra = ({"LWS_GROUP_SIZE": str(size)}, {"LWS_GROUP_SIZE": nodes.source}) if size else None
        for role in ("leader", "worker"):
            role_runner = config.at(role, "runner")
            if role_runner is not None and isinstance(role_runner.value, dict):
                out.append(_container_found(path, role_runner, f"{owner} / {section} {role}", base_dir,
                                            extra_env=extra, nodes=nodes))
    return out


def _kserve(path: str, doc: _Node, kind: str, name: str, base_dir: str) -> list[Found]:
    """KServe: an InferenceService's `spec.predictor` containers (a custom container) or its `model` (args the
    serving runtime's command receives), and a ServingRuntime / ClusterServingRuntime's `spec.containers`."""
    owner = f"{kind} {name}"
    if kind in ("ServingRuntime", "ClusterServingRuntime"):
        spec = doc.get("spec")
        return _pod_spec(path, spec, owner, base_dir) if spec is not None else []
    predictor = doc.at("spec", "predictor")
    if predictor is None:
        return []
    out = _pod_spec(path, predictor, f"{owner} predictor", base_dir) if predictor.get("containers") else []
    model = predictor.get("model")
    if model is not None and isinstance(model.value, dict) and (model.get("args") or model.get("command")):
        out.append(_container_found(path, model, f"{owner} predictor model (runtime "
                                                 f"{model.value.get('runtime') or 'chosen by KServe'})", base_dir))
    return out


def _leader_worker_set(path: str, doc: _Node, owner: str, base_dir: str) -> list[Found]:
    """LeaderWorkerSet (leaderworkerset.x-k8s.io): a group of `size` pods, one leader and size-1 workers, each
    pod one node; LWS gives every container LWS_GROUP_SIZE, LWS_LEADER_ADDRESS and LWS_WORKER_INDEX."""
    size = doc.at("spec", "leaderWorkerTemplate", "size")
    text = str(size.value) if size is not None and size.value is not None else ""
    nodes = Nodes(int(text) if text.isdigit() else None,
                  f"LeaderWorkerSet size: {text} ({path}:{size.line})" if size is not None
                  else "LeaderWorkerSet without a size in the file")
    extra = ({"LWS_GROUP_SIZE": text}, {"LWS_GROUP_SIZE": nodes.source}) if text.isdigit() else ({}, {})
    out: list[Found] = []
    for keys, role in ((("spec", "leaderWorkerTemplate", "leaderTemplate", "spec"), "leader"),
                       (("spec", "leaderWorkerTemplate", "workerTemplate", "spec"), "worker")):
        spec = doc.at(*keys)
        if spec is not None:
            out.extend(_pod_spec(path, spec, f"{owner} {role}", base_dir, nodes=nodes, extra_env=extra))
    return out


def _pod_spec(path: str, spec: _Node, owner: str, base_dir: str, nodes: Nodes | None = None,
              extra_env: tuple[dict[str, str], dict[str, str]] | None = None) -> list[Found]:
    out = []
    containers = spec.get("containers")
    volumes = _config_volumes(spec)
    for container in (containers.children if containers is not None and isinstance(containers.children, list)
                      else []):
        if not isinstance(container.value, dict):
            continue
        name = container.value.get("name")  # Knative's single container may have none
        found = _container_found(path, container, f"{owner} / container {name}" if name is not None else owner,
                                 base_dir, extra_env=extra_env, nodes=nodes)
        if found.launch is not None:
            found.launch = replace(found.launch, mounts=_mounts(container, volumes))
        out.append(found)
    return out


def _config_volumes(spec: _Node) -> dict[str, str]:
    """Pod volumes backed by a ConfigMap: volume name -> ConfigMap name."""
    volumes = spec.get("volumes")
    out = {}
    for volume in (volumes.children if volumes is not None and isinstance(volumes.children, list) else []):
        if isinstance(volume.value, dict) and isinstance(volume.value.get("configMap"), dict):
            out[str(volume.value.get("name"))] = str(volume.value["configMap"].get("name"))
    return out


def _mounts(container: _Node, volumes: dict[str, str]) -> dict[str, str]:
    mounts = container.get("volumeMounts")
    out = {}
    for mount in (mounts.children if mounts is not None and isinstance(mounts.children, list) else []):
        if isinstance(mount.value, dict) and str(mount.value.get("name")) in volumes:
            out[str(mount.value.get("mountPath"))] = volumes[str(mount.value.get("name"))]
    return out


def _container_found(path: str, container: _Node, label: str, base_dir: str,
                     extra_env: tuple[dict[str, str], dict[str, str]] | None = None, gpus: GpuSet | None = None,
                     nodes: Nodes | None = None) -> Found:
    """One Kubernetes container: its command + args, env, image and GPUs."""
    command, args = container.get("command"), container.get("args")
    env, env_where = _k8s_env(container, path)
    if extra_env:
        env, env_where = {**extra_env[0], **env}, {**extra_env[1], **env_where}
    gpus = gpus or _k8s_gpus(container, path)
    image = container.value.get("image")
    words = _words(command) + _words(args)
    line = (command or args or container).line
    if not words:
        return Found(path, container.line, label, kind="kubernetes",
                     none_reason=f"{label}: no command or args (it runs its image's default command, not visible here)")
    found = _from_words(path, _Container(label, "kubernetes", env, env_where, gpus, str(image) if image else None),
                        words, base_dir, line)
    if found.launch is not None and nodes is not None:
        found.launch = replace(found.launch, nodes=nodes)
    return found


# ----------------------------------------------------------------------------------------------- compose

def _compose_words(node: _Node | None) -> list[tuple[str, int, _Node]]:
    from topoctl.core.safe_read import split_words

    if node is None or node.value is None:
        return []
    if isinstance(node.children, list):
        return _words(node)
    try:
        split = split_words(str(node.value), f"line {node.line}")
    except ValueError as exc:
        raise TopoctlError(f"cannot split the command at line {node.line}: {exc}", hint="check its quoting") from None
    return [(word, node.line, node) for word in split]


def _compose(path: str, doc: _Node, base_dir: str) -> list[Found]:
    services = doc.get("services")
    out = []
    dot_env = os.path.join(base_dir, ".env")  # compose interpolates ${VAR} from the project folder's .env
    project_env = {key: value for _, key, value in read_docker_env_file(dot_env)} if os.path.isfile(dot_env) else {}
    for name, service in (services.children.items() if services is not None and isinstance(services.children, dict)
                          else []):
        if not isinstance(service.value, dict):
            continue
        label = f"service {name}"
        env, env_where = _compose_env(path, service, base_dir)
        gpus = _compose_gpus(path, service)
        words = _compose_words(service.get("entrypoint")) + _compose_words(service.get("command"))
        line = (service.get("entrypoint") or service.get("command") or service).line
        image = service.value.get("image")
        if not words:
            out.append(Found(path, service.line, label, kind="compose",
                             none_reason=f"{label}: no command (it runs its image's default command, not visible here)"))
            continue
        container = _Container(label, "compose", env, env_where, gpus, str(image) if image else None)
        out.append(_from_words(path, container, words, base_dir, line, interpolate=project_env))
    return out


def _compose_env(path: str, service: _Node, base_dir: str) -> tuple[dict[str, str], dict[str, str]]:
    """A compose service's environment: its env_file files, then `environment:` (a list or a mapping)."""
    env: dict[str, str] = {}
    env_where: dict[str, str] = {}
    env_files = service.get("env_file")
    for item in (_words(env_files) if env_files is not None else []):
        file_value = item[0] if not isinstance(item[2].value, dict) else str(item[2].value.get("path"))
        env_path = os.path.join(base_dir, file_value) if not os.path.isabs(file_value) else file_value
        for number, key, value in read_docker_env_file(env_path):
            env[key] = value
            env_where[key] = f"{env_path}:{number}"
    environment = service.get("environment")
    if environment is not None and isinstance(environment.children, list):
        for item in environment.children:
            key, eq, value = str(item.value).partition("=")
            if eq:
                env[key] = value
                env_where[key] = f"{path}:{item.line}"
    elif environment is not None and isinstance(environment.children, dict):
        for key, item in environment.children.items():
            if item.value is not None:
                env[key] = "true" if item.value is True else "false" if item.value is False else str(item.value)
                env_where[key] = f"{path}:{item.line}"
    return env, env_where


def _compose_gpus(path: str, service: _Node) -> GpuSet | None:
    """The GPUs a compose service reserves (deploy.resources.reservations.devices, else `gpus:`)."""
    gpus = None
    devices = service.at("deploy", "resources", "reservations", "devices")
    for device in (devices.children if devices is not None and isinstance(devices.children, list) else []):
        if not isinstance(device.value, dict):
            continue
        capabilities = device.value.get("capabilities") or []
        capabilities = capabilities if isinstance(capabilities, list) else [capabilities]
        if "gpu" not in [str(c) for c in capabilities] and device.value.get("driver") != "nvidia":
            continue
        count = device.value.get("count")
        ids = device.value.get("device_ids")
        if count not in (None, "all") and (isinstance(count, bool) or not str(count).isdigit()
                                           or len(str(count)) > 6):
            raise TopoctlError(f"{path}:{device.line}: deploy.resources.reservations.devices count "
                               f"{one_line(str(count), limit=40)!s} is not a number of GPUs",
                               hint='give a whole number or "all"')
        gpus = GpuSet(count=None if count in (None, "all") else int(str(count)),
                      ids=[str(i) for i in ids] if isinstance(ids, list) else None,
                      source=f"deploy.resources.reservations.devices ({path}:{device.line})")
    if gpus is None and service.get("gpus") is not None:
        gpus = parse_gpus(str(service.value.get("gpus")), f"gpus: {service.value.get('gpus')}")
    return gpus


# ----------------------------------------------------------------------------------------------- files

def _is_script(path: str, text: str) -> bool:
    if path.endswith(_SCRIPT_SUFFIXES):
        return True
    first = text.split("\n", 1)[0]
    return first.startswith("#!") and re.search(r"\b(ba|da|z)?sh\b", first) is not None


def read_file(path: str, found_in_folder: bool = False) -> tuple[str, list[Found]]:
    """(kind, what the file holds) for one file or Helm chart folder; kind is launch.env, kubernetes, compose,
    script, dockerfile, skypilot, helm or unknown.

    A file that cannot be read is bad input: named on the command line it is exit 2 at once (TopoctlError);
    one found by walking a folder is reported as unreadable with its reason and line (kind "unreadable"), the
    other files are still checked, and the check ends with exit 2."""
    if found_in_folder:
        try:
            return read_file(path)
        except TopoctlError as error:
            return "unreadable", [Found(path, _error_line(error.message, path), kind="unreadable",
                                        none_reason=f"not read: {error.message}")]
    base_dir = os.path.dirname(path) or "."
    if path.endswith(".env") or path == "-":  # `-`: a launch.env on stdin
        return "launch.env", [Found(path, 1, kind="launch.env")]
    from topoctl.deploy import dockerfile, helm  # here: a launch.env needs neither reader

    if helm.is_chart(path):
        return "helm", read_chart(path)
    text = _read_text(path)
    if path.endswith(_YAML_SUFFIXES):
        return read_yaml_text(path, text, base_dir)
    if dockerfile.is_dockerfile(path):
        return "dockerfile", dockerfile.read_dockerfile(path, text, base_dir)
    if _is_script(path, text):
        return "script", _read_script_file(path, text, base_dir)
    by_text = _env_form(path, text)  # only a file named on the command line gets here: a folder takes none
    if by_text is not None:
        return by_text.kind, [by_text]
    return "unknown", [Found(path, 1, kind="unknown", none_reason=f"{path}: no launch (not a launch.env, manifest, "
                                                                  "compose file, Dockerfile or shell script)")]


# The first line of every launch.env topoctl recommend writes (autoconf/launch_text.py render_env), up to its version.
_RECOMMEND_HEADER = f"# {LAUNCH_ENV_TITLE} "
_ARGS_ASSIGNMENT = re.compile(r"^[ \t]*(?:export[ \t]+)?SGLANG_ARGS=", re.MULTILINE)
_ENV_FORM_NEEDS = ("check reads a file not named *.env as a launch.env when it starts with topoctl recommend's "
                   "header or its NAME='value' lines assign SGLANG_ARGS")


def _env_form(path: str, text: str) -> Found | None:
    """A launch.env named otherwise (launch.out, recommended.txt, .env.prod), by its text: recommend's header, or
    NAME=VALUE lines that parse_env_text reads to the end and that assign SGLANG_ARGS. NAME=VALUE lines without
    SGLANG_ARGS, and an SGLANG_ARGS assignment among lines a launch.env cannot hold, are no launch, said with what
    check looks for; None for any other text (the caller says it is no launch of a kind check reads)."""
    from topoctl.deploy.sglang_launch import ARGS_KEY, parse_env_text

    if text.startswith(_RECOMMEND_HEADER):  # recommend's own output: read as launch.env even when edited badly
        return Found(path, 1, kind="launch.env")
    try:
        assignments = parse_env_text(text, path)
    except TopoctlError as error:
        if _ARGS_ASSIGNMENT.search(text) is None:
            return None
        line = _error_line(error.message, path)
        why = error.message.split(": ", 1)[-1]
        return Found(path, line, kind="unknown", none_reason=f"{path}: no launch (it assigns {ARGS_KEY}, but line "
                                                             f"{line} is not launch.env syntax: {why}. "
                                                             f"{_ENV_FORM_NEEDS}; a #! line naming a shell makes "
                                                             "it a shell script)")
    if not assignments:
        return None
    if any(name == ARGS_KEY for _, name, _ in assignments):
        return Found(path, 1, kind="launch.env")
    return Found(path, 1, kind="unknown", none_reason=f"{path}: no launch (NAME=VALUE lines without {ARGS_KEY}; "
                                                      f"{_ENV_FORM_NEEDS})")


def _read_script_file(path: str, text: str, base_dir: str) -> list[Found]:
    try:
        launches = read_script(text, origin=path, base_dir=base_dir)
    except Unsupported as error:
        return [Found(path, 1, kind="script", unsupported=error.server, none_reason=error.message)]
    except NotALaunch as error:
        return [Found(path, 1, kind="script", none_reason=f"{path}: {error.message}")]
    if not launches:
        return [Found(path, 1, kind="script", none_reason=f"{path}: no launch: no command of the script starts an "
                                                          "SGLang server")]
    return [Found(path, int(launch.where.rsplit(":", 1)[1]), kind="script", launch=launch) for launch in launches]


def read_yaml_text(path: str, text: str, base_dir: str, line_map: list[int] | None = None) -> tuple[str, list[Found]]:
    """The launches of a YAML file's documents: Kubernetes kinds, compose services, a SkyPilot task."""
    from topoctl.deploy import skypilot
    found: list[Found] = []
    kinds = set()
    documents = _yaml_documents(path, text)
    config_maps = _config_maps(path, documents)
    for doc in documents:
        if not isinstance(doc.value, dict):
            continue
        if "apiVersion" in doc.value and "kind" in doc.value:
            kinds.add("kubernetes")
            found.extend(_follow_config_maps(_kubernetes(path, doc, base_dir), config_maps))
        elif isinstance(doc.value.get("services"), dict):
            kinds.add("compose")
            found.extend(_compose(path, doc, base_dir))
        elif skypilot.is_task(doc):
            kinds.add("skypilot")
            found.extend(skypilot.read_task(path, doc, base_dir))
        if len(found) > MAX_LAUNCHES_PER_FILE:
            raise LimitError(f"{path}: more than {MAX_LAUNCHES_PER_FILE} containers or services with a launch")
    kind = "+".join(sorted(kinds)) or "yaml"
    if not found:
        what = {"kubernetes": "no Pod, Deployment, StatefulSet, Job, LeaderWorkerSet, DynamoGraphDeployment, OME "
                              "or KServe runtime with a container",
                "compose": "no service", "yaml": "neither a Kubernetes manifest, a compose file nor a SkyPilot task"
                + ("; a flat mapping like an SGLang --config file, read with the launch that names it"
                   if _flat_mapping(text) else "")}
        found = [Found(path, 1, kind=kind, none_reason=f"{path}: no launch ({what.get(kind, 'no container')})")]
    return kind, found


def read_chart(chart_dir: str) -> list[Found]:
    """A Helm chart's launches: `helm template` when helm is on PATH, else its templates by plain substitution
    (what was not rendered is said in each launch's notes)."""
    from topoctl.deploy import helm
    rendered = helm.with_helm(chart_dir)
    how = "helm template"
    if rendered is None:
        rendered, how = helm.plain(chart_dir), "plain substitution of values.yaml (helm is not on PATH)"
    out: list[Found] = []
    for template in rendered:
        try:
            _, founds = read_yaml_text(template.path, template.text, os.path.dirname(template.path))
        except TopoctlError as error:
            founds = [Found(template.path, 1, kind="unreadable", none_reason=f"not read ({how}): {error.message}")]
        for item in founds:
            _remap(item, template)
            if item.launch is not None:
                item.launch = replace(item.launch, notes=[*item.launch.notes, f"Helm chart {chart_dir} rendered by {how}",
                                                          *(f"not rendered: {part}" for part in template.not_rendered[:8])])
        out.extend(item for item in founds if item.launch is not None or "no launch (" not in item.none_reason)
    if not out:
        out = [Found(chart_dir, 1, kind="helm", none_reason=f"{chart_dir}: no launch in the chart's templates "
                                                            f"(rendered by {how})")]
    return out


def _remap(item: Found, template: Any) -> None:
    """Lines of a rendered template back to the template file's lines."""
    lines = template.lines

    def back(where: str) -> str:
        head, _, number = where.rpartition(":")
        if head == template.path and number.isdigit() and 0 < int(number) <= len(lines):
            return f"{head}:{lines[int(number) - 1]}"
        return where

    if not lines:
        return
    item.line = int(back(f"{template.path}:{item.line}").rsplit(":", 1)[1])
    launch = item.launch
    if launch is not None:
        item.launch = replace(launch, where=back(launch.where),
                              arg_where=[back(w) for w in launch.arg_where] if launch.arg_where else launch.arg_where,
                              env_where={k: back(v) for k, v in launch.env_where.items()})


def _config_maps(path: str, documents: list[_Node]) -> dict[str, dict[str, tuple[str, int]]]:
    """ConfigMaps of the manifest: name -> key -> (text, line of the value's first line)."""
    out: dict[str, dict[str, tuple[str, int]]] = {}
    for doc in documents:
        if not isinstance(doc.value, dict) or doc.value.get("kind") != "ConfigMap":
            continue
        name = str((doc.value.get("metadata") or {}).get("name") or "")
        data = doc.get("data")
        for key, node in (data.children.items() if data is not None and isinstance(data.children, dict) else []):
            offset = node.line + (1 if node.style in ("|", ">") else 0)
            out.setdefault(name, {})[key] = (str(node.value), offset)
    return out


def _follow_config_maps(founds: list[Found], config_maps: dict[str, dict[str, tuple[str, int]]]) -> list[Found]:
    """A launch whose `--config` names a file in a ConfigMap of the same manifest mounted in its pod reads it."""
    if not config_maps:
        return founds
    for item in founds:
        launch = item.launch
        if launch is None or not launch.mounts:
            continue
        files = dict(launch.files)
        for mount_path, config_map in launch.mounts.items():
            for key, (text, line) in config_maps.get(config_map, {}).items():
                files[f"{mount_path.rstrip('/')}/{key}"] = (text, item.path, line)
        item.launch = replace(launch, files=files)
    return founds


def _flat_mapping(text: str) -> bool:
    import yaml

    from topoctl.core.safe_read import LimitError, load_yaml

    try:
        data = load_yaml(text, "<flat mapping>")  # safe_load semantics within the limits
    except (yaml.YAMLError, LimitError):
        return False
    return isinstance(data, dict) and bool(data) and all(not isinstance(v, dict) for v in data.values())


def _error_line(message: str, path: str) -> int:
    match = re.match(re.escape(path) + r":(\d+):", message)
    return int(match.group(1)) if match else 1


def _wanted_in_folder(name: str) -> bool:
    from topoctl.deploy.dockerfile import is_dockerfile

    if name.endswith(".env"):
        return "launch" in name
    return name.endswith(_YAML_SUFFIXES + _SCRIPT_SUFFIXES) or is_dockerfile(name)


def _is_chart(path: str) -> bool:
    """helm.is_chart, the Helm reader imported only for a folder (a chart is one): `check launch.env` needs none."""
    from topoctl.deploy.helm import is_chart

    return is_chart(path)


def expand_paths(paths: list[str]) -> list[tuple[str, bool]]:
    """(file, found in a folder) for the files as given and the launch-like files under each folder (sorted,
    hidden and tool folders skipped; a Helm chart folder is one entry)."""
    if not paths:  # `check -- COMMAND`: no file, and no Helm reader to import
        return []
    out: list[tuple[str, bool]] = []
    for path in paths:
        if os.path.isdir(path) and _is_chart(path):
            out.append((path, False))
        elif os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                if _is_chart(root):  # a Helm chart is read as one: rendered, its templates are not files of their own
                    out.append((root, True))
                    dirs[:] = []
                    continue
                dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
                out.extend((os.path.join(root, name), True) for name in sorted(files) if _wanted_in_folder(name))
        elif path == "-" or os.path.exists(path):
            out.append((path, False))
        else:
            raise TopoctlError(f"no such file or folder: {path}",
                               hint="give launch.env files, Kubernetes manifests, compose files, shell scripts or folders")
    return out
