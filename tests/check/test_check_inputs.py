"""check refuses what SGLang's argparse would refuse (flag data: type, choices, nargs, action),
reads launch.env as the shell would (last assignment wins, byte-order mark dropped), and says when
there is nothing to check."""

from __future__ import annotations

import json

import pytest

H200 = ["--system", "h200-4x-nvswitch-vm"]


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def findings(out):
    return {(f["id"], f["severity"]): f for r in json.loads(out)["results"] for f in r["findings"]}


@pytest.mark.parametrize(
    "version, args, finding",
    [
        ("0.5.23", "--tp-size four", "sglang-invalid-value"),
        ("0.5.23", "--tp-size -4", "sglang-invalid-value"),
        ("0.5.23", "--tp-size 0", "sglang-invalid-value"),
        ("0.5.23", "--ep-size -1", "sglang-invalid-value"),
        ("0.5.23", "--cuda-graph-max-bs-decode lots", "sglang-invalid-value"),
        ("0.5.12", "--cuda-graph-max-bs 12.5", "sglang-invalid-value"),
        ("0.5.23", "--disable-custom-all-reduce=1", "sglang-unexpected-value"),
        ("0.5.23", "--disable-custom-all-reduce true", "sglang-unrecognized-arguments"),
        ("0.5.23", "--tp-size 4 extra", "sglang-unrecognized-arguments"),
        ("0.5.23", "stray --tp-size 4", "sglang-unrecognized-arguments"),
        ("0.5.23", "--tp-size 4 -- extra", "sglang-unrecognized-arguments"),
        ("0.5.5", "--speculative-algorithm NOPE", "sglang-invalid-choice"),
        (
            "0.5.5",
            "--speculative-algorithm eagle3",
            "sglang-invalid-choice",
        ),  # argparse choices are case-sensitive
        ("0.5.23", "--moe-a2a-backend nope", "sglang-invalid-choice"),
        # choices SGLang computes at run time, as its own parser holds them
        # (scripts/check_sglang_parser.py --write-choices)
        ("0.5.23", "--tool-call-parser nope", "sglang-invalid-choice"),
        ("0.5.5", "--reasoning-parser nope", "sglang-invalid-choice"),
        ("0.5.23", "--kv-canary-real-data some", "sglang-invalid-choice"),
        ("0.5.23", "--tp-size", "sglang-missing-value"),
        ("0.5.23", "--tp-size --enable-p2p-check", "sglang-missing-value"),
    ],
)
def test_what_argparse_refuses_blocks(cli, tmp_path, version, args, finding):
    env = write(tmp_path / "launch.env", f"SGLANG_ARGS='{args}'\n")
    code, out, err = cli(["check", env, *H200, "--sglang-version", version, "--format", "json"])
    assert code == 1, out + err
    assert (finding, "block") in findings(out), out
    code, out, _ = cli(
        [
            "check",
            *H200,
            "--sglang-version",
            version,
            "--format",
            "json",
            "--",
            "python",
            "-m",
            "sglang.launch_server",
            *args.split(),
        ]
    )
    assert code == 1 and (finding, "block") in findings(out), out


@pytest.mark.parametrize(
    "args",
    [
        "--tp-size 4",
        "--tp-size=4",
        "--tp 4 --disable-custom-all-reduce",
        "--tp-size 4 --tool-call-parser qwen25 --reasoning-parser qwen3",
        "--cuda-graph-bs-decode 1 2 4 8 --tp-size 4",
        "--speculative-algorithm EAGLE3 "
        "--speculative-draft-model-path '/m/a b' --speculative-num-steps 3 "
        "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4",
        "--speculative-algorithm eagle3 --speculative-draft-model-path /m "
        "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4",
    ],
)
def test_what_argparse_accepts_passes(cli, tmp_path, args):
    env = write(tmp_path / "launch.env", f'SGLANG_ARGS="{args}"\n')
    code, out, err = cli(["check", env, *H200, "--sglang-version", "0.5.23", "--format", "json"])
    assert code == 0, out + err
    assert not [key for key in findings(out) if key[0].startswith("sglang-")], out


def test_unknown_speculative_algorithm_without_choices_warns(cli, tmp_path):
    env = write(tmp_path / "launch.env", "SGLANG_ARGS='--speculative-algorithm NOPE'\n")
    for version in ("0.5.12", "0.5.23"):
        code, out, err = cli(["check", env, *H200, "--sglang-version", version, "--format", "json"])
        assert code == 0, out + err
        item = findings(out)[("sglang-unknown-speculative-algorithm", "warn")]
        assert "EAGLE3" in item["message"] and "NGRAM" in item["message"]


def test_repeated_flag_warns_and_the_last_counts(cli, tmp_path):
    env = write(tmp_path / "launch.env", "SGLANG_ARGS='--tp 2 --tp-size 99'\n")
    code, out, _ = cli(["check", env, *H200, "--format", "json"])
    assert code == 1
    got = findings(out)
    assert ("sglang-repeated-flag", "warn") in got
    assert ("topoctl-tp-exceeds-gpus", "block") in got


@pytest.mark.parametrize(
    "command, server",
    [
        (["vllm", "serve", "m", "--tp", "4"], "vLLM"),
        (["python", "-m", "vllm.entrypoints.openai.api_server", "--tp-size", "4"], "vLLM"),
        (["trtllm-serve", "m", "--tp_size", "4"], "TensorRT-LLM"),
        (["python3", "-m", "tensorrt_llm.commands.serve", "m"], "TensorRT-LLM"),
        (
            ["docker", "run", "--gpus", "all", "vllm/vllm-openai:v0.8.0", "vllm", "serve", "m"],
            "vLLM",
        ),
    ],
)
def test_another_server_is_named_as_unsupported(cli, command, server):
    code, out, err = cli(["check", *H200, "--", *command])
    assert code == 2 and out == ""
    assert (
        f"topoctl: error: {server} launch (" in err and "topoctl checks SGLang launches only" in err
    )
    assert "not an SGLang launch" not in err and "Traceback" not in err


@pytest.mark.parametrize(
    "command",
    [
        ["python", "serve.py", "--tp-size", "4"],
        ["sglang", "launch", "--tp-size", "4"],
        ["NCCL_DEBUG=INFO", "torchrun", "--tp-size", "4"],
    ],
)
def test_a_command_that_is_not_sglang_is_exit_2(cli, command):
    code, out, err = cli(["check", *H200, "--", *command])
    assert code == 2 and out == ""
    assert "not an SGLang launch (python -m sglang.launch_server / sglang serve ...)" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "command",
    [
        ["python", "-m", "sglang.launch_server", "--tp-size", "4"],
        ["/usr/bin/python3.11", "-u", "-m", "sglang.launch_server", "--tp-size", "4"],
        ["env", "NCCL_DEBUG=INFO", "python3", "-m", "sglang.launch_server", "--tp-size", "4"],
        ["sglang", "serve", "--tp-size", "4"],
        ["/opt/venv/bin/sglang", "serve", "--tp-size", "4"],
        ["--tp-size", "4"],
    ],
)
def test_accepted_launcher_forms(cli, command):
    code, out, err = cli(["check", *H200, "--", *command])
    assert code == 0, out + err


def test_empty_launch_env_is_nothing_to_check(cli, tmp_path):
    for text in ("", "# only a comment\n\n"):
        env = write(tmp_path / "launch.env", text)
        code, out, err = cli(["check", env, *H200])
        assert code == 2 and out == "" and "nothing to check" in err


def test_launch_env_without_sglang_args_warns(cli, tmp_path):
    env = write(tmp_path / "launch.env", "NCCL_DEBUG=INFO\n")
    code, out, _ = cli(["check", env, *H200, "--format", "json"])
    assert code == 0
    assert (
        "only environment settings checked"
        in findings(out)[("sglang-args-missing", "warn")]["message"]
    )


def test_duplicate_assignment_warns_with_both_lines_and_the_last_is_judged(cli, tmp_path):
    env = write(
        tmp_path / "launch.env", "SGLANG_ARGS='--tp-size 99'\n# later\nSGLANG_ARGS='--tp-size 4'\n"
    )
    code, out, _ = cli(["check", env, *H200, "--format", "json"])
    assert code == 0, out
    item = findings(out)[("sglang-duplicate-assignment", "warn")]
    assert "line 1" in item["message"] and "line 3" in item["message"]
    assert item["where"].endswith(":3")
    env = write(tmp_path / "launch.env", "SGLANG_ARGS='--tp-size 4'\nSGLANG_ARGS='--tp-size 99'\n")
    assert cli(["check", env, *H200])[0] == 1


def test_byte_order_mark_is_stripped(cli, tmp_path):
    path = tmp_path / "launch.env"
    path.write_bytes(b"\xef\xbb\xbfSGLANG_ARGS='--tp-size 4'\n")
    code, out, err = cli(["check", str(path), *H200])
    assert code == 0, out + err


def test_snapshot_without_gpus_is_exit_2(cli, tmp_path):
    with open("fixtures/rtx-4090-2x-pcie-no-p2p/snapshot.json", encoding="utf-8") as handle:
        data = json.load(handle)
    data["gpus"], data["pairs"] = [], []
    data["summary"]["gpu_count"] = 0
    snap = write(tmp_path / "s.json", json.dumps(data))
    env = write(tmp_path / "launch.env", "SGLANG_ARGS='--tp-size 2'\n")
    for argv in (["check", env, "--topology", snap], ["recommend", "--topology", snap]):
        code, out, err = cli(argv)
        assert code == 2 and out == "" and "no GPU" in err, (argv, err)


def _no_installed_sglang(tmp_path):
    with open("fixtures/rtx-4090-2x-pcie-no-p2p/snapshot.json", encoding="utf-8") as handle:
        data = json.load(handle)
    data["software"]["sglang"] = None
    return write(tmp_path / "s.json", json.dumps(data))


def test_bad_version_in_launch_env_names_file_and_line(cli, tmp_path):
    env = write(
        tmp_path / "launch.env",
        "# made by hand\nTOPOCTL_SGLANG_VERSION='latest'\nSGLANG_ARGS='--tp-size 4'\n",
    )
    code, out, err = cli(["check", env, "--topology", _no_installed_sglang(tmp_path)])
    assert code == 2 and out == ""
    assert f"{env}:2:" in err and "TOPOCTL_SGLANG_VERSION" in err


def test_version_in_launch_env_is_normalised(cli, tmp_path):
    env = write(
        tmp_path / "launch.env",
        "TOPOCTL_SGLANG_VERSION='v0.5.12+cu129'\n"
        "SGLANG_ARGS='--cuda-graph-max-bs 64 --disable-custom-all-reduce'\n",
    )
    code, out, err = cli(["check", env, "--topology", _no_installed_sglang(tmp_path)])
    assert code == 0, out + err
    assert "SGLang 0.5.12" in out and "nearest older" not in out and "mismatch" not in out


def test_disable_reason_is_not_double_escaped_in_json(cli, tmp_path):
    env = write(tmp_path / "launch.env", "SGLANG_ARGS='--tp-size 4'\n")
    code, out, _ = cli(
        ["check", env, *H200, "--format", "json", "--disable", "nccl-ll128-without-nvlink=ok\nx"]
    )
    assert code == 0
    assert json.loads(out)["results"][0]["disabled"] == [
        {"rule_id": "nccl-ll128-without-nvlink", "reason": "ok\nx"}
    ]
    code, out, _ = cli(["check", env, *H200, "--disable", "nccl-ll128-without-nvlink=ok\nx"])
    assert "disabled: ok\\nx" in out  # text stays one line per item


def test_check_help_states_exit_codes_and_formats(cli):
    code, out, _ = cli(["check", "--help"])
    assert code == 0
    for text in (
        "0  clean",
        "1  a blocking finding",
        "2  bad usage",
        "JUnit XML",
        "annotations",
        "sglang serve",
    ):
        assert text in out, text


def test_an_ambiguous_flag_with_its_value_is_one_finding_not_two(cli):
    code, out, _ = cli(
        [
            "check",
            *H200,
            "--sglang-version",
            "0.5.23",
            "--format",
            "json",
            "--",
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "M",
            "--tp",
            "4",
            "--cuda-graph-max-bs",
            "128",
        ]
    )
    assert code == 1
    blocking = [key for key in findings(out) if key[1] == "block"]
    assert blocking == [("sglang-ambiguous-flag", "block")]
