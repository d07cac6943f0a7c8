"""The snapshot, the one format everything above the probe reads: its schema (schema/), loading and
validation (document), the typed view readers ask (view, network_view, visible_view), its JSON shape
for type checking (shape), CUDA device ordering (cuda_devices) and the built-in reference systems
(catalogue).

Layer: snapshot (docs/architecture.md, "Layers").
"""
