"""Linear probes on open_clip vision encoders."""
