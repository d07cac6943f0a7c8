"""`topoctl fleet` names every node it expects (topoctl/check/fleet_nodes.py): a node with no
snapshot of this run, missing or left over from an earlier run, is an odd node with the reason,
never "alike"."""

from __future__ import annotations

import json
import os
import time

import pytest

from topoctl.check.fleet_nodes import expand_nodelist, parse_since, parse_window
from topoctl.core.errors import TopoctlError
from topoctl.core.serialize import to_yaml
from topoctl.snapshot.catalogue import system_snapshot


@pytest.fixture(autouse=True)
def _no_slurm(monkeypatch):
    monkeypatch.delenv("SLURM_JOB_NODELIST", raising=False)


def write_nodes(folder, names, age_s: dict[str, float] | None = None) -> None:
    base = system_snapshot("h100-8x-8nic-ib")
    now = time.time()
    for name in names:
        path = folder / f"{name}.yaml"
        path.write_text(to_yaml(base))
        if age_s and name in age_s:
            os.utime(path, (now - age_s[name], now - age_s[name]))


# ------------------------------------------------------------------------------------------ Slurm's
# hostlist


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("node[01-04,07]", ["node01", "node02", "node03", "node04", "node07"]),
        ("gpu[8-10]", ["gpu8", "gpu9", "gpu10"]),
        ("a1,b[1-2]-ib,login", ["a1", "b1-ib", "b2-ib", "login"]),
        ("rack[1-2]-n[01-02]", ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"]),
        ("n1,n1", ["n1"]),
    ],
)
def test_slurm_nodelist_expansion(text, names):
    assert expand_nodelist(text) == names


@pytest.mark.parametrize("text", ["node[01-04", "node01]", "node[a-b]", "node[5-3]"])
def test_a_malformed_nodelist_is_a_usage_error(text):
    with pytest.raises(TopoctlError):
        expand_nodelist(text)


def test_times_and_windows():
    assert parse_since("@100") == 100.0
    assert parse_since("1970-01-01T00:01:40Z") == 100.0 == parse_since("1970-01-01T00:01:40")
    assert parse_window("15m") == 900 and parse_window("2h") == 7200 and parse_window("90") == 90
    with pytest.raises(TopoctlError):
        parse_window("soon")


# -------------------------------------------------------------------------------------------------
# fleet


def test_a_missing_node_is_odd_with_its_reason(cli, tmp_path):
    write_nodes(tmp_path, ["gpu01", "gpu02", "gpu04"])
    code, out, _ = cli(["fleet", str(tmp_path), "--nodes", "gpu[01-04]"])
    assert code == 1
    assert out.startswith(
        "4 nodes expected: 3 alike, 0 differ from the majority, 1 without a snapshot of this run"
    )
    assert "gpu03: no snapshot (expected from --nodes): its probe failed or never ran" in out


def test_the_probe_error_the_recipe_kept_is_the_reason(cli, tmp_path):
    write_nodes(tmp_path, ["gpu01", "gpu02"])
    (tmp_path / "gpu03.failed").write_text("topoctl: error: NVML: driver not loaded\n")
    code, out, _ = cli(["fleet", str(tmp_path), "--nodes", "gpu01,gpu02,gpu03"])
    assert code == 1 and "its probe failed (" in out and "NVML: driver not loaded" in out


def test_a_stale_node_is_odd(cli, tmp_path):
    write_nodes(tmp_path, ["gpu01", "gpu02", "gpu03"], age_s={"gpu02": 3 * 86400})
    code, out, _ = cli(["fleet", str(tmp_path), "--nodes", "gpu[01-03]"])
    assert code == 1 and "gpu02: stale: its snapshot" in out and "before this run began" in out
    code, out, _ = cli(["fleet", str(tmp_path), "--nodes", "gpu[01-03]", "--window", "4d"])
    assert code == 0 and out.startswith("3 nodes: 3 alike")


def test_since_makes_every_older_file_stale(cli, tmp_path):
    write_nodes(tmp_path, ["gpu01", "gpu02"], age_s={"gpu01": 600, "gpu02": 60})
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 300))
    code, out, _ = cli(["fleet", str(tmp_path), "--since", since, "--format", "json"])
    doc = json.loads(out)
    assert (
        code == 1
        and list(doc["absent"]) == ["gpu01"]
        and [n["name"] for n in doc["nodes"]] == ["gpu02"]
    )


def test_the_slurm_job_nodelist_is_the_default(cli, tmp_path, monkeypatch):
    write_nodes(tmp_path, ["gpu01", "gpu02", "other"])
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu[01-03]")
    code, out, _ = cli(["fleet", str(tmp_path)])
    assert code == 1 and "gpu03: no snapshot (expected from SLURM_JOB_NODELIST)" in out
    assert "not expected, left out: other" in out


def test_every_expected_node_present_and_fresh_is_alike(cli, tmp_path):
    write_nodes(tmp_path, ["gpu01", "gpu02"])
    code, out, _ = cli(["fleet", str(tmp_path), "--nodes", "gpu[01-02]"])
    assert code == 0 and out.startswith("2 nodes: 2 alike, 0 differ from the majority")


def test_no_snapshot_at_all_names_every_node(cli, tmp_path):
    code, out, _ = cli(["fleet", str(tmp_path), "--nodes", "gpu[01-02]", "--format", "json"])
    assert code == 1 and sorted(json.loads(out)["absent"]) == ["gpu01", "gpu02"]


def test_without_expected_nodes_archived_snapshots_are_compared_as_before(cli, tmp_path):
    write_nodes(tmp_path, ["gpu01", "gpu02"], age_s={"gpu01": 30 * 86400})
    code, out, _ = cli(["fleet", str(tmp_path)])
    assert code == 0 and out.startswith("2 nodes: 2 alike")
