"""The registry of launch-file kinds (topoctl/deploy/registry.py): every line names a reader of this
layer that exists, a file is the kind its name, marker or first line says, a folder walk takes only
the names it lists, and every kind has files in the launch corpus (tests/data/launch_corpus/) that
read as that kind.

The files written here are synthetic, each a few lines to show one rule of recognition."""

from __future__ import annotations

import inspect
import os

import pytest

from topoctl.deploy import registry

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "data", "launch_corpus")
LAUNCH = "python -m sglang.launch_server --model-path M --tp 2\n"


def test_every_registry_line_names_a_reader_of_the_deployment_layer():
    for kind in registry.FILE_KINDS:
        if kind.reader:
            assert kind.reader.startswith("topoctl.deploy."), kind
            read = registry.reader(kind.reader)
            assert list(inspect.signature(read).parameters) == ["path", "text", "base_dir"], kind
        assert kind.names or kind.marker or kind.sniff or kind.reader, kind
    for document in registry.DOCUMENT_KINDS:
        module = registry.reader(document.module)
        assert module.__name__.startswith("topoctl.deploy."), document
        assert callable(module.is_document) and callable(module.read_document), document
        assert callable(getattr(module, "link", None)) == document.links, document


@pytest.mark.parametrize(
    ("name", "text", "kind"),
    [
        ("launch.env", "SGLANG_ARGS='--tp 2'\n", "launch.env"),
        ("Dockerfile.gpu", f"FROM lmsysorg/sglang:v0.5.21\nCMD {LAUNCH}", "dockerfile"),
        ("serve.sh", LAUNCH, "script"),
        (
            "serve",
            f"#!/usr/bin/env bash\n{LAUNCH}",
            "script",
        ),  # no suffix: the #! line names a shell
        ("compose.yml", f"services:\n  s:\n    command: {LAUNCH}", "compose"),
        (
            "pod.yaml",
            "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n    command: "
            f"[{LAUNCH.strip()}]\n",
            "kubernetes",
        ),
        (
            "recommended.txt",
            "SGLANG_ARGS='--tp 2'\n",
            "launch.env",
        ),  # by its text, named on the command line
        ("notes.txt", "nothing to launch here\n", "unknown"),
    ],
)
def test_a_file_is_the_kind_its_name_or_text_says(tmp_path, name, text, kind):
    path = tmp_path / name
    path.write_text(text)
    assert registry.read_file(str(path))[0] == kind


def test_a_folder_holding_the_marker_is_read_as_one(tmp_path):
    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    assert registry.expand_paths([str(tmp_path)]) == [(str(tmp_path), False)]
    assert registry.read_file(str(tmp_path))[0] == "helm"


def test_a_folder_walk_takes_only_the_names_the_kinds_list(tmp_path):
    names = [
        "launch.env",
        "prod.env",
        "serve.sh",
        "run.bash",
        "Dockerfile",
        "x.dockerfile",
        "k.yaml",
        "c.yml",
        "notes.txt",
        "serve",
        "recommended.txt",
    ]
    for name in names:
        (tmp_path / name).write_text(LAUNCH)
    taken = {
        os.path.basename(path)
        for path, in_folder in registry.expand_paths([str(tmp_path)])
        if in_folder
    }
    assert taken == {
        "launch.env",
        "serve.sh",
        "run.bash",
        "Dockerfile",
        "x.dockerfile",
        "k.yaml",
        "c.yml",
    }


def test_every_kind_has_files_in_the_launch_corpus():
    read = [
        registry.read_file(path, found_in_folder=True)
        for path, _ in registry.expand_paths([CORPUS])
    ]
    kinds = {part for kind, _ in read for part in kind.split("+")}
    wanted = {kind.name for kind in registry.FILE_KINDS if kind.names or kind.marker} - {"yaml"}
    wanted |= {document.name for document in registry.DOCUMENT_KINDS}
    assert wanted <= kinds, wanted - kinds
