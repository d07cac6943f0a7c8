#!/usr/bin/env python3
"""Extract which SM architectures each kernel op of SGLang's pinned kernel wheels exists for.

    python scripts/extract_kernel_matrix.py --download            # all releases with flag data
    python scripts/extract_kernel_matrix.py --check               # recompute from the wheel cache, diff
    python scripts/extract_kernel_matrix.py --releases 0.5.23 --download --delete-after

Binary facts come from the .nv_fatbin sections of each shared object
(scripts/kernel_matrix/fatbin.py) and the ELF headers of standalone cubins; FlashInfer's JIT paths
from `supported_major_versions=` in its source. See docs/kernel-matrix.md. Writes
rules/sglang/generated/kernel-matrix.json.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernel_matrix.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
