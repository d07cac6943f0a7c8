"""The command line: the click group (app), one module per subcommand (commands/), and the choice of
the target machine (target_machine, the only caller of the live probe). `topoctl.cli.main(argv)` is
the entry tests and embedders call.

Layer: commands and CLI (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from topoctl.cli.app import cli, main

__all__ = ["cli", "main"]
