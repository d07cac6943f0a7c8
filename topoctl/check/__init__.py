"""`topoctl check`'s pipeline, one stage a module (pipeline.py runs them in order, commands/check.py is the CLI):

    sources  files and folders -> Found (file, line, a launch or why none): sources.py (Kubernetes manifests
             with LeaderWorkerSet, DynamoGraphDeployment, OME and KServe kinds, compose files, shell scripts,
             ConfigMaps a launch's --config names), dockerfile.py, skypilot.py, helm.py; shell scripts are read
             by topoctl/shell.py (bash's grammar, tree-sitter-bash)
    resolve  resolve.py: the SGLang and ai-dynamo release that reads each launch, the model it serves;
             resolve_nodes.py: the nodes it spans, its ranks per node (SGLang's engine.py placement);
             resolve_gpus.py: the GPUs one node runs on
    parse    parse.py: a launch -> a ParsedLaunch as its release's argparse reads it (with topoctl/sglang/:
             launchers.py, prepare.py, launch.py); what cannot be resolved is named, never guessed
    judge    judge.py (flag problems, the rules, parallel sizes), judge_memory.py (recommend's memory fit),
             judge_drift.py (drift from the snapshot the launch was made for) -> outcome.py Outcome
    report   report.py (text, json, junit, github), report_sarif.py (SARIF 2.1.0)

The versions are resolved before the parse stage reads an argv (an argv means something only for a release);
the nodes and GPU group after it. Nothing here imports recommend's search; topoctl/sglang/ imports nothing from
here; the sources stage imports no later stage (.importlinter).

The package itself imports nothing: its stages sit in two layers of docs/architecture.md ("Layers"): the sources
stage, parse and outcome.py read deployments (deployment reading); resolve, judge, report and the pipeline judge
them (judge).
"""
