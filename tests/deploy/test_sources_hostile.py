"""Hostile manifests, compose files and scripts given to `check` (cases benchmarks/fuzz_cli.py
found): each ends in one line and exit 2, or a report, never an internal error; the work a script's
expansions cause is bounded in characters, not in time."""

from __future__ import annotations

import pytest

from topoctl.core import safe_read as limits
from topoctl.deploy import launchers

H200 = ["--system", "h200-4x-nvswitch-vm"]
COMPOSE = (
    "services:\n  s:\n    image: lmsysorg/sglang:v0.5.21-cu129\n{extra}"
    "    command: [python3, -m, sglang.launch_server, --model-path, M, --tp-size, '4']\n"
)
DEPLOYMENT = (
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {metadata}\nspec:\n  template:\n    spec:\n"
    "      containers: {containers}\n"
)
GOOD_CONTAINER = "[{name: s, command: [python3, -m, sglang.launch_server], args: [--tp-size, '4']}]"


def one_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) <= 2 and lines[0].startswith("topoctl: error: "), err
    assert "internal error" not in err and "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize(
    "metadata, containers",
    [
        ('"$(id)"', GOOD_CONTAINER),  # metadata a string (was: AttributeError)
        ("[1, 2]", GOOD_CONTAINER),
        ("{name: x}", "[5, '--tp-size', [1]]"),  # containers that are not mappings
        ("{name: x}", "{a: 1}"),
    ],
)
def test_manifest_values_of_the_wrong_type(cli, tmp_path, metadata, containers):
    path = tmp_path / "deploy.yaml"
    path.write_text(DEPLOYMENT.format(metadata=metadata, containers=containers))
    code, out, err = cli(["check", str(path), *H200])
    assert code in (0, 1, 2), err
    assert "internal error" not in err and "Traceback" not in err


def test_a_dynamo_component_that_is_not_a_mapping(cli, tmp_path):
    path = tmp_path / "dgd.yaml"
    path.write_text(
        "apiVersion: nvidia.com/v1beta1\nkind: DynamoGraphDeployment\nmetadata: {name: d}\n"
        "spec: {components: [7, [x], {name: w}]}\n"
    )
    code, _, err = cli(["check", str(path), *H200])
    assert code in (0, 2) and "internal error" not in err, err


@pytest.mark.parametrize(
    "env_file, content",
    [
        ("/dev/zero", None),  # endless: refused at the launch.env bound (was: MemoryError)
        ("big.env", b"A=" + b"x" * (limits.MAX_LAUNCH_ENV_BYTES + 1)),
        ("latin1.env", b"\xff\xfeA=1\n"),  # not UTF-8 (was: UnicodeDecodeError)
        ("missing.env", None),
    ],
)
def test_compose_env_files_that_cannot_be_read(cli, tmp_path, env_file, content):
    if content is not None:
        (tmp_path / env_file).write_bytes(content)
    path = tmp_path / "compose.yaml"
    path.write_text(COMPOSE.format(extra=f"    env_file: {env_file}\n"))
    code, _, err = cli(["check", str(path), *H200])
    assert code == 2
    line = one_error(err)
    assert env_file.split("/")[-1] in line


def test_a_project_dot_env_that_is_not_utf8(cli, tmp_path):
    (tmp_path / ".env").write_bytes(b"\xff\x00")
    path = tmp_path / "compose.yaml"
    path.write_text(COMPOSE.format(extra=""))
    code, _, err = cli(["check", str(path), *H200])
    assert code == 2 and "not UTF-8" in one_error(err)


@pytest.mark.parametrize(
    "device",
    [
        "{capabilities: [gpu], count: abc}",
        "{capabilities: [gpu], count: 99999999999}",
        "{capabilities: gpu, count: true}",
        "7",
        "[gpu]",
    ],
)
def test_compose_gpu_reservations_of_the_wrong_type(cli, tmp_path, device):
    path = tmp_path / "compose.yaml"
    path.write_text(
        COMPOSE.format(
            extra=f"    deploy: {{resources: {{reservations: {{devices: [{device}]}}}}}}\n"
        )
    )
    code, _, err = cli(["check", str(path), *H200])
    assert code in (0, 1, 2) and "internal error" not in err and "Traceback" not in err, err
    if code == 2:
        one_error(err)


def test_a_compose_service_that_is_not_a_mapping(cli, tmp_path):
    path = tmp_path / "compose.yaml"
    path.write_text(
        "services:\n  a: 5\n  b: [x]\n  c: {command: [python3, -m, sglang.launch_server, "
        "--tp-size, '4']}\n"
    )
    code, _, err = cli(["check", str(path), *H200])
    assert code in (0, 1) and "internal error" not in err, err


def doubling_script(levels: int) -> str:
    lines = ["V0=x"] + [f"V{i}=$V{i - 1}$V{i - 1}" for i in range(1, levels)]
    return (
        "#!/bin/sh\n"
        + "\n".join(lines)
        + f"\npython3 -m sglang.launch_server --model-path $V{levels - 1}\n"
    )


def test_a_variable_that_doubles_itself_is_refused_within_the_expansion_bound(cli, tmp_path):
    path = tmp_path / "run.sh"
    path.write_text(doubling_script(64))  # 2**63 characters if expanded (was: 14 GB and a timeout)
    code, _, err = cli(["check", str(path), *H200])
    assert code == 2 and "variable expansions exceed" in one_error(err)


def test_the_expansion_bound_counts_characters_and_stops_at_the_first_line_past_it(monkeypatch):
    seen: list[int] = []
    real = launchers.expand

    def counting(text, variables, unresolved, **kwargs):
        result = real(text, variables, unresolved, **kwargs)
        seen.append(len(result))
        return result

    monkeypatch.setattr(launchers, "expand", counting)
    with pytest.raises(limits.LimitError):
        launchers.read_script(doubling_script(64), origin="run.sh")
    # the work done is the bound plus the one expansion that crossed it, at most twice the bound
    assert sum(seen) <= 2 * limits.MAX_EXPANSION_CHARS + 64
    assert len(seen) < 40  # 2**25 > the bound: it stops after about 25 lines, not at line 64
    # a script within the bound still expands as the shell does
    launches = launchers.read_script(doubling_script(4), origin="run.sh")
    assert launches[0].args == ["--model-path", "x" * 8]


def test_more_launches_than_the_bound_is_one_line(cli, tmp_path):
    path = tmp_path / "run.sh"
    path.write_text(
        "#!/bin/sh\n"
        + "python3 -m sglang.launch_server --tp-size 4\n" * (limits.MAX_LAUNCHES_PER_FILE + 1)
    )
    code, _, err = cli(["check", str(path), *H200])
    assert code == 2 and f"more than {limits.MAX_LAUNCHES_PER_FILE}" in one_error(err)
    path.write_text("#!/bin/sh\n" + "python3 -m sglang.launch_server --tp-size 4\n" * 3)
    assert cli(["check", str(path), *H200])[0] == 0


def test_more_containers_than_the_bound_is_one_line(cli, tmp_path):
    path = tmp_path / "deploy.yaml"
    doc = DEPLOYMENT.format(metadata="{name: x}", containers=GOOD_CONTAINER)
    path.write_text("---\n".join([doc] * (limits.MAX_LAUNCHES_PER_FILE + 1)))
    code, _, err = cli(["check", str(path), *H200])
    assert code == 2 and f"more than {limits.MAX_LAUNCHES_PER_FILE}" in one_error(err)
