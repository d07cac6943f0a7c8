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
