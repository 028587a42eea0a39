"""GeoBuild: a construction DSL (parser, executor), validator, renderer and dataset loader."""
