"""Results storage, the ground floor under the pipelines: locations (local or S3), atomic
writes, shard reading, the run lock, run records and settings records.

Imports nothing of ours but geometry/, so actors, probes and every pipelines wing can use it.
"""
