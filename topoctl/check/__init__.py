"""`topoctl check`'s pipeline, one stage a module (pipeline.py runs them in order,
cli/commands/check.py is the CLI). The launches come from topoctl/deploy/ (files and folders ->
Found: a file, a line, a launch or why none):

    resolve  resolve.py: the SGLang and ai-dynamo release that reads each launch, the model it serves;
             resolve_nodes.py: the nodes it spans, its ranks per node (SGLang's engine.py placement);
             resolve_gpus.py: the GPUs one node runs on
    parse    parse.py: a launch -> a ParsedLaunch as its release's argparse reads it (with topoctl/deploy/:
             launchers.py, launcher_args.py, sglang_launch.py); what cannot be resolved is named, never guessed
    judge    judge.py (flag problems, the rules, parallel sizes), judge_memory.py (recommend's memory fit),
             judge_drift.py (drift from the snapshot the launch was made for) -> outcome.py Outcome
    report   formats.py (text, json, junit, github), sarif.py (SARIF 2.1.0)

The versions are resolved before the parse stage reads an argv (an argv means something only for a
release); the nodes and GPU group after it. fleet_compare.py judges a fleet's snapshots against each
other (`topoctl fleet`). Nothing here imports recommend's search; each stage imports only the stages
before it (.importlinter).

Layer: judge (docs/architecture.md, "Layers").
"""
