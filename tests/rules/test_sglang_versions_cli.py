"""SGLang versions at the command line: the newest release named, and a warning on stderr whenever a
launch is judged with another version's flag data (check and recommend alike)."""

from __future__ import annotations

from topoctl.rules.sglang.flags import known_versions, newest_version

RTX = ["--system", "rtx-pro-6000-8x-pcie"]


def test_version_names_the_newest_release_it_knows(cli):
    code, out, err = cli(["--version"])
    assert code == 0 and err == ""
    assert (
        f"newest known release {newest_version()}" in out
        and f"{len(known_versions())} versions" in out
    )


def test_check_warns_on_stderr_for_a_newer_version_and_judges_it_with_the_newest(cli):
    code, out, err = cli(["check", *RTX, "--sglang-version", "0.6.0", "--", "--tp-size", "8"])
    assert code == 0
    assert err.startswith("topoctl: warning: no SGLang flag data for 0.6.0")
    assert len(err.splitlines()) == 1 and f"SGLang {newest_version()}" in err
    assert f"SGLang {newest_version()}" in out  # the report's header says it too


def test_check_says_nothing_on_stderr_for_a_known_release(cli):
    code, out, err = cli(["check", *RTX, "--sglang-version", "0.5.21", "--", "--tp-size", "8"])
    assert code == 0 and err == ""


def test_check_warns_once_for_several_launch_files_of_one_version(cli, tmp_path):
    paths = []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.env"
        path.write_text(
            "SGLANG_ARGS='--tp-size 4'\nTOPOCTL_SGLANG_VERSION='0.5.24rc1'\n", encoding="utf-8"
        )
        paths.append(str(path))
    # a target with no SGLang installed: each launch is read with the version it was made for
    code, out, err = cli(["check", "--system", "h200-4x-nvswitch-vm", *paths])
    assert code == 0, out + err
    assert len(err.splitlines()) == 1 and "0.5.24rc1" in err


def test_a_release_candidate_is_judged_as_its_release(cli):
    code, out, err = cli(
        [
            "check",
            *RTX,
            "--sglang-version",
            "0.5.21rc2",
            "--",
            "--tp-size",
            "8",
            "--cuda-graph-max-bs",
            "8",
        ]
    )
    assert (
        code == 1
    )  # 0.5.21 reads --cuda-graph-max-bs as ambiguous, and so does its release candidate
    assert "ambiguous" in out and "0.5.21" in err and "pre-release or dev build" in err


def test_cuda_graph_max_bs_is_blocked_as_ambiguous_on_0_5_20_to_0_5_22(cli):
    for version in ("0.5.20", "0.5.21", "0.5.22"):
        code, out, err = cli(
            [
                "check",
                *RTX,
                "--sglang-version",
                version,
                "--",
                "--tp-size",
                "8",
                "--cuda-graph-max-bs",
                "8",
            ]
        )
        assert code == 1 and "sglang-ambiguous-flag" in out and "deprecated" not in out, version
    code, out, err = cli(
        [
            "check",
            *RTX,
            "--sglang-version",
            "0.5.19",
            "--",
            "--tp-size",
            "8",
            "--cuda-graph-max-bs",
            "8",
        ]
    )
    assert code == 0 and "deprecated" in out


def test_flags_new_in_0_5_9_to_0_5_11_are_not_blocked_as_unknown(cli):
    for version, flag in (
        ("0.5.9", "--enable-fused-qk-norm-rope"),
        ("0.5.10", "--enforce-disable-flashinfer-allreduce-fusion"),
        ("0.5.11", "--enable-aiter-allreduce-fusion"),
    ):
        code, out, err = cli(
            ["check", *RTX, "--sglang-version", version, "--", "--tp-size", "8", flag]
        )
        assert "unknown" not in out.lower() and "sglang-unknown-flag" not in out, (version, out)
        assert err == ""


def test_a_choice_sglang_adds_at_run_time_is_not_blocked(cli):
    # 0.5.19+: sampling_backend_choices = set(SAMPLING_BACKEND_CHOICES), plus "token_oracle" when
    # SGLANG_KV_CANARY_ENABLE_TOKEN_ORACLE is set (sglang/srt/server_args.py, add_cli_args)
    code, out, err = cli(
        [
            "check",
            "--system",
            "h200-4x-nvswitch-vm",
            "--sglang-version",
            "0.5.23",
            "--",
            "--tp-size",
            "4",
            "--sampling-backend",
            "token_oracle",
        ]
    )
    assert code == 0 and "invalid choice" not in out
    code, out, err = cli(
        [
            "check",
            "--system",
            "h200-4x-nvswitch-vm",
            "--sglang-version",
            "0.5.18",
            "--",
            "--tp-size",
            "4",
            "--sampling-backend",
            "token_oracle",
        ]
    )
    assert code == 1 and "invalid choice" in out  # a fixed set there: argparse refuses it
