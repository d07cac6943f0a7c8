#!/usr/bin/env python3
"""Hold topoctl's SGLang flag data to SGLang's own argparse parser (see
scripts/sglang_flags/check.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sglang_flags.check import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
