"""The `hf` engine: transformers + xgrammar, batched, for Ray Data `map_batches` actor pools.

Text models load with `AutoModelForCausalLM` + `AutoTokenizer`; image-text models with
`AutoModelForImageTextToText` + `AutoProcessor`. Rows follow `actors.contract`: each row's
chat `messages` go through the model's chat template (data-URL images to the processor),
its grammar masks its own tokens, and it stops when its grammar is complete or at
`max_tokens`, clamped to the context its prompt leaves (a prompt that fills the context is
that row's error). Rows are decoded in sub-batches of `batch_size` with left padding and a KV
cache. A row that fails carries its message in `engine_error`; the rest go on.

With `request_cache` (a folder of the results store: store.request_cache), each sub-batch's
answers are kept there as soon as it is decoded, keyed by the row's `request_key`, its
prompt token ids, its clamped max_tokens, its sampling params and the weights' dtype; a row
whose answer is there already is not decoded again (a run cut short is not paid twice).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import io
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from actors.contract import (
    ENGINE_OUTPUT,
    OUTPUT_COLUMNS,
    arrow_ready,
    check_columns,
    message_parts,
    numpy_columns,
    plain,
    prompt_ids_digest,
)
from store.model_mirror import fetch_mirror
from store.request_cache import RequestCache, cache_key
from store.storage import is_uri, location

DEFAULT_MAX_TOKENS = 256


def _decode_image(url: str) -> Any:
    """A PIL RGB image from a base64 data URL; anything else raises ValueError."""
    from PIL import Image

    if not url.startswith("data:") or "base64," not in url:
        raise ValueError(f"image_url must be a base64 data URL, got {url[:40]!r}")
    try:
        data = base64.b64decode(url.partition("base64,")[2], validate=True)
    except binascii.Error as err:
        raise ValueError(f"image data URL is not valid base64: {err}") from err
    try:
        with Image.open(io.BytesIO(data)) as image:
            return image.convert("RGB")
    except OSError as err:
        raise ValueError(f"image data URL does not hold a readable image: {err}") from err


@dataclass
class _Request:
    """One row, ready to batch: its prompt text, images and decoding spec."""

    index: int
    prompt: str
    images: list[Any]
    num_input_tokens: int
    prompt_ids_sha256: str | None
    spec: Any  # grammar_decoding.RowSpec (imported lazily with torch)
    cache_key: str | None = None  # None: not cached (no request key, or no cache)


class PromptRenderer:
    """Chat messages -> the prompt text, images and input ids a model sees.

    The engine and the driver's pre-flight check (`pipelines.engines.prompts.preflight`)
    share it, so the check counts exactly the tokens the engine will send. Loads no weights.
    """

    def __init__(
        self,
        name: str,
        tokenizer: Any,
        processor: Any,
        context_length: int | None,
        content_format: str = "openai",
        system_as_string: bool = False,
    ) -> None:
        if content_format not in ("openai", "string"):
            raise ValueError(f"content_format must be openai or string, got {content_format!r}")
        self.name = name
        self.tokenizer = tokenizer
        self.processor = processor  # None for text-only models
        self.is_image_text = processor is not None
        self.context_length = context_length  # None when the config does not say
        # How an image-text model's content reaches its template, as vLLM's
        # chat_template_content_format (ModelConfig.content_format): the same prompt on
        # every engine.
        self.content_format = content_format
        # ModelConfig.system_prompt_as_string (Ray's apply_sys_msg_formatting): an
        # image-text model's system message as one string, for templates that print it so.
        self.system_as_string = system_as_string
        self.template_kwargs: dict[str, Any] = {}  # extra chat-template arguments

    @classmethod
    def load(
        cls,
        model: str,
        revision: str | None = None,
        trust_remote_code: bool = False,
        content_format: str = "openai",
        system_as_string: bool = False,
    ) -> PromptRenderer:
        """Tokenizer (text models) or processor (image-text models) of a checkpoint."""
        import transformers
        from transformers.models.auto.modeling_auto import (
            MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
        )

        load = {"revision": revision, "trust_remote_code": trust_remote_code}
        config = transformers.AutoConfig.from_pretrained(model, **load)
        text_config = config.get_text_config()
        context = int(getattr(text_config, "max_position_embeddings", 0) or 0) or None
        if config.model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES:
            processor = transformers.AutoProcessor.from_pretrained(model, **load)
            return cls(
                model, processor.tokenizer, processor, context, content_format, system_as_string
            )
        tokenizer = transformers.AutoTokenizer.from_pretrained(model, **load)
        return cls(model, tokenizer, None, context, content_format, system_as_string)

    def render(self, messages: list[Mapping[str, Any]]) -> tuple[str, list[Any]]:
        """The chat template applied to `messages` (plain Python, not numpy), and the
        decoded images in the order their placeholders appear."""
        images: list[Any] = []
        chat: list[dict[str, Any]] = []
        for message in messages:
            parts = []
            for part in message_parts(message):
                if part.get("type") == "image_url":
                    if not self.is_image_text:
                        raise ValueError(f"{self.name} is a text model; row has an image")
                    images.append(_decode_image((part.get("image_url") or {}).get("url") or ""))
                    parts.append({"type": "image"})
                elif part.get("type") == "text":
                    parts.append({"type": "text", "text": part.get("text") or ""})
                else:
                    raise ValueError(f"unsupported message part type {part.get('type')!r}")
            if self.is_image_text and self.system_as_string and message["role"] == "system":
                # As Ray's prepare-multimodal stage extracts it (apply_sys_msg_formatting).
                text = "\n".join(p["text"] for p in parts if p["type"] == "text" and p["text"])
                chat.append({"role": "system", "content": text})
            elif self.is_image_text and self.content_format == "openai":
                chat.append({"role": message["role"], "content": parts})
            elif self.is_image_text:
                chat.append({"role": message["role"], "content": self._string_content(parts)})
            else:
                # Text-only templates print string content as it comes; a list would
                # render as its repr (see actors.contract.chat_message).
                text = "".join(p["text"] for p in parts)
                chat.append({"role": message["role"], "content": text})
        prompt = self.templater.apply_chat_template(
            chat, add_generation_prompt=True, tokenize=False, **self.template_kwargs
        )
        return prompt, images

    @property
    def templater(self) -> Any:
        """What renders the chat template: the processor of an image-text model (as Ray's
        chat-template stage does), else the tokenizer."""
        return self.processor if self.is_image_text else self.tokenizer

    def _string_content(self, parts: list[dict[str, Any]]) -> str:
        """A message's parts as one string, as vLLM's "string" content format builds it
        (`vllm/entrypoints/chat_utils.py`, `_get_full_multimodal_text_prompt`): one
        placeholder per image first, then the texts, all joined by newlines."""
        image_token = str(getattr(self.processor, "image_token", None) or "")
        images = [p for p in parts if p["type"] == "image"]
        if images and not image_token:
            raise ValueError(
                f"{self.name}: the processor names no image_token for string content; "
                f"set chat_template_content_format: openai"
            )
        texts = "\n".join(p["text"] for p in parts if p["type"] == "text")
        return "\n".join([image_token] * len(images) + ([texts] if texts else []))

    def encode(self, prompts: list[str], images: list[list[Any]]) -> Any:
        """Padded model inputs; the chat template already wrote any BOS token."""
        if not self.is_image_text:
            return self.tokenizer(
                prompts, padding=True, add_special_tokens=False, return_tensors="pt"
            )
        flat = [image for row in images for image in row]
        return self.processor(
            text=prompts,
            images=flat or None,
            padding=True,
            add_special_tokens=False,
            return_tensors="pt",
        )

    def count_tokens(self, messages: list[Mapping[str, Any]]) -> int:
        """Input tokens of one row's messages, images included."""
        prompt, images = self.render(messages)
        if not self.is_image_text:
            # verbose=False: counting a prompt longer than the context is the point here (the
            # preflight refuses it in one line), so the tokenizer's "sequence length is
            # longer than the specified maximum" warning would be a second, noisier line.
            encoded = self.tokenizer(prompt, add_special_tokens=False, verbose=False)
            return len(encoded["input_ids"])
        return len(self.encode([prompt], [images])["input_ids"][0])


class HFEngine:
    """A Ray Data callable class: `ds.map_batches(HFEngine, fn_constructor_kwargs=...)`.

    Use `batch_format="numpy"`; one engine holds one model and decodes `batch_size` rows at
    a time.
    """

    def __init__(
        self,
        model: str,
        revision: str | None = None,
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int = 8,
        trust_remote_code: bool = False,
        content_format: str = "openai",
        system_as_string: bool = False,
        chat_template_kwargs: dict[str, Any] | None = None,
        request_cache: str | None = None,
    ):
        import torch
        import transformers

        from actors import grammar_decoding

        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self._torch = torch
        self._gd = grammar_decoding
        if is_uri(model):  # a model mirror in the results store: a folder on this node
            from huggingface_hub.constants import HF_HUB_CACHE

            model = str(fetch_mirror(model, Path(HF_HUB_CACHE) / "geosee-mirrors"))
        self.model_name = model
        self.batch_size = batch_size
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if device.startswith("cuda") and not torch.cuda.is_available():
            # Ray gave this actor a GPU that torch cannot see: never fall back to the CPU
            # (a GPU model there runs for days), say so.
            raise RuntimeError(
                f"hf engine for {model}: asked to run on {device}, but torch sees no CUDA "
                f"device (CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r}, "
                f"torch {torch.__version__})"
            )
        self.device = torch.device(device)
        if self.device.type == "cpu":
            # Two threads on two busy cores were measured 5-25x slower than one.
            torch.set_num_threads(1)
        self.renderer = PromptRenderer.load(
            model, revision, trust_remote_code, content_format, system_as_string
        )
        # Qwen3's thinking switch and the like, as vLLM's chat-template stage passes them.
        self.renderer.template_kwargs = dict(chat_template_kwargs or {})
        self.is_image_text = self.renderer.is_image_text
        self.tokenizer: Any = self.renderer.tokenizer
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        model_cls: Any = (
            transformers.AutoModelForImageTextToText
            if self.is_image_text
            else transformers.AutoModelForCausalLM
        )
        load = {"revision": revision, "trust_remote_code": trust_remote_code}
        self.model = model_cls.from_pretrained(model, dtype=self._torch_dtype(dtype), **load)
        self.model.to(self.device).eval()
        self.max_length = self.renderer.context_length
        self.vocab_size = int(self.model.get_output_embeddings().weight.shape[0])
        eos = self.model.generation_config.eos_token_id
        if eos is None:
            eos = self.tokenizer.eos_token_id
        self.eos_token_ids = [eos] if isinstance(eos, int) else list(eos or [])
        # The row's sampling params are the whole story: drop the checkpoint's own defaults
        # (sampling, repetition penalties) that `generate` would otherwise merge in.
        self.model.generation_config = transformers.GenerationConfig(
            eos_token_id=self.eos_token_ids or None,
            pad_token_id=self.tokenizer.pad_token_id,
            bos_token_id=self.tokenizer.bos_token_id,
        )
        self.grammars = grammar_decoding.GrammarCache(
            self.tokenizer, self.vocab_size, self.eos_token_ids
        )
        self._cache = RequestCache(location(request_cache)) if request_cache else None

    def _torch_dtype(self, dtype: str) -> Any:
        if dtype != "auto":
            return getattr(self._torch, dtype)
        # CPU kernels are slow or missing for half types; GPUs take the checkpoint's dtype.
        return self._torch.float32 if self.device.type == "cpu" else "auto"

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Every input column plus ENGINE_OUTPUT's, one output row per input row."""
        check_columns(batch, ("messages", "sampling_params"), "HFEngine")
        n = len(batch["messages"])
        out: dict[str, list[Any]] = {c: [None] * n for c in OUTPUT_COLUMNS}
        # Without request keys (a caller's own rows) nothing is cached.
        keys = batch.get("request_key") if self._cache is not None else None
        requests = []
        for i in range(n):
            try:
                request = self._prepare(i, batch["messages"][i], batch["sampling_params"][i])
            except Exception as err:  # a bad row never fails the batch
                out["engine_error"][i] = _describe(err)
                continue
            if keys is not None:
                request.cache_key = self._cache_key(str(keys[i]), request, batch, i)
            if not self._answered_from_cache(request, out):
                requests.append(request)
        # Similar lengths share a sub-batch, so less compute goes to padding.
        requests.sort(key=lambda r: r.num_input_tokens)
        for start in range(0, len(requests), self.batch_size):
            chunk = requests[start : start + self.batch_size]
            self._run_chunk(chunk, out)
            self._keep(chunk, out)
        return {**arrow_ready(batch), **numpy_columns(ENGINE_OUTPUT, out)}

    def _cache_key(
        self, request_key: str, request: _Request, batch: dict[str, np.ndarray], i: int
    ) -> str:
        """What decides this row's answer here (store.request_cache): its request, the
        prompt ids the model reads, the tokens it may write, the weights' dtype."""
        engine = {
            "engine": "hf",
            "dtype": str(self.model.dtype),
            "prompt_ids_sha256": request.prompt_ids_sha256,
            "max_tokens": request.spec.max_tokens,
            "sampling_params": plain(batch["sampling_params"][i], drop_none=True),
        }
        return cache_key(request_key, engine)

    def _answered_from_cache(self, request: _Request, out: dict[str, list[Any]]) -> bool:
        """Fill the row from the request cache if its answer is kept there."""
        if self._cache is None or request.cache_key is None:
            return False
        kept = self._cache.get(request.cache_key)
        if kept is None:
            return False
        for name, value in kept.items():
            out[name][request.index] = value
        return True

    def _keep(self, chunk: list[_Request], out: dict[str, list[Any]]) -> None:
        """Keep the sub-batch's answers in the request cache before the next is decoded."""
        if self._cache is None:
            return
        answered = {
            r.cache_key: {name: out[name][r.index] for name in OUTPUT_COLUMNS}
            for r in chunk
            if r.cache_key is not None
            and out["engine_error"][r.index] is None
            and out["generated_text"][r.index] is not None
        }
        if answered:
            self._cache.put(answered)

    def render_prompt(self, messages: Any) -> tuple[str, list[Any]]:
        """The prompt text and images this engine sends for a row's `messages`."""
        return self.renderer.render(plain(messages))

    def _prepare(self, index: int, messages: Any, sampling_params: Any) -> _Request:
        prompt, images = self.render_prompt(messages)
        # The ids this row's own encoding gives (left padding in a sub-batch adds pad
        # tokens before them under an attention mask of 0: the model reads these).
        ids = self._encode([prompt], [images])["input_ids"][0].tolist()
        num_input_tokens = len(ids)
        spec = self._spec(plain(sampling_params) or {})
        if self.max_length:
            room = self.max_length - num_input_tokens
            if room < 1:
                raise ValueError(
                    f"prompt has {num_input_tokens} tokens and fills the model's "
                    f"{self.max_length} positions, leaving none to generate; shorten the "
                    "prompt or use a model with a longer context"
                )
            # A row asks for at most max_tokens, and the context holds only what is left
            # after its prompt: generating fewer is the engine's limit, not the row's error
            # (vLLM stops at max_model_len the same way). The run record states the policy.
            spec = dataclasses.replace(spec, max_tokens=min(spec.max_tokens, room))
        return _Request(index, prompt, images, num_input_tokens, prompt_ids_digest(ids), spec)

    def _spec(self, params: Mapping[str, Any]) -> Any:
        structured = params.get("structured_outputs") or {}
        grammar_text = structured.get("grammar")
        if structured.get("json") is not None and grammar_text is None:
            raise ValueError("the hf engine takes structured_outputs.grammar, not .json")
        max_tokens = params.get("max_tokens")
        max_tokens = DEFAULT_MAX_TOKENS if max_tokens is None else int(max_tokens)
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
        top_p = params.get("top_p")
        seed = params.get("seed")
        return self._gd.RowSpec(
            max_tokens=max_tokens,
            temperature=float(params.get("temperature") or 0.0),
            top_p=1.0 if top_p is None else float(top_p),
            seed=None if seed is None else int(seed),
            grammar=self.grammars.get(grammar_text) if grammar_text else None,
        )

    def _encode(self, prompts: list[str], images: list[list[Any]]) -> Any:
        return self.renderer.encode(prompts, images)

    def _run_chunk(self, chunk: list[_Request], out: dict[str, list[Any]]) -> None:
        start = time.perf_counter()
        try:
            texts = self._generate(chunk)
        except Exception as err:
            if len(chunk) > 1:
                # Retry alone so one bad row (e.g. out of memory on a long prompt) names itself.
                for request in chunk:
                    self._run_chunk([request], out)
                return
            out["engine_error"][chunk[0].index] = _describe(err)
            return
        share = (time.perf_counter() - start) / len(chunk)
        for request, (text, num_generated, error) in zip(chunk, texts, strict=True):
            i = request.index
            out["num_input_tokens"][i] = request.num_input_tokens
            out["prompt_ids_sha256"][i] = request.prompt_ids_sha256
            out["num_generated_tokens"][i] = num_generated
            out["time_taken_llm"][i] = share
            if error is None:
                out["generated_text"][i] = text
            else:
                out["engine_error"][i] = error

    def _generate(self, chunk: list[_Request]) -> list[tuple[str, int, str | None]]:
        """(text, generated token count, error) per request of one padded sub-batch."""
        torch = self._torch
        inputs = self._encode([r.prompt for r in chunk], [r.images for r in chunk])
        inputs = inputs.to(self.device)
        if "pixel_values" in inputs:
            inputs["pixel_values"] = inputs["pixel_values"].to(self.model.dtype)
        control = self._gd.RowControl(
            [r.spec for r in chunk], self.vocab_size, self.eos_token_ids, self.device
        )
        with torch.inference_mode():
            self.model.generate(
                **inputs,
                max_new_tokens=max(r.spec.max_tokens for r in chunk),
                do_sample=False,  # sampled rows draw inside RowControl with their own seeds
                logits_processor=control.logits_processor(),
                stopping_criteria=control.stopping_criteria(),
            )
        results = []
        for i, row in enumerate(control.rows):
            text = self.tokenizer.decode(control.text_tokens(i), skip_special_tokens=True)
            results.append((text, len(row.tokens), row.error))
        return results


def _describe(err: Exception) -> str:
    return f"{type(err).__name__}: {err}"
