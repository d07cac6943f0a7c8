"""Launch files with a value of the wrong YAML shape (the crashes benchmarks/fuzz_shapes.py found in
the launch corpus): each is one line and exit 2 naming the file, line and field, or the launch read
as its tool reads it; never an internal error."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

H100 = ["--system", "h100-8x-nvswitch"]
CHART = Path(__file__).parents[1] / "data" / "launch_corpus" / "helm" / "sglang-deploy"


def one_error(code: int, err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and lines[0].startswith("topoctl: error: "), err
    assert len(lines) <= 2 and "internal error" not in err, err
    return lines[0]


@pytest.mark.parametrize("metadata", ["\n  - name: x", " cm", " 7", " [[[x]]]"])
def test_a_config_map_whose_metadata_is_not_a_mapping(cli, tmp_path, metadata):
    # was: AttributeError in kubernetes._config_maps
    path = tmp_path / "cm.yaml"
    path.write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata:{metadata}\ndata: {{TP: '8'}}\n")
    code, _, err = cli(["check", str(path), *H100])
    assert f"{path}:" in one_error(code, err) and "metadata is a" in err


def test_a_config_map_whose_data_is_not_a_mapping(cli, tmp_path):
    path = tmp_path / "cm.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: [TP]\n")
    code, _, err = cli(["check", str(path), *H100])
    assert f"{path}:4: data is a list, not a mapping" in one_error(code, err)


@pytest.mark.parametrize(
    "value, shape", [("8", "a number"), ("true", "true/false"), ("'--x'", "a string")]
)
def test_a_helm_range_over_a_value_that_is_not_a_list(cli, tmp_path, value, shape):
    # was: TypeError in helm._Renderer._range for a scalar; a string was ranged over letter by letter
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    values = chart / "values.yaml"
    text = values.read_text()
    start = text.index("extraArgs:")
    end = text.index("gpus:")
    values.write_text(text[:start] + f"extraArgs: {value}\n" + text[end:])
    code, _, err = cli(["check", str(chart), *H100])
    line = one_error(code, err)
    assert "deployment.yaml:" in line and f".Values.extraArgs is {shape}" in line


def test_an_empty_exec_form_entrypoint_leaves_the_cmd_alone(cli, tmp_path):
    # was: IndexError in dockerfile.read_dockerfile; `ENTRYPOINT []` clears the entrypoint
    path = tmp_path / "Dockerfile"
    path.write_text(
        "FROM lmsysorg/sglang:v0.5.21-cu129\nENTRYPOINT []\n"
        'CMD ["python3", "-m", "sglang.launch_server", "--model-path", "m", "--tp-size", "16"]\n'
    )
    code, out, err = cli(["check", str(path), *H100])
    assert code == 1 and "internal error" not in err, err
    assert "Dockerfile:3 (CMD)" in out and "topoctl-tp-exceeds-gpus" in out


DEPLOYMENT = (
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d}}\nspec:\n  template:\n    spec:\n"
    "      containers:{containers}\n"
)
CONTAINER = (
    "\n      - name: s\n        command: [python3, -m, sglang.launch_server, --model-path, m]\n"
    "        env: {env}\n"
)


@pytest.mark.parametrize(
    "containers, field",
    [
        (" {name: s, command: [python3, -m, sglang.launch_server]}", "containers is a mapping"),
        (" s", "containers is a string"),
        (CONTAINER.format(env="{NCCL_P2P_DISABLE: '1'}"), "env is a mapping"),
        (CONTAINER.format(env="NCCL_P2P_DISABLE=1"), "env is a string"),
    ],
)
def test_containers_and_env_of_the_wrong_shape_are_named(cli, tmp_path, containers, field):
    # were passed over without a word: "no launch" (exit 0), or the launch judged without its env
    path = tmp_path / "deploy.yaml"
    path.write_text(DEPLOYMENT.format(containers=containers))
    code, _, err = cli(["check", str(path), *H100])
    assert f"{path}:" in one_error(code, err) and f"{field}, not a list" in err


@pytest.mark.parametrize("environment", ["NCCL_P2P_DISABLE=1", "7", "true"])
def test_a_compose_environment_that_is_neither_a_mapping_nor_a_list(cli, tmp_path, environment):
    # was skipped without a word: the launch judged without its environment (docker compose
    # itself refuses it: the compose spec's environment is a mapping or a list of KEY=VALUE)
    path = tmp_path / "compose.yaml"
    path.write_text(
        "services:\n  sglang:\n    image: lmsysorg/sglang:v0.5.14-cu129\n"
        f"    environment: {environment}\n"
        "    command: python3 -m sglang.launch_server --model-path M --tp 8\n"
    )
    code, _, err = cli(["check", str(path), *H100])
    assert f"{path}:4: environment is " in one_error(code, err)
    assert "not a mapping or a list" in err


def test_skypilot_envs_that_is_not_a_mapping(cli, tmp_path):
    # was skipped without a word; SkyPilot's task schema takes envs as a mapping only
    path = tmp_path / "task.yaml"
    path.write_text(
        "resources:\n  accelerators: H100:8\nenvs:\n  - NCCL_P2P_DISABLE=1\n"
        "run: |\n  python3 -m sglang.launch_server --model-path M --tp 8\n"
    )
    code, _, err = cli(["check", str(path), *H100])
    assert f"{path}:4: envs is a list, not a mapping" in one_error(code, err)
