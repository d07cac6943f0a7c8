"""The launch readers below `topoctl check`: what wraps a server command, shell scripts, image tags,
Dynamo's option tables and SGLang's --config merging, read as the source of each version does."""

from __future__ import annotations

import json
import os

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from topoctl.cli.commands._options import flag_set_for
from topoctl.core.errors import TopoctlError
from topoctl.deploy import launcher_args as prepare
from topoctl.deploy import launchers
from topoctl.deploy.launchers import (
    GpuSet,
    Launch,
    NotALaunch,
    Unsupported,
    read_command,
    read_script,
)


def test_docker_run_options_are_skipped_and_env_gpus_image_kept(tmp_path):
    env_file = tmp_path / "x.env"
    env_file.write_text("# comment\nA=1\nB='quoted stays'\nHOST_ONLY\n")
    launch = read_command(
        [
            "docker",
            "run",
            "--rm",
            "-it",
            "--name",
            "s",
            "--gpus",
            "device=0,1",
            "-e",
            "NCCL_DEBUG=INFO",
            "-eX=2",
            "--env-file",
            str(env_file),
            "--shm-size=32g",
            "-v",
            "/a:/b",
            "-p",
            "1:1",
            "lmsysorg/sglang:v0.5.21-cu129",
            "python3",
            "-m",
            "sglang.launch_server",
            "--tp-size",
            "2",
        ]
    )
    assert launch.launcher == "sglang.launch_server" and launch.args == ["--tp-size", "2"]
    assert launch.env == {"NCCL_DEBUG": "INFO", "X": "2", "A": "1", "B": "'quoted stays'"}
    assert launch.image == "lmsysorg/sglang:v0.5.21-cu129"
    assert launch.gpus is not None and launch.gpus.ids == ["0", "1"] and launch.gpus.visible() == 2


@pytest.mark.parametrize(
    "value, count, ids",
    [
        ("all", None, None),
        ("2", 2, None),
        ('"device=0,3"', None, ["0", "3"]),
        ("count=4", 4, None),
        ("device=GPU-ab", None, ["GPU-ab"]),
    ],
)
def test_docker_gpus_values(value, count, ids):
    gpus = launchers.parse_gpus(value, "x")
    assert (gpus.count, gpus.ids) == (count, ids)


def test_entrypoint_is_the_first_word_and_an_image_without_a_command_is_no_launch():
    launch = read_command(
        [
            "docker",
            "run",
            "--entrypoint",
            "python3",
            "img:1",
            "-m",
            "sglang.launch_server",
            "--tp",
            "2",
        ]
    )
    assert launch.launcher == "sglang.launch_server" and launch.args == ["--tp", "2"]
    with pytest.raises(NotALaunch, match="no command after the image"):
        read_command(["docker", "run", "--gpus", "all", "lmsysorg/sglang:latest"])


def test_env_exec_and_assignments_before_the_command():
    launch = read_command(
        [
            "env",
            "-u",
            "GONE",
            "A=1",
            "exec",
            "B=2",
            "python3.11",
            "-u",
            "-m",
            "dynamo.sglang",
            "--x",
        ]
    )
    assert (
        launch.launcher == "dynamo.sglang"
        and launch.env == {"A": "1", "B": "2"}
        and launch.args == ["--x"]
    )


def test_bash_c_takes_the_scripts_launch_with_its_exports():
    launch = read_command(
        [
            "bash",
            "-lc",
            "export NCCL_DEBUG=INFO; TP=2; python3 -m sglang.launch_server --tp-size $TP",
        ]
    )
    assert launch.env == {"NCCL_DEBUG": "INFO"} and launch.args == ["--tp-size", "2"]


@pytest.mark.parametrize(
    "command, server",
    [
        (["vllm", "serve", "m"], "vLLM"),
        (["trtllm-serve", "m"], "TensorRT-LLM"),
        (["python", "-m", "dynamo.vllm", "--model", "m"], "Dynamo's vLLM worker"),
    ],
)
def test_other_servers_are_unsupported_by_name(command, server):
    with pytest.raises(Unsupported) as error:
        read_command(command)
    assert error.value.server == server


def test_a_script_follows_exports_continuations_and_defaults():
    text = (
        "#!/bin/bash\n# comment\nset -a\nMODEL=/m\nset +a\nLOCAL=1\nexport PORT=3\npython3 -m "
        "sglang.launch_server \\\n  --model-path ${MODEL} \\\n  --port $PORT --x ${UNSET:-7}  # "
        "trailing\n"
    )
    (launch,) = read_script(text, origin="run.sh")
    assert launch.where == "run.sh:8"
    assert launch.env == {"MODEL": "/m", "PORT": "3"}  # LOCAL is a shell variable, not exported
    assert launch.args == ["--model-path", "/m", "--port", "3", "--x", "7"]


def test_every_launch_line_of_a_script_is_found():
    text = "python -m sglang.launch_server --tp 1 &\nsleep 5\nsglang serve --tp 2\n"
    assert [(launch.where, launch.launcher) for launch in read_script(text, origin="s.sh")] == [
        ("s.sh:1", "sglang.launch_server"),
        ("s.sh:3", "sglang serve"),
    ]


@pytest.mark.parametrize(
    "image, version",
    [
        ("lmsysorg/sglang:v0.5.21-cu129", "0.5.21"),
        ("lmsysorg/sglang:0.5.12", "0.5.12"),
        ("docker.io/lmsysorg/sglang:v0.5.10.post1-cu126", "0.5.10.post1"),
        ("lmsysorg/sglang:latest", None),
        ("vllm/vllm-openai:v0.9.0", None),
        ("registry:5000/lmsysorg/sglang", None),
        (None, None),
        ("nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.6.1", None),
    ],
)
def test_the_sglang_version_an_image_tag_names(image, version):
    assert launchers.image_sglang_version(image) == version


@pytest.mark.parametrize(
    "image, moving",
    [
        ("lmsysorg/sglang:latest", "latest"),
        ("lmsysorg/sglang:dev", "dev"),
        ("lmsysorg/sglang:nightly-dev-20251201-1a2b3c4", "nightly-dev-20251201-1a2b3c4"),
        ("lmsysorg/sglang:latest-cu130", "latest-cu130"),
        ("registry:5000/lmsysorg/sglang", "latest"),  # no tag: Docker pulls :latest
        ("lmsysorg/sglang:v0.5.21-cu129", None),
        ("lmsysorg/sglang@sha256:0123456789abcdef", None),  # pinned, release unknown
        ("nvcr.io/nvidia/ai-dynamo/sglang-runtime:latest", None),  # Dynamo's, judged by its pin
        ("vllm/vllm-openai:latest", None),
        (None, None),
    ],
)
def test_a_moving_sglang_image_tag(image, moving):
    assert launchers.moving_image_tag(image) == moving


@pytest.mark.parametrize(
    "image, build",
    [
        ("lmsysorg/sglang:v0.5.14-cu129", "-cu129"),
        ("lmsysorg/sglang:v0.5.21.post1-cu130-amd64", "-cu130-amd64"),
        ("lmsysorg/sglang:v0.5.21", None),
        ("lmsysorg/sglang:0.5.12", None),
        ("lmsysorg/sglang:latest", None),
        (None, None),
    ],
)
def test_what_a_release_tag_says_beyond_its_release(image, build):
    assert launchers.image_tag_build(image) == build


def test_the_dynamo_version_an_image_tag_names():
    assert (
        launchers.image_dynamo_version("nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.6.1") == "1.6.1"
    )
    assert launchers.image_dynamo_version("lmsysorg/sglang:v0.5.21") is None


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.text(alphabet="-=$'\" abcdmnpsx/.019evgu", max_size=8), max_size=10))
def test_reading_any_command_either_gives_a_launch_or_says_why(words):
    try:
        launch = read_command(words)
    except TopoctlError as error:
        assert error.message and error.hint
        return
    assert launch.launcher in ("sglang.launch_server", "sglang serve", "dynamo.sglang", "flags")


@settings(max_examples=examples(150), deadline=None)
@given(
    st.text(alphabet="python3 -m sglang.launch_server export A=1 \\\n;&|'\"$#{}()", max_size=120)
)
def test_reading_any_script_either_gives_launches_or_says_why(text):
    try:
        found = read_script(text, origin="x.sh")
    except TopoctlError as error:
        assert error.message
        return
    assert all(launch.where.startswith("x.sh:") for launch in found)


# -----------------------------------------------------------------------------------------------
# Dynamo data

DATA = prepare._data_dir()


def test_dynamo_tables_carry_their_sources_and_pins():
    versions = prepare.dynamo_versions()
    assert (
        versions[0] == "1.0.0" and versions[-1] == "1.6.1" and len(versions) == 16
    )  # every 1.x release
    pins = {}
    for version in versions:
        doc = json.load(open(os.path.join(DATA, f"dynamo-{version}.json"), encoding="utf-8"))
        assert (
            doc["source"]["wheel"] == f"ai_dynamo-{version}-py3-none-any.whl"
            and len(doc["source"]["sha256"]) == 64
        )
        assert all(
            info["declared"].startswith("dynamo/") for info in doc["dynamo_options"].values()
        )
        assert "--namespace" in doc["dynamo_options"] and doc["parse_steps"]
        pins[version] = doc["sglang_pin"]
        assert bool(doc["router_options"]) == (version >= "1.5")
    assert pins == {
        "1.0.0": "0.5.9",
        "1.0.1": "0.5.9",
        "1.0.2": "0.5.9",
        "1.1.0": "0.5.10.post1",
        "1.1.1": "0.5.10.post1",
        "1.2.0.post1": "0.5.11",
        "1.2.1": "0.5.11",
        "1.3.0.post1": "0.5.14",
        "1.3.1": "0.5.14",
        "1.4.0": "0.5.16",
        "1.4.1": "0.5.16",
        "1.4.2": "0.5.16",
        "1.5.0": "0.5.18",
        "1.5.1": "0.5.18",
        "1.6.0": "0.5.21",
        "1.6.1": "0.5.21",
    }


def test_a_dynamo_image_tag_maps_to_its_exact_release_and_pin():
    """The 1.5.0 image runs ai-dynamo 1.5.0 (SGLang 0.5.18), not the 1.4.2 before it; a tag 1.3.0 is
    the release PyPI ships as 1.3.0.post1."""
    assert (prepare.load_dynamo("1.5.0").version, prepare.load_dynamo("1.5.0").sglang_pin) == (
        "1.5.0",
        "0.5.18",
    )
    table = prepare.load_dynamo("1.3.0")
    assert table.version == "1.3.0.post1" and table.sglang_pin == "0.5.14"


def test_a_dynamo_version_between_tables_uses_the_nearest_older():
    table = prepare.load_dynamo("1.5.3")
    assert table.version == "1.5.1" and not table.exact and "nearest older" in table.note
    with pytest.raises(TopoctlError, match="no Dynamo option data for ai-dynamo 0.9.1"):
        prepare.load_dynamo("0.9.1")


def test_dynamo_takes_its_options_and_their_values_then_sglang_gets_the_rest():
    flags = flag_set_for("0.5.21")
    launch = Launch(
        "dynamo.sglang",
        args=[
            "--namespace",
            "ns",
            "--model-path",
            "m",
            "--router-mode",
            "kv",
            "--dyn-tool-call-parser=hermes",
            "--tp",
            "2",
            "--connector",
            "a",
            "b",
        ],
    )
    prepared = prepare.prepare(launch, flags, prepare.load_dynamo("1.6.1"))
    assert prepared.args == ["--model-path", "m", "--tp", "2"]
    assert prepared.dynamo["dynamo"] == [
        "--namespace",
        "ns",
        "--dyn-tool-call-parser=hermes",
        "--connector",
        "a",
        "b",
    ]
    assert prepared.dynamo["router"] == ["--router-mode", "kv"] and not prepared.problems


# -----------------------------------------------------------------------------------------------
# --config


def _merged(tmp_path, version, config_text, cli):
    config = tmp_path / "c.yaml"
    config.write_text(config_text)
    launch = Launch(
        "sglang.launch_server",
        args=[*cli[:1], "--config", str(config), *cli[1:]],
        where="cmd",
        base_dir=str(tmp_path),
    )
    return prepare.prepare(launch, flag_set_for(version), None)


def test_config_words_come_first_so_the_command_line_wins(tmp_path):
    prepared = _merged(
        tmp_path, "0.5.23", "tp-size: 8\nenable-metrics: true\n", ["--model-path", "--tp-size"]
    )
    assert prepared.args == ["--tp-size", "8", "--enable-metrics", "--model-path", "--tp-size"]
    assert prepared.from_config == {0, 1, 2}
    assert prepared.where_of[:3] == [f"{tmp_path / 'c.yaml'}:1"] * 2 + [f"{tmp_path / 'c.yaml'}:2"]


@pytest.mark.parametrize(
    "version, words",
    [
        ("0.5.5", ["--enable-metrics"]),  # false keys dropped, true keys a bare flag (0.5.3-0.5.7)
        (
            "0.5.12",
            ["--enable-metrics", "--other-bool", "false"],
        ),  # store_true: bare or dropped; others: true/false
    ],
)
def test_config_booleans_by_version(tmp_path, version, words):
    prepared = _merged(
        tmp_path,
        version,
        "enable-metrics: true\nskip-server-warmup: false\nother-bool: false\n",
        [],
    )
    assert prepared.args == words


def test_config_mappings_are_json_from_0_5_14(tmp_path):
    text = "json-model-override-args: {a: 1}\n"
    assert _merged(tmp_path, "0.5.18", text, []).args == ["--json-model-override-args", '{"a": 1}']
    assert _merged(tmp_path, "0.5.12", text, []).args == ["--json-model-override-args", "{'a': 1}"]


def test_gpu_sets_count_what_is_visible():
    assert (
        GpuSet(count=2).visible() == 2
        and GpuSet(ids=["0", "1", "2"]).visible() == 3
        and GpuSet().visible() is None
    )


def test_a_script_reads_on_past_commands_that_are_not_server_launches():
    text = (
        "docker run -d --name cache redis:7\nsglang version\npython3 -m sglang.launch_server "
        "--tp-size 2\n"
    )
    assert [launch.where for launch in read_script(text, origin="s.sh")] == ["s.sh:3"]
    with pytest.raises(Unsupported):
        read_script("docker run -d redis:7\nvllm serve m\n", origin="v.sh")


def test_a_read_launch_and_its_parts_are_frozen_and_the_callers_launch_is_not_changed():
    """Every stage after the reading sees what was read: a Launch from read_command or read_script
    refuses a new value, and the launch a caller starts the reading from (a container's env and
    image) is read on, not changed."""
    import dataclasses

    seed = Launch(launcher="", where="pod.yaml:3", env={"A": "1"}, image="lmsysorg/sglang:v0.5.21")
    launch = read_command(
        ["env", "-i", "B=2", "python3", "-m", "sglang.launch_server", "--tp-size", "2"], launch=seed
    )
    assert (
        launch.env == {"B": "2"}
        and launch.image == "lmsysorg/sglang:v0.5.21"
        and launch.where == "pod.yaml:3"
    )
    assert seed.env == {"A": "1"} and seed.launcher == "" and seed.args == []
    script = read_script(
        "export NCCL_DEBUG=INFO\nbash -c 'sglang serve --tp-size 4'\n", origin="run.sh"
    )
    assert [item.launcher for item in script] == ["sglang serve"]
    for read in (launch, script[0]):
        with pytest.raises(dataclasses.FrozenInstanceError):
            read.args = ["--tp-size", "1"]  # type: ignore[misc]
    docker = read_command(
        ["srun", "-N", "2", "docker", "run", "--gpus", "2", "img", "sglang", "serve"]
    )
    assert (
        docker.gpus is not None
        and docker.gpus.count == 2
        and docker.nodes is not None
        and docker.nodes.count == 2
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        docker.gpus.count = 4  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        docker.nodes.count = 4  # type: ignore[misc]
    # the draft the reading builds has Launch's fields, all of them, so freezing it loses nothing
    assert launchers._LaunchDraft.__slots__ == tuple(
        item.name for item in dataclasses.fields(Launch)
    )
    every = Launch(
        "flags",
        ["--tp-size", "2"],
        {"A": "1"},
        {"A": "a:1"},
        GpuSet(2),
        "img",
        "w:1",
        "base",
        ["n"],
        ["$X"],
        ["w:2", "w:3"],
        launchers.Nodes(2, "srun -N 2"),
        {"/c": "cm"},
        {"/c/k": ("t", "m", 4)},
    )
    assert launchers._LaunchDraft.thaw(every).freeze() == every
