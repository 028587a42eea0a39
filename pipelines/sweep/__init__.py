"""The sweep: every model config x setup (and GeoBuild) across the cluster."""
