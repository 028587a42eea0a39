"""The hf engine passes a config's chat-template switch (Qwen3's `enable_thinking`) to the
template, as vLLM's chat-template stage does: a paper Qwen3 run on hf answers one-shot too."""

from __future__ import annotations

from pathlib import Path

from actors.hf_engine import PromptRenderer
from pipelines.engines.models.config_yaml import load_config
from pipelines.engines.stages.engine_stages import hf_engine_kwargs
from pipelines.engines.stages.options import EngineOptions
from tests.conftest import REPO

# Qwen3's switch in miniature: an empty think block when thinking is off.
TEMPLATE = (
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}<|assistant|>"
    "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>{% endif %}"
)


def test_the_paper_qwen3_config_sends_thinking_off_to_the_hf_template() -> None:
    cfg = load_config(REPO / "configs" / "models" / "qwen3-8b.yaml")
    assert cfg.enable_thinking is False
    kwargs = hf_engine_kwargs(cfg, EngineOptions())
    assert kwargs["chat_template_kwargs"] == {"enable_thinking": False}


def test_the_renderer_hands_the_switch_to_the_template(tiny_llm_dir: Path) -> None:
    renderer = PromptRenderer.load(str(tiny_llm_dir))
    renderer.tokenizer.chat_template = TEMPLATE
    messages = [{"role": "user", "content": "Is (1, 2) on y = 2x?"}]
    assert "<think>" not in renderer.render(messages)[0]
    renderer.template_kwargs = {"enable_thinking": False}
    assert renderer.render(messages)[0].endswith("<|assistant|><think>\n\n</think>")
