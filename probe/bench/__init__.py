"""`topoctl bench`: measure the interconnect (P2P health, bandwidth, latency; allreduce paths;
coalescing).

Measurements are hardware access, so they live on the probe side. torch is imported only inside the
worker processes and the GPU back end (probe/bench/devices.py), never at import of this package; the
parent process (runner.py) plans, watches and writes, with plain Python. See docs/bench.md.

Layer: probe (docs/architecture.md, "Layers").
"""
