"""Launch auto-configuration: model profiles, candidate search, ranking by evidence, renderers, and the
launch parser behind `topoctl check`.

Reads only a Snapshot and the rules' findings; never imports NVML or torch.
"""
