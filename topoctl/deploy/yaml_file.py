"""YAML launch files: each document is read by the first document kind of topoctl/deploy/registry.py
that takes it (a Kubernetes object, a compose file, a SkyPilot task); a file of none says so, and a
flat mapping is named as what it most likely is (an SGLang --config file, read with the launch that
names it).

Layer: deployment reading (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from topoctl.core.safe_read import MAX_LAUNCHES_PER_FILE, LimitError, load_yaml
from topoctl.deploy.found import Found, yaml_documents
from topoctl.deploy.registry import DOCUMENT_KINDS, DocumentKind, reader


def read(path: str, text: str, base_dir: str) -> tuple[str, list[Found]]:
    """The YAML file kind's reader (registry.FILE_KINDS)."""
    return read_yaml_text(path, text, base_dir)


def read_yaml_text(path: str, text: str, base_dir: str) -> tuple[str, list[Found]]:
    """(kinds of the file's documents joined by +, or yaml; the launches of its documents)."""
    found: list[Found] = []
    seen: dict[str, tuple[DocumentKind, list[Found]]] = {}
    documents = yaml_documents(path, text)
    for doc in documents:
        if not isinstance(doc.value, dict):
            continue
        kind = next((kind for kind in DOCUMENT_KINDS if reader(kind.module).is_document(doc)), None)
        if kind is not None:
            read_here: list[Found] = reader(kind.module).read_document(path, doc, base_dir)
            seen.setdefault(kind.name, (kind, []))[1].extend(read_here)
            found.extend(read_here)
        if len(found) > MAX_LAUNCHES_PER_FILE:
            raise LimitError(
                f"{path}: more than {MAX_LAUNCHES_PER_FILE} containers or services with a launch"
            )
    for kind, founds in seen.values():
        if kind.links:
            reader(kind.module).link(path, documents, founds)
    name = "+".join(sorted(seen)) or "yaml"
    if not found:
        found = [
            Found(path, 1, kind=name, none_reason=f"{path}: no launch ({_none_found(name, text)})")
        ]
    return name, found


def _none_found(name: str, text: str) -> str:
    """What a YAML file without a launch lacks, for the kinds its documents are."""
    if name != "yaml":
        return next(
            (kind.none_found for kind in DOCUMENT_KINDS if kind.name == name), "no container"
        )
    called = [kind.called for kind in DOCUMENT_KINDS]
    flat = (
        "; a flat mapping like an SGLang --config file, read with the launch that names it"
        if _flat_mapping(text)
        else ""
    )
    return f"neither {', '.join(called[:-1])} nor {called[-1]}{flat}"


def _flat_mapping(text: str) -> bool:
    import yaml

    try:
        data = load_yaml(text, "<flat mapping>")  # safe_load semantics within the limits
    except (yaml.YAMLError, LimitError):
        return False
    return (
        isinstance(data, dict)
        and bool(data)
        and all(not isinstance(v, dict) for v in data.values())
    )
