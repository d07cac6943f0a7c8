"""check of recommend's own launch.env for every TP size on every built-in system: the GPU group recommend
chooses (CUDA_VISIBLE_DEVICES) is the group check judges, so check has no block and no warning."""
from __future__ import annotations

import json

import pytest

from topoctl.cli import main
from topoctl.snapshot import list_systems, system_snapshot

SYSTEMS = [name for name in list_systems() if system_snapshot(name).get("gpus")]


@pytest.mark.parametrize("system", SYSTEMS)
def test_check_passes_recommend_for_every_tp(system, tmp_path, capsys):
    count = len(system_snapshot(system)["gpus"])
    for tp in range(1, count + 1):
        for model in ([], ["--model", "kimi-k2.5"], ["--model", "llama-3.1-70b"]):
            assert main(["recommend", "--system", system, "--tp-size", str(tp), *model]) == 0
            path = tmp_path / "launch.env"
            path.write_text(capsys.readouterr()[0])
            code = main(["check", str(path), "--system", system, "--format", "json", *model])
            doc = json.loads(capsys.readouterr()[0])
            found = [(item["id"], item["message"]) for item in doc["results"][0]["findings"]
                     if item["severity"] in ("block", "warn")]
            assert code == 0 and not found, (system, tp, model, found)
            visible = "CUDA_VISIBLE_DEVICES=" in path.read_text()
            assert visible == (tp < count), (system, tp)
