"""The prompt canary: a model's first real requests through its own processor's stages,
checked in the decoded prompt ids before its engine starts.

A chat template that prints a Python repr of the content parts, drops the system prompt or
emits no image placeholder raises nothing: the grammar still forces valid-looking answers,
and the GPU hours are spent on a prompt the model never saw. Twelve configs have no template
reachable offline, so this is checked where the run happens, on the cluster, for every vllm
evaluate and GeoBuild run.

How: the processor the run builds (`stages.vllm_path.before_rows`) is applied up to its
engine stage to a few request rows per setup, with the processor's own preprocess and
stages, plus one check stage that decodes each row's `tokenized_prompt` with the tokenize
stage's own tokenizer and names vLLM's image placeholder for the model
(`get_placeholder_str`, the rule vLLM's own chat parser uses): `stages.canary_stage`, which
runs them. This module holds what the driver checks: the rows picked (`canary_rows`), the
checks (`failed_check`, pure functions) and the one line a failure stops with.

The sources the stages load are whatever the processor config holds: the canary reads them
from the processor object, never from the model config, so it follows the run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pipelines.engines.models.model_schema import ModelConfig

# Request rows checked per setup (text, dotted, full; GeoBuild's text or image rows).
CANARY_ROWS = 2
# The column each canary row carries what the driver expects of it in, and the one the
# check stage writes its decoded prompt to.
EXPECT = "geosee_canary_expect"
RESULT = "geosee_canary"
# The checks, in the order a decoded prompt is held to them (the first failing one is named).
CHECKS = ("renders", "no_repr", "system_prompt", "question", "image_placeholders")
# What a Python (or JSON) rendering of a message's list of parts or dict leaves in the
# decoded prompt once the message texts themselves are taken out (whitespace removed):
# `[{'type': 'text', 'text': ...}]`, a numpy array's (`<ndarray>` in Jinja), `[{"type": ...}]`.
REPR_MARKERS = (
    "{'", "['", "'}", "']", "[{", "}]", "'type':", '"type":', "'text':", '"text":',
    "array(", "dtype=", "<ndarray",
)  # fmt: skip
SNIPPET = 160  # characters of the decoded prompt a failure line quotes


class CanaryError(RuntimeError):
    """A model's rendered prompt failed a check: one line naming the check and the config."""


@dataclass(frozen=True)
class Expected:
    """What one request's decoded prompt must hold, read from its own messages."""

    setup: str
    request: str  # the row's item or problem id, for the failure line
    system: tuple[str, ...]  # the system messages' texts
    question: tuple[str, ...]  # the text parts of the last user message
    images: int  # image parts in all its messages

    def to_json(self) -> str:
        """The row's EXPECT cell."""
        return json.dumps(
            {
                "setup": self.setup,
                "request": self.request,
                "system": list(self.system),
                "question": list(self.question),
                "images": self.images,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Expected:
        """An EXPECT cell back."""
        data = json.loads(text)
        return cls(
            data["setup"],
            data["request"],
            tuple(data["system"]),
            tuple(data["question"]),
            int(data["images"]),
        )


def _texts(content: Any) -> list[str]:
    """A message content's texts: a string as it is, a list of parts' text parts."""
    if isinstance(content, str):
        return [content]
    return [str(p.get("text")) for p in content or [] if p.get("type") == "text" and p.get("text")]


def _images(content: Any) -> int:
    if isinstance(content, str):
        return 0
    return sum(1 for p in content or [] if p.get("type") in ("image", "image_url"))


def expected(row: dict[str, Any]) -> Expected:
    """What a request row's decoded prompt must hold: its system prompt, the text of its
    last user message (the question, or a GeoBuild round's feedback), and one placeholder
    rule's worth per image."""
    messages = list(row["messages"])
    users = [m for m in messages if m["role"] == "user"]
    images = sum(_images(m["content"]) for m in messages)
    setup = row.get("setup") or ("image" if images else "text")
    return Expected(
        setup=str(setup),
        request=str(row.get("item_id") or row.get("problem_id") or row.get("request_key")),
        system=tuple(t for m in messages if m["role"] == "system" for t in _texts(m["content"])),
        question=tuple(_texts(users[-1]["content"])) if users else (),
        images=images,
    )


def canary_rows(
    rows: Iterable[dict[str, Any]], per_setup: int = CANARY_ROWS
) -> list[dict[str, Any]]:
    """The first `per_setup` request rows of each setup, each with its EXPECT column."""
    picked: list[dict[str, Any]] = []
    count: dict[str, int] = {}
    for row in rows:
        expect = expected(row)
        if count.get(expect.setup, 0) < per_setup:
            count[expect.setup] = count.get(expect.setup, 0) + 1
            picked.append({**row, EXPECT: expect.to_json()})
    return picked


def _squeezed(text: str) -> str:
    """The text without whitespace: templates trim, indent and join turns differently, and
    a decode may space special tokens; what is checked is the words and their order."""
    return "".join(text.split())


def failed_check(
    decoded: str, expect: Expected, placeholders: Sequence[str | None] | None
) -> tuple[str, str] | None:
    """The first check (name, why) the decoded prompt fails, None when it passes.

    `placeholders`: the placeholder string of image 1..max(images, 1) of the row by the
    model's rule (canary_stage.CanaryUDF; an entry None where no rule is known), or None
    for a text-only model (whose rows hold no image)."""
    flat = _squeezed(decoded)
    rest = flat
    for text in (*expect.system, *expect.question):
        if _squeezed(text):  # an empty text would split every character apart
            rest = rest.replace(_squeezed(text), " ")
    marker = next((m for m in REPR_MARKERS if m in rest), None)
    if marker is not None:
        return "no_repr", (
            f"the prompt holds {marker!r} outside the message texts: a repr of a message's "
            "list of parts or dict (does the template print `content` as it comes?)"
        )
    for name, texts in (("system_prompt", expect.system), ("question", expect.question)):
        missing = next((t for t in texts if _squeezed(t) not in flat), None)
        if missing is not None:
            return name, f"{short(missing, 60)!r} is not in the prompt"
    if placeholders is None:
        if expect.images:
            return "image_placeholders", f"{expect.images} image(s) sent to a text-only model"
        return None
    return _placeholder_check(flat, expect.images, placeholders)


def _placeholder_check(
    flat: str, images: int, placeholders: Sequence[str | None]
) -> tuple[str, str] | None:
    """One placeholder per image (each image's own string where vLLM numbers them), none in
    a text row. A None (or empty) placeholder: no rule known for the model, nothing to hold
    it to."""
    wanted: dict[str, int] = {}
    for string in placeholders[:images] if images else placeholders[:1]:
        key = _squeezed(string or "")
        if not key:
            return None
        wanted[key] = wanted.get(key, 0) + (1 if images else 0)
    for string, want in wanted.items():
        got = flat.count(string)
        if got != want:
            return "image_placeholders", (
                f"{got} x {string!r} for {images} image(s); the model's rule wants {want}"
            )
    return None


def short(text: str, limit: int) -> str:
    """`text`, cut to `limit` characters with an ellipsis when longer."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def failure_line(
    cfg: ModelConfig, check: str, why: str, expect: Expected | None, decoded: str
) -> str:
    """The one line a failed canary stops its model with: the check and the model first
    (the sweep's status keeps a failure's first 200 characters), then why and where."""
    where = f"setup {expect.setup}, request {expect.request}, " if expect is not None else ""
    line = (
        f"prompt canary: check {check} failed for model {cfg.name}: {why} ({where}repo {cfg.repo})"
    )
    if decoded:
        line += f"; decoded prompt begins {short(decoded, SNIPPET)!r}"
    return " ".join(line.split())
