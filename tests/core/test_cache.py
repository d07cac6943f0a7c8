"""The knowledge cache (topoctl/core/knowledge_cache.py): a warm start gives exactly what a cold
parse gives, and never a stale, half-written or corrupt file's content."""

from __future__ import annotations

import glob
import json
import os
import stat

import pytest

from topoctl.autoconf import data_files
from topoctl.core import knowledge_cache as cache
from topoctl.rules.engine import loader
from topoctl.rules.sglang import flags, spelling
from topoctl.rules.sglang import settings as rule_settings
from topoctl.rules.sglang import settings as sglang_settings


def _clear() -> None:
    loader.builtin_rules.cache_clear()
    rule_settings.setting_table.cache_clear()
    data_files.load.cache_clear()
    flags._index.cache_clear()
    flags._load_doc.cache_clear()
    spelling.table.cache_clear()


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.delenv("TOPOCTL_NO_CACHE", raising=False)
    monkeypatch.setattr(
        cache, "SHIPPED_DIR", str(tmp_path / "no-shipped-sections")
    )  # the user cache alone
    _clear()
    yield home / "topoctl"
    _clear()


def _plain_rules() -> list[dict]:
    return [loader._rule_to_plain(rule) for rule in loader.builtin_rules()]


def _snapshot_of_knowledge() -> dict:
    """Everything the cache serves, as plain data, read fresh (per-process memos cleared)."""
    _clear()
    return {
        "rules": _plain_rules(),
        "settings": rule_settings.setting_table(),
        "models": data_files.load("models.yaml"),
        "costs": data_files.load("costs.yaml"),
        "sglang_spelling": spelling.table(),
    }


def _cold_parse() -> dict:
    """The same knowledge straight from the YAML files, without the cache."""
    files = loader.builtin_rule_files()
    here = os.path.dirname(data_files.__file__)
    return {
        "rules": [loader._rule_to_plain(rule) for rule in loader._parse_builtin(files)],
        "settings": sglang_settings._read_table(sglang_settings.SETTINGS_FILE),
        "models": data_files.read_yaml(os.path.join(here, "data", "models.yaml")),
        "costs": data_files.read_yaml(os.path.join(here, "data", "costs.yaml")),
        "sglang_spelling": data_files.read_yaml(
            os.path.join(os.path.dirname(spelling.__file__), "data", "spelling.yaml")
        ),
    }


def test_warm_cache_gives_what_a_cold_parse_gives(cache_home):
    cold = _cold_parse()
    first = _snapshot_of_knowledge()  # writes the cache
    assert sorted(
        os.path.basename(p).split("-0")[0] for p in glob.glob(str(cache_home / "*.json"))
    ) == ["autoconf-costs", "autoconf-models", "rule-settings", "rules", "sglang-spelling"]
    warm = _snapshot_of_knowledge()  # reads it
    assert first == cold
    assert warm == cold
    # Rules rebuilt from the cache behave like freshly parsed ones (same compiled conditions'
    # answers).
    from topoctl.rules.engine import evaluate
    from topoctl.snapshot.catalogue import system_snapshot

    snapshot = system_snapshot("rtx-pro-6000-8x-pcie")
    request = {
        "model": None,
        "speculative": None,
        "tp_size": 8,
        "ep_size": 1,
        "sglang_version": "0.5.12",
        "launch": {"torch_symm_mem": True, "custom_all_reduce": True},
    }
    from topoctl.rules.engine.model import RuleSet

    fresh = RuleSet(loader._parse_builtin(loader.builtin_rule_files()))
    assert (
        evaluate(RuleSet(list(loader.builtin_rules())), snapshot, request).to_dict()
        == evaluate(fresh, snapshot, request).to_dict()
    )


def test_flag_data_is_the_shipped_file(cache_home):
    for version in flags.known_versions():
        with open(flags._index()[version], encoding="utf-8") as handle:
            shipped = json.load(handle)
        flag_set = flags.load_flag_set(version)
        assert flag_set.flags == shipped["flags"]
        assert flag_set.has("--tp-size") and flag_set.resolve("--tp-size").kind == "exact"
        options = {o for f, info in shipped["flags"].items() for o in info.get("options") or [f]}
        assert flag_set.all_options() == sorted(options | {"-h", "--help"})


def test_edited_data_file_invalidates_the_cache(cache_home, tmp_path, monkeypatch):
    # A copy of the models file stands in for an edited data file of an editable install.
    original = os.path.join(os.path.dirname(data_files.__file__), "data", "models.yaml")
    folder = tmp_path / "pkg" / "data"
    folder.mkdir(parents=True)
    copy = folder / "models.yaml"
    copy.write_text(open(original, encoding="utf-8").read(), encoding="utf-8")
    monkeypatch.setattr(cache, "package_dir", lambda package: str(tmp_path / "pkg"))
    before = data_files.load("models.yaml")
    data_files.load.cache_clear()
    assert data_files.load("models.yaml") == before  # served from the cache
    text = copy.read_text(encoding="utf-8").replace(
        "models:\n", "models:\n  edited-model: {layers: 3, hidden_size: 64}\n", 1
    )
    copy.write_text(text, encoding="utf-8")
    os.utime(copy, ns=(os.stat(copy).st_atime_ns, os.stat(copy).st_mtime_ns + 1_000_000_000))
    data_files.load.cache_clear()
    assert "edited-model" in data_files.load("models.yaml")["models"]
    assert "edited-model" not in before["models"]


def test_corrupt_cache_file_is_ignored_and_rewritten(cache_home):
    expected = _snapshot_of_knowledge()
    files = sorted(glob.glob(str(cache_home / "*.json")))
    assert files
    for number, path in enumerate(files):
        with open(path, "wb") as handle:
            handle.write(
                [b"", b"{not json", b"\xff\xfe", b'{"fingerprint": 1, "data": 2}', b"[1, 2]"][
                    number % 5
                ]
            )
    assert _snapshot_of_knowledge() == expected
    for (
        path
    ) in files:  # rewritten whole: a header line with the fingerprint and digest, then the data
        header, data = _parts(path)
        assert "fingerprint" in header and len(header["hmac"]) == 64 and data is not None
    assert _snapshot_of_knowledge() == expected


def _parts(path):
    with open(path, "rb") as handle:
        header, _, body = handle.read().partition(b"\n")
    return json.loads(header), json.loads(body)


def _rules_file(cache_home):
    (path,) = glob.glob(str(cache_home / "rules-*.json"))
    return path


def _rewrite(path, header, data, fix_digest):
    """Rewrite a cache file's data; `fix_digest`: with every checksum an attacker without the
    install's key can compute (a SHA-256 of the data, and an HMAC under a guessed key)."""
    import hashlib
    import hmac

    body = json.dumps(data, separators=(",", ":")).encode()
    if fix_digest:
        stamp = json.dumps(header["fingerprint"], separators=(",", ":")).encode()
        header = dict(
            header,
            sha256=hashlib.sha256(body).hexdigest(),
            hmac=hmac.new(b"\0" * cache.KEY_BYTES, stamp + b"\n" + body, "sha256").hexdigest(),
        )
    with open(path, "wb") as handle:
        handle.write(json.dumps(header).encode() + b"\n" + body)


@pytest.mark.parametrize("fix_digest", [False, True], ids=["digest-left", "digest-recomputed"])
@pytest.mark.parametrize(
    "tamper", ["drop-a-block-rule", "empty", "weaken-a-block-rule", "add-a-rule"]
)
def test_tampered_rules_are_ignored_and_rebuilt(cache_home, tamper, fix_digest):
    """A cached rules section that lost a rule (a warm `check` would pass what a cold one blocks),
    or whose content was edited, is not served: the HMAC under the install's key (issue: a
    recomputed unkeyed SHA-256 once turned a block into info) or the check against the shipped rule
    files catches it."""
    expected = _snapshot_of_knowledge()
    path = _rules_file(cache_home)
    header, rules = _parts(path)
    on_disk = [
        dict(rule) for rule in rules
    ]  # as stored: each built-in rule's file relative to the package
    assert all(not os.path.isabs(rule["source_file"]) for rule in on_disk)
    block = next(index for index, rule in enumerate(rules) if rule["severity"] == "block")
    if tamper == "drop-a-block-rule":
        del rules[block]
    elif tamper == "empty":
        rules = []
    elif tamper == "weaken-a-block-rule":
        rules[block]["severity"] = "info"
    else:
        rules.append(dict(rules[0], id="smuggled-in"))
    _rewrite(path, header, rules, fix_digest)
    got = _snapshot_of_knowledge()
    assert got == expected
    assert _parts(path)[1] == on_disk  # rebuilt on disk too


def test_cache_folder_is_private_and_files_are_whole(cache_home):
    _snapshot_of_knowledge()
    assert stat.S_IMODE(os.stat(cache_home).st_mode) == 0o700
    key = cache_home / cache.KEY_FILE
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600 and len(key.read_bytes()) == cache.KEY_BYTES
    assert not [name for name in os.listdir(cache_home) if name.startswith(".tmp-")]


@pytest.mark.parametrize("spoil", ["readable-by-others", "short", "a-folder"])
def test_a_key_others_could_read_or_a_bad_key_is_replaced(cache_home, spoil):
    """A key file another user could read (or write) is no key: a new one is made and every section
    rebuilt."""
    import shutil

    expected = _snapshot_of_knowledge()
    key = cache_home / cache.KEY_FILE
    old = key.read_bytes()
    if spoil == "readable-by-others":
        key.chmod(0o644)
    elif spoil == "short":
        key.write_bytes(b"x")
    else:
        key.unlink()
        key.mkdir()
    cache._keys.clear()
    if spoil == "a-folder":
        shutil.rmtree(
            key
        )  # a folder cannot be replaced by a rename: the key is made anew once it is gone
    assert _snapshot_of_knowledge() == expected
    assert key.read_bytes() != old and stat.S_IMODE(os.stat(key).st_mode) == 0o600


def test_unwritable_cache_folder_still_works(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.delenv("TOPOCTL_NO_CACHE", raising=False)
    _clear()
    try:
        assert _snapshot_of_knowledge() == _cold_parse()
    finally:
        _clear()


def test_no_cache_switch(cache_home, monkeypatch):
    monkeypatch.setenv("TOPOCTL_NO_CACHE", "1")
    assert cache.cache_dir() is None
    assert _snapshot_of_knowledge() == _cold_parse()
    assert not cache_home.exists()


def test_data_that_json_would_change_is_not_cached(cache_home):
    built = cache.cached("odd", [], lambda: {1: ("a", "b")})
    assert built == {1: ("a", "b")}
    assert not glob.glob(str(cache_home / "odd-*"))
    assert cache.cached("plain", [], lambda: {"a": [1, 2.5, None, True]}) == {
        "a": [1, 2.5, None, True]
    }
    assert cache.cached("plain", [], lambda: pytest.fail("should come from the cache")) == {
        "a": [1, 2.5, None, True]
    }


def test_a_bad_builtin_file_is_an_error_and_nothing_is_stored(cache_home, tmp_path, monkeypatch):
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules: [ {id: x\n")
    monkeypatch.setattr(loader, "builtin_rule_files", lambda: [str(bad)])
    with pytest.raises(loader.RuleFileError):
        loader.builtin_rules()
    assert not glob.glob(str(cache_home / "rules-*"))


def test_site_rules_are_checked_once_per_content(cache_home, tmp_path, monkeypatch):
    """A site rule file is schema-checked the first time its content is seen, then read from the
    cache; an edit (new content) is checked again, and a broken edit is reported, never served from
    the old entry."""
    from rules_helpers import rule_text, write_rules

    from topoctl.core.errors import TopoctlError
    from topoctl.rules.engine import load_rules

    folder = tmp_path / "site"
    write_rules(folder, rule_text())
    first = [rule.id for rule in load_rules(extra_dirs=[str(folder)]).rules]
    calls = []
    real = loader.validate_against_schema
    monkeypatch.setattr(loader, "validate_against_schema", lambda *a: calls.append(a) or real(*a))
    assert [rule.id for rule in load_rules(extra_dirs=[str(folder)]).rules] == first and calls == []
    write_rules(folder, rule_text(rule_id="site-renamed"))
    assert (
        "site-renamed" in [rule.id for rule in load_rules(extra_dirs=[str(folder)]).rules]
        and len(calls) == 1
    )
    write_rules(folder, rule_text(specifier=">>0.5"))
    with pytest.raises(TopoctlError, match="invalid PEP 440"):
        load_rules(extra_dirs=[str(folder)])


def test_shipped_knowledge_is_fresh():
    """topoctl/data/compiled/ was built from the knowledge files as they are now
    (scripts/compile_knowledge.py)."""
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run(
        [sys.executable, os.path.join(root, "scripts", "compile_knowledge.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_cold_run_reads_the_shipped_knowledge_without_yaml(tmp_path):
    """An empty user cache (a fresh CI job) takes the shipped sections: no YAML parser is imported."""
    import subprocess
    import sys

    code = (
        "import sys; from topoctl.cli.app import main; main(['recommend', '--system', "
        "'rtx-pro-6000-8x-pcie', '--model', 'kimi-k2.5', '--format', 'args']); print('yaml' in "
        "sys.modules)"
    )
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "empty"))
    env.pop("TOPOCTL_NO_CACHE", None)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout
    assert out.splitlines()[-1] == "False", out


def test_a_shipped_section_of_other_sources_is_not_used(cache_home, monkeypatch, tmp_path):
    """A shipped section whose sources differ (an edited knowledge file) is ignored: the data is
    built."""
    monkeypatch.setattr(cache, "SHIPPED_DIR", str(tmp_path))
    (tmp_path / "rules.json").write_text(
        cache.shipped_text([__file__], [{"id": "not-from-these-files"}])
    )
    assert "not-from-these-files" not in [rule["id"] for rule in _snapshot_of_knowledge()["rules"]]


@pytest.mark.parametrize("data", [b"", b"abc", bytes(range(256)) * 300])
def test_the_built_in_sha256_gives_hashlib_s_digest(data):
    """cache.sha256 (the interpreter's own SHA-256, to keep OpenSSL off a warm start) is SHA-256."""
    import hashlib

    assert cache.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()


def test_a_run_served_by_the_shipped_sections_loads_no_openssl(tmp_path):
    """No user cache file to check (the shipped sections serve every section): neither hmac nor
    hashlib's OpenSSL module is imported."""
    import subprocess
    import sys

    code = (
        "import sys; from topoctl.cli.app import main; main(['check', '--system', "
        "'h200-4x-nvswitch-vm', '--', 'python', '-m', 'sglang.launch_server', '--model-path', "
        "'M', '--tp', '4']); print(sorted({'hmac', '_hashlib'} & set(sys.modules)))"
    )
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "empty"))
    env.pop("TOPOCTL_NO_CACHE", None)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env
    ).stdout
    assert out.splitlines()[-1] == "[]", out


def test_a_shipped_section_s_check_reads_the_bytes_that_were_hashed(tmp_path, monkeypatch):
    """The rules section's check (every rule id of the shipped files) reads the bytes content_stamp
    hashed instead of reading each rule file again, and nothing of them is kept after the call."""
    from topoctl.core import safe_read as limits

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty"))
    monkeypatch.delenv("TOPOCTL_NO_CACHE", raising=False)
    files = loader.builtin_rule_files()
    reads: list[str] = []
    real = limits.read_file
    monkeypatch.setattr(
        limits, "read_file", lambda path, *a, **k: reads.append(path) or real(path, *a, **k)
    )
    loader.builtin_rules.cache_clear()
    try:
        assert len(loader.builtin_rules()) == len(
            set(
                loader.rule_ids(
                    "".join(limits.read_text(path, limits.MAX_DATA_FILE_BYTES) for path in files)
                )
            )
        )
    finally:
        loader.builtin_rules.cache_clear()
    assert all(reads.count(path) == 2 for path in files), {
        path: reads.count(path) for path in files
    }  # + the test's
    assert cache._hashed == {}
