#!/usr/bin/env python3
"""Hold topoctl check's verdicts to SGLang's own outcomes on the committed launch grid
(scripts/sglang_oracle/)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sglang_oracle.compare import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
