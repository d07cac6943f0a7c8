"""Multi-node launches are judged per node (topoctl/check/resolve_nodes.py), against the target as
one node's."""

from __future__ import annotations

import json

H100 = ["--system", "h100-8x-nvswitch", "--sglang-version", "0.5.21", "--format", "json"]
CMD = ["--", "python3", "-m", "sglang.launch_server", "--model-path", "m"]


def ids(out: str) -> dict[str, str]:
    (result,) = json.loads(out)["results"]
    return {item["id"]: item["severity"] for item in result["findings"]}


def test_tp16_over_two_nodes_places_eight_ranks_per_node(cli):
    code, out, _ = cli(
        [
            "check",
            *H100,
            *CMD,
            "--tp",
            "16",
            "--nnodes",
            "2",
            "--node-rank",
            "0",
            "--dist-init-addr",
            "10.0.0.1:5000",
        ]
    )
    assert code == 0 and ids(out) == {"topoctl-nodes": "info"}
    assert "TP 16 places 8 ranks on each node" in out


def test_tp16_on_one_node_still_blocks(cli):
    code, out, _ = cli(["check", *H100, *CMD, "--tp", "16"])
    assert code == 1 and ids(out)["topoctl-tp-exceeds-gpus"] == "block"


def test_too_many_ranks_per_node_blocks_and_says_why(cli):
    code, out, _ = cli(["check", *H100, *CMD, "--tp", "32", "--nnodes", "2"])
    assert code == 1 and "places 16 ranks on each node, more than the 8 GPUs" in out


def test_an_unknown_node_count_is_a_note_naming_the_assumption_never_a_block(cli):
    code, out, _ = cli(["check", *H100, *CMD, "--tp", "16", "--nnodes", "$NNODES"])
    assert code == 0, out
    assert "--nnodes $NNODES: not known from the file; assumed 2 node(s) of 8 GPUs" in out


def test_srun_gives_the_count_of_an_nnodes_written_elsewhere(cli, tmp_path):
    path = tmp_path / "job.sh"
    path.write_text(
        "#!/bin/bash\n#SBATCH -N 2\nsrun -N 2 --ntasks-per-node=1 python3 -m sglang.launch_server "
        "--model-path m --tp 16 --nnodes $SLURM_NNODES --node-rank $SLURM_NODEID\n"
    )
    code, out, _ = cli(["check", str(path), *H100])
    assert code == 0, out
    found = ids(out)
    assert found == {"topoctl-nodes": "info", "sglang-scheduler-value": "info"}
    assert "taken as 2, the nodes srun -N 2" in out


def test_a_leader_worker_set_group_is_its_size_in_nodes(cli, tmp_path):
    path = tmp_path / "lws.yaml"
    path.write_text("""apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: ds}
spec:
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      spec:
        containers:
          - name: leader
            image: lmsysorg/sglang:v0.5.21-cu129
            command: [python3, -m, sglang.launch_server, --model-path, m, --tp, "16",
                      --dist-init-addr, "$(LWS_LEADER_ADDRESS):20000", --nnodes, "$(LWS_GROUP_SIZE)",
                      --node-rank, "$(LWS_WORKER_INDEX)"]
            resources: {limits: {nvidia.com/gpu: "8"}}
""")
    code, out, _ = cli(["check", str(path), *H100])
    assert code == 0, out
    assert ids(out) == {"topoctl-nodes": "info", "sglang-scheduler-value": "info"}
    path.write_text(path.read_text().replace('nvidia.com/gpu: "8"', 'nvidia.com/gpu: "4"'))
    code, out, _ = cli(["check", str(path), *H100])
    assert code == 1 and "over 2 nodes places 8 ranks on each node; it needs 8 GPUs" in out


# SGLang's own multi-node checks (rules/knowledge/sglang_nodes.yaml): check_server_args asserts them
# before any process starts (server_args.py:3686/3697 in 0.5.5, arg_groups/validation_hook.py:179/199
# in 0.5.23).
NODES_RULE, DP_RULE = "sglang-nnodes-divide-tp-pp", "sglang-dp-replicas-across-nodes"


def _check(cli, *args: str, version: str = "0.5.21") -> tuple[int, dict[str, str], str]:
    options = ["--system", "h100-8x-nvswitch", "--sglang-version", version, "--format", "json"]
    code, out, _ = cli(["check", *options, *CMD, *args])
    return code, ids(out), out


def test_tp8_over_three_nodes_is_refused_by_sglang(cli):
    code, found, out = _check(cli, "--tp", "8", "--nnodes", "3", "--dist-init-addr", "h:5000")
    assert code == 1 and found[NODES_RULE] == "block"
    assert "tp_size must be divisible by number of nodes" in out and "--nnodes" in out


def test_nnodes_without_tp_is_refused_since_sglang_runs_tp_1(cli):
    code, found, _ = _check(cli, "--nnodes", "2", "--dist-init-addr", "h:5000", version="0.5.5")
    assert code == 1 and found[NODES_RULE] == "block"


def test_pipeline_stages_count_in_the_product(cli):
    _, found, _ = _check(cli, "--tp", "8", "--pp-size", "3", "--nnodes", "3")
    assert NODES_RULE not in found
    _, found, _ = _check(cli, "--tp", "8", "--pp-size", "2", "--nnodes", "3")
    assert found[NODES_RULE] == "block"


def test_a_tp_size_left_to_run_time_or_an_assumed_node_count_never_blocks(cli):
    _, found, _ = _check(cli, "--tp", "$TP", "--nnodes", "2")
    assert NODES_RULE not in found
    _, found, _ = _check(cli, "--tp", "12", "--nnodes", "$NNODES")
    assert NODES_RULE not in found


def test_an_elastic_ep_scale_joiner_skips_the_assertion_from_0_5_16(cli):
    joiner = ("--tp", "8", "--nnodes", "3", "--node-rank", "1", "--elastic-ep-join-mode", "scale")
    _, found, _ = _check(cli, *joiner, version="0.5.21")
    assert NODES_RULE not in found
    _, found, _ = _check(cli, "--tp", "8", "--nnodes", "3", version="0.5.15")
    assert found[NODES_RULE] == "block"


def test_srun_gives_the_node_count_the_assertion_reads(cli, tmp_path):
    path = tmp_path / "job.sh"
    path.write_text(
        "#!/bin/bash\nsrun -N 3 --ntasks-per-node=1 python3 -m sglang.launch_server "
        "--model-path m --tp 8 --nnodes $SLURM_NNODES --node-rank $SLURM_NODEID "
        "--dist-init-addr h:5000\n"
    )
    code, out, _ = cli(["check", str(path), *H100])
    assert code == 1 and ids(out)[NODES_RULE] == "block"


def test_dp_replicas_over_two_nodes_are_refused_without_dp_attention(cli):
    code, found, out = _check(cli, "--tp", "8", "--dp-size", "2", "--nnodes", "2")
    assert code == 1 and found[DP_RULE] == "block" and "--dp-size" in out
    _, found, _ = _check(cli, "--tp", "8", "--dp-size", "2")
    assert DP_RULE not in found


def test_dp_attention_over_two_nodes_runs(cli):
    dp_attention = ("--tp", "16", "--dp-size", "16", "--enable-dp-attention", "--nnodes", "2")
    for version in ("0.5.5", "0.5.21", "0.5.23"):
        _, found, _ = _check(cli, *dp_attention, version=version)
        assert DP_RULE not in found and NODES_RULE not in found, version


def test_replicas_beside_attention_dp_over_nodes_are_refused_from_0_5_22(cli):
    launch = ("--tp", "16", "--attn-dp-size", "8", "--dp-size", "2", "--nnodes", "2")
    _, found, _ = _check(cli, *launch, "--enable-dp-attention", version="0.5.23")
    assert found[DP_RULE] == "block"


def test_custom_allreduce_v2_asked_over_nodes_is_a_warning_where_sglang_turns_it_off(cli):
    launch = ("--tp", "16", "--nnodes", "2", "--dist-init-addr", "h:5000")
    code, out, _ = cli(
        ["check", "--system", "h100-8x-nvswitch", "--sglang-version", "0.5.14", "--format", "json"]
        + ["--", "env", "SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2=1", *CMD[1:], *launch]
    )
    assert code == 0 and ids(out)["sglang-custom-allreduce-v2-off-across-nodes"] == "warn"
    code, out, _ = cli(
        ["check", "--system", "h100-8x-nvswitch", "--sglang-version", "0.5.17", "--format", "json"]
        + ["--", "env", "SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2=1", *CMD[1:], *launch]
    )
    assert "sglang-custom-allreduce-v2-off-across-nodes" not in ids(out)
