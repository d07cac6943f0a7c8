"""What topoctl knows about SGLang, in one package: the real server flag set of each release (flags,
generated/sglang-<version>.json extracted from wheels), how each launch setting is written per
release (spelling, data/spelling.yaml), the logical settings the rules talk about and their defaults
(settings, data/settings.yaml), the dependency pins of each release (releases, data/releases.json),
and Dynamo's option data (generated/dynamo-<version>.json). Reading launches is topoctl/deploy/'s
job.

Layer: knowledge (docs/architecture.md, "Layers").
"""
