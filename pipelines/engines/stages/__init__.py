"""The Ray Data stages that answer prompts, and what they need of Ray.

The engine builders (`engine_stages.STAGES`, with their options: `options`); a model's vLLM
path in the order it runs (`vllm_path`: sources, tokenizer and chat template, processor
config, placement, canary, the stage), with the processor config (`vllm_config`), the rows
around Ray's processor (`vllm_rows`), Ray's chat-template and tokenize stages in one actor
(`chained_stage`), the canary's stages (`canary_stage`), GeoBuild's resident engines
(`vllm_resident`, `hf_resident`; restarted off a lost node: `resident_hosts`) and the
instant engine of the bench (`instant_stage`); GPUs waited for
(`gpus`, `gpu_request`), tensor-parallel placement groups (`placement_groups`), remote
sources on a cluster of several nodes (`node_sources`, `node_stages`), Ray Data blocks
(`ray_blocks`).

May import: everything below `pipelines`, `engines.models`, `engines.prompts`,
`engines.session` and this package.
"""
