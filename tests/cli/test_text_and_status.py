"""One escaper for every line topoctl prints (errors, check reports, launch.env comments,
--explain), and one label for an undecided block rule ("cannot verify"), taken from
Finding.status_text everywhere."""

from __future__ import annotations

import json

import yaml

from topoctl.core.errors import one_line


def test_one_line_limit_cuts_long_text_only():
    assert one_line("a\tb") == "a\\tb"
    assert one_line("x" * 20, limit=10) == "x" * 7 + "..."
    assert one_line("x" * 10, limit=10) == "x" * 10
    assert (
        one_line("é\u2028" * 3) == "é\\u2028" * 3
    )  # printable text is kept, line separators escaped


def test_check_escapes_a_tab_as_the_docs_say(cli):
    argv = [
        "check",
        "--system",
        "h200-4x-nvswitch-vm",
        "--disable",
        "custom-allreduce-pcie-gate=ok\tmeasured\x01here",
        "--",
        "python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "M",
        "--tp-size",
        "4",
    ]
    code, out, _ = cli(argv)
    assert code == 0, out
    assert "ok\\tmeasured\\x01here" in out and "\t" not in out


def test_launch_env_comment_escapes_a_tab(cli, tmp_path):
    argv = [
        "recommend",
        "--system",
        "h200-4x-nvswitch-vm",
        "--disable",
        "custom-allreduce-pcie-gate=ok\there",
    ]
    code, out, err = cli(argv)
    assert code == 0, err
    assert "# Rule custom-allreduce-pcie-gate disabled: ok\\there" in out


def _unverifiable(tmp_path):
    """Four NVLink GPUs in a VM that hides the NVSwitch, whose P2P status and compute capability
    could not be read: the SM12x block rules cannot be decided."""
    path = tmp_path / "box.yaml"
    from rules_helpers import make_snapshot as rules_snapshot

    snapshot = rules_snapshot(
        sm=90,
        count=4,
        interconnect="nvswitch",
        link="NV18",
        nvlink=True,
        nvswitch=None,
        p2p="unknown",
        name="NVIDIA H200",
    )
    for gpu in snapshot["gpus"]:
        gpu["sm"] = gpu["compute_capability"] = None
    path.write_text(yaml.safe_dump(snapshot))
    return ["--topology", str(path)]


def test_recommend_findings_carry_status_text(cli, tmp_path):
    code, out, err = cli(["recommend", *_unverifiable(tmp_path), "--format", "json", "--explain"])
    assert code == 0, err
    findings = json.loads(out)["findings"]
    unknown = [f for f in findings if f["status"] == "unknown"]
    assert unknown, findings
    assert all(f["status_text"] == "cannot verify" for f in unknown)
    assert all(f["status_text"] == f["status"] for f in findings if f["status"] != "unknown")
    for finding in unknown:
        assert f"{finding['rule_id']} (cannot verify)" in err


def test_names_from_a_manifest_cannot_forge_a_ci_annotation(cli, tmp_path):
    """A container, a deployment and an argument carrying newlines and `::error`: every text line
    topoctl prints starts with what topoctl put there (GitHub Actions reads a line starting
    `::error` as an annotation)."""
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: "
        '"dep\\n::error::meta"}\nspec:\n  template:\n    spec:\n      containers:\n      - name: '
        '"srv\\n::error file=x::forged\\r\\n::warning::w"\n        image: '
        '"lmsysorg/sglang:v0.5.12\\n::error::image"\n        command: [python3, -m, '
        'sglang.launch_server, --model-path, "m\\n::error::model", --tp-size, "2"]\n'
    )
    for fmt in ("text", "github", "junit"):
        code, out, err = cli(
            ["check", str(manifest), "--system", "rtx-4090-2x-pcie-no-p2p", "--format", fmt]
        )
        assert code == 1, err
        forged = [
            line
            for line in (out + err).splitlines()
            if line.startswith(("::error file=x::", "::error::", "::warning::w"))
        ]
        assert forged == [], fmt
