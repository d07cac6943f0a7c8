"""The golden cases: for every reference system, the commands whose output must not change by
accident.

Each case is one `topoctl` command line; its exit code, stdout and stderr are compared byte for byte
with tests/golden/<system>/<case>.txt. The systems come from the code (fixture folders with a
capture, the built-in systems), the SGLang versions from `known_versions()`, so a new system or
release is covered without editing this file. When a change is meant to alter an output, regenerate
and review the diff:

    .venv/bin/python -m pytest -q tests/test_golden.py --update-golden
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
GOLDEN = os.path.join(TESTS, "golden")
FIXTURES = os.path.join(ROOT, "fixtures")

EAGLE = ["--speculative", "eagle3", "--draft-model", "/models/eagle3"]


@dataclass(frozen=True)
class Case:
    system: str
    name: str
    argv: tuple[str, ...]
    # launch.env written first (by running this recommend argv) into the working folder as
    # `launch.env`
    env_from: tuple[str, ...] = field(default=())

    @property
    def path(self) -> str:
        return os.path.join(GOLDEN, self.system, self.name + ".txt")


def capture_systems() -> list[str]:
    return sorted(
        name
        for name in os.listdir(FIXTURES)
        if os.path.isfile(os.path.join(FIXTURES, name, "capture.json"))
    )


def cases() -> list[Case]:
    """Every reference system's cases, then `rules list` and `rules explain` of every built-in rule
    (_rules)."""
    from topoctl.rules.sglang.flags import known_versions
    from topoctl.snapshot.catalogue import list_systems

    out: list[Case] = []
    for name in capture_systems():
        capture = f"fixtures/{name}"
        out.append(Case(name, "probe-yaml", ("probe", "--from-capture", capture)))
        out.append(
            Case(name, "probe-json", ("probe", "--format", "json", "--from-capture", capture))
        )
    for name in list_systems():
        target = ("--system", name)
        plain = ("recommend", *target)
        from model_helpers import fitting_model

        fitting = fitting_model(name)  # a model that loads there (tests/model_helpers.py)
        eagle = ("recommend", *target, "--model", fitting, *EAGLE)
        out += [
            Case(name, "show", ("show", *target)),
            Case(name, "recommend-env", plain),
            Case(name, "recommend-json", (*plain, "--format", "json")),
            Case(name, "recommend-eagle3-env", eagle),
            Case(name, "recommend-eagle3-json", (*eagle, "--format", "json")),
            Case(
                name,
                "recommend-deepseek-args-explain",
                (*plain, "--model", "deepseek-v3", "--format", "args", "--explain"),
            ),
            Case(
                name,
                "recommend-llama-yaml",
                (*plain, "--model", "llama-3.1-70b", "--format", "yaml"),
            ),
            # one GPU of the machine: CUDA_VISIBLE_DEVICES (placement) in the args' env prefix where
            # it has more
            Case(name, "recommend-tp1-args", (*plain, "--tp-size", "1", "--format", "args")),
            Case(name, "check-recommended-env", ("check", "launch.env", *target), env_from=plain),
            Case(
                name,
                "check-recommended-env-json",
                ("check", "launch.env", *target, "--format", "json"),
                env_from=plain,
            ),
            Case(
                name,
                "check-recommended-eagle3",
                ("check", "launch.env", *target, "--model", fitting),
                env_from=eagle,
            ),
        ]
        for version in known_versions():
            out.append(
                Case(
                    name,
                    f"recommend-sglang-{version}-args",
                    (
                        *plain,
                        "--model",
                        "kimi-k2.5",
                        "--sglang-version",
                        version,
                        "--format",
                        "args",
                    ),
                )
            )
    out.append(Case("_rules", "list", ("rules", "list")))
    from topoctl.rules.engine import load_rules

    for rule in load_rules().rules:
        out.append(Case("_rules", f"explain-{rule.id}", ("rules", "explain", rule.id)))
    return out


def render(argv: tuple[str, ...], code: int, out: str, err: str) -> str:
    """The case's text, with this checkout's location written as <checkout> (rule sources name their
    file), so the golden files hold in any clone; an unpacked sdist, whose topoctl/rules is a copy
    of rules/ rather than the clone's link to it, names the rules' folder the clone's way."""
    text = f"$ topoctl {' '.join(argv)}\nexit {code}\n--- stdout\n{out}--- stderr\n{err}"
    text = text.replace(
        os.path.join(ROOT, "topoctl", "rules") + os.sep, os.path.join(ROOT, "rules") + os.sep
    )
    return text.replace(ROOT + os.sep, "<checkout>/")
