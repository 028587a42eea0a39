"""Engines: everything between a model config and a model's answers, in four sub-packages.

- `models/`: model configs and where weights come from (the schema and its fields, the YAML
  files, `--model` resolved, hub ids, checkpoints, the tiny and real local models). Imports
  no other engines sub-package.
- `session/`: the Ray session (starting Ray, its process groups, the reaper of a dead
  driver's processes). Imports no other engines sub-package.
- `prompts/`: requests and what a prompt must be (request rows, reasoning budgets, the
  tokenizer without added special tokens, the prompt canary's checks, pre-flight checks).
  Imports `models/`.
- `stages/`: the Ray Data stages that answer (`engine_stages.STAGES`; a model's vLLM path
  read top to bottom in `vllm_path.py`), with what they need of Ray: GPUs, placement groups,
  remote sources, blocks. Imports `models/`, `prompts/` and `session/`.

The rest of `pipelines/` imports the sub-packages' modules directly; this file holds no code
(tests/test_architecture.py checks that no module lives here outside them).
"""
