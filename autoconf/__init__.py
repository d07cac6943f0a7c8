"""Launch auto-configuration (`topoctl recommend`): model profiles, the candidate space, memory fit,
the launch model, ranking by evidence, placement, the search that runs them, and the launch's text.

Reads only a Snapshot and the rules' findings; never imports NVML or torch.

Layer: launch model and search (docs/architecture.md, "Layers").
"""
