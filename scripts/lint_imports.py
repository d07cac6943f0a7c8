"""Run import-linter (the contracts in .importlinter) over the package as it installs.

The package's source folders are not laid out as its modules (setup.cfg maps probe/ to topoctl.probe, rules/
to topoctl.rules, ...), and import-linter reads modules from the folder of the installed package, which an
editable install leaves without those subpackages. So this script lays out the modules as a wheel would,
as links to the source files, in a temporary folder, and runs `lint-imports` on that layout.

    python scripts/lint_imports.py          # exit 0 when every contract is kept (.ci/run)
"""
from __future__ import annotations

import configparser
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def package_folders(setup_cfg: str) -> dict[str, str]:
    """Each package setup.cfg installs -> its source folder (package_dir applied, longest prefix first)."""
    config = configparser.ConfigParser()
    config.read(setup_cfg)
    mapping = dict(line.split("=", 1) for line in config["options"]["package_dir"].strip().splitlines())
    mapping = {name.strip(): folder.strip() for name, folder in mapping.items()}
    out = {}
    for package in config["options"]["packages"].split():
        parts = package.split(".")
        for cut in range(len(parts), 0, -1):
            prefix = ".".join(parts[:cut])
            if prefix in mapping:
                out[package] = os.path.join(ROOT, mapping[prefix], *parts[cut:])
                break
    return out


def lay_out(target: str) -> None:
    """Links to every .py file of every package, at the path its module has once installed."""
    for package, folder in package_folders(os.path.join(ROOT, "setup.cfg")).items():
        place = os.path.join(target, *package.split("."))
        os.makedirs(place, exist_ok=True)
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                os.symlink(os.path.join(folder, name), os.path.join(place, name))


def main(argv: list[str]) -> int:
    lint = os.path.join(os.path.dirname(sys.executable), "lint-imports")
    with tempfile.TemporaryDirectory(prefix="topoctl-layout-") as layout:
        lay_out(layout)
        env = dict(os.environ, PYTHONPATH=layout + os.pathsep + os.environ.get("PYTHONPATH", ""))
        return subprocess.run([lint, "--no-cache", "--no-logo", "--config", os.path.join(ROOT, ".importlinter"), *argv],
                              cwd=layout, env=env).returncode  # not ROOT: its topoctl/ would be found first


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
