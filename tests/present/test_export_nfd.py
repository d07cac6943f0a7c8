"""`topoctl export nfd`: node-feature-discovery's local feature file, and the Kubernetes examples,
validated against the Kubernetes schemas shipped in kubernetes-validate (a maintained PyPI
validator)."""

from __future__ import annotations

import os
import re

import pytest
import yaml
from conftest import ROOT

from topoctl.present.nfd_labels import PREFIX, label_value

LABEL_VALUE = re.compile(
    r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
)  # Kubernetes' label value syntax
EXAMPLES = os.path.join(ROOT, "examples", "kubernetes")


def _labels(text: str) -> dict[str, str]:
    return dict(
        line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#")
    )


def test_dgx_labels(cli, tmp_path):
    out = tmp_path / "features.d" / "topoctl"
    out.parent.mkdir()
    code, _, err = cli(["export", "nfd", "--system", "h100-8x-8nic-ib", "-o", str(out)])
    assert code == 0, err
    labels = _labels(out.read_text())
    assert labels == {
        PREFIX + "gpu.count": "8",
        PREFIX + "gpu.sm": "90",
        PREFIX + "interconnect": "nvswitch",
        PREFIX + "p2p.all-pairs": "true",
        PREFIX + "nvlink.clique": "0",
        PREFIX + "nic.rdma": "8",
        PREFIX + "nic.nearest": "PXB",
        PREFIX + "gpudirect.ready": "true",
        PREFIX + "allreduce.path": "custom",
    }
    for name, value in labels.items():
        assert len(name.split("/", 1)[1]) <= 63 and LABEL_VALUE.match(value), (name, value)


def test_unknowns_and_a_pcie_box(cli):
    code, out, _ = cli(["export", "nfd", "--system", "rtx-4090-2x-pcie-no-p2p", "-o", "-"])
    labels = _labels(out)
    assert code == 0
    assert labels[PREFIX + "p2p.all-pairs"] == "false" and labels[PREFIX + "nic.rdma"] == "unknown"
    assert labels[PREFIX + "nvlink.clique"] == "none"


@pytest.mark.parametrize(
    "value, label",
    [
        (None, "unknown"),
        (True, "true"),
        ("a b/c", "a-b-c"),
        ("-x-", "x"),
        ("y" * 80, "y" * 63),
        ("...", "unknown"),
    ],
)
def test_label_values_are_valid(value, label):
    assert label_value(value) == label and LABEL_VALUE.match(label)


def test_feature_file_is_written_atomically(cli, tmp_path, monkeypatch):
    """A failed write leaves the old file whole (topoctl.core.io.write_atomic)."""
    out = tmp_path / "topoctl"
    out.write_text("old\n")
    import topoctl.core.io

    def broken(self, text):
        raise topoctl.core.errors.OutputError("disk full")

    monkeypatch.setattr(topoctl.core.io.Destination, "write", broken)
    code, _, _ = cli(["export", "nfd", "--system", "h100-8x-8nic-ib", "-o", str(out)])
    assert code != 0 and out.read_text() == "old\n"


def test_kubernetes_examples_validate_against_the_kubernetes_schemas():
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    for name in sorted(os.listdir(EXAMPLES)):
        with open(os.path.join(EXAMPLES, name), encoding="utf-8") as handle:
            documents = [doc for doc in yaml.safe_load_all(handle) if doc]
        assert documents, name
        for document in documents:
            kubernetes_validate.validate(document, "1.33.0", strict=True)


def test_the_validator_can_fail():
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    with open(os.path.join(EXAMPLES, "topoctl-daemonset.yaml"), encoding="utf-8") as handle:
        daemonset = [doc for doc in yaml.safe_load_all(handle) if doc["kind"] == "DaemonSet"][0]
    daemonset["spec"]["template"]["spec"]["containers"][0]["volumeMountz"] = []
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(daemonset, "1.33.0", strict=True)


def test_the_daemonset_writes_where_nfd_and_fleet_read():
    with open(os.path.join(EXAMPLES, "topoctl-daemonset.yaml"), encoding="utf-8") as handle:
        text = handle.read()
    assert 'topoctl probe -o "/nodes/${NODE_NAME}.yaml"' in text
    assert "-o /etc/kubernetes/node-feature-discovery/features.d/topoctl" in text
