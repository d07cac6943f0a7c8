"""What people and schedulers read: the topology picture, plots, the HTML report, NFD feature
labels.

Layer: judge (docs/architecture.md, "Layers"), beside check/ and independent of it.
"""
