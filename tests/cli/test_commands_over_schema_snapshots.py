"""`show`, `recommend` and `check` over snapshots generated from the published schema itself
(tests/schema_strategies.py): whatever a schema-valid snapshot holds, each command answers with a
result, a blocking verdict or a one-line error, never an internal error (exit 70) or a traceback.

The suite runs EXAMPLES examples per test (derandomized, the same ones every run); the 2,000-example
runs and their results are recorded in docs/reliability.md ("Commands over schema-generated
snapshots"). Set TOPOCTL_SCHEMA_EXAMPLES to run more.
"""

from __future__ import annotations

import json
import os

import jsonschema
from conftest import examples
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from schema_strategies import consistent_snapshots, load_schema, schema_snapshots

EXAMPLES = int(os.environ.get("TOPOCTL_SCHEMA_EXAMPLES", "150"))
VALIDATOR = jsonschema.Draft202012Validator(load_schema())
SETTINGS = settings(
    max_examples=examples(EXAMPLES),
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
        HealthCheck.large_base_example,
    ],
)
EXPECTED_EXITS = {
    0,
    1,
    2,
    3,
}  # ok, blocking finding, the user's input, no GPU (topoctl/core/errors.py)
LAUNCHES = st.sampled_from(
    [
        ["python", "-m", "sglang.launch_server", "--model-path", "M"],
        [
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "M",
            "--tp-size",
            "2",
            "--enable-custom-all-reduce",
        ],
        [
            "NCCL_P2P_DISABLE=1",
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "M",
            "--tp",
            "8",
            "--ep",
            "8",
        ],
        [
            "python3",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "M",
            "--tp-size",
            "4",
            "--speculative-algorithm",
            "EAGLE3",
            "--speculative-draft-model-path",
            "D",
            "--disable-custom-all-reduce",
        ],
    ]
)
RECOMMENDS = st.sampled_from(
    [
        [],
        ["--model", "llama-3.1-8b"],
        ["--model", "deepseek-v3", "--speculative", "eagle3"],
        ["--model", "gpt-oss-120b", "--format", "json"],
    ]
)


def _run(cli, argv: list[str]) -> tuple[int, str]:
    code, out, err = cli(argv)
    assert code in EXPECTED_EXITS, (argv[0], code, err)
    assert "Traceback" not in err and "internal error" not in err, (argv[0], err)
    return code, out


def _write(tmp_path, data) -> str:
    assert not list(VALIDATOR.iter_errors(data)), "the generator drew a snapshot the schema rejects"
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(data))
    return str(path)


@SETTINGS
@given(data=consistent_snapshots(), launch=LAUNCHES, recommend=RECOMMENDS)
def test_commands_answer_every_consistent_snapshot(cli, tmp_path, data, launch, recommend):
    path = _write(tmp_path, data)
    shown = _run(cli, ["show", "--topology", path])[0]
    recommended = _run(cli, ["recommend", "--topology", path, *recommend])[0]
    checked = _run(cli, ["check", "--topology", path, "--", *launch])[0]
    # How far the examples got (pytest --hypothesis-show-statistics prints the shares):
    event(f"show exit {shown}, recommend exit {recommended}, check exit {checked}")


@SETTINGS
@given(data=schema_snapshots())
def test_loading_answers_every_schema_valid_snapshot(cli, tmp_path, data):
    """Schema-valid but not cross-checked: mostly one line naming what disagrees (exit 2), never a
    crash."""
    path = _write(tmp_path, data)
    shown = _run(cli, ["show", "--topology", path])[0]
    checked = _run(
        cli,
        [
            "check",
            "--topology",
            path,
            "--",
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "M",
        ],
    )[0]
    event(f"show exit {shown}, check exit {checked}")
