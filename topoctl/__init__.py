"""topoctl: probe a multi-GPU machine, recommend the fastest launch known to work, block known-broken ones."""

__version__ = "0.2.0"
