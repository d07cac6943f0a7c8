"""Site rules (--rules DIR, rules/engine/loader.py site_rules): one cache entry per folder keyed by
its real path and verified against every file's bytes and the install's HMAC key; a file that holds
no rules is a warning that names it; a folder with no rules is exit 2. Nothing a site wrote is
dropped without a word."""

from __future__ import annotations

import glob
import json
import os

import pytest
from rules_helpers import rule_text, write_rules

from topoctl.core import knowledge_cache as cache
from topoctl.core.errors import TopoctlError
from topoctl.rules.engine import load_rules, loader

SNAPSHOT_SYSTEM = "rtx-pro-6000-8x-pcie"


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.delenv("TOPOCTL_NO_CACHE", raising=False)
    return home / "topoctl"


def _schema_checks(monkeypatch):
    calls = []
    real = loader.validate_against_schema
    monkeypatch.setattr(
        loader, "validate_against_schema", lambda *a: calls.append(a[0]) or real(*a)
    )
    return calls


def _ids(folder) -> list[str]:
    return [rule.id for rule in load_rules(extra_dirs=[str(folder)], builtin=False).rules]


def test_one_cache_file_per_folder_hit_under_any_spelling_of_its_path(
    cache_home, tmp_path, monkeypatch
):
    folder = tmp_path / "site"
    for number in range(5):
        write_rules(folder, rule_text(rule_id=f"site-rule-{number}"), name=f"r{number}.yaml")
    assert len(_ids(folder)) == 5
    assert (
        len(glob.glob(str(cache_home / "site-*.json"))) == 1
    )  # the folder's, not one per rule file
    calls = _schema_checks(monkeypatch)
    monkeypatch.chdir(tmp_path)
    link = tmp_path / "link-to-site"
    link.symlink_to(folder)
    for spelling in ("site", "./site/", str(folder), str(link)):
        rules = load_rules(extra_dirs=[spelling], builtin=False).rules
        assert [rule.id for rule in rules] == [f"site-rule-{number}" for number in range(5)]
        assert rules[0].source_file == os.path.join(
            spelling, "r0.yaml"
        )  # named as the user gave it
    assert calls == []  # every spelling is the same real folder: served from its entry
    write_rules(folder, rule_text(rule_id="site-edited"), name="r3.yaml")
    assert "site-edited" in _ids(folder) and calls == [
        str(folder / "r3.yaml")
    ]  # only the edited file


def _cache_file(cache_home):
    (path,) = glob.glob(str(cache_home / "site-*.json"))
    return path


@pytest.mark.parametrize("how", ["weaken-and-recompute-sha256", "swap-the-source-digest"])
def test_a_forged_site_entry_is_not_served(cache_home, tmp_path, how):
    """Turning a cached block rule into info needs the install's key: a recomputed checksum is not
    enough."""
    import hashlib

    folder = tmp_path / "site"
    write_rules(folder, rule_text(severity="block"))
    assert [
        rule.severity for rule in load_rules(extra_dirs=[str(folder)], builtin=False).rules
    ] == ["block"]
    path = _cache_file(cache_home)
    with open(path, "rb") as handle:
        header_line, _, body = handle.read().partition(b"\n")
    header, data = json.loads(header_line), json.loads(body)
    (entry,) = data["files"].values()
    entry["rules"][0]["severity"] = "info"
    if how == "swap-the-source-digest":
        entry["sha256"] = hashlib.sha256(b"something else").hexdigest()
    body = json.dumps(data).encode()
    header["sha256"] = hashlib.sha256(body).hexdigest()
    with open(path, "wb") as handle:
        handle.write(json.dumps(header).encode() + b"\n" + body)
    assert [
        rule.severity for rule in load_rules(extra_dirs=[str(folder)], builtin=False).rules
    ] == ["block"]


def test_a_file_edited_behind_the_cache_is_checked_again(cache_home, tmp_path):
    folder = tmp_path / "site"
    path = write_rules(folder, rule_text(severity="block"))
    _ids(folder)
    stat = os.stat(path)
    path.write_text(rule_text(severity="warn"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime: the content decides
    assert [
        rule.severity for rule in load_rules(extra_dirs=[str(folder)], builtin=False).rules
    ] == ["warn"]


@pytest.mark.parametrize(
    "content",
    ["", "\n\n", "# our blocking rules live here\n# (to be written)\n", "---\n", "rules: []\n"],
)
def test_a_site_file_that_holds_no_rules_is_a_warning_naming_it(cli, tmp_path, content):
    folder = tmp_path / "site"
    write_rules(folder, rule_text(rule_id="site-kept"), name="a.yaml")
    empty = write_rules(folder, content, name="b.yaml")
    code, out, err = cli(
        [
            "check",
            "--system",
            SNAPSHOT_SYSTEM,
            "--rules",
            str(folder),
            "--",
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "M",
            "--tp",
            "8",
        ]
    )
    assert code in (0, 1), err
    assert f"topoctl: warning: {empty} holds no rules (it is empty or only comments)" in err
    ruleset = load_rules(extra_dirs=[str(folder)])
    assert "site-kept" in ruleset and ruleset.warnings == [
        f"{empty} holds no rules (it is empty or only comments): nothing in it is checked"
    ]


@pytest.mark.parametrize(
    "kind, said",
    [
        ("fifo", "is a FIFO, not a regular file"),
        ("device", "is a character device, not a regular file"),
        ("dangling-link", "cannot read this rule file"),
    ],
)
@pytest.mark.parametrize("beside_a_rule", [True, False])
def test_a_rule_file_name_that_is_not_a_regular_file_is_exit_2_naming_it(
    cli, tmp_path, kind, said, beside_a_rule
):
    """A site.yaml that is a FIFO, a device or a link to nothing was passed over: beside a real rule
    file its rules were dropped without a word, alone the folder read as holding no rule file (found
    by benchmarks/fuzz_hostile.py). It is now exit 2 naming it, and a FIFO is never opened."""
    folder = tmp_path / "site"
    if beside_a_rule:
        write_rules(folder, rule_text(severity="block"), name="a.yaml")
    folder.mkdir(exist_ok=True)
    special = folder / "site.yaml"
    if kind == "fifo":
        os.mkfifo(special)
    elif kind == "device":
        special.symlink_to("/dev/zero")
    else:
        special.symlink_to(folder / "gone.yaml")
    for argv in (
        ["rules", "list", "--rules", str(folder)],
        ["rules", "list", "--rules", str(special)],
        [
            "check",
            "--system",
            SNAPSHOT_SYSTEM,
            "--rules",
            str(folder),
            "--",
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "M",
            "--tp",
            "8",
        ],
    ):
        code, _, err = cli(argv)
        errors = [line for line in err.splitlines() if line.startswith("topoctl: error:")]
        assert code == 2 and len(errors) == 1, (argv, err)
        assert f"{special} {said}" in errors[0] or f"{special}: {said}" in errors[0], (argv, err)


@pytest.mark.parametrize(
    "files",
    [{}, {"notes.txt": "not a rule file"}, {"a.yaml": ""}, {"a.yaml": "# x\n", "b.yml": "\n"}],
)
def test_rules_pointing_at_a_folder_with_no_rules_is_exit_2(cli, tmp_path, files):
    folder = tmp_path / "site"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    with pytest.raises(TopoctlError) as caught:
        load_rules(extra_dirs=[str(folder)])
    assert caught.value.exit_code == 2 and str(folder) in caught.value.message
    for argv in (
        ["rules", "list", "--rules", str(folder)],
        [
            "check",
            "--system",
            SNAPSHOT_SYSTEM,
            "--rules",
            str(folder),
            "--",
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "M",
            "--tp",
            "8",
        ],
        ["recommend", "--system", SNAPSHOT_SYSTEM, "--rules", str(folder)],
    ):
        code, out, err = cli(argv)
        assert code == 2, argv
        assert f"--rules {folder}:" in err and "hint:" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "contents", [[""], ["# to be written\n"], ["null\n"], ["rules: []\n"], ["", "# x\n", "---\n"]]
)
def test_a_folder_whose_files_hold_no_rules_names_each_file_then_exits_2(cli, tmp_path, contents):
    """Issue 21's rule for site folders: a file that holds no rules is a warning naming it, and a
    folder that holds no rules at all is exit 2 with a hint, with each file named first (the fuzz
    harness's site-rules surface)."""
    folder = tmp_path / "site"
    paths = [write_rules(folder, text, name=f"f{i}.yaml") for i, text in enumerate(contents)]
    code, out, err = cli(
        [
            "check",
            "--system",
            SNAPSHOT_SYSTEM,
            "--rules",
            str(folder),
            "--",
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "M",
            "--tp",
            "8",
            "--enable-torch-symm-mem",
        ]
    )
    lines = err.splitlines()
    assert code == 2 and out == ""
    assert lines[: len(paths)] == [
        f"topoctl: warning: {path} holds no rules (it is empty or only comments): nothing "
        "in it is checked"
        for path in paths
    ]
    assert lines[len(paths)].startswith(f"topoctl: error: --rules {folder}: holds no rules")
    assert all(path.name in lines[len(paths)] for path in paths)
    assert lines[len(paths) + 1].startswith("  hint: ") and len(lines) == len(paths) + 2


def test_an_empty_file_beside_a_real_rule_is_named_and_the_rule_still_blocks(cli, tmp_path):
    folder = tmp_path / "site"
    write_rules(folder, rule_text(rule_id="site-block-symm-mem"), name="a.yaml")
    empty = write_rules(folder, "# nothing yet\n", name="b.yaml")
    code, out, err = cli(
        [
            "check",
            "--system",
            SNAPSHOT_SYSTEM,
            "--sglang-version",
            "0.5.12",
            "--rules",
            str(folder),
            "--",
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "M",
            "--tp",
            "8",
            "--enable-torch-symm-mem",
        ]
    )
    assert code == 1 and "BLOCK site-block-symm-mem" in out, out + err
    assert (
        err.splitlines()[0]
        == f"topoctl: warning: {empty} holds no rules (it is empty or only comments): "
        "nothing in it is checked"
    )


def test_a_folder_of_disables_only_holds_rules_of_its_own_kind(tmp_path):
    """A file that only switches built-in rules off is not empty: no warning, no error."""
    folder = tmp_path / "site"
    builtin = load_rules().rules[0].id
    write_rules(folder, f"disable:\n  - id: {builtin}\n    reason: not on our machines\n")
    ruleset = load_rules(extra_dirs=[str(folder)])
    assert ruleset.disabled == {builtin: "not on our machines"} and ruleset.warnings == []


def test_schema_errors_are_still_the_best_matching_one(tmp_path):
    folder = tmp_path / "site"
    write_rules(folder, rule_text().replace("severity: block", "severity: fatal"))
    with pytest.raises(TopoctlError, match="severity.*must be one of"):
        load_rules(extra_dirs=[str(folder)])


def test_conditions_are_compiled_once_per_distinct_condition(cache_home, tmp_path, monkeypatch):
    folder = tmp_path / "site"
    for number in range(4):
        write_rules(folder, rule_text(rule_id=f"site-same-{number}"), name=f"r{number}.yaml")
    loader._CONDITIONS.clear()
    compiled = []
    real = loader.compile_condition
    monkeypatch.setattr(
        loader, "compile_condition", lambda *a, **k: compiled.append(1) or real(*a, **k)
    )
    rules = load_rules(extra_dirs=[str(folder)], builtin=False).rules
    assert len(rules) == 4 and len(compiled) == 1
    assert len({id(rule.condition) for rule in rules}) == 1
    assert cache.cache_dir() is not None


def test_judging_a_launch_leaves_the_test_cases_out_and_the_rules_commands_keep_them(
    cache_home, tmp_path, monkeypatch
):
    """check and recommend (with_tests=False) neither decode nor store the rules' test cases; `rules
    list`, `explain` and `test` (with_tests=True) get them, from their own entry once they are
    stored."""
    folder = tmp_path / "site"
    write_rules(folder, rule_text(rule_id="site-with-cases"))
    (bare,) = load_rules(extra_dirs=[str(folder)], builtin=False, with_tests=False).rules
    assert bare.tests == []
    with open(_cache_file(cache_home), "rb") as handle:
        assert b'"tests"' not in handle.read()
    parsed, _ = loader.parse_rule_file(
        str(folder / "site.yaml"), builtin=False, validate_schema=True
    )
    calls = _schema_checks(monkeypatch)
    (full,) = load_rules(extra_dirs=[str(folder)], builtin=False).rules
    assert full.tests == parsed[0].tests and full.tests and calls == [str(folder / "site.yaml")]
    (again,) = load_rules(extra_dirs=[str(folder)], builtin=False).rules
    (bare_again,) = load_rules(extra_dirs=[str(folder)], builtin=False, with_tests=False).rules
    assert (
        again.tests == full.tests and bare_again.tests == [] and len(calls) == 1
    )  # both served from the cache


def test_rule_paths_resolve_as_realpath_does(tmp_path, monkeypatch):
    """--rules paths are told apart by real path: the folder resolved once, links inside it each on
    their own."""
    from topoctl.cli.commands._options import _real_paths, unique_rule_paths

    folder = tmp_path / "site"
    write_rules(folder, rule_text(rule_id="site-a"), name="a.yaml")
    elsewhere = write_rules(tmp_path / "other", rule_text(rule_id="site-b"), name="b.yaml")
    (folder / "b.yaml").symlink_to(elsewhere)
    (tmp_path / "alias").symlink_to(folder)
    monkeypatch.chdir(tmp_path)
    names = [
        "site/a.yaml",
        "site/b.yaml",
        "alias/a.yaml",
        "alias/b.yaml",
        "./other/b.yaml",
        str(elsewhere),
    ]
    assert _real_paths(names) == [os.path.realpath(name) for name in names]
    assert unique_rule_paths(["site", "alias", "other"]) == [
        "site"
    ]  # every file of the others is one of site's


@pytest.fixture
def shared_load(monkeypatch):
    """Every site load checks its files afresh and shares them with a forked process from two files
    on."""
    monkeypatch.setenv("TOPOCTL_NO_CACHE", "1")
    monkeypatch.setattr(loader, "PARALLEL_FROM", 2)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)


def _plain(rules) -> list:
    return [(rule.id, rule.severity, rule.when, rule.source_file, rule.tests) for rule in rules]


def _one_by_one(folder, monkeypatch) -> list:
    with monkeypatch.context() as patch:
        patch.setattr(loader, "PARALLEL_FROM", 10**9)
        return _plain(loader.site_rules(str(folder)).rules)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_first_load_shared_with_a_second_process_gives_what_one_by_one_gives(
    tmp_path, shared_load, monkeypatch
):
    folder = tmp_path / "site"
    for number in range(7):
        write_rules(folder, rule_text(rule_id=f"site-rule-{number}"), name=f"r{number}.yaml")
    assert _plain(loader.site_rules(str(folder)).rules) == _one_by_one(folder, monkeypatch)
    assert [rule.id for rule in loader.site_rules(str(folder)).rules] == [
        f"site-rule-{n}" for n in range(7)
    ]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
@pytest.mark.parametrize("bad", [(1, 4), (2, 5), (3,)])
def test_the_first_bad_file_in_folder_order_is_the_one_reported(tmp_path, shared_load, bad):
    folder = tmp_path / "site"
    for number in range(6):
        text = rule_text(
            rule_id=f"site-rule-{number}", specifier=">>0.5" if number in bad else ">=0.5"
        )
        write_rules(folder, text, name=f"r{number}.yaml")
    with pytest.raises(TopoctlError) as caught:
        loader.site_rules(str(folder))
    assert caught.value.message.startswith(str(folder / f"r{bad[0]}.yaml"))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_child_that_fails_leaves_its_share_to_the_parent(tmp_path, shared_load, monkeypatch):
    import pickle

    folder = tmp_path / "site"
    for number in range(5):
        write_rules(folder, rule_text(rule_id=f"site-rule-{number}"), name=f"r{number}.yaml")
    parent = os.getpid()
    real_dumps = pickle.dumps

    def dumps(value, *args, **kwargs):
        if os.getpid() != parent:
            raise MemoryError("the child cannot hand its share back")
        return real_dumps(value, *args, **kwargs)

    monkeypatch.setattr(pickle, "dumps", dumps)
    assert _plain(loader.site_rules(str(folder)).rules) == _one_by_one(folder, monkeypatch)
