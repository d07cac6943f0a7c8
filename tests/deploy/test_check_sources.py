"""check finds launches where deployments keep them (Kubernetes manifests, compose files, shell
scripts, folders) and in what wraps them (docker/podman run, bash -c, env, exec, Dynamo's worker,
sglang serve, --config), and reports each with its file and line: passes what is safe, blocks what
is not.

The deployment files are the repository's own examples (examples/deploy/, written for a 4-GPU H200
node) and variants of them written here; the targets are the built-in systems (h200-4x-nvswitch-vm
is a real capture, rtx-pro-6000-8x-pcie the field report's synthetic system)."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT, examples

H200 = ["--system", "h200-4x-nvswitch-vm"]
RTX = ["--system", "rtx-pro-6000-8x-pcie"]
DEPLOY = os.path.join(ROOT, "examples", "deploy")


def results(out):
    return json.loads(out)["results"]


def github(cli, argv):
    code, out, err = cli([argv[0], "--format", "github", *argv[1:]])
    return code, [line for line in out.splitlines() if line], err


def the_annotation(cli, argv, rule_id):
    """check in the github format blocks (exit 1) with exactly one annotation of `rule_id`: that
    line."""
    code, lines, _ = github(cli, argv)
    assert code == 1, lines
    hit = [line for line in lines if rule_id in line]
    assert len(hit) == 1, lines
    return hit[0]


def copy_example(tmp_path, relative):
    target = tmp_path / os.path.basename(relative)
    shutil.copy(os.path.join(DEPLOY, relative), target)
    return target


def line_of(path, text, after=0):
    for number, line in enumerate(open(path, encoding="utf-8").read().splitlines(), 1):
        if number > after and text in line:
            return number
    raise AssertionError(f"{text!r} not in {path}")


# -----------------------------------------------------------------------------------------------
# the examples


def test_the_example_deployments_pass_on_the_machine_they_were_written_for(cli):
    code, out, err = cli(["check", DEPLOY, *H200, "--format", "json"])
    assert code == 0, out + err
    doc = json.loads(out)
    origins = [r["origin"] for r in doc["results"]]
    assert len(origins) == 4, origins  # compose, Dynamo worker, Deployment, run script
    assert all(r["blocking"] == 0 and r["warnings"] == 0 for r in doc["results"]), out
    assert [n["origin"].split(":")[0] for n in doc["no_launch"]] == [
        os.path.join(DEPLOY, "scripts", "sglang-config.yaml")
    ]
    assert "SGLang 0.5.21 from the image tag lmsysorg/sglang:v0.5.21-cu129" in err


def test_the_example_deployments_block_on_a_two_gpu_machine_at_each_launch_line(cli):
    code, lines, _ = github(cli, ["check", DEPLOY, "--system", "h200-2x-nvswitch-vm"])
    assert code == 1
    errors = [
        line for line in lines if line.startswith("::error") and "topoctl-tp-exceeds-gpus" in line
    ]
    spots = {line.split("::")[1].split(",title=")[0] for line in errors}
    deployment = os.path.join(DEPLOY, "kubernetes", "sglang-deployment.yaml")
    script = os.path.join(DEPLOY, "scripts", "run-sglang.sh")
    assert f"error file={deployment},line={line_of(deployment, 'command:')}" in spots
    assert f"error file={script},line={line_of(script, 'python3 -m sglang.launch_server')}" in spots
    assert len(spots) == 4, spots


# -----------------------------------------------------------------------------------------------
# Kubernetes


def test_a_deployment_with_more_tp_than_its_gpu_limit_blocks_at_the_launch(cli, tmp_path):
    path = copy_example(tmp_path, "kubernetes/sglang-deployment.yaml")
    path.write_text(path.read_text().replace("nvidia.com/gpu: 4", "nvidia.com/gpu: 2"))
    hit = the_annotation(cli, ["check", str(path), *H200], "sglang-tp-exceeds-given-gpus")
    assert f"file={path},line={line_of(path, 'command:')}" in hit
    assert "nvidia.com/gpu: 2" in hit


def test_a_bad_flag_in_deployment_args_points_at_its_own_line(cli, tmp_path):
    path = copy_example(tmp_path, "kubernetes/sglang-deployment.yaml")
    path.write_text(path.read_text().replace("--cuda-graph-max-bs-decode", "--cuda-graph-max-bs"))
    hit = the_annotation(
        cli, ["check", str(path), *H200, "--sglang-version", "0.5.23"], "sglang-ambiguous-flag"
    )
    assert f"line={line_of(path, '- --cuda-graph-max-bs')}," in hit


def test_a_deployment_given_a_gpu_count_is_judged_on_every_set_the_scheduler_may_give(
    cli, tmp_path
):
    # nvidia.com/gpu: 2 on the L40S box (synthetic): the kubelet and the device plugin pick the two
    # GPUs. Two of the six sets have P2P, so the missing-P2P block is a warning naming the pairs, at
    # the container's line
    path = copy_example(tmp_path, "kubernetes/sglang-deployment.yaml")
    path.write_text(
        path.read_text().replace("nvidia.com/gpu: 4", "nvidia.com/gpu: 2").replace('"4"\n', '"2"\n')
    )
    l40s = ["--system", "l40s-4x-pcie-2numa", "--sglang-version", "0.5.21"]
    code, out, _ = cli(["check", str(path), *l40s, "--format", "json"])
    assert code == 0, out
    findings = results(out)[0]["findings"]
    warning = next(f for f in findings if f["id"] == "custom-allreduce-without-p2p")
    assert warning["severity"] == "warn" and "GPU0-GPU2" in warning["message"]
    assert not [f for f in findings if f["severity"] == "block"]
    code, lines, _ = github(cli, ["check", str(path), *l40s])
    assert code == 0
    assert any(
        line.startswith(f"::warning file={path},line={line_of(path, 'command:')}")
        and "blocks on 4 of the 6 sets" in line
        for line in lines
    )
    assert cli(["check", str(path), *l40s, "--fail-on", "warn"])[0] == 1


def test_kubernetes_env_is_the_launch_environment(cli, tmp_path):
    path = copy_example(tmp_path, "kubernetes/sglang-deployment.yaml")
    text = (
        path.read_text().replace("nvidia.com/gpu: 4", "nvidia.com/gpu: 8").replace('"4"\n', '"8"\n')
    )
    path.write_text(text)
    # the synthetic RTX system has SGLang 0.5.12 installed; Kimi-K2.5 is the launch the Tree block
    # was measured on
    rtx = [*RTX, "--sglang-version", "0.5.21", "--model", "kimi-k2.5"]
    assert cli(["check", str(path), *rtx])[0] == 0
    path.write_text(
        text.replace(
            "value: WARN", "value: WARN\n            - name: NCCL_ALGO\n              value: Tree"
        )
    )
    code, out, _ = cli(["check", str(path), *rtx, "--format", "json"])
    assert code == 1
    ids = {f["id"] for f in results(out)[0]["findings"]}
    assert "nccl-tree-cuda-graph-sm120-pcie" in ids


@pytest.mark.parametrize(
    "kind, wrap",
    [
        ("Pod", lambda c: f"spec:\n  containers:\n{c}"),
        (
            "StatefulSet",
            lambda c: (
                "spec:\n  serviceName: s\n  template:\n    spec:\n      "
                f"containers:\n{_indent(c, 4)}"
            ),
        ),
        (
            "Job",
            lambda c: (
                "spec:\n  template:\n    spec:\n      restartPolicy: Never\n      "
                f"containers:\n{_indent(c, 4)}"
            ),
        ),
    ],
)
def test_each_workload_kind_is_read(cli, tmp_path, kind, wrap):
    container = (
        "  - name: sglang\n    image: lmsysorg/sglang:v0.5.18-cu129\n"
        "    command: [python3, -m, sglang.launch_server]\n    args: [--model-path, M, "
        '--tp-size, "TP"]\n'
        "    resources: {limits: {nvidia.com/gpu: 4}}\n"
    )
    for tp, expected in (("4", 0), ("8", 1)):
        path = tmp_path / f"{kind}.yaml"
        path.write_text(
            f"apiVersion: v1\nkind: {kind}\nmetadata: {{name: x}}\n"
            + wrap(container.replace("TP", tp))
        )
        code, out, _ = cli(["check", str(path), *H200, "--format", "json"])
        assert code == expected, out
        assert results(out)[0]["origin"].startswith(f"{path}:{line_of(path, 'command:')} ({kind} x")


def _indent(text, spaces):
    return "".join(" " * spaces + line + "\n" for line in text.splitlines())


def test_a_leaderworkerset_reads_leader_and_worker(cli, tmp_path):
    path = tmp_path / "lws.yaml"
    path.write_text("""apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: sglang
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      spec:
        containers:
          - name: leader
            image: lmsysorg/sglang:v0.5.18-cu129
            command: ["sh", "-c", "python3 -m sglang.launch_server --model-path M --tp-size 4 --nnodes 2 --node-rank 0"]
            resources: {limits: {nvidia.com/gpu: "4"}}
    workerTemplate:
      spec:
        containers:
          - name: worker
            image: lmsysorg/sglang:v0.5.18-cu129
            command: ["sh", "-c", "python3 -m sglang.launch_server --model-path M --tp-size 4 --nnodes 2 --nodes-rank 1"]
            resources: {limits: {nvidia.com/gpu: "4"}}
""")
    code, out, _ = cli(["check", str(path), *H200, "--format", "json"])
    assert code == 1
    got = results(out)
    assert [r["origin"].split(" (")[1] for r in got] == [
        "LeaderWorkerSet sglang leader / container leader)",
        "LeaderWorkerSet sglang worker / container worker)",
    ]
    assert got[0]["blocking"] == 0
    assert (
        got[1]["findings"][0]["id"] == "sglang-unknown-flag"
    )  # --nodes-rank (its value 1 is then a stray word)
    assert got[1]["findings"][0]["where"] == f"{path}:{line_of(path, '--nodes-rank')}"


def test_kubernetes_expands_its_own_variables_from_env(cli, tmp_path):
    path = tmp_path / "pod.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: s\n"
        '    image: lmsysorg/sglang:v0.5.18-cu129\n    env: [{name: TP, value: "8"}]\n'
        "    command: [python3, -m, sglang.launch_server, --model-path, M, --tp-size, $(TP)]\n"
    )
    code, out, _ = cli(["check", str(path), *H200, "--format", "json"])
    assert code == 1 and "topoctl-tp-exceeds-gpus" in {f["id"] for f in results(out)[0]["findings"]}


def test_a_manifest_without_a_launch_is_said_so_and_is_not_ok(cli, tmp_path):
    path = tmp_path / "service.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80}]}\n"
    )
    default = tmp_path / "default-cmd.yaml"
    default.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "  - name: s\n    image: lmsysorg/sglang:v0.5.18-cu129\n"
    )
    code, out, _ = cli(["check", str(path), str(default), *H200])
    assert code == 0
    assert f"{path}:1: no launch checked" in out and "ok:" not in out
    assert "no command or args (it runs its image's default command" in out


def test_another_server_in_a_manifest_is_named_not_checked(cli, tmp_path):
    path = tmp_path / "vllm.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: v}\nspec:\n  containers:\n  - name: v\n    "
        "image: vllm/vllm-openai:v0.9.0\n    command: [vllm, serve, M, --tensor-parallel-size, "
        "'4']\n"
    )
    code, out, _ = cli(["check", str(path), *H200])
    assert code == 0
    assert "vLLM launch (vllm serve M ...): topoctl checks SGLang launches only; not checked" in out


# -----------------------------------------------------------------------------------------------
# compose


def test_a_compose_service_blocks_when_its_gpu_reservation_is_short(cli, tmp_path):
    path = copy_example(tmp_path, "compose/compose.yaml")
    assert cli(["check", str(path), *H200])[0] == 0
    path.write_text(path.read_text().replace("count: 4", "count: 2"))
    hit = the_annotation(cli, ["check", str(path), *H200], "sglang-tp-exceeds-given-gpus")
    assert f"file={path},line={line_of(path, 'entrypoint:')}," in hit


def test_a_compose_env_file_and_environment_are_the_launch_environment(cli, tmp_path):
    (tmp_path / "nccl.env").write_text("# NCCL settings\nNCCL_ALGO=Tree\n")
    path = tmp_path / "compose.yaml"
    base = (
        "services:\n  s:\n    image: lmsysorg/sglang:v0.5.18-cu129\n"
        "    command: [python3, -m, sglang.launch_server, --model-path, M, --tp-size, '8']\n"
    )
    path.write_text(base + "    environment: [NCCL_DEBUG=WARN]\n")
    assert cli(["check", str(path), *RTX])[0] == 0
    path.write_text(base + "    env_file: nccl.env\n")
    code, out, _ = cli(["check", str(path), *RTX, "--model", "kimi-k2.5", "--format", "json"])
    assert code == 1 and "nccl-tree-cuda-graph-sm120-pcie" in {
        f["id"] for f in results(out)[0]["findings"]
    }


# -----------------------------------------------------------------------------------------------
# scripts


def test_a_run_script_uses_what_it_exported_and_blocks_at_the_launch_line(cli, tmp_path):
    path = copy_example(tmp_path, "scripts/run-sglang.sh")
    shutil.copy(os.path.join(DEPLOY, "scripts", "sglang-config.yaml"), tmp_path)
    assert cli(["check", str(path), *H200])[0] == 0
    path.write_text(path.read_text().replace("TP_SIZE=4", "TP_SIZE=8"))
    hit = the_annotation(cli, ["check", str(path), *H200], "topoctl-tp-exceeds-gpus")
    assert f"file={path},line={line_of(path, 'python3 -m sglang.launch_server')}," in hit


def test_a_script_with_no_launch_is_said_so(cli, tmp_path):
    path = tmp_path / "prepare.sh"
    path.write_text("#!/bin/sh\nexport HF_HOME=/models\nhuggingface-cli download Qwen/Qwen3-32B\n")
    code, out, _ = cli(["check", str(path), *H200])
    assert (
        code == 0 and "no command of the script starts an SGLang server" in out and "ok:" not in out
    )


def test_a_value_the_script_cannot_see_is_a_warning_not_a_block(cli, tmp_path):
    path = tmp_path / "run.sh"
    path.write_text(
        '#!/bin/bash\npython3 -m sglang.launch_server --model-path M --tp-size "$TP" $EXTRA_ARGS\n'
    )
    code, out, _ = cli(["check", str(path), *H200, "--format", "json"])
    assert code == 0
    finding = results(out)[0]["findings"][0]
    assert finding["id"] == "sglang-unresolved-expansion" and "$EXTRA_ARGS" in finding["message"]


# -----------------------------------------------------------------------------------------------
# commands


@pytest.mark.parametrize(
    "wrapper",
    [
        [
            "docker",
            "run",
            "--rm",
            "--gpus",
            "all",
            "--ipc=host",
            "-p",
            "30000:30000",
            "-v",
            "/m:/m",
            "lmsysorg/sglang:v0.5.18-cu129",
        ],
        [
            "podman",
            "run",
            "-it",
            "--device",
            "nvidia.com/gpu=all",
            "--shm-size",
            "32g",
            "docker.io/lmsysorg/sglang:v0.5.18",
        ],
        ["env", "NCCL_DEBUG=WARN", "exec"],
        ["bash", "-c"],
    ],
)
def test_wrapped_commands_pass_and_block(cli, wrapper):
    for tp, expected in (("4", 0), ("8", 1)):
        inner = ["python3", "-m", "sglang.launch_server", "--model-path", "M", "--tp-size", tp]
        command = [*wrapper, " ".join(inner)] if wrapper[-1] == "-c" else [*wrapper, *inner]
        code, out, _ = cli(["check", *H200, "--format", "json", "--", *command])
        assert code == expected, (command, out)


def test_docker_gpus_env_and_env_file_are_read(cli, tmp_path):
    env_file = tmp_path / "sglang.env"
    env_file.write_text("NCCL_ALGO=Tree\n")
    base = [
        "docker",
        "run",
        "--gpus",
        '"device=0,1,2,3,4,5,6,7"',
        "lmsysorg/sglang:v0.5.18-cu129",
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "M",
        "--tp-size",
        "8",
    ]
    assert cli(["check", *RTX, "--", *base])[0] == 0
    kimi = [*RTX, "--model", "kimi-k2.5"]  # the launch the Tree block was measured on
    code, out, _ = cli(
        [
            "check",
            *kimi,
            "--format",
            "json",
            "--",
            *base[:2],
            "--env-file",
            str(env_file),
            *base[2:],
        ]
    )
    assert code == 1 and "nccl-tree-cuda-graph-sm120-pcie" in {
        f["id"] for f in results(out)[0]["findings"]
    }
    code, out, _ = cli(
        ["check", *kimi, "--format", "json", "--", *base[:2], "-e", "NCCL_ALGO=Tree", *base[2:]]
    )
    assert code == 1
    code, out, _ = cli(
        ["check", *RTX, "--format", "json", "--", "docker", "run", "--gpus", "2", *base[4:]]
    )
    assert code == 1 and "sglang-tp-exceeds-given-gpus" in {
        f["id"] for f in results(out)[0]["findings"]
    }


def test_sglang_serve_takes_a_positional_model_from_0_5_16(cli):
    command = ["--", "sglang", "serve", "Qwen/Qwen3-8B", "--tp-size", "4"]
    assert cli(["check", *H200, "--sglang-version", "0.5.16", *command])[0] == 0
    code, out, _ = cli(["check", *H200, "--sglang-version", "0.5.15", "--format", "json", *command])
    assert code == 1
    assert results(out)[0]["findings"][0]["id"] == "sglang-positional-model"
    assert (
        cli(
            [
                "check",
                *H200,
                "--sglang-version",
                "0.5.15",
                "--",
                "sglang",
                "serve",
                "--model-path",
                "Q",
                "--tp-size",
                "4",
            ]
        )[0]
        == 0
    )


def test_the_version_comes_from_the_image_tag_and_is_said(cli):
    command = [
        "--",
        "docker",
        "run",
        "--gpus",
        "all",
        "lmsysorg/sglang:v0.5.12-cu129",
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "M",
        "--tp-size",
        "4",
        "--cuda-graph-max-bs-decode",
        "64",
    ]
    code, out, err = cli(["check", *H200, *command])
    assert code == 1 and "SGLang 0.5.12 from the image tag lmsysorg/sglang:v0.5.12-cu129" in err
    assert "--cuda-graph-max-bs-decode: SGLang 0.5.12 does not accept this flag" in out
    code, out, err = cli(["check", *H200, "--sglang-version", "0.5.23", *command])
    assert code == 0 and err == ""


# -----------------------------------------------------------------------------------------------
# Dynamo

DYNAMO = [
    "python3",
    "-m",
    "dynamo.sglang",
    "--model-path",
    "Qwen/Qwen3-32B",
    "--namespace",
    "dynamo",
    "--endpoint",
    "dyn://dynamo.backend.generate",
    "--tp-size",
    "4",
    "--page-size",
    "16",
]


def test_a_dynamo_worker_line_passes_with_dynamo_options_and_blocks_on_sglang_ones(cli):
    code, out, err = cli(["check", *H200, "--", *DYNAMO])
    assert code == 0, out
    assert (
        "ai-dynamo 1.6.1 assumed" in err
        and "SGLang 0.5.21, the version ai-dynamo 1.6.1 pins" in err
    )
    code, out, _ = cli(["check", *H200, "--format", "json", "--", *DYNAMO, "--page-sise", "16"])
    assert code == 1 and results(out)[0]["findings"][0]["id"] == "sglang-unknown-flag"
    code, out, _ = cli(["check", *H200, "--format", "json", "--", *DYNAMO[:-4], "--tp-size", "8"])
    assert code == 1 and "topoctl-tp-exceeds-gpus" in {f["id"] for f in results(out)[0]["findings"]}


def test_dynamo_router_options_exist_from_1_5(cli):
    command = ["--", *DYNAMO, "--router-mode", "kv"]
    assert cli(["check", *H200, "--dynamo-version", "1.5.1", *command])[0] == 0
    code, out, _ = cli(["check", *H200, "--dynamo-version", "1.4.2", "--format", "json", *command])
    assert code == 1 and results(out)[0]["findings"][0]["message"].startswith(
        "--router-mode: SGLang"
    )


def test_an_abbreviation_of_two_dynamo_options_is_dynamo_s_start_up_error(cli):
    code, out, _ = cli(["check", *H200, "--format", "json", "--", *DYNAMO, "--tcp-tls", "x"])
    assert code == 1
    finding = results(out)[0]["findings"][0]
    assert (
        finding["id"] == "sglang-ambiguous-flag" and "Dynamo 1.6.1 reads it" in finding["message"]
    )


# -----------------------------------------------------------------------------------------------
# --config


def test_a_config_file_is_merged_and_the_command_line_wins(cli, tmp_path):
    config = tmp_path / "sglang.yaml"
    config.write_text("tp-size: 8\nmem-fraction-static: 0.8\n")
    command = [
        "--",
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "M",
        "--config",
        str(config),
    ]
    code, out, _ = cli(["check", *H200, "--format", "json", *command])
    assert code == 1 and "topoctl-tp-exceeds-gpus" in {f["id"] for f in results(out)[0]["findings"]}
    code, out, _ = cli(["check", *H200, "--format", "json", *command, "--tp-size", "4"])
    assert code == 0 and results(out)[0]["warnings"] == 0, (
        out
    )  # SGLang's precedence, not a repeated flag


def test_a_bad_key_in_the_config_file_blocks_at_its_line(cli, tmp_path):
    config = tmp_path / "sglang.yaml"
    config.write_text("# server settings\nmem-fraction-static: 0.8\ncuda-graph-max-bs: 128\n")
    code, lines, _ = github(
        cli,
        [
            "check",
            *H200,
            "--sglang-version",
            "0.5.23",
            "--",
            "python3",
            "-m",
            "sglang.launch_server",
            "--config",
            str(config),
            "--tp-size",
            "4",
        ],
    )
    assert code == 1
    assert any(
        line.startswith(f"::error file={config},line=3,") and "ambiguous" in line for line in lines
    ), lines


@pytest.mark.parametrize("version, expected", [("0.5.5", 0), ("0.5.12", 1)])
def test_config_booleans_follow_the_version(cli, tmp_path, version, expected):
    """0.5.5 drops `false` keys; from 0.5.8 a key of a store_true flag is dropped when false, any
    other boolean key becomes `--key false` (here a flag SGLang does not have, which blocks)."""
    config = tmp_path / "sglang.yaml"
    config.write_text("enable-metrics: false\nno-such-switch: false\n")
    code, out, _ = cli(
        [
            "check",
            *H200,
            "--sglang-version",
            version,
            "--",
            "sglang",
            "serve",
            "--model-path",
            "M",
            "--tp-size",
            "4",
            "--config",
            str(config),
        ]
    )
    assert code == expected, out


def test_config_files_sglang_refuses_or_topoctl_cannot_read(cli, tmp_path):
    toml = tmp_path / "sglang.toml"
    toml.write_text("tp-size = 4\n")
    base = [
        "check",
        *H200,
        "--format",
        "json",
        "--",
        "python3",
        "-m",
        "sglang.launch_server",
        "--tp-size",
        "4",
    ]
    code, out, _ = cli([*base, "--config", str(toml)])
    assert code == 1 and results(out)[0]["findings"][0]["id"] == "sglang-config-not-yaml"
    code, out, _ = cli([*base, "--config", "/in/the/image/sglang.yaml"])
    assert code == 0 and results(out)[0]["findings"][0]["id"] == "sglang-config-not-read"
    code, out, _ = cli([*base, f"--config={toml}"])
    assert results(out)[0]["findings"][0]["id"] == "sglang-config-not-merged"


# -----------------------------------------------------------------------------------------------
# inputs


def test_a_missing_path_is_exit_2(cli):
    code, out, err = cli(["check", "no/such/deploy", *H200])
    assert code == 2 and out == "" and "no such file or folder: no/such/deploy" in err


def test_broken_yaml_is_exit_2_with_its_line(cli, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nspec: [\n")
    code, out, err = cli(["check", str(path), *H200])
    assert code == 2 and f"{path}:" in err and "not valid YAML" in err and "Traceback" not in err


def test_a_bad_file_in_a_folder_is_reported_with_the_others_then_exit_2(cli, tmp_path):
    (tmp_path / "templates").mkdir()
    template = tmp_path / "templates" / "deployment.yaml"
    template.write_text(
        "{{- if .Values.enabled }}\napiVersion: apps/v1\nkind: Deployment\n{{- end }}\n"
    )
    shutil.copy(os.path.join(DEPLOY, "compose", "compose.yaml"), tmp_path)
    code, out, err = cli(["check", str(tmp_path), *H200])
    assert code == 2 and "1 of 2 file(s) or launch(es) could not be checked" in err, err
    assert f"{template}:" in out and "not read:" in out and "not valid YAML" in out
    assert (
        "compose.yaml" in out and "ERROR" in out
    )  # the other file was checked, the bad one has its line
    assert cli(["check", str(template), *H200])[0] == 2  # named on the command line: bad input


def test_a_launch_env_on_stdin_is_still_read(cli, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("SGLANG_ARGS='--tp-size 8'\n"))
    code, out, _ = cli(["check", "-", *H200])
    assert code == 1 and out.startswith("<stdin>: SGLang") and "topoctl-tp-exceeds-gpus" in out


# -----------------------------------------------------------------------------------------------
# launch.env by its text


def same_as_launch_env(cli, tmp_path, name, text, argv):
    """check of `text` saved as `name` and as launch.env: (code, json, stderr) of each, paths made
    one."""
    other, env = tmp_path / name, tmp_path / "launch.env"
    other.write_text(text, encoding="utf-8")
    env.write_text(text, encoding="utf-8")
    runs = []
    for path in (other, env):
        code, out, err = cli(["check", str(path), *argv, "--format", "json"])
        runs.append((code, out.replace(str(path), "FILE"), err.replace(str(path), "FILE")))
    return runs


@pytest.mark.parametrize("name", ["launch.out", "launch", "recommended.txt", ".env.prod"])
def test_recommend_output_under_any_name_is_judged_as_under_launch_env(cli, tmp_path, name):
    code, text, err = cli(["recommend", *H200])  # written for 4 GPUs: TP 4
    assert code == 0, err
    named, as_env = same_as_launch_env(
        cli, tmp_path, name, text, ["--system", "h200-2x-nvswitch-vm"]
    )
    assert named == as_env
    code, out, _ = named
    assert code == 1 and [
        f["id"] for f in results(out)[0]["findings"] if f["severity"] == "block"
    ] == ["topoctl-tp-exceeds-gpus"], out
    assert json.loads(out)["no_launch"] == []


def test_a_dotenv_file_with_sglang_args_under_another_name_is_a_launch_env(cli, tmp_path):
    text = "# written by hand\nexport NCCL_ALGO=Tree\nSGLANG_ARGS='--tp-size 8'\n"
    named, as_env = same_as_launch_env(cli, tmp_path, "serving.conf", text, H200)
    assert named == as_env
    code, out, _ = named
    blocks = [f for f in results(out)[0]["findings"] if f["severity"] == "block"]
    assert code == 1 and [(f["id"], f["where"]) for f in blocks] == [
        ("topoctl-tp-exceeds-gpus", "FILE:3")
    ], out


def _the_one_no_launch(cli, path, text: str) -> dict:
    """check of one file named on the command line that holds no launch: exit 0, no result, and its
    one no-launch entry."""
    path.write_text(text)
    code, out, _ = cli(["check", str(path), *H200, "--format", "json"])
    doc = json.loads(out)
    assert code == 0 and doc["results"] == [], out
    [none] = doc["no_launch"]
    return none


def test_name_value_lines_without_sglang_args_are_no_launch_saying_what_check_reads(cli, tmp_path):
    path = tmp_path / "vars.txt"
    none = _the_one_no_launch(cli, path, "NCCL_ALGO=Tree\nexport HF_HOME='/data/hf'\n")
    assert none["origin"] == f"{path}:1"
    assert (
        "NAME=VALUE lines without SGLANG_ARGS" in none["reason"]
        and "recommend's header" in none["reason"]
    )


def test_sglang_args_among_lines_a_launch_env_cannot_hold_is_no_launch_at_that_line(cli, tmp_path):
    path = tmp_path / "vars.txt"
    none = _the_one_no_launch(cli, path, 'TP=8\nSGLANG_ARGS="--tp-size $TP"\n')
    assert (
        none["origin"] == f"{path}:2"
        and "not launch.env syntax" in none["reason"]
        and "#! line" in none["reason"]
    )


def test_other_text_named_on_the_command_line_is_still_no_launch(cli, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("# how we serve\nstart the server with the recommended flags\n")
    code, out, _ = cli(["check", str(path), *H200, "--format", "json"])
    assert code == 0 and json.loads(out)["no_launch"] == [
        {
            "origin": f"{path}:1",
            "reason": f"{path}: no launch (not a launch.env, manifest, compose file, Dockerfile "
            "or shell script)",
        }
    ]


def test_a_binary_file_named_on_the_command_line_is_one_error_saying_check_reads_text(
    cli, tmp_path
):
    path = tmp_path / "launch.out"
    path.write_bytes(b"\x00\x01\xff\xfe")
    code, out, err = cli(["check", str(path), *H200])
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 2, err
    assert (
        lines[0]
        == f"topoctl: error: cannot read {path}: not UTF-8 text (invalid start byte at byte 2)"
    )
    assert "check reads text files" in lines[1] and "Traceback" not in err


def test_a_script_with_a_shebang_and_no_suffix_is_still_a_script(cli, tmp_path):
    path = tmp_path / "serve"
    path.write_text(
        "#!/bin/bash\nexport SGLANG_ARGS='--tp-size 2'\npython3 -m sglang.launch_server "
        "--model-path M --tp-size 8\n"
    )
    code, out, _ = cli(["check", str(path), *H200, "--format", "json"])
    [result] = results(out)
    assert code == 1 and result["origin"] == f"{path}:3", (
        out
    )  # the launch line, not SGLANG_ARGS of line 2
    # every line an assignment, but a shell script: read as one, and it starts no server
    path.write_text("#!/bin/sh\nSGLANG_ARGS='--tp-size 8'\n")
    code, out, _ = cli(["check", str(path), *H200, "--format", "json"])
    doc = json.loads(out)
    assert (
        code == 0
        and doc["results"] == []
        and "no command of the script starts" in doc["no_launch"][0]["reason"]
    )


def test_a_folder_walk_takes_launch_envs_by_name_only(cli, tmp_path):
    code, text, _ = cli(["recommend", *H200])
    (tmp_path / "launch.out").write_text(text)
    (tmp_path / "serving.conf").write_text("SGLANG_ARGS='--tp-size 8'\n")
    (tmp_path / "launch.env").write_text(text)
    code, out, _ = cli(
        ["check", str(tmp_path), "--system", "h200-2x-nvswitch-vm", "--format", "json"]
    )
    doc = json.loads(out)
    assert code == 1 and [r["origin"] for r in doc["results"]] == [str(tmp_path / "launch.env")], (
        out
    )
    assert doc["no_launch"] == []


_ENV_NAMES = st.one_of(
    st.sampled_from(
        [
            "NCCL_ALGO",
            "NCCL_P2P_DISABLE",
            "HF_HOME",
            "SGLANG_ARGS",
            "TOPOCTL_SGLANG_VERSION",
            "CUDA_VISIBLE_DEVICES",
        ]
    ),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True),
)
_ARGS = st.lists(
    st.sampled_from(
        [
            "--tp-size",
            "2",
            "8",
            "--mem-fraction-static",
            "0.8",
            "--enable-torch-compile",
            "--cuda-graph-max-bs",
            "--model-path",
            "my model's dir",
        ]
    ),
    max_size=6,
)


@st.composite
def _env_texts(draw):
    from topoctl.autoconf.launch_text import sh_quote

    lines = []
    for name in draw(st.lists(_ENV_NAMES, max_size=5)):
        value = " ".join(draw(_ARGS)) if name == "SGLANG_ARGS" else draw(st.text(max_size=12))
        lines.append(
            draw(st.sampled_from(["", "export ", "  "]))
            + f"{name}={sh_quote(value)}"
            + draw(st.sampled_from(["", "  # why", " "]))
        )
        if draw(st.booleans()):
            lines.append(draw(st.sampled_from(["", "# a comment", "   "])))
    return "\n".join(lines) + "\n"


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(text=_env_texts())
def test_launch_env_text_under_another_name_is_read_as_launch_env_iff_it_assigns_sglang_args(
    cli, tmp_path, text
):
    from topoctl.deploy.sglang_launch import parse_env_text

    named, as_env = same_as_launch_env(cli, tmp_path, "launch.out", text, H200)
    names = [name for _, name, _ in parse_env_text(text, "t")]
    if "SGLANG_ARGS" in names:
        assert named == as_env
    else:
        code, out, _ = named
        assert code == 0 and json.loads(out)["results"] == [], out
        reason = json.loads(out)["no_launch"][0]["reason"]
        assert ("without SGLANG_ARGS" in reason) if names else ("not a launch.env" in reason), (
            reason
        )


# The shape of ai-dynamo 1.6.1's own template (dynamo/profiler/templates/dgd/sglang/agg.yaml in its
# wheel), shortened; the model, sizes and GPU counts are this test's.
DGD = """apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata:
  name: sglang-agg
spec:
  components:
  - name: Frontend
    podTemplate:
      spec:
        containers:
        - args: [-m, dynamo.frontend]
          command: [python3]
          image: nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.6.1
          name: main
    type: frontend
  - name: decode
    podTemplate:
      spec:
        containers:
        - args:
          - --model-path
          - Qwen/Qwen3-0.6B
          - --page-size
          - "16"
          - --tp
          - "TP"
          - --trust-remote-code
          command:
          - python3
          - -m
          - dynamo.sglang
          image: nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.6.1
          name: main
          resources:
            limits:
              nvidia.com/gpu: "2"
    type: worker
"""


def test_a_dynamo_graph_deployment_checks_its_workers(cli, tmp_path):
    path = tmp_path / "dgd.yaml"
    for tp, expected in (("2", 0), ("4", 1)):
        path.write_text(DGD.replace('"TP"', f'"{tp}"'))
        code, out, err = cli(["check", str(path), *H200, "--format", "json"])
        assert code == expected, out
        doc = json.loads(out)
        assert [r["origin"] for r in doc["results"]] == [
            f"{path}:{line_of(path, '- python3')} (DynamoGraphDeployment sglang-agg / component "
            "decode / container main)"
        ]
        assert "Dynamo's frontend (python -m dynamo.frontend)" in doc["no_launch"][0]["reason"]
        assert "SGLang 0.5.21, the version ai-dynamo 1.6.1 pins" in err
    assert "sglang-tp-exceeds-given-gpus" in {f["id"] for f in doc["results"][0]["findings"]}


def test_sglang_serve_for_the_diffusion_server_is_not_judged_by_llm_flags(cli, tmp_path):
    command = [
        "sglang",
        "serve",
        "--model-type",
        "diffusion",
        "--model-path",
        "black-forest-labs/FLUX.1-dev",
        "--num-gpus",
        "1",
    ]
    code, out, err = cli(["check", *H200, "--sglang-version", "0.5.12", "--", *command])
    assert code == 2 and "SGLang's diffusion server, whose flags topoctl does not read" in err
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n" + " ".join(command) + "\n")
    code, out, _ = cli(["check", str(script), *H200, "--sglang-version", "0.5.12"])
    assert code == 0 and "no launch checked" in out
    assert (
        cli(
            [
                "check",
                *H200,
                "--sglang-version",
                "0.5.12",
                "--",
                "sglang",
                "serve",
                "--model-type",
                "llm",
                "--model-path",
                "M",
                "--tp-size",
                "4",
            ]
        )[0]
        == 0
    )


def test_compose_interpolates_from_the_project_env_file_with_defaults(cli, tmp_path):
    path = tmp_path / "compose.yaml"
    path.write_text(
        "services:\n  s:\n    image: lmsysorg/sglang:v0.5.21-cu129\n    command: python3 -m "
        "sglang.launch_server --model-path ${MODEL:-Qwen/Qwen3-8B} --tp-size ${TP:-4}\n"
    )
    code, out, _ = cli(["check", str(path), *H200, "--format", "json"])
    assert code == 0 and results(out)[0]["warnings"] == 0, out  # the defaults
    (tmp_path / ".env").write_text("TP=8\n")
    code, out, _ = cli(["check", str(path), *H200, "--format", "json"])
    assert code == 1 and "topoctl-tp-exceeds-gpus" in {f["id"] for f in results(out)[0]["findings"]}


def test_an_unresolved_tp_size_is_not_called_missing(cli, tmp_path):
    path = tmp_path / "compose.yaml"
    path.write_text(
        "services:\n  s:\n    image: lmsysorg/sglang:v0.5.21-cu129\n"
        "    command: python3 -m sglang.launch_server --model-path M --tp-size ${TP}\n"
    )
    code, out, _ = cli(["check", str(path), *H200, "--format", "json"])
    ids = {f["id"] for f in results(out)[0]["findings"] if f["severity"] != "info"}
    assert code == 0 and ids == {"sglang-unresolved-expansion"}, ids


def test_a_container_is_judged_by_its_image_sglang_not_the_hosts(cli, tmp_path):
    """The target (8x RTX PRO 6000) has SGLang 0.5.12 installed; the container runs the image's
    0.5.21, which accepts --cuda-graph-max-bs-decode. Judging it by the host's SGLang would block a
    launch that starts."""
    compose = tmp_path / "compose.yaml"
    compose.write_text(
        "services:\n"
        "  sglang:\n"
        "    image: lmsysorg/sglang:v0.5.21-cu129\n"
        "    command: python3 -m sglang.launch_server --model-path Qwen/Qwen3-32B --tp-size 8"
        " --disable-custom-all-reduce --cuda-graph-max-bs-decode 256\n"
    )
    code, out, err = cli(["check", str(compose), "--system", "rtx-pro-6000-8x-pcie"])
    assert code == 0, out
    assert "SGLang 0.5.21 from the image tag" in err and "the target has 0.5.12 installed" in err
    code, out, _ = cli(
        ["check", str(compose), "--system", "rtx-pro-6000-8x-pcie", "--sglang-version", "0.5.12"]
    )
    assert code == 1 and "sglang-unknown-flag" in out  # an explicit version still wins


@pytest.mark.parametrize(
    "name,text",
    [
        ("run.sh", "#!/bin/sh\npython -m sglang.launch_server --model-path M --tp 8 --x {word}\n"),
        (
            "compose.yaml",
            "services:\n  s:\n    image: lmsysorg/sglang:v0.5.21\n"
            "    command: python3 -m sglang.launch_server --model-path M --x {word}\n",
        ),
    ],
)
def test_a_huge_word_in_a_script_or_compose_file_is_a_limit_not_a_hang(cli, tmp_path, name, text):
    """Scripts and compose commands are split by the same bounded splitter as launch.env
    (docs/reliability.md): a word past the limit is one line and exit 2."""
    path = tmp_path / name
    path.write_text(text.format(word="a" * 300_000))
    code, _, err = cli(["check", str(path), "--system", "h100-8x-nvswitch"])
    assert code == 2 and "characters long, more than" in err, err
