"""Kubernetes manifests (multi-document YAML) and the kinds that hold pod templates: Pod,
Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob, Argo Rollouts' Rollout, Knative's
Service and Configuration, LeaderWorkerSet (leader and worker templates), Dynamo's
DynamoGraphDeployment (nvidia.com/v1beta1, `spec.components[].podTemplate.spec`, the form of
ai-dynamo's dynamo/profiler/templates/dgd/sglang/*.yaml), OME's serving runtimes and KServe's
InferenceService and serving runtimes. Per container: `command` + `args` (Kubernetes' `$(NAME)`
expanded from the container's `env`), `env` (`value`; `valueFrom` is not visible here), the image,
and `resources.limits["nvidia.com/gpu"]` (else requests) as the GPU count the container is given. A
launch whose `--config` names a file in a ConfigMap of the same manifest mounted in its pod reads it
(link).

Layer: deployment reading (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from dataclasses import replace

from topoctl.deploy.container import Container, from_words
from topoctl.deploy.found import Found, Node, shaped, words
from topoctl.deploy.launchers import GpuSet, Nodes


def is_document(doc: Node) -> bool:
    """A Kubernetes object: a mapping with `apiVersion` and `kind`."""
    return "apiVersion" in doc.value and "kind" in doc.value


def read_document(path: str, doc: Node, base_dir: str) -> list[Found]:
    """Every container of the object's pod templates (a List's items too): its launch, or why it has
    none."""
    return _kubernetes(path, doc, base_dir)


def link(path: str, documents: list[Node], founds: list[Found]) -> None:
    """Once the file is read: each launch reads the files its pod mounts from the manifest's
    ConfigMaps."""
    _follow_config_maps(founds, _config_maps(path, documents))


_POD_PATHS: dict[str, list[tuple[str, ...]]] = {
    "Pod": [("spec",)],
    "Deployment": [("spec", "template", "spec")],
    "StatefulSet": [("spec", "template", "spec")],
    "ReplicaSet": [("spec", "template", "spec")],
    "DaemonSet": [("spec", "template", "spec")],
    "Job": [("spec", "template", "spec")],
    "CronJob": [("spec", "jobTemplate", "spec", "template", "spec")],
}


# Pod templates of other projects' kinds, by API group: Argo Rollouts' Rollout
# (argoproj.io/v1alpha1, a Deployment's template under a rollout strategy) and Knative Serving's
# Service and Configuration (serving.knative.dev/v1, `spec.template.spec`).
_GROUP_POD_PATHS: dict[tuple[str, str], list[tuple[str, ...]]] = {
    ("argoproj.io/", "Rollout"): [("spec", "template", "spec")],
    ("serving.knative.dev/", "Service"): [("spec", "template", "spec")],
    ("serving.knative.dev/", "Configuration"): [("spec", "template", "spec")],
}


def _k8s_env(container: Node, path: str) -> tuple[dict[str, str], dict[str, str]]:
    return _named_values(shaped(container.get("env"), list, path, "env"), path)


def _k8s_gpus(container: Node, path: str) -> GpuSet | None:
    for section in ("limits", "requests"):
        node = container.at("resources", section, "nvidia.com/gpu")
        if node is not None and node.value is not None:
            try:
                count = int(str(node.value))
            except ValueError:
                return None
            return GpuSet(
                count=count,
                source=f"resources.{section} nvidia.com/gpu: {count} ({path}:{node.line})",
            )
    return None


def _name(path: str, doc: Node) -> str:
    """An object's metadata.name ("" when it has none); metadata of another shape is exit 2."""
    metadata = shaped(doc.get("metadata"), dict, path, "metadata")
    return str((metadata.value or {}).get("name") or "") if metadata is not None else ""


def _kubernetes(path: str, doc: Node, base_dir: str) -> list[Found]:
    kind = str(doc.value.get("kind"))
    name = _name(path, doc)
    out: list[Found] = []
    if kind == "List":
        items = doc.get("items")
        for item in (
            items.children if items is not None and isinstance(items.children, list) else []
        ):
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
        (
            found
            for (group, named), found in _GROUP_POD_PATHS.items()
            if api.startswith(group) and kind == named
        ),
        _POD_PATHS.get(kind),
    )
    if paths is None:
        return []
    for keys in paths:
        spec = doc.at(*keys)
        if spec is None:
            continue
        role = "" if len(paths) == 1 else (" leader" if "leaderTemplate" in keys else " worker")
        out.extend(_pod_spec(path, spec, f"{kind} {name}{role}", base_dir))
    return out


def _dynamo_graph(path: str, doc: Node, owner: str, base_dir: str) -> list[Found]:
    """Dynamo's DynamoGraphDeployment: nvidia.com/v1beta1 `spec.components[].podTemplate.spec` (the
    form of ai-dynamo's dynamo/profiler/templates/dgd/sglang/*.yaml) and v1alpha1
    `spec.services.NAME.extraPodSpec. mainContainer` with `resources.limits.gpu` and `envs` (the
    form of ai-dynamo's components/backends/sglang/ deploy/*.yaml); `multinode.nodeCount` is the
    nodes one worker spans (the operator adds --nnodes)."""
    out: list[Found] = []
    components = doc.at("spec", "components")
    for component in (
        components.children
        if components is not None and isinstance(components.children, list)
        else []
    ):
        if not isinstance(component.value, dict):
            continue
        spec = component.at("podTemplate", "spec")
        if spec is not None:
            out.extend(
                _pod_spec(
                    path,
                    spec,
                    f"{owner} / component {component.value.get('name')}",
                    base_dir,
                    nodes=_multinode(component, path),
                )
            )
    services = doc.at("spec", "services")
    for service_name, service in (
        services.children.items()
        if services is not None and isinstance(services.children, dict)
        else []
    ):
        main = service.at("extraPodSpec", "mainContainer")
        if main is None or not isinstance(main.value, dict):
            continue
        found = _container_found(
            path,
            main,
            f"{owner} / service {service_name}",
            base_dir,
            extra_env=_named_values(service.get("envs"), path),
            gpus=_dynamo_gpus(service, path),
            nodes=_multinode(service, path),
        )
        out.append(found)
    return out


def _multinode(node: Node, path: str) -> Nodes | None:
    count = node.at("multinode", "nodeCount")
    if count is None or count.value is None:
        return None
    text = str(count.value)
    return Nodes(
        int(text) if text.isdigit() else None, f"multinode.nodeCount: {text} ({path}:{count.line})"
    )


def _dynamo_gpus(service: Node, path: str) -> GpuSet | None:
    for section in ("limits", "requests"):
        node = service.at("resources", section, "gpu")
        if node is not None and node.value is not None and str(node.value).isdigit():
            count = int(str(node.value))
            return GpuSet(
                count=count, source=f"resources.{section}.gpu: {count} ({path}:{node.line})"
            )
    return None


def _named_values(node: Node | None, path: str) -> tuple[dict[str, str], dict[str, str]]:
    env: dict[str, str] = {}
    where: dict[str, str] = {}
    for item in node.children if node is not None and isinstance(node.children, list) else []:
        name, value = item.get("name"), item.get("value")
        if name is None or value is None or value.value is None:
            continue
        text = value.value
        env[str(name.value)] = "true" if text is True else "false" if text is False else str(text)
        where[str(name.value)] = f"{path}:{name.line}"
    return env, where


def _ome_runtime(path: str, doc: Node, owner: str, base_dir: str) -> list[Found]:
    """OME's ClusterServingRuntime / ServingRuntime (ome.io/v1beta1, the form of sgl-project/ome
    config/runtimes/srt/*.yaml): `engineConfig` and `decoderConfig` each run a `runner` container on
    one node, or a `leader` and `worker` (size workers) as one LeaderWorkerSet group of size + 1
    nodes; `routerConfig` runs the router. OME sets MODEL_PATH and PARALLELISM_SIZE from the model
    it serves (not in the file)."""
    out: list[Found] = []
    for section in ("engineConfig", "decoderConfig", "routerConfig"):
        config = doc.at("spec", section)
        if config is None:
            continue
        runner = config.get("runner")
        if runner is not None and isinstance(runner.value, dict):
            out.append(_container_found(path, runner, f"{owner} / {section} runner", base_dir))
        size_node = config.at("worker", "size")
        size = (
            int(size_node.value) + 1
            if size_node is not None and str(size_node.value).isdigit()
            else None
        )
        nodes = Nodes(
            size,
            f"{section}.worker.size: {size_node.value} + the leader ({path}:{size_node.line})"
            if size_node is not None and size is not None
            else f"{section}: leader and workers, size not given",
        )
        extra = ({"LWS_GROUP_SIZE": str(size)}, {"LWS_GROUP_SIZE": nodes.source}) if size else None
        for role in ("leader", "worker"):
            role_runner = config.at(role, "runner")
            if role_runner is not None and isinstance(role_runner.value, dict):
                out.append(
                    _container_found(
                        path,
                        role_runner,
                        f"{owner} / {section} {role}",
                        base_dir,
                        extra_env=extra,
                        nodes=nodes,
                    )
                )
    return out


def _kserve(path: str, doc: Node, kind: str, name: str, base_dir: str) -> list[Found]:
    """KServe: an InferenceService's `spec.predictor` containers (a custom container) or its `model`
    (args the serving runtime's command receives), and a ServingRuntime / ClusterServingRuntime's
    `spec.containers`."""
    owner = f"{kind} {name}"
    if kind in ("ServingRuntime", "ClusterServingRuntime"):
        spec = doc.get("spec")
        return _pod_spec(path, spec, owner, base_dir) if spec is not None else []
    predictor = doc.at("spec", "predictor")
    if predictor is None:
        return []
    out = (
        _pod_spec(path, predictor, f"{owner} predictor", base_dir)
        if predictor.get("containers")
        else []
    )
    model = predictor.get("model")
    if (
        model is not None
        and isinstance(model.value, dict)
        and (model.get("args") or model.get("command"))
    ):
        out.append(
            _container_found(
                path,
                model,
                f"{owner} predictor model (runtime "
                f"{model.value.get('runtime') or 'chosen by KServe'})",
                base_dir,
            )
        )
    return out


def _leader_worker_set(path: str, doc: Node, owner: str, base_dir: str) -> list[Found]:
    """LeaderWorkerSet (leaderworkerset.x-k8s.io): a group of `size` pods, one leader and size-1
    workers, each pod one node; LWS gives every container LWS_GROUP_SIZE, LWS_LEADER_ADDRESS and
    LWS_WORKER_INDEX."""
    size = doc.at("spec", "leaderWorkerTemplate", "size")
    text = str(size.value) if size is not None and size.value is not None else ""
    nodes = Nodes(
        int(text) if text.isdigit() else None,
        f"LeaderWorkerSet size: {text} ({path}:{size.line})"
        if size is not None
        else "LeaderWorkerSet without a size in the file",
    )
    extra = (
        ({"LWS_GROUP_SIZE": text}, {"LWS_GROUP_SIZE": nodes.source}) if text.isdigit() else ({}, {})
    )
    out: list[Found] = []
    for keys, role in (
        (("spec", "leaderWorkerTemplate", "leaderTemplate", "spec"), "leader"),
        (("spec", "leaderWorkerTemplate", "workerTemplate", "spec"), "worker"),
    ):
        spec = doc.at(*keys)
        if spec is not None:
            out.extend(
                _pod_spec(path, spec, f"{owner} {role}", base_dir, nodes=nodes, extra_env=extra)
            )
    return out


def _pod_spec(
    path: str,
    spec: Node,
    owner: str,
    base_dir: str,
    nodes: Nodes | None = None,
    extra_env: tuple[dict[str, str], dict[str, str]] | None = None,
) -> list[Found]:
    out = []
    containers = shaped(spec.get("containers"), list, path, "containers")
    volumes = _config_volumes(spec)
    for container in (
        containers.children
        if containers is not None and isinstance(containers.children, list)
        else []
    ):
        if not isinstance(container.value, dict):
            continue
        name = container.value.get("name")  # Knative's single container may have none
        found = _container_found(
            path,
            container,
            f"{owner} / container {name}" if name is not None else owner,
            base_dir,
            extra_env=extra_env,
            nodes=nodes,
        )
        if found.launch is not None:
            found.launch = replace(found.launch, mounts=_mounts(container, volumes))
        out.append(found)
    return out


def _config_volumes(spec: Node) -> dict[str, str]:
    """Pod volumes backed by a ConfigMap: volume name -> ConfigMap name."""
    volumes = spec.get("volumes")
    out = {}
    for volume in (
        volumes.children if volumes is not None and isinstance(volumes.children, list) else []
    ):
        if isinstance(volume.value, dict) and isinstance(volume.value.get("configMap"), dict):
            out[str(volume.value.get("name"))] = str(volume.value["configMap"].get("name"))
    return out


def _mounts(container: Node, volumes: dict[str, str]) -> dict[str, str]:
    mounts = container.get("volumeMounts")
    out = {}
    for mount in (
        mounts.children if mounts is not None and isinstance(mounts.children, list) else []
    ):
        if isinstance(mount.value, dict) and str(mount.value.get("name")) in volumes:
            out[str(mount.value.get("mountPath"))] = volumes[str(mount.value.get("name"))]
    return out


def _container_found(
    path: str,
    container: Node,
    label: str,
    base_dir: str,
    extra_env: tuple[dict[str, str], dict[str, str]] | None = None,
    gpus: GpuSet | None = None,
    nodes: Nodes | None = None,
) -> Found:
    """One Kubernetes container: its command + args, env, image and GPUs."""
    command, args = container.get("command"), container.get("args")
    env, env_where = _k8s_env(container, path)
    if extra_env:
        env, env_where = {**extra_env[0], **env}, {**extra_env[1], **env_where}
    gpus = gpus or _k8s_gpus(container, path)
    image = container.value.get("image")
    command_words = words(command) + words(args)
    line = (command or args or container).line
    if not command_words:
        return Found(
            path,
            container.line,
            label,
            kind="kubernetes",
            none_reason=f"{label}: no command or args (it runs its image's default command, not "
            "visible here)",
        )
    found = from_words(
        path,
        Container(label, "kubernetes", env, env_where, gpus, str(image) if image else None),
        command_words,
        base_dir,
        line,
    )
    if found.launch is not None and nodes is not None:
        found.launch = replace(found.launch, nodes=nodes)
    return found


def _config_maps(path: str, documents: list[Node]) -> dict[str, dict[str, tuple[str, int]]]:
    """ConfigMaps of the manifest: name -> key -> (text, line of the value's first line)."""
    out: dict[str, dict[str, tuple[str, int]]] = {}
    for doc in documents:
        if not isinstance(doc.value, dict) or doc.value.get("kind") != "ConfigMap":
            continue
        name = _name(path, doc)
        data = shaped(doc.get("data"), dict, path, "data")
        for key, node in (
            data.children.items() if data is not None and isinstance(data.children, dict) else []
        ):
            offset = node.line + (1 if node.style in ("|", ">") else 0)
            out.setdefault(name, {})[key] = (str(node.value), offset)
    return out


def _follow_config_maps(
    founds: list[Found], config_maps: dict[str, dict[str, tuple[str, int]]]
) -> list[Found]:
    """A launch whose `--config` names a file in a ConfigMap of the same manifest mounted in its pod
    reads it."""
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
