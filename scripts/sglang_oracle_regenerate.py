#!/usr/bin/env python3
"""Regenerate SGLang's own verdicts on the launch grid from the release wheels
(scripts/sglang_oracle/)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sglang_oracle.regenerate import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
