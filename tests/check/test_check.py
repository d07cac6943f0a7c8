"""`topoctl check`: blocked flags fail on the systems they are blocked on, recommended launches
pass, every format and exit code, drift, and launch.env parsing without executing it."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner
from conftest import target
from snapshot_factory import make_snapshot

from topoctl.cli.app import cli as cli_group
from topoctl.cli.app import main
from topoctl.core.errors import TopoctlError
from topoctl.rules.sglang.flags import known_versions
from topoctl.snapshot.catalogue import list_systems

CMD = ["--", "python", "-m", "sglang.launch_server", "--model-path", "M"]


@pytest.mark.parametrize(
    "name,version,extra,rule_hint",
    [
        ("rtx-pro-6000-8x-pcie", "0.5.12", ["--tp", "8", "--enable-torch-symm-mem"], "torch-symm"),
        (
            "rtx-pro-6000-8x-pcie",
            "0.5.5",
            ["--tp", "8", "--enable-flashinfer-allreduce-fusion"],
            "flashinfer",
        ),
        (
            "rtx-pro-6000-8x-pcie",
            "0.5.23",
            ["--tp", "8", "--flashinfer-allreduce-fusion-backend", "auto"],
            "flashinfer",
        ),
        (
            "rtx-pro-6000-8x-pcie",
            "0.5.23",
            ["--tp", "8", "--cuda-graph-max-bs", "128"],
            "ambiguous",
        ),
        ("rtx-pro-6000-8x-pcie", "0.5.12", ["--tp", "8", "--no-such-flag"], "unknown"),
        (
            "rtx-pro-6000-8x-pcie",
            "0.5.12",
            ["--tp", "8", "--speculative-algorithm", "EAGLE3", "--speculative-eagle-topk", "1"],
            "speculative",
        ),
        # (0.5.13: 0.5.12's V2-only custom allreduce stays off without NVLink, the oracle shows)
        ("rtx-4090-2x-pcie-no-p2p", "0.5.13", ["--tp", "2"], "custom-allreduce"),
    ],
)
def test_blocked_flags_fail(name, version, extra, rule_hint, tmp_path, cli):
    code, out, _ = cli(["check", *target(name), "--sglang-version", version, *CMD, *extra])
    assert code == 1, out
    assert rule_hint in out


def test_nccl_tree_env_blocked(cli):
    # the field report's launch (Kimi-K2.5, TP8) is the one a measurement shows failing
    code, out, _ = cli(
        [
            "check",
            *target("rtx-pro-6000-8x-pcie"),
            "--model",
            "kimi-k2.5",
            "--",
            "NCCL_ALGO=Tree",
            "python",
            "-m",
            "sglang.launch_server",
            "--tp",
            "8",
        ]
    )
    assert code == 1 and "nccl-tree-cuda-graph-sm120-pcie" in out
    # another launch on the same machine was not measured: a warning
    code, out, _ = cli(
        [
            "check",
            *target("rtx-pro-6000-8x-pcie"),
            "--",
            "NCCL_ALGO=Tree",
            "python",
            "-m",
            "sglang.launch_server",
            "--tp",
            "8",
        ]
    )
    assert code == 0 and "nccl-tree-cuda-graph-sm120-pcie-unmeasured" in out


@pytest.mark.parametrize(
    "name,version,extra,rule_hint",
    [
        # SGLang 0.5.8-0.5.13.post1 run the plain allreduce on SM12x when the fusion is asked for
        # (it is ignored).
        (
            "rtx-pro-6000-8x-pcie",
            "0.5.12",
            ["--tp", "8", "--enable-flashinfer-allreduce-fusion"],
            "sm12x-ignored",
        ),
        # With the number of steps and the top-k given SGLang starts; it just does not choose the
        # draft tokens.
        (
            "rtx-pro-6000-8x-pcie",
            "0.5.12",
            [
                "--tp",
                "8",
                "--speculative-algorithm",
                "EAGLE3",
                "--speculative-num-steps",
                "3",
                "--speculative-eagle-topk",
                "1",
            ],
            "speculative-params-partial",
        ),
        # 4x L40S over PCIe without P2P: SGLang's own gate turns custom allreduce off before any P2P
        # test.
        ("l40s-4x-pcie-2numa", "0.5.12", ["--tp", "4"], None),
        # torch symmetric memory on SM12x: fixed in 0.5.14 (skipped with a warning).
        (
            "rtx-pro-6000-8x-pcie",
            "0.5.14",
            ["--tp", "8", "--enable-torch-symm-mem"],
            "torch-symm-mem-sm12x-skipped",
        ),
    ],
)
def test_launches_sglang_runs_do_not_block(name, version, extra, rule_hint, cli):
    code, out, _ = cli(["check", *target(name), "--sglang-version", version, *CMD, *extra])
    assert code == 0, out
    if rule_hint:
        assert rule_hint in out, out


FUSION_RULE = "flashinfer-allreduce-fusion-sm12x"


def _fusion_verdict(cli, system, version, extra):
    """(exit code, the fusion rule blocks, other blocking rule ids) of `check --format json` for one
    launch."""
    code, out, err = cli(
        ["check", *target(system), "--sglang-version", version, "--format", "json", *CMD, *extra]
    )
    assert code in (0, 1), err
    blocking = {
        f["id"]
        for r in json.loads(out)["results"]
        for f in r["findings"]
        if f["severity"] == "block"
    }
    return code, FUSION_RULE in blocking, blocking - {FUSION_RULE}


@pytest.mark.parametrize(
    "system,version,extra",
    [
        # From 0.5.14 SGLang refuses the fusion at start-up above TP 1 on any GPU whose SM major is
        # not 9 or 10 (flashinfer_comm_fusion.py _resolve_backend, reached from the runner's warmup
        # before serving).
        ("a100-8x-4nic-roce", "0.5.14", ["--tp", "8", "--enable-flashinfer-allreduce-fusion"]),
        (
            "a100-8x-4nic-roce",
            "0.5.23",
            ["--tp", "8", "--flashinfer-allreduce-fusion-backend", "auto"],
        ),
        ("l40s-4x-pcie-2numa", "0.5.18", ["--tp", "4", "--enable-flashinfer-allreduce-fusion"]),
        (
            "rtx-4090-2x-pcie-no-p2p",
            "0.5.21",
            ["--tp", "2", "--flashinfer-allreduce-fusion-backend", "auto"],
        ),
        ("rtx-pro-6000-8x-pcie", "0.5.14", ["--tp", "8", "--enable-flashinfer-allreduce-fusion"]),
    ],
)
def test_fusion_outside_sm90_sm10x_blocks_from_0_5_14(cli, system, version, extra):
    code, fusion, _ = _fusion_verdict(cli, system, version, extra)
    assert code == 1 and fusion
    # the same launch without the flag: the fusion rule says nothing
    _, fusion, _ = _fusion_verdict(cli, system, version, extra[:2])
    assert not fusion


@pytest.mark.parametrize(
    "system,version,extra",
    [
        # 0.5.8-0.5.13.post1 gate the fused call sites to SM90/SM100 and have no start-up check:
        # ignored
        ("a100-8x-4nic-roce", "0.5.13", ["--tp", "8", "--enable-flashinfer-allreduce-fusion"]),
        (
            "l40s-4x-pcie-2numa",
            "0.5.13.post1",
            ["--tp", "4", "--enable-flashinfer-allreduce-fusion"],
        ),
        # TP 1: no fusion group, SGLang returns before its architecture check
        ("l40s-4x-pcie-2numa", "0.5.23", ["--tp", "1", "--enable-flashinfer-allreduce-fusion"]),
        # SM90 and SM100 run it
        ("h200-4x-nvswitch-vm", "0.5.23", ["--tp", "4", "--enable-flashinfer-allreduce-fusion"]),
        (
            "b200-8x-nvswitch",
            "0.5.14",
            ["--tp", "8", "--flashinfer-allreduce-fusion-backend", "auto"],
        ),
    ],
)
def test_fusion_where_sglang_runs_or_ignores_it_is_not_blocked(cli, system, version, extra):
    code, fusion, others = _fusion_verdict(cli, system, version, extra)
    assert not fusion
    assert code == (1 if others else 0), others


def test_same_flags_pass_where_not_blocked(cli):
    code, out, _ = cli(
        [
            "check",
            *target("h200-4x-nvswitch-vm"),
            "--sglang-version",
            "0.5.12",
            *CMD,
            "--tp",
            "4",
            "--enable-flashinfer-allreduce-fusion",
        ]
    )
    assert code == 0, out


VERSIONS = [None, *known_versions()]


@pytest.mark.parametrize("name", list_systems())
@pytest.mark.parametrize("version", VERSIONS)
def test_recommended_launch_env_of_every_system_passes(name, version, tmp_path, cli):
    """What recommend writes for a built-in system, check passes on that system (plain, and EAGLE-3
    asked)."""
    pinned = ["--sglang-version", version] if version else []
    for index, extra in enumerate(
        (
            [],
            ["--speculative", "eagle3", "--draft-model", "/models/eagle 3"],
            ["--speculative", "eagle3", "--draft-model", "/d", "--force-speculative"],
        )
    ):
        env_file = tmp_path / f"launch-{index}.env"
        code, _, err = cli(
            [
                "recommend",
                *target(name),
                "--model",
                "kimi-k2.5",
                *pinned,
                *extra,
                "-o",
                str(env_file),
            ]
        )
        if code == 1 and ("no launch passes" in err or "does not fit" in err):
            # EAGLE-3 forced where a rule blocks it, or the model does not load: nothing to check
            continue
        assert code == 0, err
        code, out, _ = cli(["check", str(env_file), *target(name), "--model", "kimi-k2.5", *pinned])
        assert code == 0, (name, version, extra, out)


def _blocked_launches():
    """(system, version, command tokens, the rule ids that block it) for every alternative recommend
    drops."""
    from topoctl.autoconf import models
    from topoctl.autoconf.search import Request, search
    from topoctl.cli.commands.recommend import flag_set_for
    from topoctl.rules.engine import load_rules
    from topoctl.rules.sglang import spelling as table
    from topoctl.snapshot.catalogue import system_snapshot

    ruleset = load_rules()
    out = []
    for name in list_systems():
        snapshot = system_snapshot(name)
        for version in ("0.5.12", "0.5.23"):
            flags = flag_set_for(version)
            try:
                result = search(
                    snapshot,
                    models.profile("kimi-k2.5"),
                    flags,
                    version,
                    Request("eagle3", "/d"),
                    ruleset=ruleset,
                )
            except (
                TopoctlError
            ):  # Kimi-K2.5 does not load here: the rules' blocks, without the memory model
                result = search(
                    snapshot, None, flags, version, Request("eagle3", "/d"), ruleset=ruleset
                )
            seen = set()
            for cand in result.blocked:
                rendered = table.render(cand.launch, flags, set(cand.launch), version)
                if rendered.problems:
                    continue
                tokens = [f"{key}={value}" for key, (value, _) in sorted(rendered.env.items())]
                tokens += [
                    "python",
                    "-m",
                    "sglang.launch_server",
                    "--model-path",
                    "M",
                    *rendered.flat_args(),
                ]
                rules = sorted({finding.rule_id for finding, _ in cand.blocked_by})
                key = (name, version, tuple(tokens))
                if key not in seen:
                    seen.add(key)
                    out.append(
                        pytest.param(
                            name, version, tokens, rules, id=f"{name}-{version}-{cand.label()}"
                        )
                    )
    return out


@pytest.mark.parametrize("name,version,tokens,rules", _blocked_launches())
def test_every_blocked_alternative_fails_on_its_system(name, version, tokens, rules, cli):
    """Each launch recommend drops as blocked on a system, check fails there, naming the rules
    behind it."""
    code, out, _ = cli(
        [
            "check",
            *target(name),
            "--sglang-version",
            version,
            "--model",
            "kimi-k2.5",
            "--format",
            "json",
            "--",
            *tokens,
        ]
    )
    assert code == 1, (tokens, out)
    blocking = {
        f["id"]
        for r in json.loads(out)["results"]
        for f in r["findings"]
        if f["severity"] == "block"
    }
    assert set(rules) <= blocking, (tokens, rules, blocking)


def test_blocked_flags_found_on_the_reference_systems():
    ids = {p.id for p in _blocked_launches()}
    assert any(i.startswith("rtx-pro-6000-8x-pcie-0.5.12-allreduce=torch_symm_mem") for i in ids)
    assert any(i.startswith("rtx-pro-6000-8x-pcie-0.5.23-allreduce=flashinfer_fusion") for i in ids)
    assert any(i.startswith("rtx-4090-2x-pcie-no-p2p-0.5.23-allreduce=custom") for i in ids)


def test_disabled_rule_reason_in_every_format(tmp_path, cli):
    reason = "LL128 validated on our fabric (ticket 1234)"
    argv = [
        *target("rtx-pro-6000-8x-pcie"),
        "--disable",
        f"nccl-ll128-without-nvlink={reason}",
        "--",
        "NCCL_PROTO=LL128",
        "python",
        "-m",
        "sglang.launch_server",
        "--tp",
        "8",
    ]
    code, out, _ = cli(["check", "--format", "text", *argv])
    assert code == 0 and f"nccl-ll128-without-nvlink: disabled: {reason}" in out
    code, out, _ = cli(["check", "--format", "json", *argv])
    assert json.loads(out)["results"][0]["disabled"] == [
        {"rule_id": "nccl-ll128-without-nvlink", "reason": reason}
    ]
    code, out, _ = cli(["check", "--format", "junit", *argv])
    skipped = ET.fromstring(out).findall(".//testcase/skipped")
    assert [s.get("message") for s in skipped] == [f"disabled: {reason}"]
    code, out, _ = cli(["check", "--format", "github", *argv])
    assert out.startswith("::notice ") and reason in out
    # without the disable, the same launch warns
    code, out, _ = cli(
        [
            "check",
            *target("rtx-pro-6000-8x-pcie"),
            "--fail-on",
            "warn",
            "--",
            "NCCL_PROTO=LL128",
            "python",
            "-m",
            "sglang.launch_server",
            "--tp",
            "8",
        ]
    )
    assert code == 1 and "nccl-ll128-without-nvlink" in out


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--disable", "nccl-ll128-without-nvlink"], "ID=REASON"),
        (["--disable-rule", "x=y"], "No such option"),
        (["--rules-dir", "site"], "No such option"),
    ],
)
def test_rules_options_usage_errors(argv, needle, cli):
    code, _, err = cli(["check", *target("h200-4x-nvswitch-vm"), *argv, *CMD, "--tp", "4"])
    assert code == 2 and needle in err


def test_site_rules(tmp_path, cli):
    from rules_helpers import SITE_RULE

    (tmp_path / "fleet.yaml").write_text(SITE_RULE)
    cmd = [
        *CMD,
        "--tp",
        "4",
        "--speculative-algorithm",
        "EAGLE3",
        "--speculative-draft-model-path",
        "/d",
        "--speculative-num-steps",
        "3",
        "--speculative-eagle-topk",
        "1",
        "--speculative-num-draft-tokens",
        "4",
    ]
    assert cli(["check", *target("h200-4x-nvswitch-vm"), *cmd])[0] == 0
    code, out, _ = cli(
        ["check", *target("h200-4x-nvswitch-vm"), "--rules", str(tmp_path / "fleet.yaml"), *cmd]
    )
    assert code == 1 and "site-no-eagle3-on-h200" in out


def test_fallback_system_when_no_gpu(monkeypatch, cli):
    import topoctl.probe.collect as collect
    from topoctl.core.errors import NoGpuError

    def no_gpu():
        raise NoGpuError("no NVIDIA driver")

    monkeypatch.setattr(collect, "probe_live", no_gpu)
    code, out, err = cli(
        [
            "check",
            "--fallback-system",
            "rtx-pro-6000-8x-pcie",
            "--sglang-version",
            "0.5.12",
            *CMD,
            "--tp",
            "8",
            "--enable-torch-symm-mem",
        ]
    )
    assert code == 1 and "torch-symm-mem-sm12x-keyerror" in out
    assert "rtx-pro-6000-8x-pcie" in err and "--fallback-system" in err
    code, _, err = cli(["check", "--fallback-system", "no-such-box", *CMD, "--tp", "8"])
    assert code == 2 and "unknown system" in err
    assert cli(["check", *CMD, "--tp", "8"])[0] == 3


def test_several_files_and_formats(tmp_path, cli):
    argv = target("rtx-pro-6000-8x-pcie")
    good = tmp_path / "launch.env"
    assert main(["recommend", *argv, "--sglang-version", "0.5.12", "-o", str(good)]) == 0
    bad = tmp_path / "launch.bad.env"
    bad.write_text(
        good.read_text().replace("SGLANG_ARGS='", "SGLANG_ARGS='--enable-torch-symm-mem ")
    )
    code, out, _ = cli(["check", str(good), str(bad), *argv, "--format", "json"])
    doc = json.loads(out)
    assert code == 1 and [r["ok"] for r in doc["results"]] == [True, False]
    code, out, _ = cli(["check", str(good), str(bad), *argv, "--format", "junit"])
    root = ET.fromstring(out)
    assert code == 1 and root.tag == "testsuites" and int(root.get("failures")) >= 1
    code, out, _ = cli(["check", str(bad), *argv, "--format", "github"])
    assert (
        code == 1
        and out.startswith("::error ")
        and "title=" in out
        and f"file={bad}" in out.replace("%3A", ":")
    )
    code, out, _ = cli(["check", str(good), *argv, "--format", "text"])
    assert code == 0 and "ok: 0 blocking" in out


def test_fail_on_warn(tmp_path, cli):
    argv = target("rtx-pro-6000-8x-pcie")
    cmd = [
        "check",
        *argv,
        "--sglang-version",
        "0.5.18",
        *CMD,
        "--tp",
        "8",
        "--cuda-graph-max-bs",
        "128",
    ]
    code, out, _ = cli(cmd)
    assert code == 0 and "deprecated" in out
    code, _, _ = cli(
        cmd + []
        if False
        else [
            "check",
            *argv,
            "--sglang-version",
            "0.5.18",
            "--fail-on",
            "warn",
            *CMD,
            "--tp",
            "8",
            "--cuda-graph-max-bs",
            "128",
        ]
    )
    assert code == 1


@pytest.mark.parametrize(
    "text,line",
    [
        ("A='ok'\nB=$(touch pwned)\n", 2),
        ("# c\n\nSGLANG_ARGS=--tp 8\n", 3),
        ("echo hi\n", 1),
        ('A="$HOME"\n', 1),
        ("A='unterminated\n", 1),
    ],
)
def test_unparseable_launch_env_exits_2(text, line, tmp_path, cli):
    path = tmp_path / "launch.env"
    path.write_text(text)
    code, _, err = cli(["check", str(path), *target("h200-4x-nvswitch-vm")])
    assert code == 2 and f"launch.env:{line}:" in err
    assert not (tmp_path / "pwned").exists()


def test_bad_input(tmp_path, cli):
    assert cli(["check", *target("h200-4x-nvswitch-vm")])[0] == 2
    assert cli(["check", str(tmp_path / "missing.env"), *target("h200-4x-nvswitch-vm")])[0] == 2
    assert cli(["check", "x.env", "--format", "xml", "--system", "h200-4x-nvswitch-vm"])[0] == 2


def test_drift(tmp_path, cli):
    made_for = make_snapshot("box", count=8)
    now = make_snapshot("box", count=8, driver="590.1", nccl="2.28.3")
    now["pairs"][0]["p2p"]["read"] = "NS"
    now["gpus"][3]["pcie"]["current_width"] = 8
    (tmp_path / "expect.json").write_text(json.dumps(made_for))
    (tmp_path / "now.json").write_text(json.dumps(now))
    code, out, _ = cli(
        [
            "check",
            "--topology",
            str(tmp_path / "now.json"),
            "--expect",
            str(tmp_path / "expect.json"),
            "--format",
            "json",
            *CMD,
            "--tp",
            "8",
        ]
    )
    ids = {f["id"] for r in json.loads(out)["results"] for f in r["findings"]}
    assert code == 1
    assert {
        "drift-p2p-lost",
        "drift-link-downtrained",
        "drift-driver-version",
        "drift-nccl-version",
    } <= ids
    fewer = make_snapshot("box", count=4)
    (tmp_path / "fewer.json").write_text(json.dumps(fewer))
    code, out, _ = cli(
        [
            "check",
            "--topology",
            str(tmp_path / "fewer.json"),
            "--expect",
            str(tmp_path / "expect.json"),
            *CMD,
            "--tp",
            "4",
        ]
    )
    assert code == 1 and "drift-gpu-count" in out


def test_cli_runner_and_subprocess(tmp_path):
    argv = target("h200-4x-nvswitch-vm")
    result = CliRunner().invoke(cli_group, ["check", *argv, *CMD, "--tp", "4"])
    assert result.exit_code == 0, result.output
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "topoctl",
            "check",
            *argv,
            "--format",
            "github",
            *CMD,
            "--tp",
            "4",
            "--bogus-flag",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and "::error" in proc.stdout


def test_no_torch_or_nvml_on_recommend_and_check(tmp_path):
    argv = target("h200-4x-nvswitch-vm")
    code = (
        "import sys; from topoctl.cli.app import main; "
        f"main(['recommend', *{argv!r}, '--model', 'kimi-k2.5']); "
        f"main(['check', *{argv!r}, '--', 'python', '-m', 'sglang.launch_server', '--tp', '4']); "
        "bad = [m for m in ('torch', 'pynvml', 'topoctl.probe.nvml') if m in sys.modules]; "
        "print('IMPORTED', bad, file=sys.stderr); sys.exit(3 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
