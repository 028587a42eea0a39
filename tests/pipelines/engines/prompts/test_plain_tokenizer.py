"""Ray's tokenize stage encodes the rendered prompt as the model's template meant it: one BOS.

Ray 2.60's `TokenizeUDF` (its own class, run here as the vLLM stage runs it) calls
`tokenizer(prompts)` with the special tokens on. Chat templates write BOS themselves, so a
tokenizer that also prepends it (Llama-3's tokenizer.json; `add_bos_token` in Gemma's,
Mistral's and the R1 distills' configs) gave every vLLM prompt two. The reference is
`apply_chat_template(tokenize=True)`, which vLLM's chat API and our hf engine match.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.models.tiny_model import BOS, EOS, IMAGE, PAD, TEXT_CHAT_TEMPLATE, byte_bpe
from pipelines.engines.prompts.plain_tokenizer import adds_special_tokens, plain_tokenizer
from pipelines.engines.stages.vllm_config import processor_config

MESSAGES = [
    {"role": "system", "content": "Answer with JSON."},
    {"role": "user", "content": "Are A=(0,0), B=(1,1), C=(2,2) collinear?"},
]


@pytest.fixture(autouse=True)
def hub_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Copies land in a cache of this test's own."""
    import huggingface_hub.constants

    cache = tmp_path / "hf-cache"
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    return cache


def _save(folder: Path, style: str) -> Path:
    """A byte-level BPE tokenizer with a BOS-writing chat template; `style` says how it adds
    BOS to every text: "post-processor" (tokenizer.json, as Llama-3), "flag" (add_bos_token
    in tokenizer_config.json, as Gemma/Mistral), or "none" (as Qwen2.5 and SmolLM2)."""
    from tokenizers import processors
    from transformers import LlamaTokenizerFast, PreTrainedTokenizerFast

    bpe = byte_bpe([PAD, BOS, EOS, IMAGE])
    names = {"bos_token": BOS, "eos_token": EOS, "pad_token": PAD}
    tokenizer: Any
    if style == "flag":
        tokenizer = LlamaTokenizerFast(tokenizer_object=bpe, add_bos_token=True, **names)
    else:
        if style == "post-processor":
            bos = [(BOS, bpe.token_to_id(BOS))]
            bpe.post_processor = processors.TemplateProcessing(
                single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=bos
            )
        tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, **names)
    tokenizer.chat_template = TEXT_CHAT_TEMPLATE
    tokenizer.save_pretrained(folder)
    return folder


def _template_ids(folder: Path) -> list[int]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    return list(
        tokenizer.apply_chat_template(
            MESSAGES, add_generation_prompt=True, tokenize=True, return_dict=False
        )
    )


def _ray_tokenize_stage(model: Path, prompt_from: Path) -> list[int]:
    """Ray's own TokenizeUDF loading `model`, on the prompt `prompt_from`'s template renders."""
    from ray.llm._internal.batch.stages.tokenize_stage import TokenizeUDF
    from transformers import AutoTokenizer

    renderer = AutoTokenizer.from_pretrained(prompt_from)
    prompt = renderer.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False)
    udf = TokenizeUDF(data_column="__data", expected_input_keys=["prompt"], model=str(model))

    async def run() -> list[dict[str, Any]]:
        return [row async for row in udf.udf([{"prompt": prompt, udf.IDX_IN_BATCH_COLUMN: 0}])]

    return list(asyncio.run(run())[0]["tokenized_prompt"])


@pytest.mark.parametrize("style", ["post-processor", "flag"])
def test_a_bos_adding_tokenizer_gets_a_copy_that_gives_ray_the_templates_ids(
    tmp_path: Path, style: str
) -> None:
    from transformers import AutoTokenizer

    model = _save(tmp_path / style, style)
    expected = _template_ids(model)
    bos = AutoTokenizer.from_pretrained(model).bos_token_id
    assert expected[0] == bos and expected[1] != bos  # the template's one BOS
    # What Ray's stage did with the model's own tokenizer: a second BOS.
    assert _ray_tokenize_stage(model, model) == [bos, *expected]

    plain = plain_tokenizer(model, trust_remote_code=False)
    assert plain is not None and plain != model
    assert _ray_tokenize_stage(plain, model) == expected
    # The copy renders the same template (the chat-template stage keeps the original).
    assert (plain / "chat_template.jinja").read_text() == (
        model / "chat_template.jinja"
    ).read_text()
    assert plain_tokenizer(model, trust_remote_code=False) == plain  # made once


def test_a_tokenizer_that_adds_nothing_is_used_as_it_is(tmp_path: Path, hub_cache: Path) -> None:
    model = _save(tmp_path / "none", "none")
    assert plain_tokenizer(model, trust_remote_code=False) is None
    assert _ray_tokenize_stage(model, model) == _template_ids(model)
    assert not hub_cache.exists()  # nothing copied


def test_the_real_models_tokenizer_adds_nothing(real_model_dir: Path) -> None:
    """SmolLM2's tokenizer (the cross-engine test's model) adds no special tokens: its
    prompt ids were equal on all three engines before this fix too."""
    from transformers import AutoTokenizer

    assert not adds_special_tokens(AutoTokenizer.from_pretrained(real_model_dir))


def test_a_copy_that_still_adds_tokens_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the copy does not switch off every insertion (here: the edit is made to forget
    add_eos_token), the copy is checked against the original and refused, rather than
    giving Ray's stage ids that differ from the template's."""
    from pipelines.engines.prompts import plain_tokenizer as module

    model = _save(tmp_path / "flag", "flag")
    config_path = model / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config_path.write_text(json.dumps({**config, "add_eos_token": True}))

    def forget_eos(folder: Path) -> None:
        settings = json.loads((folder / "tokenizer_config.json").read_text())
        (folder / "tokenizer_config.json").write_text(
            json.dumps({**settings, "add_bos_token": False})
        )

    monkeypatch.setattr(module, "_drop_inserted_tokens", forget_eos)
    with pytest.raises(module.SpecialTokensError, match="adds special tokens"):
        plain_tokenizer(model, trust_remote_code=False)


def test_the_processor_gives_only_the_tokenize_stage_the_copy(tmp_path: Path) -> None:
    model = _save(tmp_path / "llama3", "post-processor")
    cfg = ModelConfig(name="llama3-like", repo=str(model))
    config = processor_config(cfg, opts_pool=1, batch_size=16, has_images=False)
    assert "model_source" not in config.chat_template_stage  # the model's own template
    plain = Path(config.tokenize_stage["model_source"])
    assert plain != model and _ray_tokenize_stage(plain, model) == _template_ids(model)
