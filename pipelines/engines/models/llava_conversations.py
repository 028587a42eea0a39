"""The conversation templates of the original-layout LLaVA-1.5 models, as chat templates.

The original code builds its prompts in Python (haotian-liu/LLaVA `llava/conversation.py`,
`Conversation.get_prompt`); a converted checkpoint carries them as a Jinja chat template so
that vLLM, Ray's stages and the hf engine render the same text. All three templates here
use the `SeparatorStyle.TWO` rule (LLaVA `conversation.py:32-107`):

    system + " " + "USER: " + "<image>\\n" + question + " " + "ASSISTANT:"

and an answered turn `"ASSISTANT: " + answer + sep2`, `sep2` being the tokenizer's EOS
(`</s>` for Vicuna, `<｜end▁of▁sentence｜>` for DeepSeek: `conv_llava_dpsk`, MultiMath
`llava/conversation.py:337-347`). `<image>\\n` goes before the question as the eval scripts
put it (LLaVA `llava/eval/model_vqa_loader.py:43-46`). The BOS the original tokenizer adds
(`tokenizer_image_token`, `add_special_tokens=True`) is written by the template, because
Ray's tokenize stage encodes the rendered prompt adding no special tokens
(pipelines/engines/prompts/plain_tokenizer.py).

A run's system message replaces the conversation's default system text, as setting
`conv.system` does in the original; without one the default stands.
"""

from __future__ import annotations

# LLaVA `llava/conversation.py:242-252` (conv_vicuna_v1, `--version v1` in training).
VICUNA_SYSTEM = (
    "A chat between a curious user and an artificial intelligence assistant. The assistant "
    "gives helpful, detailed, and polite answers to the user's questions."
)
# LLaVA `llava/conversation.py:325-335` (conv_llava_v1) and MultiMath's conv_llava_dpsk.
HUMAN_SYSTEM = (
    "A chat between a curious human and an artificial intelligence assistant. The assistant "
    "gives helpful, detailed, and polite answers to the human's questions."
)
SYSTEMS = {"vicuna_v1": VICUNA_SYSTEM, "llava_v1": HUMAN_SYSTEM, "dpsk": HUMAN_SYSTEM}
CONVERSATIONS = tuple(SYSTEMS)
# LLaVA's `default_conversation` (llava/conversation.py:372), what `--version v1` trains.
DEFAULT_CONVERSATION = "vicuna_v1"
# The EOS of DeepSeek's tokenizers: a checkpoint with it is DeepSeek-based (MultiMath).
DEEPSEEK_EOS = "<｜end▁of▁sentence｜>"

_TEMPLATE = (
    "{%- macro text(content) -%}"
    "{%- if content is string -%}{{ content }}"
    "{%- else -%}{%- for part in content if part['type'] == 'text' -%}"
    "{{ part['text'] }}{%- if not loop.last -%}{{ '\\n' }}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{%- endmacro -%}"
    "{%- macro images(content) -%}"
    "{%- if content is not string -%}"
    "{%- for part in content if part['type'] in ('image', 'image_url') -%}"
    "{{ '<image>\\n' }}{%- endfor -%}{%- endif -%}"
    "{%- endmacro -%}"
    "{{ bos_token }}"
    "{%- if messages and messages[0]['role'] == 'system' -%}"
    "{{ text(messages[0]['content']) }}{%- set turns = messages[1:] -%}"
    "{%- else -%}{{ SYSTEM }}{%- set turns = messages -%}{%- endif -%}"
    "{{ ' ' }}"
    "{%- for message in turns -%}"
    "{%- if message['role'] == 'user' -%}"
    "{{ 'USER: ' }}{{ images(message['content']) }}{{ text(message['content']) }}{{ ' ' }}"
    "{%- elif message['role'] == 'assistant' -%}"
    "{{ 'ASSISTANT: ' }}{{ text(message['content']) }}{{ eos_token }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ 'ASSISTANT:' }}{%- endif -%}"
)


def chat_template(conversation: str) -> str:
    """The Jinja chat template of the named LLaVA conversation (one of CONVERSATIONS)."""
    if conversation not in SYSTEMS:
        raise ValueError(
            f"unknown LLaVA conversation {conversation!r}; known: {', '.join(CONVERSATIONS)}"
        )
    return _TEMPLATE.replace("{{ SYSTEM }}", "{{ " + repr(SYSTEMS[conversation]) + " }}")


def default_conversation(eos_token: str | None) -> str:
    """The conversation of a checkpoint no config names one for: `dpsk` for a DeepSeek LM
    (MultiMath's eval passes `--conv_mode dpsk`, `eval_mathvista/scripts/infer.sh`), else
    LLaVA's default, vicuna_v1."""
    return "dpsk" if eos_token == DEEPSEEK_EOS else DEFAULT_CONVERSATION
