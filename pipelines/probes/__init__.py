"""Vision-encoder linear probes: the grid command and its summary tables."""
