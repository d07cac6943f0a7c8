"""recommend and check agree: check of recommend's own launch.env has no block and no warning, for
every built-in system x built-in model x known SGLang version x speculative on/off. A combination
recommend refuses must be refused for a reason (exit 1: the model does not fit, or every launch is
blocked), never another error.

Everything is loaded once (rules, flag data, profiles, snapshots) and shared by every combination.
"""

from __future__ import annotations

import pytest

from topoctl.autoconf import models
from topoctl.autoconf.launch_text import render
from topoctl.autoconf.search import Request, search, target_gpu_count
from topoctl.check.judge import judge
from topoctl.cli.commands.recommend import flag_set_for
from topoctl.core.errors import TopoctlError
from topoctl.deploy import sglang_launch as launch_mod
from topoctl.rules.engine import load_rules
from topoctl.rules.sglang.flags import known_versions
from topoctl.snapshot.catalogue import list_systems, system_snapshot

RULES = load_rules()
MODELS = {name: models.profile(name) for name in sorted(models.builtin_models())}
VERSIONS = known_versions()
FLAGS = {version: flag_set_for(version) for version in VERSIONS}


def _grid_for(system: str, tmp_path) -> tuple[int, list[str], list[str]]:
    snapshot = system_snapshot(system)
    gpus = target_gpu_count(snapshot)
    checked, problems, refused = 0, [], []
    path = tmp_path / "launch.env"
    for name, model in MODELS.items():
        for version in VERSIONS:
            flags = FLAGS[version]
            for spec in (None, "eagle3"):
                label = f"{system} {name} {version} speculative={spec or 'off'}"
                try:
                    result = search(
                        snapshot,
                        model,
                        flags,
                        version,
                        ruleset=RULES,
                        request=Request(spec, "/models/draft" if spec else None),
                    )
                except TopoctlError as error:
                    if error.exit_code == 1 and (
                        "does not fit" in error.message
                        or "no launch passes the rules" in error.message
                    ):
                        refused.append(label)
                        continue
                    problems.append(f"{label}: recommend failed: {error.message}")
                    continue
                path.write_text(render(result, "env"), encoding="utf-8")
                parsed = launch_mod.parse_env_file(
                    str(path), lambda metadata, lines=None, flags=flags: flags
                )
                outcome = judge(parsed, snapshot, flags, RULES, gpus, model=model)
                bad = [
                    f"{item.severity} {item.id}: {item.message}"
                    for item in outcome.items
                    if item.severity in ("block", "warn")
                ]
                if bad:
                    problems.append(f"{label}: " + "; ".join(bad))
                checked += 1
    return checked, problems, refused


@pytest.mark.parametrize("system", list_systems())
def test_check_passes_what_recommend_writes_over_the_whole_grid(system, tmp_path):
    checked, problems, refused = _grid_for(system, tmp_path)
    assert problems == []
    assert checked > 0  # at least one built-in model loads on every built-in system
    assert checked + len(refused) == len(MODELS) * len(VERSIONS) * 2
