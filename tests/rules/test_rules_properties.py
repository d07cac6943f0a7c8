"""Properties of the engine over generated snapshots (hypothesis):

1. it never crashes, whatever shape a snapshot has;
2. a block rule never silently passes because a fact became unknown: knocking facts out of a
   snapshot (null, as the probe writes them) can turn a fired block into "unknown", never into no
   finding;
3. every block rule whose condition is undecided is in the report with status "unknown".
"""

from __future__ import annotations

from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rules_helpers import (
    h200_8x_nvswitch,
    knock_out,
    make_snapshot,
    rtx_4090_2x_no_p2p,
    rtx_pro_6000_8x_pcie,
)

from topoctl.rules.engine import evaluate, evaluate_rule, load_rules, violations

RULES = load_rules()
BLOCK_RULES = [rule for rule in RULES.rules if rule.severity == "block"]

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-5, 200)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(
        ["OK", "NS", "unknown", "U", "pcie", "nvswitch", "0.5.12", "12.0", "9.0", "Tree", "", "x.y"]
    )
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "sm",
                    "compute_capability",
                    "p2p",
                    "read",
                    "write",
                    "link",
                    "src",
                    "dst",
                    "present",
                    "interconnect",
                    "sglang",
                    "index",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)
snapshots = st.fixed_dictionaries(
    {},
    optional={
        key: json_values
        for key in ("gpus", "pairs", "summary", "nvlink", "software", "host", "pcie")
    },
)
requests = st.fixed_dictionaries(
    {},
    optional={
        "model": st.none()
        | st.fixed_dictionaries({}, optional={"name": json_scalars, "moe": json_scalars}),
        "speculative": json_scalars,
        "tp_size": json_scalars,
        "ep_size": json_scalars,
        "sglang_version": json_scalars,
        "launch": st.dictionaries(
            st.sampled_from(
                [
                    "custom_all_reduce",
                    "torch_symm_mem",
                    "env:NCCL_ALGO",
                    "tp_size",
                    "pcie_ipc_allreduce",
                    "speculative_num_steps",
                ]
            ),
            json_scalars,
            max_size=4,
        ),
    },
)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshot=snapshots, request=requests)
def test_engine_never_crashes_on_any_shape(snapshot, request):
    report = evaluate(RULES, snapshot, request)
    for finding in report.findings:
        assert finding.status in ("fired", "unknown")
        assert finding.status == "fired" or finding.severity == "block"
    violations(report, request.get("launch") or {})


KNOCKABLE = [
    "summary.interconnect",
    "summary.gpu_count",
    "gpus.*.sm",
    "gpus.*.compute_capability",
    "gpus.0.sm",
    "nvlink.present",
    "nvlink.nvswitch",
    "software.sglang",
    "software.nccl",
    "pairs.*.p2p.read",
    "pairs.*.p2p.write",
    "pairs.0.p2p.read",
    "pairs.*.link",
    "pairs.*.pcie_ancestor",
    "pairs.*.nvlinks",
    "summary.virtualized",
    "host.virtualized",
    "summary.nvlink_all_pairs",
    "summary.all_pairs_p2p",
    "summary.numa_nodes_spanned",
    "pairs",
    "gpus",
]
# pair.torch_can_access_peer is left out on purpose: null is its normal state (only measured with
# --with-torch).
BASES = {
    "rtx-pro-6000 0.5.12": (
        rtx_pro_6000_8x_pcie(),
        {"tp_size": 8, "model": {"name": "gpt-oss-120b", "moe": True}},
    ),
    "rtx-pro-6000 0.5.5": (
        rtx_pro_6000_8x_pcie(sglang="0.5.5"),
        {"tp_size": 8, "model": {"name": "gpt-oss-120b"}},
    ),
    "h200": (h200_8x_nvswitch(), {"tp_size": 8}),
    "4090 no p2p": (rtx_4090_2x_no_p2p(), {"tp_size": 2}),
    "l40s 2 numa": (
        make_snapshot(sm=89, count=4, link="SYS", p2p="CNS", numa_nodes_spanned=2),
        {"tp_size": 4},
    ),
}


@settings(max_examples=examples(200), deadline=None)
@given(
    base=st.sampled_from(sorted(BASES)),
    knocked=st.lists(st.sampled_from(KNOCKABLE), max_size=6, unique=True),
)
def test_unknown_facts_never_let_a_block_rule_pass(base, knocked):
    snapshot, request = BASES[base]
    full = {
        finding.rule_id
        for finding in evaluate(RULES, snapshot, request).findings
        if finding.severity == "block"
    }
    partial = evaluate(RULES, knock_out(snapshot, knocked), request)
    status = {
        finding.rule_id: finding.status
        for finding in partial.findings
        if finding.severity == "block"
    }
    for rule_id in full:
        assert rule_id in status, (
            f"{rule_id} fired on the full snapshot but vanished with {knocked} unknown"
        )
    for rule in BLOCK_RULES:
        answer, unknown = evaluate_rule(rule, knock_out(snapshot, knocked), request)
        if answer is None:
            assert status.get(rule.id) == "unknown" and unknown, rule.id
        elif answer is True:
            assert status.get(rule.id) == "fired", rule.id
        else:
            assert rule.id not in status, rule.id


def test_the_knockouts_do_reach_unknown():
    # Guard against a vacuous property: knocking out the SGLang version must make the symm-mem block
    # undecided.
    snapshot, request = BASES["rtx-pro-6000 0.5.12"]
    report = evaluate(RULES, knock_out(snapshot, ["software.sglang"]), request)
    assert {f.rule_id: f.status for f in report.findings}[
        "torch-symm-mem-sm12x-keyerror"
    ] == "unknown"
