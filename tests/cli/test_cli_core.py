"""The CLI's front door: error format, internal errors, closed pipes, help text.

- every failure is `topoctl: error: ...` (plus `  hint: ...`) on stderr, one line each, whatever the text;
- a bug is one line `topoctl: internal error: ...`, exit 70, unless TOPOCTL_DEBUG=1 asks for the traceback;
- `topoctl ... | head -1` ends like other Unix tools (SIGPIPE), never exit 1, which CI reads as "blocking";
- help text never breaks a name such as --list-systems or rtx-pro-6000-8x-pcie at a hyphen.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys

import pytest
from click.testing import CliRunner

from topoctl.cli.app import cli as cli_group
from topoctl.cli.app import main

H200 = ["--system", "h200-2x-nvswitch-vm"]


# -- unknown subcommands and click's own usage errors
# ------------------------------------------------------


@pytest.mark.parametrize(
    "argv, first, hint",
    [
        (["prob"], "topoctl: error: no such command 'prob'", "  hint: did you mean probe?"),
        (
            ["recomend", "--model", "x"],
            "topoctl: error: no such command 'recomend'",
            "  hint: did you mean recommend?",
        ),
        (["chek"], "topoctl: error: no such command 'chek'", "  hint: did you mean check?"),
        (["xyzzy"], "topoctl: error: no such command 'xyzzy'", "  hint: see topoctl --help"),
        (["rules", "lst"], "topoctl: error: no such command 'lst'", "  hint: did you mean list?"),
    ],
)
def test_unknown_subcommand_is_one_line_with_a_suggestion(cli, argv, first, hint):
    code, out, err = cli(argv)
    assert code == 2 and out == ""
    assert err.splitlines() == [first, hint]


@pytest.mark.parametrize(
    "argv, contains, command",
    [
        (["recommend", "--tp-size"], "requires an argument", "topoctl recommend"),
        (["recommend", "--format", "toml", *H200], "'toml' is not one of", "topoctl recommend"),
        (["check", "--fail-on", "never", "x.env", *H200], "'never' is not one of", "topoctl check"),
        (["rules", "explain"], "Missing argument", "topoctl rules explain"),
        (["show", "--sytem", "x"], "Did you mean '--system'", "topoctl show"),
        (["--bogus"], "No such option", "topoctl"),
    ],
)
def test_click_usage_errors_in_topoctl_format(cli, argv, contains, command):
    code, out, err = cli(argv)
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert lines[0].startswith("topoctl: error: ") and contains in lines[0], err
    assert lines[1] == f"  hint: see {command} --help", err


@pytest.mark.parametrize("argv", [[], ["rules"]])
def test_a_group_without_a_command_shows_its_help(cli, argv):
    code, out, err = cli(argv)
    assert code == 2
    assert "Usage: topoctl" in out + err and "Commands:" in out + err
    assert "topoctl: error: Usage" not in err and "\\n" not in err


# -- hostile text in messages stays on one line
# ------------------------------------------------------------


def test_one_line_escapes_control_characters():
    from topoctl.cli.app import one_line

    assert (
        one_line("a\nb\rc\td\x1b[31me\x00f\x7fg\u2028h\u00e9")
        == "a\\nb\\rc\\td\\x1b[31me\\x00f\\x7fg\\u2028h\u00e9"
    )


def test_hostile_option_value_is_escaped_in_the_error(cli):
    code, out, err = cli(["recommend", *H200, "--sglang-version", "0.5\nx\x1b[31m"])
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert 1 <= len(lines) <= 2 and lines[0].startswith("topoctl: error: "), err
    assert "\x1b" not in err and "\r" not in err
    assert "0.5\\nx\\x1b[31m" in lines[0]


def test_hostile_message_and_hint_are_escaped(cli, monkeypatch):
    import topoctl.cli.target_machine
    from topoctl.core.errors import TopoctlError

    def hostile(*args, **kwargs):
        raise TopoctlError("bad\nNEXT LINE\x1b[2J", hint="try\r\tthis\x07")

    monkeypatch.setattr(topoctl.cli.target_machine, "resolve_target", hostile)
    code, out, err = cli(["show", *H200])
    assert code == 2
    assert err.splitlines() == [
        "topoctl: error: bad\\nNEXT LINE\\x1b[2J",
        "  hint: try\\r\\tthis\\x07",
    ]


# -- a bug: one line, exit 70, traceback only with TOPOCTL_DEBUG=1
# -----------------------------------------


@pytest.fixture
def broken_show(monkeypatch):
    import topoctl.probe.render_matrix

    def boom(*args, **kwargs):
        raise KeyError("gpus\nsecond line")

    monkeypatch.setattr(topoctl.probe.render_matrix, "render", boom)
    monkeypatch.delenv("TOPOCTL_DEBUG", raising=False)


def test_an_unexpected_exception_is_an_internal_error_not_a_traceback(cli, broken_show):
    code, out, err = cli(["show", *H200])
    assert code == 70
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert lines[0].startswith("topoctl: internal error: KeyError: ") and "\\n" in lines[0]
    assert "TOPOCTL_DEBUG=1" in lines[1] and "report" in lines[1]


def test_topoctl_debug_shows_the_traceback(cli, broken_show, monkeypatch):
    monkeypatch.setenv("TOPOCTL_DEBUG", "1")
    with pytest.raises(KeyError):
        main(["show", *H200])


def test_an_unexpected_exception_through_click_runner(broken_show):
    result = CliRunner().invoke(cli_group, ["show", *H200])
    assert result.exit_code == 70
    assert "topoctl: internal error: KeyError" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_an_unexpected_exception_outside_a_subcommand(cli, monkeypatch):
    import topoctl.cli.app

    def boom(*args, **kwargs):
        raise RuntimeError("while parsing")

    monkeypatch.delenv("TOPOCTL_DEBUG", raising=False)
    monkeypatch.setattr(topoctl.cli.app.cli, "main", boom)
    code, _, err = cli(["show"])
    assert code == 70 and err.startswith("topoctl: internal error: RuntimeError: while parsing\n")


def test_an_internal_error_in_a_real_process(tmp_path):
    code = (
        "import sys, topoctl.probe.render_matrix as m\n"
        "m.render = lambda *a, **k: 1 / 0\n"
        "from topoctl.cli.app import main\n"
        "sys.exit(main())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "show", *H200],
        capture_output=True,
        text=True,
        cwd=str(tmp_path),
        env={k: v for k, v in os.environ.items() if k != "TOPOCTL_DEBUG"},
    )
    assert proc.returncode == 70
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("topoctl: internal error: ZeroDivisionError: ")


# -- a closed pipe ends topoctl like other Unix tools
# ------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["rules", "list"],
        ["show", *H200],
        ["recommend", *H200, "--format", "json"],
        ["recommend", "--list-systems"],
    ],
)
def test_a_pipe_closed_by_head(tmp_path, argv):
    if shutil.which("bash") is None or shutil.which("head") is None:
        pytest.skip("needs bash and head")
    command = " ".join([sys.executable, "-m", "topoctl", *argv])
    script = f'{command} 2>err.txt | head -1 >/dev/null; echo "status=${{PIPESTATUS[0]}}"'
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=str(tmp_path))
    status = int(re.search(r"status=(\d+)", proc.stdout).group(1))
    assert status in (0, 128 + signal.SIGPIPE), proc.stdout
    assert (tmp_path / "err.txt").read_text() == ""


@pytest.mark.parametrize(
    "argv",
    [
        ["rules", "list"],
        ["show", *H200],
        ["check", *H200, "--", "python", "-m", "sglang.launch_server", "--tp-sise", "2"],
    ],
)
def test_a_pipe_closed_before_the_first_write(tmp_path, argv):
    """Deterministic: the reader is gone before topoctl writes a byte."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "topoctl", *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=str(tmp_path),
        )
    finally:
        os.close(write_end)
    assert proc.returncode in (0, -signal.SIGPIPE), (proc.returncode, proc.stderr)
    assert proc.returncode != 1
    # check says on stderr which SGLang version it assumed (H200's snapshot has none installed);
    # nothing else
    assert [
        line for line in proc.stderr.splitlines() if not line.startswith("topoctl: note: ")
    ] == []


def test_a_closed_pipe_in_process_is_not_exit_1(monkeypatch, cli):
    import click

    def closed(*args, **kwargs):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(click, "echo", closed)
    stdout, stderr = sys.stdout, sys.stderr
    try:
        code = main(["rules", "list"])
    finally:
        sys.stdout, sys.stderr = stdout, stderr
    assert code == 141


# -- help text
# ---------------------------------------------------------------------------------------------

BROKEN_NAME = re.compile(r"[A-Za-z0-9]-\n\s*[A-Za-z0-9]")


@pytest.mark.parametrize("columns", ["50", "80", "100", "240"])
@pytest.mark.parametrize(
    "argv", [[], ["probe"], ["show"], ["recommend"], ["check"], ["rules"], ["rules", "list"]]
)
def test_help_never_breaks_a_name_at_a_hyphen(cli, monkeypatch, argv, columns):
    monkeypatch.setenv("COLUMNS", columns)
    code, out, _ = cli([*argv, "--help"])
    assert code == 0
    assert not BROKEN_NAME.search(out), BROKEN_NAME.search(out).group(0)
    if argv in ([], ["show"], ["recommend"]):
        assert "rtx-pro-6000-8x-pcie" in out
    if argv == ["recommend"]:
        assert "--list-systems" in out
    if int(columns) >= 100:
        assert (
            max(len(line) for line in out.splitlines() if not line.lstrip().startswith("topoctl "))
            <= 100
        )


def test_help_examples_are_never_rewrapped(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "50")
    code, out, _ = cli(["--help"])
    assert code == 0
    assert (
        "  topoctl check launch.env --topology machine.yaml   # in CI: exit 1 on a blocking finding"
        in out
    )
