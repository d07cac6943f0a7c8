"""Docker Compose files: `services.NAME` with `entrypoint` + `command` (a string is split as compose
does, shell words), `environment` (list or mapping), `env_file`, the image, and the GPU reservation
(`deploy.resources.reservations.devices` with `capabilities: [gpu]`, `count`/`device_ids`, else
`gpus:`). `${NAME}` in the command is interpolated from the project folder's .env, as compose does.
Line numbers come from PyYAML's node marks, so a finding points at the line that wrote the word.

Layer: deployment reading (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import os

from topoctl.core.errors import TopoctlError, one_line
from topoctl.core.safe_read import split_words
from topoctl.deploy.container import Container, from_words
from topoctl.deploy.found import Found, Node, shaped, words
from topoctl.deploy.launchers import GpuSet, parse_gpus, read_docker_env_file


def is_document(doc: Node) -> bool:
    """A compose file: a mapping of `services`."""
    return isinstance(doc.value.get("services"), dict)


def _compose_words(node: Node | None) -> list[tuple[str, int, Node]]:
    if node is None or node.value is None:
        return []
    if isinstance(node.children, list):
        return words(node)
    try:
        split = split_words(str(node.value), f"line {node.line}")
    except ValueError as exc:
        raise TopoctlError(
            f"cannot split the command at line {node.line}: {exc}", hint="check its quoting"
        ) from None
    return [(word, node.line, node) for word in split]


def read_document(path: str, doc: Node, base_dir: str) -> list[Found]:
    """Every service of a compose file: its launch, or why it has none."""
    services = doc.get("services")
    out = []
    dot_env = os.path.join(
        base_dir, ".env"
    )  # compose interpolates ${VAR} from the project folder's .env
    project_env = (
        {key: value for _, key, value in read_docker_env_file(dot_env)}
        if os.path.isfile(dot_env)
        else {}
    )
    for name, service in (
        services.children.items()
        if services is not None and isinstance(services.children, dict)
        else []
    ):
        if not isinstance(service.value, dict):
            continue
        label = f"service {name}"
        env, env_where = _compose_env(path, service, base_dir)
        gpus = _compose_gpus(path, service)
        command = _compose_words(service.get("entrypoint")) + _compose_words(service.get("command"))
        line = (service.get("entrypoint") or service.get("command") or service).line
        image = service.value.get("image")
        if not command:
            out.append(
                Found(
                    path,
                    service.line,
                    label,
                    kind="compose",
                    none_reason=f"{label}: no command (it runs its image's default command, not "
                    "visible here)",
                )
            )
            continue
        container = Container(label, "compose", env, env_where, gpus, str(image) if image else None)
        out.append(from_words(path, container, command, base_dir, line, interpolate=project_env))
    return out


def _compose_env(path: str, service: Node, base_dir: str) -> tuple[dict[str, str], dict[str, str]]:
    """A compose service's environment: its env_file files, then `environment:` (a list or a
    mapping)."""
    env: dict[str, str] = {}
    env_where: dict[str, str] = {}
    env_files = service.get("env_file")
    for item in words(env_files) if env_files is not None else []:
        file_value = (
            item[0] if not isinstance(item[2].value, dict) else str(item[2].value.get("path"))
        )
        env_path = (
            os.path.join(base_dir, file_value) if not os.path.isabs(file_value) else file_value
        )
        for number, key, value in read_docker_env_file(env_path):
            env[key] = value
            env_where[key] = f"{env_path}:{number}"
    # the compose spec's `environment` is a mapping or a list of KEY=VALUE; docker compose refuses
    # anything else ("services.x.environment must be a mapping"), so a scalar is never skipped
    environment = shaped(service.get("environment"), (dict, list), path, "environment")
    if environment is not None and isinstance(environment.children, list):
        for item in environment.children:
            key, eq, value = str(item.value).partition("=")
            if eq:
                env[key] = value
                env_where[key] = f"{path}:{item.line}"
    elif environment is not None and isinstance(environment.children, dict):
        for key, item in environment.children.items():
            if item.value is not None:
                env[key] = (
                    "true"
                    if item.value is True
                    else "false"
                    if item.value is False
                    else str(item.value)
                )
                env_where[key] = f"{path}:{item.line}"
    return env, env_where


def _compose_gpus(path: str, service: Node) -> GpuSet | None:
    """The GPUs a compose service reserves (deploy.resources.reservations.devices, else `gpus:`)."""
    gpus = None
    devices = service.at("deploy", "resources", "reservations", "devices")
    for device in (
        devices.children if devices is not None and isinstance(devices.children, list) else []
    ):
        if not isinstance(device.value, dict):
            continue
        capabilities = device.value.get("capabilities") or []
        capabilities = capabilities if isinstance(capabilities, list) else [capabilities]
        if "gpu" not in [str(c) for c in capabilities] and device.value.get("driver") != "nvidia":
            continue
        count = device.value.get("count")
        ids = device.value.get("device_ids")
        if count not in (None, "all") and (
            isinstance(count, bool) or not str(count).isdigit() or len(str(count)) > 6
        ):
            raise TopoctlError(
                f"{path}:{device.line}: deploy.resources.reservations.devices count "
                f"{one_line(str(count), limit=40)!s} is not a number of GPUs",
                hint='give a whole number or "all"',
            )
        gpus = GpuSet(
            count=None if count in (None, "all") else int(str(count)),
            ids=[str(i) for i in ids] if isinstance(ids, list) else None,
            source=f"deploy.resources.reservations.devices ({path}:{device.line})",
        )
    if gpus is None and service.get("gpus") is not None:
        gpus = parse_gpus(str(service.value.get("gpus")), f"gpus: {service.value.get('gpus')}")
    return gpus
