"""One real model, three engines, the same answers: SmolLM2-135M-Instruct (real weights,
`make real-model`) through `hf` (transformers + xgrammar, in a Ray actor), `vllm` (Ray's
`ray.data.llm` processor, in-process) and `http` (vLLM's own OpenAI server on loopback,
`api_constraint: grammar`) at temperature 0, on every task's items in the text setup.

Asserted per row: every engine gave the model the same prompt token ids (each engine's own
record: hf's tokenisation, the ids Ray's vLLM stage reports, the ids vLLM's server returns
with `return_token_ids`), and they are the ids the model's own chat template gives; every
row is valid. Asserted per pair of engines: parsed answers agree on >= 95% of rows (the
figures are printed; float32 kernels differ between engines, so a near-tie of two tokens
may break differently). Then one GeoBuild round per engine, end to end.

Each engine loads once: the module's one fixture runs them in turn (hf, vllm, then the
server), so no two models compete for the two cores at once.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from actors.contract import prompt_ids_digest
from pipelines.cli import main
from pipelines.engines.prompts.requests import build_messages
from pipelines.geobuild.rows import read_round
from pipelines.noregeo.summarize import load_results
from tests.actors.vllm_server import KEY_ENV, Served, serve
from tests.conftest import SHARED

CONFIG = "smollm2-135m-instruct"  # configs/models/local/, repo from $GEOSEE_REAL_MODEL
ENGINES = ("hf", "vllm", "http")
AGREEMENT = 0.95
# Grammar-ended answers take ~10 tokens; this bounds a runaway, it is not the answer's size.
MAX_TOKENS = 64
# The round's checks are its prompt ids and that each engine answered, not the program's
# length: 64 tokens instead of 256 took this module from 237 to 174 s on 2 idle cores.
GEOBUILD_MAX_TOKENS = 64
GEOBUILD_IDS = "367"
SERVED_NAME = "smollm2"

# Three engine loads (hf, vllm twice: NoReGeo and the GeoBuild round) and a server start:
# 27 min measured on two cores shared with other jobs (load average 30-75).
pytestmark = [pytest.mark.timeout(2400), pytest.mark.slow]


@dataclass(frozen=True)
class Runs:
    """Each engine's NoReGeo rows and its GeoBuild round-1 rows."""

    noregeo: dict[str, pl.DataFrame]
    geobuild: dict[str, pl.DataFrame]


def _http_config(folder: Path, server: Served) -> Path:
    path = folder / "smollm2-http.yaml"
    lines = [
        "name: smollm2-http",
        f"repo: {SERVED_NAME}",
        "revision: local",
        "engine: http",
        "modality: text",
        "setups: [text]",
        "max_model_len: 8192",
        f"api_base: {server.base_url}",
        f"api_key_env: {KEY_ENV}",
        "api_constraint: grammar",
        "local: true",
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(items: Path, engine: str, model: str, out: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """NoReGeo (text setup) and one GeoBuild round of `model` through `engine`."""
    args = ["evaluate", "--items", str(items), "--engine", engine, "--model", model]
    args += ["--setups", "text", "--temperature", "0", "--max-tokens", str(MAX_TOKENS)]
    assert main([*args, "--out", str(out / "noregeo")]) == 0, engine
    args = ["geobuild", "--dataset", str(SHARED / "geobuildbench"), "--engine", engine]
    args += ["--model", model, "--ids", GEOBUILD_IDS, "--max-rounds", "1", "--temperature", "0"]
    args += ["--max-tokens", str(GEOBUILD_MAX_TOKENS), "--out", str(out / "geobuild")]
    assert main(args) == 0, engine
    noregeo = load_results(out / "noregeo")
    rounds = [
        read_round(folder, 1)
        for folder in (out / "geobuild" / "geobuild").glob("model=*")
        if folder.is_dir()
    ]
    assert len(rounds) == 1, engine
    return noregeo, rounds[0]


@pytest.fixture(scope="module")
def runs(
    vllm_ray: Any, few_items: Path, real_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Runs]:
    noregeo: dict[str, pl.DataFrame] = {}
    geobuild: dict[str, pl.DataFrame] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GEOSEE_REAL_MODEL", str(real_model_dir))
        for engine in ("hf", "vllm"):
            out = tmp_path_factory.mktemp(engine)
            noregeo[engine], geobuild[engine] = _run(few_items, engine, CONFIG, out)
    folder = tmp_path_factory.mktemp("http")
    log = folder / "server.log"
    # The model's own context (GeoBuild prompts are long); ~46 KB of KV cache per token.
    with serve(real_model_dir, SERVED_NAME, log, 8192, kv_cache_bytes=1024 * 2**20) as served:
        config = _http_config(folder, served)
        noregeo["http"], geobuild["http"] = _run(few_items, "http", str(config), folder)
    yield Runs(noregeo, geobuild)


def _by_item(runs: Runs, column: str) -> pl.DataFrame:
    """item_id and `column` of each engine, one row per item, engines as columns."""
    frames = [
        runs.noregeo[e].select("item_id", pl.col(column).alias(e)).sort("item_id") for e in ENGINES
    ]
    joined = frames[0]
    for frame in frames[1:]:
        joined = joined.join(frame, on="item_id", how="full", coalesce=True)
    return joined.sort("item_id")


def test_every_engine_answered_every_item_validly(runs: Runs) -> None:
    for engine, df in runs.noregeo.items():
        assert df.height == 50 and df["task"].n_unique() == 25, engine  # 25 tasks x 2 items
        assert set(df["engine"]) == {engine}
        assert df["engine_error"].null_count() == df.height, (engine, df["engine_error"][0])
        invalid = df.filter(~pl.col("valid"))
        assert invalid.height == 0, (engine, invalid.select("item_id", "generated_text").head())
        assert (df["num_generated_tokens"] < MAX_TOKENS).all(), engine  # the grammar ended them


def test_every_engine_sent_the_models_own_prompt_ids(runs: Runs, real_model_dir: Path) -> None:
    """Same digest from all three engines, and it is the digest of the ids the model's own
    tokenizer and chat template give for the row's messages (recomputed here)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(real_model_dir)
    digests = _by_item(runs, "prompt_ids_sha256")
    counts = _by_item(runs, "num_input_tokens")
    assert digests.height == 50 and digests.null_count().sum_horizontal().item() == 0, digests
    rows = runs.noregeo["hf"].sort("item_id")
    for row, digest, count in zip(
        rows.iter_rows(named=True), digests.iter_rows(), counts.iter_rows(), strict=True
    ):
        messages = build_messages(row["system_prompt"], row["prompt"], None, text_only=True)
        ids = tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=True, return_dict=False
        )
        assert digest[0] == row["item_id"]
        assert set(digest[1:]) == {prompt_ids_digest(ids)}, (row["item_id"], digest)
        assert set(count[1:]) == {len(ids)}, (row["item_id"], count)


def test_parsed_answers_agree_between_every_pair_of_engines(runs: Runs) -> None:
    parsed = _by_item(runs, "parsed")
    texts = _by_item(runs, "generated_text")
    n = parsed.height
    for a, b in itertools.combinations(ENGINES, 2):
        same = parsed.filter(pl.col(a) == pl.col(b)).height
        print(f"agreement {a} vs {b}: {same}/{n} = {same / n:.1%}")
        for item in parsed.filter(pl.col(a) != pl.col(b))["item_id"]:
            row = texts.filter(pl.col("item_id") == item).row(0, named=True)
            print(f"  {item}: {a}={row[a]!r} {b}={row[b]!r}")
        assert same / n >= AGREEMENT, (a, b, same, n)
    for engine, df in runs.noregeo.items():
        print(f"accuracy {engine}: {df['correct'].sum()}/{df.height} rows correct")


def test_one_geobuild_round_through_each_engine(runs: Runs) -> None:
    for engine, rows in runs.geobuild.items():
        assert rows.height == 1 and [str(p) for p in rows["problem_id"]] == [GEOBUILD_IDS], engine
        assert rows["engine_error"].null_count() == 1, (engine, rows["engine_error"][0])
        assert rows["generated_text"].null_count() == 0, engine
        assert rows["num_input_tokens"][0] > 0 and rows["num_generated_tokens"][0] > 0, engine
        assert rows["prompt_ids_sha256"].null_count() == 0, engine
    # The same conversation, so the same prompt ids whatever the engine.
    digests = {rows["prompt_ids_sha256"][0] for rows in runs.geobuild.values()}
    assert len(digests) == 1, digests
