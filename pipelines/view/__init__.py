"""`geosee view RESULTS`: a live, read-only local page of a results location while a sweep
writes to it: per model the rows answered, errors and accuracy so far, and the samples
filtered by model, task, setup, verdict and text. It reads shards as they land (each once),
never writes or moves a file, and serves on 127.0.0.1 unless told otherwise.

Modules: `live_results` (the incremental shard reader), `pages` (the jinja2 templates,
autoescaped), `server` (the HTTP handler), `command` (the command's options and loop).
"""
