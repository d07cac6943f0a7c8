"""`python -m topoctl` is the same as the `topoctl` console script.

Layer: commands and CLI (docs/architecture.md, "Layers").
"""

import sys

from topoctl.entry import main

if __name__ == "__main__":
    sys.exit(main())
