"""Deployment reading: where launches live and what they hand the engine. Files and folders become
Found launches (found): registry lists the launch-file kinds, how each is recognised and which
module reads it, and walks folders; one module a kind reads it (kubernetes, compose, scripts,
launch_env, dockerfile, skypilot, helm; YAML documents to their kinds in yaml_file, container words
in container, shell scripts through shell); a launch's argv is read as SGLang's argparse reads it
(sglang_launch), through the wrappers and launchers that start it (launchers) and what each launcher
hands SGLang per release (launcher_args).

Layer: deployment reading (docs/architecture.md, "Layers").
"""
