"""The request cache: every answer an engine got, kept the moment it arrives, so that a run
that ends early (Ctrl-C, SIGTERM, a lost node) does not pay for it again (issue 51, item 6).

Before, answers inside an engine actor's batch, or finished and still queued in Ray Data,
were dropped by a Ctrl-C, and the rerun sent those requests again (on a paid API that is
money; on a cluster, GPU time). lm-eval's `--use_cache` and lmms-eval's response cache keep
every answer by its request; this does the same in the results store, so the rerun, on any
node, reads it.

Who: the hf, http and vllm engines (actors/hf_engine.py, actors/http_engine.py,
pipelines/engines/stages/vllm_cache.py), in `evaluate` and in GeoBuild's rounds.

Where: `<model folder>/request-cache/` (`<out>/noregeo/model=<slug>/request-cache/`,
`<out>/geobuild/model=<slug>/request-cache/`), local or on an object store (store.storage).
Each engine actor writes its own chunks, `chunk-<writer>-<seq>.jsonl`, one JSON record a
line; every answer rewrites its actor's current chunk whole (store.atomic: a temporary and a
rename, or one PUT), so an answer is durable before the engine moves on, and a chunk holds
at most CHUNK_ROWS answers: an actor leaves rows / CHUNK_ROWS objects, never one per row.

The key (`cache_key`): sha256 of the row's request key (item, setup, model, revision,
messages, sampling and grammar: pipelines.engines.prompts.requests.request_key) and what
the engine makes of the row (the http engine's whole request body; the hf engine's prompt
token ids and clamped max_tokens, and its dtype; vllm's prompt ids, sampling as sent and the
engine arguments that change an answer): anything that changes the answer gives
another key, and an old answer is never reused for it. Only answers are kept: a row with
an `engine_error` is sent again, as `evaluate --retry-errors` expects.

A chunk is untrusted input when it is read back: a line that is not a record with its own
checksum (a torn write, an edit, a flipped byte) is ignored, and each damaged chunk is named
in one warning line; its good lines are still used. To clear the cache, delete the folder.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import threading
import uuid
from collections.abc import Mapping
from typing import Any

from store.atomic import TMP_PREFIX, write_bytes_atomic
from store.storage import Location

log = logging.getLogger(__name__)

CACHE_FOLDER = "request-cache"
CHUNK_GLOB = "chunk-*.jsonl"
# Answers per chunk: each answer rewrites its chunk, so this bounds the bytes one write
# costs (about CHUNK_ROWS answers) and the objects a run leaves (rows / CHUNK_ROWS).
CHUNK_ROWS = 64
# A chunk is CHUNK_ROWS answers of at most 100,000 characters (actors.http_reply caps a
# reply's text); anything far bigger is not ours and is not read.
MAX_CHUNK_BYTES = 64 * 1024 * 1024
# What a cached answer holds: the engine output columns (actors.contract.ENGINE_OUTPUT) of
# an answered row, less `engine_error` (always None for an answer).
_INTS = ("num_input_tokens", "num_generated_tokens")
_TEXTS = ("generated_text",)
_OPTIONAL_TEXTS = ("prompt_ids_sha256",)
_FLOATS = ("time_taken_llm",)
ANSWER_FIELDS = (*_TEXTS, *_INTS, *_FLOATS, *_OPTIONAL_TEXTS)
# The vllm engine keeps a reasoning model's generated token ids too: its postprocess counts
# the reasoning tokens in them (pipelines.engines.prompts.reasoning.out_of_budget).
TOKENS = "generated_tokens"
MAX_TOKENS_KEPT = 1 << 20  # more ids than any context holds: not ours

Answer = dict[str, Any]


def cache_key(request_key: str, engine: Mapping[str, Any]) -> str:
    """The cache key of one request: sha256 of its request key and the engine's view of it
    (see the module docstring)."""
    payload = json.dumps({"request_key": request_key, "engine": engine}, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


def _checksum(key: str, answer: Answer) -> str:
    text = json.dumps({"key": key, "answer": answer}, sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _line(key: str, answer: Answer) -> bytes:
    record = {"key": key, "answer": answer, "sha256": _checksum(key, answer)}
    return json.dumps(record, sort_keys=True, ensure_ascii=True).encode("ascii") + b"\n"


def _valid_answer(answer: Any) -> bool:
    """Whether `answer` has exactly the fields of an answer (the token ids optional), each of
    its type and range."""
    if not isinstance(answer, dict) or set(answer) - {TOKENS} != set(ANSWER_FIELDS):
        return False
    if TOKENS in answer and not _token_ids(answer[TOKENS]):
        return False
    ints_ok = all(
        type(answer[f]) is int and 0 <= answer[f] < 2**63 for f in _INTS
    )  # bool is not a count
    floats_ok = all(
        type(answer[f]) in (int, float) and math.isfinite(answer[f]) and answer[f] >= 0
        for f in _FLOATS
    )
    texts_ok = all(isinstance(answer[f], str) for f in _TEXTS)
    optional_ok = all(answer[f] is None or isinstance(answer[f], str) for f in _OPTIONAL_TEXTS)
    return ints_ok and floats_ok and texts_ok and optional_ok


def _token_ids(ids: Any) -> bool:
    """Whether `ids` is a list of token ids (ints in range) of a plausible length."""
    return (
        isinstance(ids, list)
        and len(ids) <= MAX_TOKENS_KEPT
        and all(type(i) is int and 0 <= i < 2**31 for i in ids)
    )


def _plain_answer(answer: Mapping[str, Any]) -> Answer:
    """The answer fields as JSON types (an engine may hand numpy numbers)."""
    kept: Answer = {name: answer.get(name) for name in ANSWER_FIELDS}
    if answer.get(TOKENS) is not None:
        kept[TOKENS] = [int(i) for i in answer[TOKENS]]
    for name in _INTS:
        kept[name] = int(kept[name]) if kept[name] is not None else None
    for name in _FLOATS:
        kept[name] = float(kept[name]) if kept[name] is not None else None
    return kept


def _record(line: bytes) -> tuple[str, Answer] | None:
    """(key, answer) of one line; None unless it is a whole record whose checksum holds."""
    try:
        record = json.loads(line)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or set(record) != {"key", "answer", "sha256"}:
        return None
    key, answer = record["key"], record["answer"]
    if not isinstance(key, str) or len(key) != 64 or not _valid_answer(answer):
        return None
    return (key, answer) if record["sha256"] == _checksum(key, answer) else None


def chunk_files(folder: Location) -> list[Location]:
    """The cache's chunks under `folder`, sorted; temporaries left out."""
    if not folder.exists():
        return []
    found = [p for p in folder.glob(CHUNK_GLOB) if not p.name.startswith(TMP_PREFIX)]
    return sorted(found, key=str)


def read_cache(folder: Location) -> dict[str, Answer]:
    """Every readable answer under `folder` by its key; each damaged chunk (a line that is
    not a whole record, too big, unreadable) is named in one warning line, its good lines
    kept. Never raises for a chunk's content."""
    answers: dict[str, Answer] = {}
    for chunk in chunk_files(folder):
        try:
            data = chunk.read_bytes()
        except FileNotFoundError:
            continue  # replaced since it was listed (a rename over it): read next run
        except OSError as err:
            log.warning("request cache chunk %s unreadable (%s): ignored", chunk, err)
            continue
        if len(data) > MAX_CHUNK_BYTES:
            log.warning(
                "request cache chunk %s holds %d bytes, over %d: ignored; its requests are sent "
                "again",
                chunk,
                len(data),
                MAX_CHUNK_BYTES,
            )
            continue
        bad = 0
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            found = _record(line)
            if found is None:
                bad += 1
            else:
                answers[found[0]] = found[1]
        if bad:
            log.warning(
                "request cache chunk %s: %d damaged line(s) ignored (torn or edited); their "
                "requests are sent again. Delete the chunk to silence this",
                chunk,
                bad,
            )
    return answers


class RequestCache:
    """One engine actor's view of the cache: every answer already kept under `folder`, and
    its own chunks for the answers it gets. Thread-safe (the http engine's rows finish on
    several threads)."""

    def __init__(self, folder: Location) -> None:
        self.folder = folder
        self._answers = read_cache(folder)
        self._writer = uuid.uuid4().hex[:16]  # one actor's chunks, apart from every other's
        self._seq = 0
        self._lines: list[bytes] = []
        self._lock = threading.Lock()
        self._warned = False

    def __len__(self) -> int:
        return len(self._answers)

    def get(self, key: str) -> Answer | None:
        """The kept answer of `key` (a copy), or None."""
        with self._lock:
            answer = self._answers.get(key)
            return None if answer is None else dict(answer)

    def put(self, answers: Mapping[str, Answer]) -> None:
        """Keep the answers (key -> ENGINE_OUTPUT values less engine_error) durably before
        returning: this actor's current chunk is rewritten whole, and a full chunk makes way
        for the next."""
        with self._lock:
            for key, answer in answers.items():
                kept = _plain_answer(answer)
                if not _valid_answer(kept):  # kept nowhere, but the row still has it
                    log.warning("request cache: answer of %s not kept: %r", key, kept)
                    continue
                self._answers[key] = kept
                self._lines.append(_line(key, kept))
                if len(self._lines) >= CHUNK_ROWS:
                    self._write()
                    self._lines, self._seq = [], self._seq + 1
            if self._lines:
                self._write()

    def _write(self) -> None:
        """This actor's current chunk, whole. A store that refuses it costs only the
        cache (the rows still go on to the results, and a rerun pays for them again):
        said in one warning line, not raised into the engine's batch."""
        name = f"chunk-{self._writer}-{self._seq:06d}.jsonl"
        try:
            write_bytes_atomic(self.folder / name, b"".join(self._lines))
        except OSError as err:
            if not self._warned:  # once per actor: a store refusing one write refuses all
                self._warned = True
                log.warning(
                    "request cache: could not write %s (%s); answers from here on are not "
                    "kept, and a rerun pays for those not in the results again",
                    self.folder / name,
                    err,
                )
