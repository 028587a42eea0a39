"""Ray Data pipelines and the command line (`python -m pipelines <command>`)."""
