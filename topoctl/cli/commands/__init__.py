"""One module per subcommand; each exposes `command`, loaded lazily by topoctl/cli/app.py.

Layer: commands and CLI (docs/architecture.md, "Layers").
"""
