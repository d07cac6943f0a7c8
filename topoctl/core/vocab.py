"""The vocabularies every layer shares: one place for each closed set of names.

Plain data and StrEnums (the interpreter's start-up has loaded enum already, through re): safe on
the start-up path of every command. The snapshot schema
(topoctl/snapshot/schema/snapshot.schema.json) and the rule schema (rules/schema/rule.schema.json)
spell the same sets; tests/snapshot/test_snapshot_schema.py and tests/rules/test_rules_loader.py
hold them to these.

Layer: core types and data (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from enum import StrEnum

# summary.interconnect of a snapshot: how the GPUs talk to each other
INTERCONNECTS = ("nvswitch", "nvlink", "nvlink-partial", "pcie", "mixed", "single", "none")
# interconnects over which some GPU pair has NVLink
NVLINK_INTERCONNECTS = ("nvswitch", "nvlink", "nvlink-partial", "mixed")

# software.* keys the probe always writes (null when the package is absent)
SOFTWARE_KEYS = (
    "driver",
    "cuda_driver",
    "nvml",
    "cuda_runtime",
    "nccl",
    "torch",
    "sglang",
    "sgl_kernel",
    "flashinfer",
    "vllm",
    "nvidia_ml_py",
)


class Severity(StrEnum):
    """A rule's severity, and a check finding's (never "prefer"): the value is the word every output
    prints."""

    BLOCK = "block"
    WARN = "warn"
    PREFER = "prefer"
    INFO = "info"


# a rule's severity, most severe first, as the plain strings the schemas list
SEVERITIES = tuple(severity.value for severity in Severity)

# how an evidence item was obtained, strongest first, with its rank for ranking candidates
EVIDENCE_LEVELS = ("measured", "upstream-reported", "modelled")
EVIDENCE_LEVEL_RANK = {"measured": 3, "upstream-reported": 2, "modelled": 1}

# what an evidence number is (rules/schema/rule.schema.json, $defs/number.kind), and the units each
# takes
EVIDENCE_KINDS = ("throughput", "latency", "relative", "context")
EVIDENCE_UNITS = {
    "throughput": ("tok/s",),
    "latency": ("us", "ms"),
    "relative": ("%", "x"),
    "context": None,
}

# keys an evidence config may name besides the logical settings (rules/sglang/data/settings.yaml)
# and env:NAME:
EVIDENCE_PATH_KEY = (
    "allreduce"  # the allreduce path (a name of allreduce_paths in rules/sglang/data/spelling.yaml)
)
EVIDENCE_MODEL_KEY = "model"  # the model the number was measured with
EVIDENCE_INTERCONNECT_KEY = "interconnect"  # one of INTERCONNECTS
EVIDENCE_DESCRIPTIVE_KEYS = (
    "message_kib",
    "message_mib",
    "max_message_mib",
    "allreduces_per_pass",
)  # never decide


def evidence_config_text(config: object) -> str:
    """An evidence config as `key=value` words (`allreduce=nccl speculative_algorithm=none`), in the
    order the rule file gives them: how reports and `topoctl rules explain` show it."""
    if not isinstance(config, dict):
        return str(config or "")

    def word(value: object) -> str:
        if value is None:
            return "none"
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return " ".join(f"{key}={word(value)}" for key, value in config.items())
