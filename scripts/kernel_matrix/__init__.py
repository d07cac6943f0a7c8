"""Kernel matrix extraction: which SM architectures each kernel op of a pinned wheel is compiled
for."""
