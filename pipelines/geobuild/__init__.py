"""GeoBuild: the agent loop, program checks, the numeric solver audit and summaries."""
