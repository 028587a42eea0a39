"""Requests and what a prompt must be before an engine sees it.

Item rows into request rows (`requests`), a reasoning model's budget (`reasoning`), the
tokenizer Ray's tokenize stage loads, adding no special tokens (`plain_tokenizer`), the
prompt canary's pure checks on a decoded prompt (`prompt_canary`; its stages run in
`stages.canary_stage`) and the driver's pre-flight checks (`preflight`).

May import: `geometry`, `store`, `actors`, `engines.models` and this package; never
`engines.stages` (the stages use these, not the other way round).
"""
