"""Every kind of deployment file check reads (topoctl/check/): Dockerfiles, SkyPilot tasks, Helm
charts, OME and KServe runtimes, ConfigMap-held --config files, floating image tags, and folder runs
with a bad file."""

from __future__ import annotations

import json
import os

import pytest
from conftest import LAUNCH_CORPUS

from topoctl.deploy import dockerfile, helm

H100 = ["--system", "h100-8x-nvswitch"]


def results(out: str) -> list[dict]:
    return json.loads(out)["results"]


def test_dockerfile_exec_and_shell_forms_and_entrypoint_plus_cmd(tmp_path):
    text = (
        "FROM lmsysorg/sglang:v0.5.21-cu129 AS base\nARG TP=2\nENV NCCL_DEBUG=INFO \\\n    "
        "TP=${TP}\n"
        'ENTRYPOINT ["python3", "-m", "sglang.launch_server"]\nCMD ["--tp", "2"]\n'
    )
    (found,) = dockerfile.read_dockerfile("D", text, str(tmp_path))
    assert found.line == 6 and found.launch.args == ["--tp", "2"] and found.launch.env["TP"] == "2"
    assert found.launch.image == "lmsysorg/sglang:v0.5.21-cu129"
    (shell,) = dockerfile.read_dockerfile(
        "D",
        "FROM x/sglang:v0.5.21\nENV TP=4\nCMD python3 -m sglang.launch_server --tp $TP\n",
        str(tmp_path),
    )
    assert shell.launch.args == ["--tp", "4"]
    ignored = 'FROM x\nENTRYPOINT python3 -m sglang.launch_server --tp 1\nCMD ["--tp", "8"]\n'
    assert dockerfile.read_dockerfile("D", ignored, ".")[0].launch.args == [
        "--tp",
        "1",
    ]  # shell form drops CMD


def test_a_dockerfile_without_a_command_runs_its_base_image():
    (found,) = dockerfile.read_dockerfile("D", "FROM lmsysorg/sglang:v0.5.21\nRUN true\n", ".")
    assert (
        found.launch is None and "runs lmsysorg/sglang:v0.5.21's own command" in found.none_reason
    )


def test_skypilot_setup_is_named_as_skipped(cli):
    path = os.path.join(LAUNCH_CORPUS, "skypilot", "sglang_single_node.yaml")
    code, out, _ = cli(["check", path, *H100])
    assert code == 0 and "skipped: SkyPilot setup: section" in out


def test_helm_plain_substitution_renders_values_ranges_and_says_what_it_did_not():
    chart = os.path.join(LAUNCH_CORPUS, "helm", "sglang-deploy")
    (deployment, service) = helm.plain(chart)
    assert (
        '- "--enable-metrics"' in deployment.text and "- --enable-cache-report" in deployment.text
    )
    assert "nvidia.com/gpu: 4" in deployment.text and "release-name-sglang" in service.text
    assert any('include "sglang.name"' in part for part in deployment.not_rendered)
    # every rendered line maps back to the template's line (the range repeats line 27 once per
    # value)
    assert deployment.lines.count(27) == 3


def test_a_finding_in_a_chart_points_at_the_template_line(cli, tmp_path):
    import shutil

    chart = tmp_path / "chart"
    shutil.copytree(os.path.join(LAUNCH_CORPUS, "helm", "sglang-deploy"), chart)
    values = (
        (chart / "values.yaml")
        .read_text()
        .replace("  - --enable-metrics\n", "  - --enable-metrix\n")
    )
    (chart / "values.yaml").write_text(values)
    code, out, _ = cli(["check", str(chart), *H100, "--format", "json"])
    (result,) = results(out)
    (item,) = [i for i in result["findings"] if i["severity"] == "block"]
    assert (
        code == 1
        and item["id"] == "sglang-unknown-flag"
        and item["where"].endswith("deployment.yaml:27")
    )


def test_a_config_file_held_in_a_configmap_is_read_with_its_manifest_lines(cli, tmp_path):
    source = open(
        os.path.join(LAUNCH_CORPUS, "kubernetes", "configmap_config.yaml"), encoding="utf-8"
    ).read()
    path = tmp_path / "deploy.yaml"
    path.write_text(source.replace("    tp-size: 8\n", "    tp-size: 16\n"))
    code, out, _ = cli(["check", str(path), *H100])
    assert code == 1 and "topoctl-tp-exceeds-gpus" in out or "tp-exceeds-given-gpus" in out
    path.write_text(source.replace("    enable-metrics: true\n", "    enable-metrix: true\n"))
    code, out, _ = cli(["check", str(path), *H100, "--format", "json"])
    (result,) = results(out)
    assert code == 1 and any(
        i["where"] == f"{path}:12" for i in result["findings"] if i["severity"] == "block"
    )


def test_ome_leader_and_worker_are_one_group_of_size_plus_one_nodes(cli):
    path = os.path.join(LAUNCH_CORPUS, "ome", "ome_runtime_rdma_multinode.yaml")
    code, out, _ = cli(["check", path, *H100])
    assert code == 0 and "spans 2 nodes (--nnodes 2)" in out
    assert "--tp-size from $(PARALLELISM_SIZE): not set in what topoctl reads" in out


def test_a_moving_image_tag_is_judged_as_the_newest_release_and_said_so(cli):
    from topoctl.rules.sglang.flags import known_versions

    newest = known_versions()[-1]
    path = os.path.join(LAUNCH_CORPUS, "scripts", "docker_run_latest.sh")
    code, out, err = cli(["check", path, *H100])
    assert f"{path}:4: SGLang {newest}\n" in out  # the image's, not the target's installed 0.5.12
    assert (
        "image lmsysorg/sglang:latest: the tag :latest moves from release to release; latest: "
        f"judged as {newest}, the newest known; pin a release to be sure"
        in out
        and "lmsysorg/sglang:latest" in err
    )
    code, out, _ = cli(["check", path, *H100, "--sglang-version", "0.5.14"])
    assert "judged as SGLang 0.5.14 (--sglang-version), which may not be what it pulls" in out


def _dockerfile(tmp_path, image: str) -> str:
    path = tmp_path / "Dockerfile"
    path.write_text(
        f"FROM {image}\n"
        'CMD ["python3", "-m", "sglang.launch_server", "--model-path", "m", "--tp", "2"]\n'
    )
    return str(path)


@pytest.mark.parametrize(
    "image, tag",
    [
        ("lmsysorg/sglang:dev", "dev"),
        ("lmsysorg/sglang:nightly-dev-20251201-1a2b3c4", "nightly-dev-20251201-1a2b3c4"),
        ("lmsysorg/sglang", "latest"),
    ],
)
def test_every_moving_tag_is_judged_as_the_newest_release(cli, tmp_path, image, tag):
    from topoctl.rules.sglang.flags import known_versions

    code, out, _ = cli(["check", _dockerfile(tmp_path, image), *H100])
    assert f"{tag}: judged as {known_versions()[-1]}, the newest known" in out


@pytest.mark.parametrize(
    "image, release, judged, build",
    [
        ("lmsysorg/sglang:v0.5.14-cu129", "0.5.14", "0.5.14", "-cu129"),
        ("lmsysorg/sglang:v0.5.21.post1-cu130-amd64", "0.5.21.post1", "0.5.21", "-cu130-amd64"),
    ],
)
def test_a_suffixed_tag_is_judged_as_its_release_with_a_note(
    cli, tmp_path, image, release, judged, build
):
    code, out, err = cli(["check", _dockerfile(tmp_path, image), *H100])
    assert f"(CMD): SGLang {judged}" in out
    assert f"SGLang {release} from the image tag {image}" in err
    assert f"; {build} names a build of it: the image may differ" in err


def test_a_bare_release_tag_needs_no_note(cli, tmp_path):
    code, out, err = cli(["check", _dockerfile(tmp_path, "lmsysorg/sglang:v0.5.21"), *H100])
    assert "(CMD): SGLang 0.5.21" in out and "names a build" not in err
    assert "floating-image-tag" not in out


def test_a_folder_reports_every_file_then_exits_2_with_the_bad_one_annotated(cli, tmp_path):
    (tmp_path / "a.sh").write_text("#!/bin/sh\npython3 -m sglang.launch_server --tp 2\n")
    (tmp_path / "b.yaml").write_text("apiVersion: v1\nkind: Pod\nspec: [\n")
    (tmp_path / "c.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "    - name: c\n      image: nvcr.io/nvidia/ai-dynamo/sglang-runtime:0.3.0\n"
        "      command: [python3, -m, dynamo.sglang, --tp, '1']\n"
    )
    code, out, err = cli(["check", str(tmp_path), *H100, "--format", "github"])
    assert code == 2 and "2 of 3 file(s) or launch(es) could not be checked" in err
    lines = out.splitlines()
    assert any(line.startswith("::error file=") and "b.yaml,line=4," in line for line in lines)
    assert any(
        line.startswith("::error file=") and "c.yaml" in line and "0.3.0" in line for line in lines
    )
    assert not any(
        "a.sh" in line and line.startswith("::error") for line in lines
    )  # a.sh was checked
