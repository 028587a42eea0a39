"""Pure-Python geometry: exact coordinates, NoReGeo tasks, prompts, scoring, rendering, GeoBuild DSL.

Imports neither Ray nor torch, so every part of it runs and tests anywhere.
"""
