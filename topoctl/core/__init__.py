"""The core every layer stands on: errors and exit codes, atomic writes (io), bounded reading of
files and text (safe_read), the knowledge cache, PEP 440 versions, shared vocabularies, P2P
verdicts, the GPU table.

Layer: core types and data (docs/architecture.md, "Layers").
"""
