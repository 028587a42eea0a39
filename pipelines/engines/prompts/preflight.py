"""Checks on the driver, before Ray starts work, for the engines that load weights.

A run that cannot work should stop with one line naming the model and the fix, not write a
results directory full of per-row engine errors an hour later:

- remote code: a checkpoint whose `config.json` maps its model type to its own code
  (`auto_map`) that this transformers lacks needs `trust_remote_code: true` in its config
  (`--trust-remote-code` for a checkpoint folder or hub id);
- chat template: a template that raises on the run's messages (e.g. "System role not
  supported") is refused in one line, naming the system role when that is what it refuses;
- context: the longest prompt of the run, rendered by the hf engine's own code
  (`actors.hf_engine.PromptRenderer`: the chat template, images expanded to image tokens),
  must leave room to generate in the context (`max_position_embeddings` for hf, the
  config's `max_model_len` for vllm).

Reads local files and the hub cache only; makes no network call for the remote-code check.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from jinja2 import TemplateError

from pipelines.engines.models.checkpoint_files import needs_remote_code
from pipelines.engines.models.model_revisions import hub_revision
from pipelines.engines.models.model_schema import ModelConfig

# Engines that load a checkpoint on our workers; http and the baselines skip these checks.
# How each engine treats a row whose prompt + max_tokens exceeds the context. hf: ours
# (actors.hf_engine). vllm: its scheduler stops a row at max_model_len (v1 `check_stop`),
# not verified here on a GPU.
CLAMP_POLICY = {
    "hf": "each row generates at most min(max_tokens, context - its prompt tokens)",
    "vllm": "vLLM stops a row at max_model_len (prompt + generated tokens)",
}

Messages = Sequence[Mapping[str, Any]]


class PreflightError(ValueError):
    """The model cannot run this request set; the message names the model and the fix."""


@dataclass(frozen=True)
class ContextReport:
    """What the context check found, for the run record."""

    context_length: int | None
    context_source: str
    longest_prompt_tokens: int | None
    prompts_checked: int
    note: str = ""

    def record(self, engine: str, max_tokens: int) -> dict[str, Any]:
        """The run record's view: the clamp policy and the cap the longest prompt gets."""
        cap = None
        if self.context_length is not None and self.longest_prompt_tokens is not None:
            cap = min(max_tokens, self.context_length - self.longest_prompt_tokens)
        return {
            **asdict(self),
            "max_tokens_clamped_to_context": engine in CLAMP_POLICY,
            "max_tokens_policy": CLAMP_POLICY.get(engine, "not checked for this engine"),
            "effective_max_tokens_for_longest_prompt": cap,
        }


def check_model(cfg: ModelConfig, prompts: Sequence[Messages]) -> ContextReport:
    """Both checks for a model of an engine in CHECKPOINT_ENGINES.

    `prompts` are the chat messages of the run's longest requests (chosen by the caller),
    shaped as the engine gets them (`pipelines.engines.prompts.requests.build_messages`). Raises
    PreflightError when the model needs remote code it was not allowed, or when a prompt
    leaves no room in the context.
    """
    check_remote_code(cfg)
    return check_context(cfg, prompts)


def _cached_config(cfg: ModelConfig) -> dict[str, Any] | None:
    """The checkpoint's config.json from a local dir or the hub cache; None if neither."""
    local = Path(cfg.source) / "config.json"
    if local.is_file():
        return dict(json.loads(local.read_text()))
    try:
        from huggingface_hub import try_to_load_from_cache

        path = try_to_load_from_cache(cfg.repo, "config.json", revision=hub_revision(cfg.revision))
    except (ValueError, OSError):  # not a valid repo id (an API name, a missing dir)
        return None
    return dict(json.loads(Path(path).read_text())) if isinstance(path, str) else None


def check_remote_code(cfg: ModelConfig) -> None:
    """Refuse a checkpoint that needs its own modelling code when trust_remote_code is off
    (`checkpoint_files.needs_remote_code`)."""
    if cfg.trust_remote_code:
        return
    config = _cached_config(cfg)
    if not config or not needs_remote_code(config):
        return
    # A model given by its files (a checkpoint folder or hub id) has no YAML to edit.
    fix = (
        "rerun with --trust-remote-code"
        if cfg.local and Path(cfg.source).is_dir()
        else "set `trust_remote_code: true` in its model config"
    )
    raise PreflightError(
        f"model {cfg.name} ({cfg.repo}) runs its own code: config.json maps model_type "
        f"{config.get('model_type')!r}, which transformers lacks, to custom classes "
        f"(auto_map); {fix} if you trust that code"
    )


def template_refusal(cfg: ModelConfig, renderer: Any, messages: Messages, err: Exception) -> str:
    """The one line for a chat template that raised on a request (its `raise_exception`).

    The request is a system prompt and a user turn; when the template renders the user turn
    alone, what it refuses is the system role, which every NoReGeo and GeoBuild request has.
    """
    said = " ".join(str(err).split())[:200]
    without_system = [dict(m) for m in messages if m.get("role") != "system"]
    try:
        renderer.render(without_system)
    except (TemplateError, ValueError):
        what = "this run's messages"
    else:
        what = "a system message, which every request of this run starts with"
    return (
        f"model {cfg.name} ({cfg.repo}): its chat template cannot render {what} "
        f"(template says: {said}); give the config a template that can, or another model"
    )


def check_context(cfg: ModelConfig, prompts: Sequence[Messages]) -> ContextReport:
    """Count the prompts' tokens as the hf engine would; refuse one that fills the context."""
    from actors.hf_engine import PromptRenderer

    try:
        renderer = PromptRenderer.load(
            cfg.source,
            hub_revision(cfg.revision),
            cfg.trust_remote_code,
            cfg.content_format,
            cfg.system_prompt_as_string,
        )
    except (OSError, ValueError) as err:
        reason = (str(err).splitlines() or [type(err).__name__])[0]
        if cfg.local and not Path(cfg.source).is_dir():
            # A model built on this machine that is not here: the engine would fail only
            # after the run had started Ray and written its settings (issue 39).
            raise PreflightError(
                f"model {cfg.name}: {cfg.source} is not a checkpoint folder on this machine "
                f"(a local config's model is built here; `geosee list-models` shows its "
                f"config): {reason}"
            ) from err
        # Not loadable here (no hub access on this driver): the engine will say more.
        return ContextReport(None, "unknown", None, 0, f"tokenizer not loadable: {reason}")
    if not getattr(renderer.templater, "chat_template", None):
        # Every request is rendered with it; transformers would raise per row, which the
        # counting below would take for an unreadable row.
        what = "processor" if renderer.is_image_text else "tokenizer"
        raise PreflightError(
            f"model {cfg.name} ({cfg.repo}): its {what} has no chat template, which every "
            f"request is rendered with (both engines); add one to the checkpoint "
            f"(chat_template.jinja) or use another model"
        )
    context: int | None
    if cfg.engine == "vllm":
        context, source = cfg.max_model_len, "max_model_len of the model config"
    else:
        context, source = renderer.context_length, "max_position_embeddings of config.json"
    counts, skipped = [], []
    for messages in prompts:
        try:
            counts.append(renderer.count_tokens([dict(m) for m in messages]))
        except TemplateError as err:
            raise PreflightError(template_refusal(cfg, renderer, messages, err)) from err
        except ValueError as err:  # e.g. an unreadable image: that row's engine error
            skipped.append(str(err))
    longest = max(counts, default=None)
    if context is not None and longest is not None and longest >= context:
        fix = "raise max_model_len in its config" if cfg.engine == "vllm" else ""
        fix = fix or "use a checkpoint with a longer context"
        raise PreflightError(
            f"model {cfg.name}: the longest prompt of this run has {longest} tokens and the "
            f"context is {context} ({source}), leaving nothing to generate; {fix}"
        )
    notes = ["image tokens counted by the checkpoint's processor"] if renderer.is_image_text else []
    notes += [f"prompt not rendered: {reason}" for reason in skipped[:1]]
    note = "; ".join(notes)
    return ContextReport(context, source if context else "unknown", longest, len(counts), note)
