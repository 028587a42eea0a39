"""Every config renders a NoReGeo request through its model's real chat template as its
stages will (issue 25, item 4): the question is there, one image placeholder per image,
and the system prompt kept (or merged into the first user turn).

The rendering path is the one Ray 2.60 runs for `vllm` configs, settings read from the
processor config our code builds (`pipelines.engines.stages.vllm_config.processor_config`) and
resolved by Ray's own stage-config classes:

1. prepare-multimodal stage (image-text configs): vLLM 0.29's own
   `_parse_chat_message_content` per message with the stage's
   `chat_template_content_format` (Ray's default is "string"), and Ray's own system-message
   extraction when `apply_sys_msg_formatting` is on;
2. chat-template stage: transformers' `render_jinja_template` (what
   `processor.apply_chat_template(..., tokenize=False)` runs) on the real template, with the
   stage's `chat_template_kwargs`.

`hf` configs (a model vLLM 0.29 cannot run) go through the hf engine's own
`actors.hf_engine.PromptRenderer.render` instead, its `apply_chat_template` rendering the real
template the same way.

One part is not vLLM's running code: the model class that says which placeholder string
vLLM writes for an image in "string" content. vLLM's Llava-family modules cannot be
imported here (vLLM 0.29's pixtral.py needs a name transformers 5.x dropped; docs/engines.md),
so the placeholder is read from the class's `get_placeholder_str` in vLLM's installed source
(its AST, not a table of ours), for every family alike. The templates are real, each from
the public source named in tests/fixtures/chat_templates/README.md; configs whose template
could not be found are listed in NOT_FOUND with the reason (never an invented template).
"""

from __future__ import annotations

from typing import Any

import pytest

from pipelines.engines.prompts.prompt_canary import expected, failed_check
from tests.vllm.chat_template_cases import (
    CONFIG_FAMILY,
    CONFIGS,
    FAMILIES,
    FIXTURES,
    NOT_FOUND,
    RENDERED,
    StageSettings,
    hf_engine_prompt,
    no_template,
    prepared_conversation,
    render,
    request,
    stage_settings,
    template_of,
    vllm_placeholder,
)


@pytest.fixture(scope="module")
def items() -> dict[str, Any]:
    """One item of the first task in every setup, with a real rendered figure."""
    from geometry.item import SETUPS
    from geometry.items import build_items
    from geometry.render import render_png
    from geometry.tasks.registry import all_tasks

    task = next(iter(all_tasks()))
    rows = build_items(task, 1, seed=0, setups=SETUPS, image_size=64, render=render_png)
    return {row.setup: row for row in rows}


def test_every_config_is_accounted_for() -> None:
    """A config is rendered here, or listed as not found, or renders no template of ours."""
    unaccounted = [
        name
        for name, cfg in CONFIGS.items()
        if name not in CONFIG_FAMILY and name not in NOT_FOUND and no_template(cfg) is None
    ]
    assert not unaccounted, f"configs with no template fixture and no reason: {unaccounted}"
    assert not set(CONFIG_FAMILY) & set(NOT_FOUND)
    assert set(CONFIG_FAMILY) | set(NOT_FOUND) <= set(CONFIGS)
    for name in CONFIG_FAMILY:  # a fixture for a config that never renders would test nothing
        assert no_template(CONFIGS[name]) is None, name
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    for family in FAMILIES.values():
        assert (FIXTURES / f"{family.template}.jinja").is_file(), family.template
        assert f"`{family.template}.jinja`" in readme, f"README lacks {family.template}.jinja"


@pytest.mark.parametrize("name", RENDERED)
def test_template_renders_the_request(
    name: str, items: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = CONFIGS[name]
    family = FAMILIES[CONFIG_FAMILY[name]]
    settings = stage_settings(cfg, monkeypatch)
    assert settings.multimodal == (cfg.modality == "image-text")
    for setup in cfg.setups:
        item = items[setup]
        messages = request(cfg, item)
        if cfg.engine == "hf":
            prompt = hf_engine_prompt(cfg, family, messages)
        else:
            conversation = (
                prepared_conversation(messages, family, settings)
                if settings.multimodal
                else messages
            )
            prompt = render(template_of(family), conversation, settings.template_kwargs)
        fmt = cfg.content_format if cfg.engine == "hf" else settings.content_format
        where = f"{name} ({setup}, {cfg.engine} engine, {fmt} content): {prompt!r}"
        assert item.prompt.strip() in prompt, f"question missing: {where}"
        # The system prompt is kept: no template here drops it or refuses it.
        assert item.system_prompt.strip() in prompt, f"system prompt missing: {where}"
        # ...as text: a template that prints a list of parts (`content|trim`) writes its repr.
        assert "'type': 'text'" not in prompt, f"content printed as a Python list: {where}"
        if family.image_token:
            images = 1 if item.image is not None else 0
            assert prompt.count(family.image_token) == images, f"image placeholders: {where}"
        if cfg.engine == "vllm":  # the prompt canary passes the real template: no false alarm
            placeholders = [family.image_token] if settings.multimodal else None
            expect = expected({"setup": setup, "messages": messages})
            assert failed_check(prompt, expect, placeholders) is None, f"canary: {where}"


@pytest.mark.parametrize("name", ["qwen3-4b", "qwen3-8b"])
def test_paper_qwen3_prompt_closes_its_think_block_so_the_grammar_starts_the_reply(
    name: str, items: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The paper's one-shot protocol (issue 37): the real Qwen3 template with the stage's
    `enable_thinking: false` ends the generation prompt in an empty think block, so the
    first generated token is the grammar's; the thinking setup's prompt opens no such block."""
    family = FAMILIES["qwen3"]
    for config, closed in ((name, True), (f"{name}-thinking", False)):
        cfg = CONFIGS[config]
        settings = stage_settings(cfg, monkeypatch)
        prompt = render(template_of(family), request(cfg, items["text"]), settings.template_kwargs)
        assert prompt.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n") == closed, prompt


@pytest.mark.parametrize("name", [n for n in RENDERED if CONFIGS[n].modality == "image-text"])
def test_content_format_is_the_one_vllm_detects(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM's OpenAI server (our http engine's vLLM servers) picks the format from the
    template's AST (`vllm.renderers.hf._detect_content_format`); the stages use the same."""
    from vllm.renderers.hf import _detect_content_format

    template = template_of(FAMILIES[CONFIG_FAMILY[name]])
    detected = _detect_content_format(template, default="string")
    assert stage_settings(CONFIGS[name], monkeypatch).content_format == detected
    assert CONFIGS[name].content_format == detected


def test_idefics3_fixture_is_the_checkpoints_template() -> None:
    """The expected rendering of transformers' test of HuggingFaceM4/Idefics3-8B-Llama3's
    own processor (tests/models/idefics3/test_processing_idefics3.py,
    test_apply_chat_template, commit 000c8eae5ab53d70bc0ee1cbe3600f78b380ed4a)."""
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What do these images show?"},
                {"type": "image"},
                {"type": "image"},
                "What do these images show?",
            ],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": "The first image shows the statue of Liberty in New York. The second "
                    "image picture depicts Idefix, the dog of Obelix in Asterix and Obelix.",
                }
            ],
        },
        {"role": "user", "content": [{"type": "text", "text": "And who is that?"}]},
    ]
    expected = (
        "<|begin_of_text|>User: What do these images show?<image><image><end_of_utterance>\n"
        "Assistant: The first image shows the statue of Liberty in New York. The second image "
        "picture depicts Idefix, the dog of Obelix in Asterix and Obelix.<end_of_utterance>\n"
        "User: And who is that?<end_of_utterance>\n"
        "Assistant:"
    )
    assert render(template_of(FAMILIES["idefics3"]), messages, {}) == expected


@pytest.mark.parametrize("name", ["internvl3-8b", "internvl3-14b", "internvl3-38b"])
def test_internvl3_revisions_render_alike(
    name: str, items: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """InternVL3 8B-38B's hub files held Qwen2.5's template, which the InternVL team said they
    would replace (fixture README); InternVL3-2B's holds InternVL's own. With these configs'
    settings and NoReGeo's system prompt both write the same prompt, so the configs are right
    whichever of the two `main` holds now."""
    cfg = CONFIGS[name]
    settings = stage_settings(cfg, monkeypatch)
    for setup in cfg.setups:
        messages = request(cfg, items[setup])
        qwen, internvl = (
            render(
                template_of(FAMILIES[family]),
                prepared_conversation(messages, FAMILIES[family], settings),
                settings.template_kwargs,
            )
            for family in ("internvl3-qwen2.5", "internvl3")
        )
        assert qwen == internvl, f"{name} ({setup})"


def test_string_content_empties_the_list_templates() -> None:
    """The bug this module guards against, shown on the real llava-1.5 template: with Ray's
    default "string" format the question and the image placeholder are gone."""
    family = FAMILIES["llava-1.5"]
    settings = StageSettings(True, "string", False, {})
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "SYS"}]},
        {"role": "user", "content": [{"type": "text", "text": "Q?"}]},
    ]
    prompt = render(template_of(family), prepared_conversation(messages, family, settings), {})
    assert prompt == "USER: ASSISTANT:"


@pytest.mark.parametrize(
    ("module", "cls", "expected"),
    [
        ("phi3v", "Phi3VForCausalLM", "<|image_1|>"),  # an f-string of the item number
        ("internvl", "InternVLChatModel", "<image>"),
        ("minicpmv", "MiniCPMVBaseModel", "(<image>./</image>)"),
        ("mistral3", "Mistral3ForConditionalGeneration", None),  # the template writes [IMG]
    ],
)
def test_placeholders_are_read_from_vllms_source(
    module: str, cls: str, expected: str | None
) -> None:
    """The reader of vLLM's get_placeholder_str, on the string-format families' classes:
    what vLLM puts in front of the text of a "string" config's image message."""
    assert vllm_placeholder(module, cls, 1) == expected
