"""Mistral configs: the prompt is the HF tokenizer's, and a Tekken tokenizer gets the regex
fix transformers asks for, in the stages that render the prompt and in the engine.

`tokenizer_mode: mistral` reached vLLM's engine only: Ray 2.60's chat-template and tokenize
stages load the HF tokenizer from the model source whatever the engine's mode, so the
prompt token ids vLLM received were the HF tokenizer's. The configs now use the HF
tokenizer everywhere, and the Tekken one (Mistral-Small-3.1) with `fix_mistral_regex`.

The reference is Mistral's own: mistral_common's Tekken tokenizer file (shipped in the
mistral_common package, `tekken_240911.json`) and its encoder. The HF tokenizer is that file
converted by transformers' own converter, its pre-tokenizer then replaced by a Metaspace one
as a stand-in for a mis-converted tokenizer.json: the shape transformers' fix itself
handles (`_patch_mistral_regex`: "Replace Metaspace with ByteLevel when adding Split"). The
hub's broken file could not be fetched here. Runs in .venv-vllm (mistral_common).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pipelines.engines.models.config_yaml import CONFIG_DIR, load_configs
from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.stages.vllm_config import processor_config, tokenizer_source

# What a SentencePiece-style conversion puts where Tekken splits with its regex.
METASPACE = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "never"}
METASPACE["split"] = False
PROMPT = "Points A=(120, -35), B=(7.5, 2048). Is the midpoint of AB at (63.75, 1006.5)?"


def _tekken_file() -> Path:
    import mistral_common

    return Path(mistral_common.__file__).parent / "data" / "tekken_240911.json"


@pytest.fixture(scope="module")
def mis_converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Mistral-Small-3.1-like checkpoint folder (config.json of a mistral3 model written
    by transformers 4.50, as the hub's is) with the mis-converted Tekken tokenizer."""
    from transformers.integrations.mistral.tokenizer import convert_tekken_tokenizer

    out = tmp_path_factory.mktemp("mistral3")
    convert_tekken_tokenizer(str(_tekken_file()), chat_template="{{ messages }}").save_pretrained(
        out
    )
    tokenizer_json = json.loads((out / "tokenizer.json").read_text())
    assert tokenizer_json["pre_tokenizer"]["pretokenizers"][0]["type"] == "Split"
    tokenizer_json["pre_tokenizer"] = METASPACE
    (out / "tokenizer.json").write_text(json.dumps(tokenizer_json))
    config = {"model_type": "mistral3", "transformers_version": "4.50.0.dev0"}
    (out / "config.json").write_text(json.dumps(config))
    return out


def _mistral_ids(text: str) -> list[int]:
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    return list(Tekkenizer.from_file(str(_tekken_file())).encode(text, bos=False, eos=False))


def _as_ray_loads_it(path: str) -> Any:
    """As Ray 2.60's TokenizeUDF loads it: the path and trust_remote_code, nothing else."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, trust_remote_code=False)


def test_the_fixed_copy_tokenizes_the_prompt_as_mistral_does(mis_converted: Path) -> None:
    cfg = ModelConfig(name="m3", repo=str(mis_converted), revision="local", fix_mistral_regex=True)
    source = tokenizer_source(cfg)
    assert source is not None and Path(source) != mis_converted
    expected = _mistral_ids(PROMPT)
    fixed = _as_ray_loads_it(source).encode(PROMPT, add_special_tokens=False)
    assert fixed == expected
    # The folder as it is would have sent other ids: the flag is what changes them.
    unfixed = _as_ray_loads_it(str(mis_converted)).encode(PROMPT, add_special_tokens=False)
    assert unfixed != expected
    # Every stage that renders or tokenizes, and the engine, load the fixed copy.
    config = processor_config(cfg, 1, 16, has_images=True)
    assert config.chat_template_stage["model_source"] == source
    # The tokenize stage's copy of it adds no BOS (Ray calls it with special tokens on; the
    # template writes BOS: test_plain_tokenizer.py) and keeps the fix.
    tokenize = config.tokenize_stage["model_source"]
    assert _as_ray_loads_it(tokenize)(PROMPT)["input_ids"] == expected
    assert config.engine_kwargs["tokenizer"] == source
    assert config.prepare_multimodal_stage["model_config_kwargs"]["tokenizer"] == source
    assert tokenizer_source(cfg) == source  # the same copy each time (named by its digest)


def test_no_config_asks_for_a_tokenizer_mode_the_prompt_would_not_follow() -> None:
    configs = load_configs(CONFIG_DIR)
    assert not [c.name for c in configs if "tokenizer_mode" in c.engine_kwargs]
    mistral = {c.name for c in configs if c.repo.startswith("mistralai/")}
    assert {"mistral-7b-instruct-v0.3", "mistral-small-3.1-24b-instruct"} <= mistral
    fixed = {c.name for c in configs if c.fix_mistral_regex}
    assert fixed == {"mistral-small-3.1-24b-instruct"}  # the one Tekken tokenizer of mistralai/


def test_tokenizer_mode_mistral_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="would not govern the prompt"):
        ModelConfig(name="m", repo="m", engine_kwargs={"tokenizer_mode": "mistral"})
