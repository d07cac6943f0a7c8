"""Small, explicit snapshots and rule files for the rules tests (no GPU, no fixtures needed).

Each builder returns a complete schema-version-1 snapshot so that what a test changes is visible in
the test itself; `knock_out` turns facts into what the probe writes when it cannot read them (null).
"""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path
from typing import Any


def make_snapshot(
    sm: int = 120,
    count: int = 8,
    interconnect: str = "pcie",
    p2p: str = "OK",
    link: str = "PXB",
    nvlink: bool = False,
    nvswitch: bool | None = False,
    virtualized: bool | None = False,
    sglang: str | None = "0.5.12",
    nccl: str | None = "2.27.3",
    name: str = "NVIDIA RTX PRO 6000 Blackwell",
    numa_nodes_spanned: int = 1,
) -> dict[str, Any]:
    """A snapshot of `count` identical GPUs where every pair has the same P2P status and link."""
    capability = f"{sm // 10}.{sm % 10}"
    gpus = [
        {
            "index": index,
            "name": name,
            "uuid": f"GPU-{index:04d}",
            "pci_bus_id": f"00000000:{index + 16:02x}:00.0",
            "compute_capability": capability,
            "sm": sm,
            "architecture": None,
            "memory_total_bytes": 96 * 2**30,
            "mig_mode": "disabled",
            "virtualization_mode": "none",
            "numa_node": 0,
            "root_complex": "pci0000:00",
            "pcie_path": [],
            "pcie": {},
            "nvlink": {},
            "fabric": None,
        }
        for index in range(count)
    ]
    pairs = [
        {
            "src": src,
            "dst": dst,
            "p2p": {
                "read": p2p,
                "write": p2p,
                "nvlink": "OK" if nvlink else "NS",
                "atomics": p2p,
                "pci": p2p,
            },
            "link": link,
            "nvlinks": 18 if nvlink else 0,
            "pcie_ancestor": "SYS" if link.startswith("NV") else link,
            "torch_can_access_peer": None,
        }
        for src in range(count)
        for dst in range(count)
        if src != dst
    ]
    ok = sum(1 for pair in pairs if p2p == "OK")
    return {
        "schema_version": 1,
        "topoctl_version": "0.1.0",
        "source": {"kind": "system", "name": "test", "captured_at": None},
        "host": {
            "hostname": "test",
            "cpu_model": "AMD EPYC 9654",
            "numa_nodes": 2,
            "virtualized": virtualized,
            "hypervisor": None,
        },
        "gpus": gpus,
        "pairs": pairs,
        "nvlink": {"present": nvlink, "nvswitch": nvswitch, "switch_hidden": False},
        "pcie": {
            "virtual": virtualized,
            "root_complexes": [{"id": "pci0000:00", "numa_node": 0, "gpus": list(range(count))}],
        },
        "software": {
            "driver": "575.57.08",
            "cuda_driver": "12.9",
            "cuda_runtime": "12.9",
            "nccl": nccl,
            "torch": "2.8.0+cu129",
            "sglang": sglang,
            "sgl_kernel": None,
            "flashinfer": None,
            "vllm": None,
            "nvidia_ml_py": "12.575.51",
        },
        "summary": {
            "gpu_count": count,
            "gpu_names": [name],
            "compute_capabilities": [capability],
            "architectures": [],
            "interconnect": interconnect,
            "all_pairs_p2p": p2p == "OK" if p2p in ("OK", "NS", "CNS") else None,
            "p2p_pairs_ok": ok,
            "p2p_pairs_total": len(pairs),
            "nvlink_all_pairs": nvlink,
            "numa_nodes_spanned": numa_nodes_spanned,
            "root_complex_groups": [list(range(count))],
            "downtrained_gpus": [],
            "virtualized": virtualized,
        },
        "unknown": {},
    }


def rtx_pro_6000_8x_pcie(**overrides: Any) -> dict[str, Any]:
    """The field report's machine: 8x SM120 over PCIe Gen5, every pair P2P OK, no NVLink."""
    return make_snapshot(**overrides)


def h200_8x_nvswitch(**overrides: Any) -> dict[str, Any]:
    settings = dict(
        sm=90, interconnect="nvswitch", link="NV18", nvlink=True, nvswitch=True, name="NVIDIA H200"
    )
    settings.update(overrides)
    return make_snapshot(**settings)


def rtx_4090_2x_no_p2p(**overrides: Any) -> dict[str, Any]:
    settings = dict(
        sm=89, count=2, p2p="NS", link="PHB", name="NVIDIA GeForce RTX 4090", sglang="0.5.5"
    )
    settings.update(overrides)
    return make_snapshot(**settings)


def knock_out(snapshot: dict[str, Any], paths: list[str]) -> dict[str, Any]:
    """A copy of `snapshot` with each dotted path ("summary.interconnect", "gpus.*.sm",
    "pairs.*.p2p.read") set to null, the way the probe records a value it could not read."""
    result = copy.deepcopy(snapshot)
    for path in paths:
        _null(result, path.split("."))
    return result


def _null(node: Any, parts: list[str]) -> None:
    if not isinstance(node, (dict, list)):
        return
    head, rest = parts[0], parts[1:]
    children = node if head == "*" and isinstance(node, list) else None
    if children is not None:
        for child in children:
            if rest:
                _null(child, rest)
        return
    key: Any = int(head) if isinstance(node, list) else head
    if isinstance(node, list) and not (0 <= key < len(node)):
        return
    if isinstance(node, dict) and key not in node:
        return
    if rest:
        _null(node[key], rest)
    else:
        node[key] = None


VALID_RULE = """\
rules:
  - id: {rule_id}
    title: A site rule for tests
    severity: {severity}
    when:
      all:
        - {{fact: gpu.sm_majors, any_in: [12]}}
        - {{fact: software.sglang, version: "{specifier}"}}
    effect:
      forbid:
        - {{setting: torch_symm_mem, values: [true]}}
    message: Site knowledge used by the tests.
    remediation: Do not.
    evidence:
      - source: measured:site-box-1
        level: measured
        summary: Seen on our machine.
        scope: our 8x SM120 box
    tests:
      - name: fires on SM120
        expect: {expect_on_sm120}
        snapshot: {{gpus: [{{index: 0, sm: 120}}], software: {{sglang: "0.5.12"}}}}
      - name: silent on SM90
        expect: silent
        snapshot: {{gpus: [{{index: 0, sm: 90}}], software: {{sglang: "0.5.12"}}}}
"""


def rule_text(
    rule_id: str = "site-sm120-symm-mem",
    severity: str = "block",
    specifier: str = "<0.6",
    expect_on_sm120: str = "fire",
) -> str:
    """A valid site rule file (change one thing to make it invalid)."""
    return VALID_RULE.format(
        rule_id=rule_id, severity=severity, specifier=specifier, expect_on_sm120=expect_on_sm120
    )


SITE_POLICY_RULE = """schema_version: 1
rules:
  - id: {rule_id}
    title: This site serves with {what}
    severity: warn
    when: {{fact: gpu.count, ge: 1}}
    effect: {{require: {{{setting}: true}}}}
    message: the site's policy asks for {flag}
    remediation: add {flag}
    evidence:
      - {{source: "upstream:site-policy a choice of the site", level: modelled, summary: not a measurement,
         scope: every launch}}
    tests:
      - {{name: any machine, expect: fire, snapshot: {{summary: {{gpu_count: 2}}}}}}
      - {{name: no GPU, expect: silent, snapshot: {{summary: {{gpu_count: 0}}}}}}
"""


def site_policy_rule(rule_id: str, setting: str, flag: str, what: str) -> str:
    """A site rule file (a site's own policy, not shipped knowledge) requiring one on/off setting on
    every machine with a GPU: how a test makes recommend take a setting it would not choose by
    itself."""
    return SITE_POLICY_RULE.format(rule_id=rule_id, setting=setting, flag=flag, what=what)


def write_rules(folder: Path, text: str, name: str = "site.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


SITE_RULE = """schema_version: 1
rules:
  - id: site-no-eagle3-on-h200
    title: our H200 fleet does not run EAGLE-3 yet
    severity: block
    scope: our H200 machines
    when: {fact: gpu.sm, any_in: [90]}
    effect:
      forbid:
        - {setting: speculative_algorithm, values: [eagle3]}
    message: EAGLE-3 is not validated on our H200 fleet.
    remediation: Serve without speculative decoding.
    evidence:
      - {source: "measured:site", reference: fleet runbook, level: measured, summary: not validated yet, scope: our H200 fleet}
    tests:
      - {name: h200, expect: fire, snapshot: {gpus: [{index: 0, sm: 90}]}}
      - {name: l40s, expect: silent, snapshot: {gpus: [{index: 0, sm: 89}]}}
"""


def one_rule(rule_id: str) -> str:
    """A warn-level site rule on SM120 GPUs named `rule_id`, with its own fire and silent cases."""
    return (
        "schema_version: 1\n"
        "rules:\n"
        f"  - id: {rule_id}\n"
        "    title: site rule for the tests\n"
        "    severity: warn\n"
        "    scope: SM120 GPUs\n"
        "    when: {fact: gpu.sm_majors, any_in: [12]}\n"
        "    effect: {forbid: [{setting: torch_symm_mem, values: [true]}]}\n"
        "    message: site rule\n"
        "    remediation: none\n"
        "    evidence:\n"
        "      - {source: 'measured:site', reference: tests, level: measured, summary: tests, "
        "scope: tests}\n"
        "    tests:\n"
        "      - {name: fires, expect: fire, snapshot: {gpus: [{index: 0, sm: 120}]}}\n"
        "      - {name: silent, expect: silent, snapshot: {gpus: [{index: 0, sm: 90}]}}\n"
    )
