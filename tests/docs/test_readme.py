"""The README's promises that can drift: its two set-up commands, the CI entry point, the systems it
lists."""

from __future__ import annotations

import os
import re

from topoctl.snapshot.catalogue import list_systems

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _read(*parts: str) -> str:
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as handle:
        return handle.read()


def _quick_start_commands() -> list[str]:
    readme = _read("README.md")
    section = readme.split("## Quick start", 1)[1]
    block = section.split("```sh", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.strip().splitlines() if line.strip()]


def test_readme_starts_with_two_commands_install_and_main_job_then_tests():
    first, second = _quick_start_commands()
    assert "pip install" in first and "topoctl recommend" in first and "--fallback-system" in first
    assert "pip install" in second and "[test]" in second and "pytest" in second


def test_ci_runs_the_readme_test_command_verbatim():
    ci = _read(".ci", "run")
    assert _quick_start_commands()[1] in ci.splitlines()


def test_ci_runs_ruff_and_mypy_before_the_tests():
    lines = _read(".ci", "run").splitlines()
    tests = lines.index(_quick_start_commands()[1])
    ruff = lines.index(".venv/bin/ruff check .")
    mypy = lines.index(".venv/bin/mypy")
    assert ruff < tests and mypy < tests


def test_ci_fails_when_a_step_fails():
    ci = _read(".ci", "run")
    assert "set -euo pipefail" in ci


def test_every_reference_system_in_the_readme_exists_and_every_shipped_one_is_listed():
    readme = _read("README.md")
    table = readme.split("## Reference systems", 1)[1].split("##", 1)[0]
    named = set(re.findall(r"^\| `([a-z0-9.-]+)`", table, flags=re.M))
    assert set(list_systems()) <= named
    assert named - {"no-gpu"} <= set(list_systems())


def test_readme_has_no_unfilled_placeholders():
    readme = _read("README.md")
    assert not re.search(
        r"\b(REAL_[A-Z_]+|SYNTH_SHOW|RECOMMEND_RTX|CHECK_EXAMPLE|MEASUREMENTS|TODO)\b", readme
    )


# ------------------------------------------------------------------------------------------------
# synopses

_OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def _synopses(block: str) -> dict[tuple[str, ...], set[str]]:
    """{(command words): option names} from a synopsis block; continuation lines belong to the line
    above, and several lines for one command (`topoctl recommend --list-systems`) are merged."""
    found: dict[tuple[str, ...], set[str]] = {}
    key: tuple[str, ...] | None = None
    for line in block.splitlines():
        if not line.strip():
            continue
        if line.startswith("topoctl "):
            words = []
            for word in line.split()[1:]:
                if not re.fullmatch(r"[a-z]+", word):
                    break
                words.append(word)
            key = tuple(words)
            found.setdefault(key, set())
        assert key is not None, f"synopsis line before any `topoctl ...` line: {line!r}"
        found[key].update(_OPTION.findall(line))
    return found


def _first_block(section: str) -> str:
    return section.split("```", 1)[1].split("```", 1)[0].lstrip("\n")


def _readme_synopses() -> dict[tuple[str, ...], set[str]]:
    readme = _read("README.md")
    found: dict[tuple[str, ...], set[str]] = {}
    for name in re.findall(r"^### `topoctl ([a-z]+)`$", readme, flags=re.M):
        section = (
            readme.split(f"### `topoctl {name}`", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
        )
        block = _first_block(section)
        assert block.startswith(f"topoctl {name}"), (
            f"the README's section on {name} opens with no synopsis"
        )
        found.update(_synopses(block))
    return found


def _doc_synopses() -> dict[tuple[str, ...], set[str]]:
    doc = _read("docs", "recommend-and-check.md")
    found: dict[tuple[str, ...], set[str]] = {}
    for name in ("recommend", "check"):
        section = doc.split(f"\n## {name}\n", 1)[1]
        found.update(_synopses(_first_block(section)))
    return found


def _click_commands() -> dict[tuple[str, ...], object]:
    import click

    from topoctl.cli.app import cli

    out: dict[tuple[str, ...], object] = {}
    ctx = click.Context(cli)
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        if isinstance(command, click.Group):
            for sub in command.list_commands(ctx):
                out[(name, sub)] = command.get_command(ctx, sub)
        else:
            out[(name,)] = command
    return out


def _assert_synopsis_matches(
    key: tuple[str, ...], command: object, written: set[str], where: str
) -> None:
    import click

    options = [param for param in command.params if isinstance(param, click.Option)]
    names = {name for option in options for name in option.opts + option.secondary_opts}
    shown = "topoctl " + " ".join(key)
    for option in options:
        for group in (
            option.opts,
            option.secondary_opts,
        ):  # --color and --no-color are two switches
            if group:
                assert set(group) & written, (
                    f"{where}: the synopsis of `{shown}` lacks {'/'.join(group)}"
                )
    unknown = written - names
    assert not unknown, (
        f"{where}: the synopsis of `{shown}` names {sorted(unknown)}, which it does not take"
    )


def test_every_command_has_a_readme_synopsis_with_exactly_its_options():
    """Every option of every command and `rules` subcommand is in its README synopsis (by one of its
    names, as `-o` for --output; both sides of a --x/--no-x switch), and the synopsis names no
    option it lacks."""
    commands = _click_commands()
    synopses = _readme_synopses()
    assert set(synopses) == set(commands), (sorted(synopses), sorted(commands))
    for key, command in commands.items():
        _assert_synopsis_matches(key, command, synopses[key], "README.md")


def test_recommend_and_check_synopses_in_the_docs_match_their_options():
    commands = _click_commands()
    docs = _doc_synopses()
    assert set(docs) == {("recommend",), ("check",)}
    readme = _readme_synopses()
    for key, written in docs.items():
        _assert_synopsis_matches(key, commands[key], written, "docs/recommend-and-check.md")
        assert written == readme[key], key


def test_exit_code_table_says_when_recommend_exits_1():
    readme = _read("README.md")
    table = readme.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    row = next(line for line in table.splitlines() if line.startswith("| 1 |"))
    assert "`check`" in row and "`rules test`" in row
    assert "`recommend`" in row and "no launch that passes the rules" in row
    from topoctl.cli.commands.recommend import command

    assert "1 no launch passes the rules" in command.help


# ------------------------------------------------------------------------------------------------
# Pythons


def _setup_cfg():
    import configparser

    parser = configparser.ConfigParser()
    parser.read(os.path.join(ROOT, "setup.cfg"), encoding="utf-8")
    return parser


def test_the_supported_pythons_are_the_same_in_readme_and_metadata_and_include_this_run():
    """The classifiers name the tested versions; python_requires starts at the lowest; the README
    states the same; and the interpreter running this suite is one of them (a run on another one
    shows what to add)."""
    import sys

    config = _setup_cfg()
    classifiers = config["metadata"]["classifiers"].split("\n")
    tested = sorted(
        re.findall(r"^Programming Language :: Python :: (3\.\d+)$", "\n".join(classifiers), re.M)
    )
    assert tested, "no classifier names a Python version"
    lowest = min(tested, key=lambda v: tuple(map(int, v.split("."))))
    assert config["options"]["python_requires"].strip() == f">={lowest}"
    quick = _read("README.md").split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert f"with Python {', '.join(tested)}, from a clone" in quick
    assert (
        f"Python: {', '.join(tested)}, the interpreters the whole test suite has passed on" in quick
    )
    assert f"{sys.version_info[0]}.{sys.version_info[1]}" in tested, (
        "this suite ran on an untested Python"
    )


def test_every_claimed_python_has_a_passing_run_in_docs_pythons_and_no_other_one_passed():
    """docs/pythons.md's table has a `passed` row for each classifier's version, and no version the
    classifiers leave out is marked passed (then it should be claimed); the script it names exists.
    """
    config = _setup_cfg()
    tested = set(re.findall(r"Python :: (3\.\d+)$", config["metadata"]["classifiers"], re.M))
    doc = _read("docs", "pythons.md")
    rows = {
        m.group(1): m.group(2) for m in re.finditer(r"^\| (3\.\d+)\.\d+ \| ([^|]+) \|", doc, re.M)
    }
    assert tested <= set(rows), (tested, rows)
    passed = {version for version, result in rows.items() if result.strip() == "passed"}
    assert passed == tested, (passed, tested)
    assert "scripts/python_matrix.sh" in doc and os.path.isfile(
        os.path.join(ROOT, "scripts", "python_matrix.sh")
    )
    assert (
        "docs/pythons.md" in _read("README.md").split("## Quick start", 1)[1].split("\n## ", 1)[0]
    )


def test_exit_code_table_says_what_a_missing_output_folder_exits_with(cli, tmp_path):
    """`-o` into a folder that does not exist is found before the work: exit 2, as the table says
    (74 is for a write that fails after the work)."""
    table = _read("README.md").split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    row = next(line for line in table.splitlines() if line.startswith("| 2 |"))
    assert "`-o FILE` whose folder does not exist" in row
    missing = str(tmp_path / "no-such-folder" / "launch.env")
    code, out, err = cli(["recommend", "--system", "h200-1x-vm", "-o", missing])
    assert (code, out) == (2, "") and "does not exist" in err and "hint:" in err
    assert not os.path.exists(os.path.dirname(missing))
