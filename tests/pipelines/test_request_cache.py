"""The request cache (store.request_cache; issue 51, item 6): an answer kept the moment it
arrives is answered from the cache by the next engine, locally and on S3, in a bounded
number of objects; anything that changes the request misses it; a damaged chunk costs only
its own lines (one warning line), never a crash and never a wrong answer. The signal cases,
a whole `evaluate` cut short and rerun, are in noregeo/test_paid_once.py."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from store.request_cache import (
    CACHE_FOLDER,
    CHUNK_ROWS,
    RequestCache,
    cache_key,
    chunk_files,
    read_cache,
)
from store.storage import location
from tests.actors.http_support import fast_engine, make_batch
from tests.actors.loopback_server import LoopbackServer, Reply
from tests.pipelines.s3_server import S3Server, s3_fixture  # noqa: F401  (fixture `s3`)


def _answer(text: str) -> dict[str, Any]:
    return {
        "generated_text": text,
        "num_input_tokens": 12,
        "num_generated_tokens": np.int64(3),  # as an engine's numpy column may hold it
        "time_taken_llm": 0.25,
        "prompt_ids_sha256": None,
        "engine_error": None,  # not kept: only answers are
    }


def _key(i: int) -> str:
    return cache_key(f"request-{i}", {"engine": "test"})


def test_answers_kept_by_one_writer_are_read_by_the_next_in_few_chunks(tmp_path: Path) -> None:
    folder = tmp_path / CACHE_FOLDER
    first = RequestCache(folder)
    n = CHUNK_ROWS * 2 + 5
    for i in range(n):  # one answer at a time, as http rows finish
        first.put({_key(i): _answer(f"a{i}")})
    assert len(chunk_files(folder)) == 3  # rows / CHUNK_ROWS objects, never one per row
    second = RequestCache(folder)
    assert len(second) == n
    kept = second.get(_key(7))
    assert kept is not None and kept["generated_text"] == "a7"
    assert kept["num_generated_tokens"] == 3 and "engine_error" not in kept
    assert second.get(_key(n)) is None
    assert not any(p.name.startswith(".tmp-") for p in folder.iterdir())


def test_the_key_changes_with_every_part_of_the_request() -> None:
    base = cache_key("r", {"engine": "http", "body": {"model": "m", "temperature": 0.0}})
    assert base == cache_key("r", {"engine": "http", "body": {"temperature": 0.0, "model": "m"}})
    assert base != cache_key("r2", {"engine": "http", "body": {"model": "m", "temperature": 0.0}})
    assert base != cache_key("r", {"engine": "http", "body": {"model": "m", "temperature": 0.6}})
    assert base != cache_key("r", {"engine": "hf", "body": {"model": "m", "temperature": 0.0}})


def _damage(chunk: Path) -> list[bytes]:
    """The chunk's lines: the first torn, the second's answer changed under its checksum,
    the third not JSON; the rest left whole."""
    lines = chunk.read_bytes().split(b"\n")
    lines[0] = lines[0][: len(lines[0]) // 2]
    record = json.loads(lines[1])
    record["answer"]["generated_text"] = "a wrong answer"
    lines[1] = json.dumps(record).encode()
    lines[2] = b"\x00\xff not json"
    chunk.write_bytes(b"\n".join(lines))
    return lines


def test_a_damaged_chunk_costs_its_bad_lines_in_one_warning_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / CACHE_FOLDER
    cache = RequestCache(folder)
    cache.put({_key(i): _answer(f"a{i}") for i in range(6)})
    (chunk,) = chunk_files(folder)
    _damage(chunk)
    (folder / "chunk-zz-000000.jsonl").write_bytes(b"")  # empty: nothing to say
    with caplog.at_level(logging.WARNING, logger="store.request_cache"):
        kept = read_cache(folder)
    assert sorted(kept) == sorted(_key(i) for i in range(3, 6))
    assert all(a["generated_text"] == f"a{i}" for i, a in ((i, kept[_key(i)]) for i in (3, 4, 5)))
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and str(chunk) in warnings[0] and "3 damaged line(s)" in warnings[0]


def test_answers_are_kept_on_s3_too(s3: S3Server) -> None:
    folder = location(s3.uri("cache-test")) / CACHE_FOLDER
    RequestCache(folder).put({_key(i): _answer(f"a{i}") for i in range(3)})
    kept = RequestCache(folder)
    assert len(kept) == 3 and kept.get(_key(2)) is not None
    assert len(chunk_files(folder)) == 1


def _json_answer(request: Mapping[str, Any]) -> str:
    last = request["messages"][-1]["content"]
    text = last if isinstance(last, str) else last[-1]["text"]
    return json.dumps({"answer": "yes" if text.endswith(("0", "2", "4")) else "no"})


def test_an_http_engine_pays_for_each_answer_once(tmp_path: Path) -> None:
    """A second engine (a rerun's actor) on the same cache sends nothing and gives the same
    rows; a changed sampling setting is another request, sent; a damaged chunk costs
    exactly its damaged rows, answered again correctly."""
    cache = str(tmp_path / CACHE_FOLDER)
    prompts = [f"q{i}" for i in range(8)]
    columns = ("generated_text", "num_input_tokens", "num_generated_tokens", "engine_error")
    with LoopbackServer(answer=_json_answer) as server:
        first = fast_engine(server.base_url, request_cache=cache)(make_batch(prompts))
        assert len(server.requests) == 8
        again = fast_engine(server.base_url, request_cache=cache)(make_batch(prompts))
        assert len(server.requests) == 8  # every answer from the cache: no request
        for column in columns:
            assert list(again[column]) == list(first[column])

        hotter = make_batch(prompts)
        for params in hotter["sampling_params"]:
            params["temperature"] = 0.6
        fast_engine(server.base_url, request_cache=cache)(hotter)
        assert len(server.requests) == 16  # another request: not the cached answer

        for chunk in chunk_files(location(cache)):
            chunk.unlink()
        fast_engine(server.base_url, request_cache=cache)(make_batch(prompts))
        (chunk,) = chunk_files(location(cache))
        _damage(chunk)  # three of the eight rows' lines
        sent = len(server.requests)
        rerun = fast_engine(server.base_url, request_cache=cache)(make_batch(prompts))
        assert len(server.requests) == sent + 3
        for column in columns:
            assert list(rerun[column]) == list(first[column])


def test_an_http_engine_keeps_no_error_and_no_row_without_a_request_key(tmp_path: Path) -> None:
    cache = str(tmp_path / CACHE_FOLDER)

    def fail_q0(request: Mapping[str, Any], attempt: int) -> Reply | None:
        text = request["messages"][-1]["content"][-1]["text"]
        return Reply(400) if text == "q0" else None

    with LoopbackServer(answer=_json_answer, decide=fail_q0) as server:
        fast_engine(server.base_url, request_cache=cache)(make_batch(["q0", "q1"]))
        keyless = make_batch(["q2"])
        del keyless["request_key"]
        fast_engine(server.base_url, request_cache=cache)(keyless)
    assert len(read_cache(location(cache))) == 1  # q1's answer; not q0's error, not q2


def _counting(engine: Any) -> list[int]:
    """Count the rows `engine`'s model decodes, at the model's own `generate`."""
    decoded = [0]
    generate = engine.model.generate

    def counted(**inputs: Any) -> Any:
        decoded[0] += int(inputs["input_ids"].shape[0])
        return generate(**inputs)

    engine.model.generate = counted
    return decoded


def test_an_hf_engine_decodes_each_row_once(tiny_llm_dir: Path, tmp_path: Path) -> None:
    """A second engine (a rerun's actor) on the same cache decodes nothing and gives the same
    rows; a row asking for other max_tokens is another request, decoded."""
    from actors.hf_engine import HFEngine
    from tests.actors.test_hf_engine import _batch, _mixed_rows

    cache = str(tmp_path / CACHE_FOLDER)
    rows = _mixed_rows(6)
    columns = ("generated_text", "num_input_tokens", "num_generated_tokens", "engine_error")
    first = HFEngine(str(tiny_llm_dir), batch_size=2, request_cache=cache)
    decoded = _counting(first)
    out = first(_batch(rows))
    assert decoded == [6] and len(chunk_files(location(cache))) == 1
    rerun = HFEngine(str(tiny_llm_dir), batch_size=2, request_cache=cache)
    decoded = _counting(rerun)
    again = rerun(_batch(rows))
    assert decoded == [0]
    for column in columns:
        assert list(again[column]) == list(out[column])
    rows[0]["sampling_params"]["max_tokens"] -= 1
    rerun(_batch(rows))
    assert decoded == [1]


def test_a_store_that_refuses_the_cache_costs_one_line_not_the_rows(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / CACHE_FOLDER
    folder.write_text("a file where the cache folder should be")
    cache = RequestCache(folder)
    with caplog.at_level(logging.WARNING, logger="store.request_cache"):
        for i in range(3):
            cache.put({_key(i): _answer(f"a{i}")})
    assert len(caplog.records) == 1 and "could not write" in caplog.records[0].getMessage()
