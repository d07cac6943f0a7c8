"""The launch settings are described once: what each one is (type, default) in
rules/sglang/data/settings.yaml, how it is written for SGLang (flags, env, values) in
rules/sglang/data/spelling.yaml. The two tables name the same settings."""

from __future__ import annotations

from topoctl.rules.sglang import settings as launch_settings
from topoctl.rules.sglang import spelling as written


def test_every_written_setting_is_a_rules_setting_and_every_rules_setting_is_written():
    how = written.table()["settings"]
    for name in how:
        assert launch_settings.is_known_setting(name), (
            f"{name} is written by autoconf but unknown to the rules"
        )
    for name in launch_settings.setting_table():
        assert name in how, f"{name} is a rules setting that recommend cannot write"


def test_types_and_defaults_live_only_in_the_rules_table():
    how = written.table()["settings"]
    for name, spec in how.items():
        assert "kind" not in spec and "default" not in spec and "type" not in spec, name
        assert spec.get("flags") or spec.get("enable") or spec.get("disable") or spec.get("env"), (
            name
        )


def test_autoconf_reads_types_and_defaults_from_the_rules_table():
    for name in written.specs():
        assert written.specs()[name]["kind"] == launch_settings.setting_type(name)
        assert written.default(name) == launch_settings.default_of(name)
    assert written.default("custom_all_reduce") is True
    assert written.default("env:NCCL_ALGO") is None
    assert written.default("no_such_setting") is None
