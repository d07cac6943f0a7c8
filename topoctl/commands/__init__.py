"""One module per subcommand; each exposes `command`, loaded lazily by topoctl/cli.py.

Layer: commands and CLI (docs/architecture.md, "Layers").
"""
