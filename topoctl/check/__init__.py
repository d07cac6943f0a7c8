"""Where `topoctl check` finds launches: the sources stage of its pipeline.

    sources  topoctl/check/ (this package): files and folders -> Found (file, line, a launch or why none):
             sources.py (Kubernetes manifests with LeaderWorkerSet, DynamoGraphDeployment, OME and KServe kinds,
             compose files, shell scripts, ConfigMaps a launch's --config names), dockerfile.py, skypilot.py,
             helm.py; shell scripts are read by topoctl/shell.py (bash's grammar, tree-sitter-bash)
    parse    topoctl/sglang/: launchers.py (wrappers and launchers -> SGLang's argv), prepare.py (what each
             launcher and version hands SGLang's parser), launch.py (argparse as SGLang's flag data says)
    resolve  topoctl/commands/check.py (the SGLang and Dynamo version of each launch), autoconf/nodes.py (the
             nodes it spans, its ranks per node)
    judge    autoconf/check.py `judge` (rules, GPU group per node, drift)
    report   autoconf/check.py formats (text, json, junit, github)

Nothing here imports recommend's search; topoctl/sglang/ imports nothing from here.

Layer: deployment reading (docs/architecture.md, "Layers").
"""
