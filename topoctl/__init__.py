"""topoctl: probe a multi-GPU machine, recommend the fastest launch known to work, block
known-broken ones."""

__version__ = "0.2.0"
# The words the first line of every launch.env topoctl recommend writes begins with
# (autoconf/launch_text.py), by which check knows recommend's output under any file name
# (topoctl/deploy/launch_env.py).
LAUNCH_ENV_TITLE = "launch.env for SGLang, written by topoctl"
