"""Test doubles for the probe's outside world: a fake NVML binding (nvml.py), a Session that answers
sysfs/host/software questions from a spec (session.py), and the specs of the synthetic reference
systems (systems.py). scripts/make_synthetic_fixtures.py imports them too (it puts tests/ on
sys.path). None of this ships in the package."""
