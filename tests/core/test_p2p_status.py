"""One meaning of "P2P read and write OK" everywhere (topoctl/core/p2p.py): NVML's `U` is an unknown
like "unknown", never a working P2P and never a lost one. Checked on a copy of the real 2x H200
snapshot whose first pair's read status is unknown, through the summary, the snapshot loader,
`show`, the rules' facts and `check --expect`."""

from __future__ import annotations

import copy
import json
import os

import pytest
from conftest import FIXTURES

from topoctl.cli.app import main
from topoctl.core.p2p import (
    P2P_CAPABILITIES,
    P2P_CODES,
    P2P_STATUSES,
    UNKNOWN_P2P_STATUSES,
    pair_p2p_ok,
)

SYSTEM = "h200-2x-nvswitch-vm"
# Custom allreduce off: with a pair's P2P unknown the rules block it (an unknown P2P is not a
# working P2P), so this launch isolates what drift alone says.
LAUNCH = [
    "--",
    "python",
    "-m",
    "sglang.launch_server",
    "--model-path",
    "M",
    "--tp",
    "2",
    "--disable-custom-all-reduce",
]


def h200_2x() -> dict:
    with open(os.path.join(FIXTURES, SYSTEM, "snapshot.json"), encoding="utf-8") as handle:
        return json.load(handle)


def with_read(status: str) -> dict:
    snapshot = copy.deepcopy(h200_2x())
    snapshot["pairs"][0]["p2p"]["read"] = status
    return snapshot


def write(tmp_path, name: str, snapshot: dict) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(snapshot))
    return str(path)


# -- the one definition
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "read,write_,expected",
    [
        ("OK", "OK", True),
        ("OK", "NS", False),
        ("CNS", "OK", False),
        ("GNS", "GNS", False),
        ("TNS", "OK", False),
        ("DR", "OK", False),
        ("unknown", "OK", None),
        ("U", "OK", None),
        ("OK", "U", None),
        ("U", "unknown", None),
        ("U", "NS", False),
        ("unknown", "CNS", False),  # a known failure decides, whatever the other says
        (None, "OK", None),
        (7, "OK", None),  # missing or not a string: nothing was read
    ],
)
def test_pair_p2p_ok(read, write_, expected):
    assert (
        pair_p2p_ok({"read": read, "write": write_, "nvlink": "OK", "atomics": "OK", "pci": "OK"})
        is expected
    )


def test_pair_p2p_ok_without_a_mapping_is_unknown():
    assert pair_p2p_ok(None) is None and pair_p2p_ok({}) is None and pair_p2p_ok("OK") is None


def test_the_vocabulary():
    assert P2P_CODES == {"OK", "CNS", "GNS", "TNS", "DR", "NS", "U"}
    assert P2P_STATUSES == P2P_CODES | {"unknown"}
    assert UNKNOWN_P2P_STATUSES == {"unknown", "U"}
    assert P2P_CAPABILITIES == ("read", "write", "nvlink", "atomics", "pci")


def test_every_layer_uses_the_one_vocabulary():
    """The probe's NVML tables, the nvidia-smi parser and the snapshot loader hold the same objects."""
    import topoctl.core.p2p as p2p
    import topoctl.snapshot.document as snapshot
    from topoctl.probe import collect, nvidia_smi, nvml

    assert nvml.P2P_CAPS is p2p.P2P_CAPABILITY_INDEX and nvml.P2P_STATUS is p2p.P2P_STATUS_BY_CODE
    assert nvidia_smi.P2P_CODES is p2p.P2P_CODES
    schema = snapshot.schema()
    assert set(schema["$defs"]["p2p_status"]["enum"]) == set(p2p.P2P_STATUSES)
    assert schema["$defs"]["pair"]["properties"]["p2p"]["required"] == list(p2p.P2P_CAPABILITIES)
    assert (
        collect.SCHEMA_VERSION is snapshot.SCHEMA_VERSION and collect.MAX_GPUS is snapshot.MAX_GPUS
    )


# -- the 2x H200 snapshot with one unknown read status
# ----------------------------------------------------
@pytest.mark.parametrize("status", ["unknown", "U"])
def test_summary_says_all_pairs_p2p_null(status, tmp_path):
    from topoctl.probe.topology import summarize
    from topoctl.snapshot.document import load_snapshot

    snapshot = with_read(status)
    summary = summarize(snapshot)
    assert (
        summary["all_pairs_p2p"] is None
        and summary["p2p_pairs_ok"] == 1
        and summary["p2p_pairs_total"] == 2
    )
    loaded = load_snapshot(
        write(tmp_path, "now.json", snapshot)
    )  # the loader reconciles the summary
    assert loaded["summary"]["all_pairs_p2p"] is None and loaded["summary"]["p2p_pairs_ok"] == 1


@pytest.mark.parametrize("status", ["unknown", "U"])
def test_show_marks_the_pair_unknown(status, tmp_path, capsys):
    assert main(["show", "--topology", write(tmp_path, "now.json", with_read(status))]) == 0
    out = capsys.readouterr().out
    rows = {
        line.split()[0]: line for line in out.splitlines() if line.startswith("GPU") and "X" in line
    }
    assert "NV18?" in rows["GPU0"] and "NV18+" in rows["GPU1"], out
    assert "NV18-" not in out
    assert "P2P read+write OK on 1/2 ordered pairs" in out


def test_show_marks_a_failing_pair_not_ok(tmp_path, capsys):
    assert main(["show", "--topology", write(tmp_path, "now.json", with_read("NS"))]) == 0
    assert "NV18-" in capsys.readouterr().out


@pytest.mark.parametrize("status", ["unknown", "U"])
def test_rules_see_an_unknown_pair(status):
    from topoctl.rules.engine.facts import UNKNOWN, _pair_facts

    _, facts = _pair_facts(with_read(status)["pairs"][0])
    assert facts["pair.p2p.read"] is UNKNOWN and facts["pair.p2p_ok"] is UNKNOWN
    _, facts = _pair_facts(with_read("NS")["pairs"][0])
    assert facts["pair.p2p_ok"] is False
    _, facts = _pair_facts(h200_2x()["pairs"][0])
    assert facts["pair.p2p_ok"] is True


def _drift_ids(tmp_path, capsys, now: dict, *extra: str) -> tuple[int, dict[str, str]]:
    expect = write(tmp_path, "expect.json", h200_2x())
    code = main(
        [
            "check",
            "--topology",
            write(tmp_path, "now.json", now),
            "--expect",
            expect,
            "--format",
            "json",
            *extra,
            *LAUNCH,
        ]
    )
    out = capsys.readouterr().out
    findings = [f for result in json.loads(out)["results"] for f in result["findings"]]
    return code, {f["id"]: f["severity"] for f in findings if f["id"].startswith("drift-")}


@pytest.mark.parametrize("status", ["unknown", "U"])
def test_check_expect_warns_that_p2p_is_not_verifiable(status, tmp_path, capsys):
    """An unknown status is not "P2P lost": check warns (probe again) and does not block the deploy."""
    code, drift = _drift_ids(tmp_path, capsys, with_read(status))
    assert drift == {"drift-p2p-unknown": "warn"}, drift  # and no drift-p2p-lost
    assert code == 0
    code, _ = _drift_ids(tmp_path, capsys, with_read(status), "--fail-on", "warn")
    assert code == 1


def test_check_expect_blocks_when_p2p_is_lost(tmp_path, capsys):
    code, drift = _drift_ids(tmp_path, capsys, with_read("NS"))
    assert drift.get("drift-p2p-lost") == "block" and "drift-p2p-unknown" not in drift
    assert code == 1


def test_check_expect_is_quiet_when_nothing_changed(tmp_path, capsys):
    code, drift = _drift_ids(tmp_path, capsys, h200_2x())
    assert drift == {} and code == 0


def test_drift_names_the_pairs():
    from topoctl.check.judge_drift import drift

    items = {item.id: item for item in drift(h200_2x(), with_read("U"))}
    assert set(items) == {"drift-p2p-unknown"}
    assert (
        "0->1" in items["drift-p2p-unknown"].message
        and "unknown" in items["drift-p2p-unknown"].message
    )
    lost = with_read("NS")
    lost["pairs"][1]["p2p"]["write"] = "unknown"
    items = {item.id: item for item in drift(h200_2x(), lost)}
    assert items["drift-p2p-lost"].severity == "block" and "0->1" in items["drift-p2p-lost"].message
    assert (
        items["drift-p2p-unknown"].severity == "warn"
        and "1->0" in items["drift-p2p-unknown"].message
    )


@pytest.mark.parametrize(
    "verdicts, expected",
    [
        ([], None),
        ([True], True),
        ([True, None], None),
        ([None, False], False),
        ([True, True], True),
    ],
)
def test_all_pairs_p2p_is_a_three_valued_and(verdicts, expected):
    from topoctl.core.p2p import all_pairs_p2p

    assert all_pairs_p2p(verdicts) is expected
