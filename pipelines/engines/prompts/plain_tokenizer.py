"""The tokenizer Ray's tokenize stage loads: the model's own, adding no special tokens.

A chat template writes every special token the model expects (Llama-3's
`<|begin_of_text|>`, Gemma's and Mistral's `{{ bos_token }}`), so the rendered prompt must
be encoded with `add_special_tokens=False`, as `apply_chat_template(tokenize=True)`, vLLM's
chat API and our hf engine do. Ray 2.60's tokenize stage calls `tokenizer(prompts)` with no
arguments (`TokenizeUDF.udf` in ray/llm/_internal/batch/stages/tokenize_stage.py): with a
tokenizer that prepends BOS itself, every prompt would start with two. The stage loads
only a path, so it is given a copy of the tokenizer files whose tokenizer adds nothing,
checked against the original before use.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipelines.engines.models.checkpoint_files import TOKENIZER_FILES

# The tokenizers post-processors that insert special tokens around a sequence.
INSERTING = {"TemplateProcessing", "BertProcessing", "RobertaProcessing"}


class SpecialTokensError(RuntimeError):
    """The tokenizer adds special tokens that could not be switched off in a copy."""


def staged_copy(source: Path, kind: str, edit: Callable[[Path], None]) -> Path:
    """A copy of `source`'s tokenizer files, changed by `edit(folder)`, in the Hugging Face
    cache under `kind`, named by the files' digest: made once, whole (renamed into place)."""
    from huggingface_hub.constants import HF_HUB_CACHE

    files = sorted(p for pattern in TOKENIZER_FILES for p in source.glob(pattern) if p.is_file())
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    target = Path(HF_HUB_CACHE) / kind / digest.hexdigest()[:16]
    if not target.is_dir():
        # Named by process and thread: two threads of one process may copy it at once.
        staging = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for path in files:
            shutil.copyfile(path, staging / path.name)
        edit(staging)
        try:
            staging.rename(target)  # atomic: a reader sees all the files or none
        except OSError:  # another process made it first: the same bytes
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _drop_inserted_tokens(folder: Path) -> None:
    """Switch off what adds special tokens: the flags transformers rebuilds its
    post-processor from, and the post-processor saved in tokenizer.json."""
    config_path = folder / "tokenizer_config.json"
    if config_path.is_file():
        config = json.loads(config_path.read_text())
        config.update(add_bos_token=False, add_eos_token=False)
        config_path.write_text(json.dumps(config, indent=2))
    tokenizer_path = folder / "tokenizer.json"
    if tokenizer_path.is_file():
        tokenizer = json.loads(tokenizer_path.read_text())
        post = tokenizer.get("post_processor")
        if post and post.get("type") in INSERTING:
            tokenizer["post_processor"] = None
        elif post and post.get("type") == "Sequence":
            kept = [p for p in post["processors"] if p.get("type") not in INSERTING]
            tokenizer["post_processor"] = {**post, "processors": kept}
        tokenizer_path.write_text(json.dumps(tokenizer, ensure_ascii=False))


def _probes(tokenizer: Any) -> list[str]:
    """Texts on which a tokenizer's special-token insertion would show: a rendered prompt
    starts with the BOS text and ends open."""
    bos = tokenizer.bos_token or ""
    return [f"{bos}user: What is 2+2?", "plain text", f"{bos}{bos}x"]


def _encode(tokenizer: Any, text: str, **kwargs: Any) -> list[int]:
    return list(tokenizer(text, **kwargs)["input_ids"])


def adds_special_tokens(tokenizer: Any) -> bool:
    """Whether `tokenizer(text)` differs from `tokenizer(text, add_special_tokens=False)`."""
    return any(
        _encode(tokenizer, text) != _encode(tokenizer, text, add_special_tokens=False)
        for text in _probes(tokenizer)
    )


def plain_tokenizer(source: Path, trust_remote_code: bool) -> Path | None:
    """A copy of `source`'s tokenizer that adds no special tokens (None: the original adds
    none already). Raises SpecialTokensError when the copy still differs from the original
    with `add_special_tokens=False`."""
    from transformers import AutoTokenizer

    original = AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code)
    if not adds_special_tokens(original):
        return None
    copy = staged_copy(source, "geosee-plain-tokenizers", _drop_inserted_tokens)
    plain = AutoTokenizer.from_pretrained(copy, trust_remote_code=trust_remote_code)
    for text in _probes(original):
        if _encode(plain, text) != _encode(original, text, add_special_tokens=False):
            raise SpecialTokensError(
                f"the tokenizer at {source} adds special tokens to every text and a copy "
                "without them still does; Ray's tokenize stage would add them to prompts "
                "whose chat template already holds them"
            )
    return copy


def regex_fixed_copy(source: Path) -> Path:
    """A copy of `source`'s tokenizer files whose tokenizer_config.json sets
    `fix_mistral_regex: true`, in the Hugging Face cache, named by the files' digest."""

    def ask_for_the_fix(folder: Path) -> None:
        staged = folder / "tokenizer_config.json"
        config = json.loads(staged.read_text()) if staged.is_file() else {}
        staged.write_text(json.dumps({**config, "fix_mistral_regex": True}, indent=2))

    return staged_copy(source, "geosee-fixed-tokenizers", ask_for_the_fix)
