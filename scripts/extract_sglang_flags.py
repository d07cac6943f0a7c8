#!/usr/bin/env python3
"""Extract SGLang's real server CLI flag set from its release wheels into
rules/sglang/generated/sglang-<version>.json.

    python scripts/extract_sglang_flags.py 0.5.5 0.5.12 0.5.18 0.5.23
    python scripts/extract_sglang_flags.py --wheel path/to/sglang-0.5.23-...whl   # offline, a wheel at hand

For each version the wheel is fetched with `pip download --no-deps sglang==VERSION` into a temporary
directory. SGLang is never installed or imported (its imports need torch and CUDA): the wheel is
opened as a zip archive and the Python sources are read with `ast`.

SGLang declares its server flags in two ways, and both are read:

* classic: `parser.add_argument("--flag", type=..., choices=..., help=...)` calls in
  `sglang/srt/server_args.py` (every function of that file; in practice `ServerArgs.add_cli_args`).
  All 0.5.5/0.5.12 flags, and the deprecated / dynamic-choice flags of later releases, are declared
  so.
* declarative (0.5.18 and later): `add_cli_args_from_dataclass(parser, ServerArgs)` turns annotated
  fields `name: A[T, "help"]` / `A[T, Arg(help=..., choices=..., aliases=..., action=...)]` into
  flags. The fields live on `ServerArgs` in server_args.py (0.5.18) or on the namespace classes
  listed in `_INPUT_NAMESPACES` / `collect_input_fields(...)` (0.5.23, under
  sglang/srt/arg_groups/fields/). The rules of `add_cli_args_from_dataclass`
  (Optional/Literal/list/bool handling, `no_cli`, `cli_name`) are mirrored here.

Choices that name a constant (in the same module or imported from another module of the wheel) are
resolved; anything computed at run time is kept as source text in "choices_unresolved".

The wheel is also scanned, as text, for environment variables topoctl knows about (communication
settings such as SGLANG_ENABLE_PCIE_IPC_ALLREDUCE); the hits go to the "env" section.

Output is deterministic (sorted keys, indent 1), so re-running on the same wheel gives the same
file.

The code lives in scripts/sglang_flags/ (wheel.py, evaluate.py, records.py, classic.py, fields.py,
extract.py, cli.py); its unit tests, on small synthetic wheels, are
tests/rules/test_sglang_extractor.py.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sglang_flags.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
