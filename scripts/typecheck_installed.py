#!/usr/bin/env python3
"""mypy over the package laid out as it is installed, so that imports between its folders are typed.

setup.cfg installs autoconf/, rules/, probe/ and fixtures/ as topoctl.autoconf, topoctl.rules, topoctl.probe
and topoctl.systems (package_dir). mypy run on the checkout cannot map those names back to the folders, so
with ignore_missing_imports it reads every `from topoctl.autoconf... import` (and .rules, .probe) as Any:
`search()`, `evaluate()` and every call between those packages went unchecked. This script builds the
installed layout out of symbolic links in a temporary folder (topoctl/ with autoconf, rules, probe and
systems inside it), runs mypy there with the repository's setup.cfg, and prints the errors with the
checkout's paths. `.ci/run` runs it after `mypy`; exit status is mypy's.

    python scripts/typecheck_installed.py
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# installed name under topoctl/ -> folder of the checkout (setup.cfg [options] package_dir)
INSIDE = {"autoconf": "autoconf", "rules": "rules", "probe": "probe", "systems": "fixtures"}


def layout(folder: str) -> str:
    """The installed tree under `folder`: topoctl/ mirrored file by file, the other packages linked in."""
    package = os.path.join(folder, "topoctl")
    shutil.copytree(os.path.join(ROOT, "topoctl"), package, copy_function=os.symlink,
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name, source in INSIDE.items():
        os.symlink(os.path.join(ROOT, source), os.path.join(package, name))
    return package


def checkout_path(line: str) -> str:
    """An error line with the checkout's path of its file (topoctl/autoconf/x.py -> autoconf/x.py)."""
    for name, source in INSIDE.items():
        prefix = f"topoctl/{name}/"
        if line.startswith(prefix):
            return source + "/" + line[len(prefix):]
    return line


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="topoctl-typecheck-") as folder:
        layout(folder)
        done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", os.path.join(ROOT, "setup.cfg"),
                               "--cache-dir", os.path.join(folder, ".mypy_cache"), "topoctl"],
                              cwd=folder, capture_output=True, text=True, check=False)
    for line in done.stdout.splitlines():
        print(checkout_path(line))
    sys.stderr.write(done.stderr)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
