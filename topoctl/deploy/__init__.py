"""Deployment reading: where launches live and what they hand the engine. Files and folders become Found
launches (sources and one module per file kind: dockerfile, skypilot, helm; shell scripts through shell);
a launch's argv is read as SGLang's argparse reads it (sglang_launch), through the wrappers and launchers
that start it (launchers) and what each launcher hands SGLang per release (launcher_args).

Layer: deployment reading (docs/architecture.md, "Layers").
"""
