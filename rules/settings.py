"""The logical launch settings rules talk about, and what each one is when a launch leaves it out: the table
is SGLang knowledge (topoctl/sglang/settings.py, data in topoctl/sglang/data/settings.yaml); the rules read it
through this module.

Layer: knowledge (docs/architecture.md, "Layers").
"""
from __future__ import annotations

from topoctl.sglang.settings import (
    ENV_NAME,
    ENV_PREFIX,
    SETTINGS_FILE,
    UNSET_WORDS,
    comparable,
    default_of,
    equal,
    is_env_setting,
    is_known_setting,
    normalize,
    setting_table,
    setting_type,
)

__all__ = ["ENV_NAME", "ENV_PREFIX", "SETTINGS_FILE", "UNSET_WORDS", "comparable", "default_of", "equal",
           "is_env_setting", "is_known_setting", "normalize", "setting_table", "setting_type"]
