"""Engines: the Ray Data stages that answer prompts, model configs, tiny models, the Ray
session, vLLM settings, preflight checks and request building."""
