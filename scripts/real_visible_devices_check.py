"""Hold topoctl's reading of CUDA_VISIBLE_DEVICES against what the CUDA runtime does, on a real GPU machine.

Usage (on the machine, from the repository root, with topoctl installed: `pip install -e .`):
    python3 scripts/real_visible_devices_check.py OUT_DIR "description of the machine"
scripts/real_hardware_check.sh runs it into its capture folder.

For each CUDA_VISIBLE_DEVICES value of a fixed list (integer ids, UUIDs and UUID prefixes built from this
machine's GPUs, invalid entries, repeats, an empty value), under both CUDA_DEVICE_ORDER settings, it runs
two things with that environment and compares them:

- `topoctl probe`: the snapshot's `cuda_visible_devices` record (probe/visible.py, read by
  topoctl/snapshot/cuda_devices.py resolve_visible), i.e. which of the machine's GPUs topoctl says a CUDA program sees,
  in order, or that it cannot say;
- an independent CUDA program: a fresh Python process that asks torch for its device count and each device's
  UUID (torch.cuda.get_device_properties(i).uuid), which is the CUDA runtime's own answer.

A case agrees when topoctl names the same GPUs in the same order as CUDA enumerates them, or says it cannot
know (then CUDA's answer is recorded as the measurement that could settle it). A case where topoctl names
GPUs that CUDA does not show is a disagreement: exit 1.

Writes OUT_DIR/visible-devices.json (every case: value, order, topoctl's answer, CUDA's answer, verdict) and
prints a table. Read-only on the GPUs: it starts CUDA contexts and queries properties, nothing else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any

CUDA_PROGRAM = (
    "import json, torch\nn = torch.cuda.device_count()\nprint(json.dumps(['GPU-' + "
    "str(torch.cuda.get_device_properties(i).uuid) for i in range(n)]))\n"
)
SAFE_ENV = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}


def machine_uuids() -> list[str]:
    """The GPUs' UUIDs in nvidia-smi's (PCI bus) order, from nvidia-smi itself (not from topoctl)."""
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line.strip() for line in out.splitlines() if line.strip()]


def software() -> dict[str, str]:
    """The driver and CUDA runtime the answers were measured with: CUDA's reading of the variable is
    theirs."""
    driver = (
        subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=False,
        )
        .stdout.strip()
        .splitlines()
    )
    runtime = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.__version__, torch.version.cuda)"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    return {
        "driver": driver[0] if driver else "",
        "torch": runtime[0] if runtime else "",
        "cuda_runtime": runtime[1] if len(runtime) > 1 else "",
    }


def values_for(uuids: list[str]) -> list[tuple[str, str]]:
    """(CUDA_VISIBLE_DEVICES value, what it exercises) for this machine."""
    count = len(uuids)
    first = uuids[0]
    bare = first[len("GPU-") :] if first.upper().startswith("GPU-") else first
    cases = [
        ("0", "first device by integer id"),
        ("", "empty value"),
        (str(count), "an id past the last device"),
        (f"0,{count}", "a valid id, then one past the last"),
        ("-1", "a negative id"),
        ("0,-1,0", "the CUDA guide's ending entry between two ids"),
        ("abc,0", "a word first"),
        (" 0 ", "spaces around an id"),
        ("0,0", "the same id twice"),
        (first, "a full GPU UUID"),
        (first[:12], "a GPU UUID prefix (GPU- and 8 hex digits)"),
        (bare, "a UUID without its GPU- prefix"),
        (f"{first},0", "one GPU by UUID, then by id"),
        ("GPU-ffffffff-ffff", "a UUID prefix no GPU has"),
        ("MIG-ffffffff-ffff-ffff-ffff-ffffffffffff", "a MIG instance this machine does not have"),
    ]
    if count > 1:
        cases += [
            ("1,0", "two ids in reverse order"),
            (f"{uuids[1]},{first}", "two UUIDs in reverse order"),
        ]
    return cases


def cuda_answer(env: dict[str, str]) -> dict[str, Any]:
    """What a fresh CUDA program sees under env: its devices' UUIDs in its order, or its error."""
    done = subprocess.run(
        [sys.executable, "-c", CUDA_PROGRAM], env=env, capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["exit %d" % done.returncode])[-1]}
    return {"uuids": json.loads(done.stdout.strip().splitlines()[-1])}


def topoctl_answer(env: dict[str, str], workdir: str) -> dict[str, Any]:
    """The probe's record under env: the UUIDs of the GPUs it says CUDA sees, in order, or why it
    cannot say."""
    path = os.path.join(workdir, "snapshot.json")
    done = subprocess.run(
        [sys.executable, "-m", "topoctl", "probe", "--format", "json", "-o", path],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        return {"error": done.stderr.strip()[-400:], "exit": done.returncode}
    with open(path, encoding="utf-8") as handle:
        snapshot = json.load(handle)
    record = snapshot.get("cuda_visible_devices")
    by_index = {gpu["index"]: gpu.get("uuid") for gpu in snapshot.get("gpus", [])}
    if record is None:
        return {"record": None}
    if record.get("unknown"):
        return {"unknown": record["unknown"], "count": len(record.get("cuda_devices") or [])}
    devices = record.get("cuda_devices") or []
    return {
        "uuids": [by_index.get(device.get("gpu")) for device in devices],
        "ended_at": record.get("ended_at"),
    }


def verdict(ours: dict[str, Any], cuda: dict[str, Any]) -> str:
    if "error" in ours:
        return "topoctl failed"
    if "unknown" in ours:
        return "topoctl: unknown"
    seen = cuda.get("uuids")
    if seen is None:  # CUDA failed to start: it sees no device
        seen = []
    return (
        "agree"
        if [str(u).lower() for u in ours.get("uuids", [])] == [u.lower() for u in seen]
        else "DISAGREE"
    )


def run_cases(out_dir: str, description: str) -> list[dict[str, Any]]:
    uuids = machine_uuids()
    results = []
    with tempfile.TemporaryDirectory() as workdir:
        for order in ("PCI_BUS_ID", "FASTEST_FIRST"):
            for value, what in values_for(uuids):
                env = {
                    **os.environ,
                    **SAFE_ENV,
                    "CUDA_VISIBLE_DEVICES": value,
                    "CUDA_DEVICE_ORDER": order,
                }
                ours, cuda = topoctl_answer(env, workdir), cuda_answer(env)
                results.append(
                    {
                        "value": value,
                        "what": what,
                        "order": order,
                        "topoctl": ours,
                        "cuda": cuda,
                        "verdict": verdict(ours, cuda),
                    }
                )
    document = {"machine": description, "software": software(), "gpus": uuids, "cases": results}
    with open(os.path.join(out_dir, "visible-devices.json"), "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=1)
        handle.write("\n")
    return results


def show(results: list[dict[str, Any]]) -> None:
    print("| CUDA_VISIBLE_DEVICES | order | what | topoctl | CUDA sees | verdict |")
    print("|---|---|---|---|---|---|")
    for case in results:
        ours = case["topoctl"]
        ours_text = (
            "unknown"
            if "unknown" in ours
            else "error"
            if "error" in ours
            else f"{len(ours.get('uuids', []))} GPU(s)"
        )
        cuda = case["cuda"]
        cuda_text = (
            f"{len(cuda['uuids'])} GPU(s)" if "uuids" in cuda else f"error: {cuda['error'][:60]}"
        )
        print(
            f"| {case['value']!r} | {case['order']} | {case['what']} | {ours_text} | {cuda_text} | "
            f"{case['verdict']} |"
        )


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = argv[0]
    os.makedirs(out_dir, exist_ok=True)
    results = run_cases(out_dir, argv[1] if len(argv) > 1 else "real machine")
    show(results)
    bad = [case for case in results if case["verdict"] in ("DISAGREE", "topoctl failed")]
    print(
        f"{len(results)} cases, {sum(c['verdict'] == 'agree' for c in results)} agree, "
        f"{sum(c['verdict'] == 'topoctl: unknown' for c in results)} unknown to topoctl, "
        f"{len(bad)} wrong or failed"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
