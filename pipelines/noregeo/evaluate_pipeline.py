"""`evaluate`'s run: items -> request rows -> engine -> parse and score -> Parquet shards.

A lazy Ray Data pipeline; nothing is materialised before the shard writer. Finished request
keys are skipped, so a killed run started again completes the same result set, and the hf
and http engines answer from the model folder's request cache what a cut-short run was
already answered (store.request_cache): no answer is paid for twice.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipelines.engines.models.engine_kinds import BASELINES
from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.prompts.requests import add_requests
from pipelines.engines.stages.engine_stages import BASELINE_STAGES, STAGES
from pipelines.engines.stages.options import LIGHT_CPUS, EngineStage
from pipelines.engines.stages.placement_groups import removed_when_done
from pipelines.noregeo.baseline_step import AnswerScoreWrite, baseline_engine, score_block
from pipelines.noregeo.evaluate_preflight import (
    _anything_pending,
    _engine_ready,
    rows_in_run,
)
from pipelines.noregeo.folder_settings import (
    ITEM_PREFIX,
    check_folder_settings,
    grammar_hashes,
    settings,
)
from pipelines.noregeo.generate import MANIFEST, read_manifest
from pipelines.noregeo.results import ShardWriter
from pipelines.noregeo.run_settings import EXPECTED, EvaluateSettings, expected_rows
from pipelines.terminal.interrupt import kept_on_exit
from pipelines.terminal.progress import Progress
from store.held_rows import HeldRows
from store.records import finished_keys, model_dir, write_run_record
from store.request_cache import CACHE_FOLDER
from store.run_lock import RunLock
from store.settings import write_settings
from store.storage import Location, location, read_table

BENCHMARK = "noregeo"


def item_reader(tasks: list[str], setups: list[str], limit: int | None) -> Any:
    """Ray Data step: an item shard path in, its rows of the chosen tasks/setups out.

    Reading by our own step (not `read_parquet`) keeps its CPU request fractional.
    """

    def read(batch: dict[str, np.ndarray]) -> pa.Table:
        tables = [read_table(location(str(path))) for path in batch["path"]]
        return rows_in_run(pa.concat_tables(tables), tasks, setups, limit)

    return read


def _drop_done(done: frozenset[str]) -> Any:
    def drop(batch: pa.Table) -> pa.Table:
        keep = [k not in done for k in batch.column("request_key").to_pylist()]
        return batch.filter(pa.array(keep, pa.bool_()))

    return drop


def evaluate(
    files: Sequence[Location],
    cfg: ModelConfig,
    run: EvaluateSettings,
    out: Location,
    engine_stage: EngineStage | None = None,
    context: dict[str, Any] | None = None,
) -> int:
    """Run the pipeline; returns the number of rows written by this call.

    `context` is the pre-flight context check's record (`preflight.ContextReport.record`),
    kept in the run record: the context length and how max_tokens is clamped to it.
    """
    root = model_dir(out, BENCHMARK, cfg.name)
    # The model's own sampling (its authors' advice, its thinking budget), recorded as asked.
    run = run.model_copy(update={"sampling": run.sampling.for_model(cfg)})
    # The lock comes before the finished-keys scan: once it is held, no other run (nor a
    # late writer of a dead one) adds rows, so the scan stays true for the whole run.
    # A signal that ends the run releases the lock before its line counts the shards.
    with RunLock(root) as lock, kept_on_exit(lock.release_on_signal):
        items = files[0].parent if files else None
        manifest = (
            read_manifest(items, keys=("counts",))
            if items is not None and (items / MANIFEST).is_file()
            else None
        )
        ours = settings(cfg, run.sampling, manifest)
        if check_folder_settings(root, ours):
            write_settings(root, ours)  # rebuilt: the records agree with ours, checked above
        done = frozenset(finished_keys(root, retry=run.retry_errors))
        expected = (
            expected_rows(manifest, run.tasks, run.setups, run.limit)
            if manifest is not None
            else None
        )
        record = {
            "benchmark": BENCHMARK,
            "model": cfg.model_dump(),
            **run.model_dump(mode="json"),
            "grammar_sha256": grammar_hashes(),
            "items": {k: v for k, v in ours.items() if k.startswith(ITEM_PREFIX)},
            "rows_already_done": len(done),
            "context": context,
            "argv": sys.argv,
            EXPECTED: expected,
        }
        if not _anything_pending(files, cfg, run, done, expected):
            # A finished run started again: no Ray (15-30 s of start-up) for nothing. The
            # record is still written: it holds this run's settings and expectations.
            write_run_record(root, record)
            return 0
        from pipelines.engines.session.ray_session import ensure_ray

        ensure_ray()
        # The model engines keep each answer in the model folder's request cache as it comes,
        # and answer from it: a run cut short pays for none twice (store.request_cache).
        cache = str(root.resolve() / CACHE_FOLDER)
        opts = dataclasses.replace(run.engine_options, request_cache=cache)
        run = run.model_copy(update={"engine_options": opts})
        run, checked, canary = _engine_ready(files, cfg, run, out)
        if canary is not None:
            record["prompt_canary"] = canary
        engine_stage = engine_stage or checked  # a caller's own stage still wins (benches)
        writer = ShardWriter(
            str(root.resolve()), cfg.name, cfg.revision, cfg.engine, token=lock.token
        )
        ds = _pipeline(files, cfg, run, done, engine_stage, writer)
        # Only now, with every check passed: a refused start leaves no settings behind.
        write_settings(root, ours)
        write_run_record(root, record)
        # The finished keys may belong to other tasks or setups: then the total is unknown.
        pending = sum(expected.values()) - len(done) if expected is not None else 0
        shown = Progress(pending if pending > 0 else None, f"evaluate {cfg.name}", "row")
        # A baseline's step writes its shards itself; an engine's scored rows come here.
        held = None if _writes_in_step(cfg, engine_stage) else HeldRows(writer, run.shard_rows)
        kept = contextlib.nullcontext() if held is None else kept_on_exit(held.close)
        written = 0
        # Tensor-parallel engines' placement groups go with the model's dataset.
        with removed_when_done(), kept:
            try:
                # No prefetch: with Ray's default of 1 the driver got a block only once the
                # next was ready too (measured: an engine's first block at 20 s, not 12 s).
                blocks = ds.iter_batches(
                    batch_size=None, batch_format="pyarrow", prefetch_batches=0
                )
                for batch in blocks:
                    if held is None:
                        rows = int(pc.sum(batch["rows"]).as_py() or 0)
                        written += rows
                    else:
                        rows = batch.num_rows
                        written += held.add(batch.to_pylist())
                    shown.update(rows)
            finally:
                # However the run ends (done, an error, Ctrl-C), what was answered is kept.
                if held is not None:
                    written += held.flush()
        shown.close()
        return written


def _pipeline(
    files: Sequence[Location],
    cfg: ModelConfig,
    run: EvaluateSettings,
    done: frozenset[str],
    engine_stage: EngineStage | None,
    writer: ShardWriter,
) -> Any:
    """The lazy dataset: items -> requests (less the `done` keys) -> engine -> score ->
    shards. Building the engine stage refuses (no GPUs for vllm, no API key) here, before
    anything is written."""
    import ray

    wanted = [f for f in files if f.stem.removeprefix("part-") in run.tasks]
    paths = ray.data.from_items([{"path": str(f)} for f in wanted], override_num_blocks=len(wanted))
    light: dict[str, Any] = {"num_cpus": LIGHT_CPUS, "batch_format": "pyarrow"}
    ds = paths.map_batches(
        item_reader(run.tasks, run.setups, run.limit), batch_size=1, num_cpus=LIGHT_CPUS
    )
    ds = ds.map_batches(
        add_requests,  # type: ignore[arg-type]  # Ray's stub does not know fn_kwargs
        fn_kwargs={
            "model": cfg.repo,
            "revision": cfg.revision,
            "sampling": run.sampling,
            "with_messages": cfg.engine not in BASELINES,
            "text_only": cfg.modality == "text",
        },
        **light,
    )
    if done:
        ds = ds.map_batches(_drop_done(done), **light)
    stage = engine_stage or STAGES[cfg.engine]
    opts = run.engine_options
    if _writes_in_step(cfg, engine_stage):
        # One step answers, scores and writes each shard's rows, so shards land as the run
        # goes: apart, Ray buffers a fused task's output into one block per item file, and
        # the writer saw every row only when the file was done (baseline_step).
        step = AnswerScoreWrite(
            baseline_engine(cfg.engine, opts.baseline_delay_s), opts.batch_size, writer
        )
        return ds.map_batches(step, batch_size=run.shard_rows, **light)
    ds = stage(ds, cfg, opts)
    # Scored, each engine batch goes to the driver, which writes the shards (HeldRows).
    return ds.map_batches(score_block, batch_size=None, **light)


def _writes_in_step(cfg: ModelConfig, engine_stage: EngineStage | None) -> bool:
    """Whether the run is a baseline's, whose one step answers, scores and writes."""
    stage = engine_stage or STAGES[cfg.engine]
    return stage is BASELINE_STAGES.get(cfg.engine)
