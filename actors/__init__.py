"""Ray actors that hold heavy state (engines, DSL executors, probe trainers)."""
