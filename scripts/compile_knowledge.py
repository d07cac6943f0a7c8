"""Build the shipped knowledge sections: topoctl/data/compiled/<section>.json.

Runs the commands that read topoctl's built-in knowledge (recommend, check, show, rules) in-process
with the user cache off, records every section they build (rules, settings, SGLang spelling, model
profiles, costs, GPU data), and writes each with the SHA-256 of its source files
(topoctl/core/knowledge_cache.py). A run with an empty user cache then reads these instead of
parsing YAML. After changing any knowledge file:

    python scripts/compile_knowledge.py           # rewrite topoctl/data/compiled/
    python scripts/compile_knowledge.py --check   # exit 1 when they are stale (tests/core/test_cache.py)
"""

from __future__ import annotations

import contextlib
import io
import os
import sys


def record() -> dict[str, str]:
    os.environ["TOPOCTL_NO_CACHE"] = "1"
    from topoctl.cli.app import main
    from topoctl.core import knowledge_cache as cache

    cache._recording = {}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for argv in (
            [
                "recommend",
                "--system",
                "rtx-pro-6000-8x-pcie",
                "--model",
                "kimi-k2.5",
                "--speculative",
                "eagle3",
                "--draft-model",
                "/models/eagle3",
                "--format",
                "json",
            ],
            [
                "recommend",
                "--system",
                "rtx-pro-6000-8x-pcie",
                "--model",
                "kimi-k2.5",
                "--sglang-version",
                "0.5.23",
                "--format",
                "json",
            ],  # reads the PCIe IPC record (autoconf/pcie_ipc.py)
            ["check", "--system", "rtx-pro-6000-8x-pcie", "--", "--tp-size", "8"],
            ["show", "--system", "h200-2x-nvswitch-vm"],
            ["rules", "list"],
        ):
            main(argv)
        from topoctl.core import gpus

        gpus.models()
    recorded = cache._recording
    cache._recording = None
    return {
        section: cache.shipped_text(sources, data)
        for section, (sources, data) in sorted(recorded.items())
        if not section.startswith("site-")
    }


def check_rule_files() -> None:
    """The built-in rule files against the rule schema (the loader trusts their structure at run
    time)."""
    from topoctl.core.safe_read import load_yaml
    from topoctl.rules.engine.loader import builtin_rule_files, validate_against_schema

    for path in builtin_rule_files():
        with open(path, encoding="utf-8") as handle:
            validate_against_schema(path, load_yaml(handle.read(), path))


def main(argv: list[str]) -> int:
    from topoctl.core.errors import TopoctlError
    from topoctl.core.knowledge_cache import SHIPPED_DIR

    try:
        check_rule_files()
    except TopoctlError as error:
        print(f"{error.message}\n  hint: {error.hint}", file=sys.stderr)
        return 2
    wanted = record()
    if "--check" in argv:
        present = (
            sorted(name[:-5] for name in os.listdir(SHIPPED_DIR))
            if os.path.isdir(SHIPPED_DIR)
            else []
        )
        stale = sorted(set(present) ^ set(wanted))
        for section, text in wanted.items():
            path = os.path.join(SHIPPED_DIR, f"{section}.json")
            if not os.path.isfile(path) or open(path, encoding="utf-8").read() != text:
                stale.append(section)
        if stale:
            print(
                f"stale shipped knowledge: {', '.join(sorted(set(stale)))}; run python "
                "scripts/compile_knowledge.py"
            )
            return 1
        return 0
    from topoctl.core.io import write_atomic

    os.makedirs(SHIPPED_DIR, exist_ok=True)
    for name in os.listdir(SHIPPED_DIR):
        if name.endswith(".json") and name[:-5] not in wanted:
            os.unlink(os.path.join(SHIPPED_DIR, name))
    for section, text in wanted.items():
        write_atomic(os.path.join(SHIPPED_DIR, f"{section}.json"), text)
        print(f"{section}: {len(text)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
