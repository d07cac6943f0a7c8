"""launch.env is sourced by shells: values round-trip through bash and sh, and a hostile snapshot
runs nothing."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from snapshot_factory import hostile, make_snapshot

from topoctl.autoconf.launch_text import assignment, comment, sh_quote
from topoctl.cli.app import main
from topoctl.deploy.sglang_launch import parse_env_text
from topoctl.snapshot.catalogue import list_systems

SHELLS = [["bash", "-c"], ["sh", "-c"]]


def source_env(shell: list[str], folder) -> dict[str, str]:
    script = "set -a; . ./launch.env; set +a; env -0"
    proc = subprocess.run(
        shell + [script],
        cwd=folder,
        capture_output=True,
        timeout=30,
        env={"PATH": os.environ["PATH"]},
    )
    assert proc.returncode == 0, proc.stderr
    out = {}
    for entry in proc.stdout.split(b"\0"):
        if b"=" in entry:
            key, _, value = entry.partition(b"=")
            out[key.decode()] = value.decode()
    return out


@pytest.mark.parametrize(
    "value",
    [
        "plain",
        "it's",
        "'",
        "''",
        "a b",
        "$(touch pwned)",
        "`touch pwned`",
        "x\ny",
        "\\",
        '"',
        "$HOME",
        "é",
        "",
    ],
)
def test_quote_round_trip(value, tmp_path):
    (tmp_path / "launch.env").write_text(
        assignment("TOPOCTL_X", value) + "\n" + comment("c\n$(touch pwned)") + "\n"
    )
    for shell in SHELLS:
        assert source_env(shell, tmp_path)["TOPOCTL_X"] == value
    assert not (tmp_path / "pwned").exists()
    assert parse_env_text((tmp_path / "launch.env").read_text(), "t") == [(1, "TOPOCTL_X", value)]


def test_bad_key_refused():
    from topoctl.core.errors import TopoctlError

    for key in ("A-B", "1A", "A B", "$(x)", ""):
        with pytest.raises(TopoctlError):
            assignment(key, "v")
    assert sh_quote("a'b") == "'a'\\''b'"


def _systems(tmp_path=None):
    """--system NAME of every built-in reference system."""
    return [["--system", name] for name in list_systems()]


def test_every_emitted_launch_env_round_trips(tmp_path, capsys):
    for index, argv in enumerate(_systems(tmp_path)):
        folder = tmp_path / f"s{index}"
        folder.mkdir()
        code = main(
            [
                "recommend",
                *argv,
                "--model",
                "kimi-k2.5",
                "--speculative",
                "eagle3",
                "--draft-model",
                "/models/it's draft",
                "--force-speculative",
                "-o",
                str(folder / "launch.env"),
            ]
        )
        capsys.readouterr()
        if code == 1:  # nothing passes the rules there with EAGLE-3 forced
            assert main(["recommend", *argv, "-o", str(folder / "launch.env")]) == 0
        text = (folder / "launch.env").read_text()
        expected = {name: value for _, name, value in parse_env_text(text, "launch.env")}
        assert "SGLANG_ARGS" in expected
        for shell in SHELLS:
            got = source_env(shell, folder)
            for name, value in expected.items():
                assert got[name] == value, (argv, name)


def test_hostile_snapshot_runs_nothing(tmp_path, capsys):
    marker = tmp_path / "pwned"
    snap = hostile(make_snapshot("evil"), str(marker))
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(snap))
    for fmt in ("env", "args", "json", "yaml"):
        assert (
            main(
                [
                    "recommend",
                    "--topology",
                    str(path),
                    "--model",
                    "kimi-k2.5",
                    "--format",
                    fmt,
                    "-o",
                    str(tmp_path / f"out.{fmt}"),
                    "--explain",
                ]
            )
            == 0
        )
    capsys.readouterr()
    (tmp_path / "launch.env").write_text((tmp_path / "out.env").read_text())
    for shell in SHELLS:
        env = source_env(shell, tmp_path)
        assert "touch" in env["TOPOCTL_SYSTEM"] and "\n" not in env["TOPOCTL_SYSTEM"]
        assert "NCCL_X" not in env
    subprocess.run(
        ["bash", "-c", 'set -a; . ./launch.env; set +a; eval "set -- $SGLANG_ARGS"; echo "$@"'],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    assert not marker.exists()
    for line in (tmp_path / "out.env").read_text().splitlines():
        assert line == "" or line.startswith("#") or line.split("=", 1)[1].startswith("'")
