"""The PCIe IPC allreduce path (SGLANG_ENABLE_PCIE_IPC_ALLREDUCE): enumerated only where SGLang's
source (rules/sglang/data/pcie-ipc-allreduce.yaml) runs it, priced, written where it wins, and
checked clean."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from topoctl.autoconf import pcie_ipc
from topoctl.autoconf.pcie_ipc import Scope

BOX = ["--system", "rtx-pro-6000-8x-pcie"]
KIMI = ["--model", "kimi-k2.5", "--tp-size", "8"]


def recommend(cli, *argv: str) -> dict:
    code, out, err = cli(["recommend", "--format", "json", *argv])
    assert code == 0, err
    return json.loads(out)


def paths_considered(doc: dict) -> set[str]:
    """Every allreduce path recommend ranked, blocked or found not to fit."""
    docs = [doc["chosen"], *doc["alternatives"], *doc["blocked"], *doc["unfit"]]
    return {item["allreduce_path"] for item in docs if "allreduce_path" in item}


def test_data_file_records_each_fact_with_where_it_was_read():
    record = pcie_ipc.data()
    assert record["releases"]["first"] == "0.5.21" and record["world_sizes"] == [2, 4, 8]
    assert record["dtypes"] == ["bfloat16"] and record["flashinfer_pins"]["0.5.21"] == "0.6.18"
    ids = {fact["id"] for fact in record["facts"]}
    assert {
        "env-var",
        "world-sizes",
        "dtype",
        "message-cap",
        "cuda-graph",
        "multi-node",
        "custom-allreduce",
        "flashinfer-fusion",
        "symmetric-memory",
        "gpu-gate",
        "nvlink-p2p",
    } <= ids
    for fact in record["facts"]:
        assert fact["at"] and all(
            ":" in where or "(" in where for ats in fact["at"].values() for where in ats
        )


@pytest.mark.parametrize(
    "scope, why",
    [
        (Scope("0.5.20", 8), "does not read"),
        (Scope("0.5.14", 8), "does not read"),
        (Scope("0.5.23", 3), "world size 3"),
        (Scope("0.5.23", 16), "world size 16"),
        (Scope("0.5.23", 8, nnodes=2), "2 nodes"),
        (Scope("0.5.23", 8, "float16"), "float16"),
    ],
)
def test_refused_outside_the_source(scope, why):
    refusal = pcie_ipc.refusal(scope)
    assert refusal is not None and why in refusal
    assert not pcie_ipc.admits("pcie_ipc", scope) and pcie_ipc.admits("nccl", scope)


@pytest.mark.parametrize(
    "scope",
    [Scope("0.5.21", 2), Scope("0.5.22", 4, "bfloat16"), Scope("0.5.23", 8), Scope("0.6.0", 8)],
)
def test_admitted_inside_the_source(scope):
    assert pcie_ipc.refusal(scope) is None


def test_float32_config_runs_in_float16():
    assert pcie_ipc.model_dtype({"quantization": {"dtype": "float32"}}) == "float16"
    assert (
        pcie_ipc.model_dtype({"quantization": {}}) == "bfloat16"
        and pcie_ipc.model_dtype(None) is None
    )


@pytest.mark.parametrize("version", ["0.5.14", "0.5.20"])
def test_release_before_0_5_21_never_gets_it(cli, version):
    doc = recommend(cli, *BOX, *KIMI, "--sglang-version", version)
    assert "pcie_ipc" not in paths_considered(doc) and "nccl" in paths_considered(doc)
    assert "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE" not in doc["env"] and doc["offers"] == []


def test_world_size_3_never_gets_it_but_4_does(cli):
    three = recommend(
        cli, *BOX, "--model", "llama-3.1-8b", "--tp-size", "3", "--sglang-version", "0.5.23"
    )
    assert three["tp_size"] == 3 and "pcie_ipc" not in paths_considered(three)
    four = recommend(
        cli, *BOX, "--model", "llama-3.1-8b", "--tp-size", "4", "--sglang-version", "0.5.23"
    )
    assert "pcie_ipc" in paths_considered(four)


def test_two_nodes_tp16_never_gets_it(cli):
    doc = recommend(
        cli, *BOX, "--model", "kimi-k2.5", "--sglang-version", "0.5.23", "--nnodes", "2"
    )
    assert doc["tp_size"] == 16 and "pcie_ipc" not in paths_considered(doc)
    assert "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE" not in doc["env"]


@pytest.mark.parametrize("version", ["0.5.22", "0.5.23"])
def test_kimi_tp8_on_the_pcie_box_writes_it_with_its_gain(cli, version, tmp_path: Path):
    doc = recommend(cli, *BOX, *KIMI, "--sglang-version", version)
    chosen = doc["chosen"]
    assert (
        chosen["allreduce_path"] == "pcie_ipc"
        and doc["env"]["SGLANG_ENABLE_PCIE_IPC_ALLREDUCE"] == "1"
    )
    assert "--disable-custom-all-reduce" in doc["args"]
    # the measured NCCL launch anchors it: 89.5 x 1.09 x the launch model's ratio, the ratio named
    # as modelled
    formula = chosen["estimate_formula"]
    assert (
        formula.startswith("89.5 tok/s measured")
        and "allreduce=pcie_ipc instead of nccl" in formula
    )
    assert "modelled, rule launch-model-path-ratio" in formula
    # the launch model's PCIe IPC over NCCL ratio, as the formula states it (the composed step's,
    # docs/launch-model.md)
    ratio = float(
        re.search(r"\(x([0-9.]+) with allreduce=pcie_ipc instead of nccl", formula).group(1)
    )
    assert 1.2 < ratio < 1.5
    assert chosen["estimated_tok_s"] == pytest.approx(89.5 * 1.09 * ratio, rel=2e-3)
    assert "x launch model path ratio" in chosen["basis"]
    env = tmp_path / "launch.env"
    code, out, err = cli(["recommend", *BOX, *KIMI, "--sglang-version", version, "-o", str(env)])
    assert code == 0, err
    assert "\nSGLANG_ENABLE_PCIE_IPC_ALLREDUCE='1'\n" in env.read_text()
    code, out, err = cli(["check", str(env), *BOX, "--sglang-version", version])
    assert code == 0, out + err
    assert "0 blocking, 0 warning(s)" in out + err


def test_0_5_21_with_its_pinned_flashinfer_keeps_nccl(cli):
    """SGLang 0.5.21 pins FlashInfer 0.6.18, which has no PcieIpcAllReduceWorkspace: SGLang falls
    back to NCCL (pcie_ipc_ar.py:224-231), so the rules warn on the path and recommend keeps NCCL.
    """
    doc = recommend(cli, *BOX, *KIMI, "--sglang-version", "0.5.21")
    assert (
        doc["chosen"]["allreduce_path"] == "nccl"
        and "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE" not in doc["env"]
    )
    assert "pcie_ipc" in paths_considered(doc)


def test_set_on_a_release_that_does_not_read_it_warns_not_blocks(cli):
    code, out, err = cli(
        [
            "check",
            *BOX,
            "--sglang-version",
            "0.5.14",
            "--",
            "env",
            "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE=1",
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "M",
            "--tp-size",
            "8",
            "--disable-custom-all-reduce",
        ]
    )
    text = out + err
    assert "WARN  pcie-ipc-allreduce-outside-scope" in text and "BLOCK  pcie-ipc" not in text
    assert code == 0
