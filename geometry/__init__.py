"""Pure-Python geometry: NoReGeo tasks, prompts, scoring, rendering; the GeoBuild DSL.

Imports neither Ray nor torch, so every part of it runs and tests anywhere.
"""
