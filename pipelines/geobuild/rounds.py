"""The round-synchronous GeoBuild agent loop on Ray Data.

Round k sends every unsolved conversation through the engine stage, then through a pool of
DSL-executor actors (execute, validate, render, feedback); the driver writes one row per
problem under `<out>/geobuild/model=<slug>/round=<k>/part-*.parquet` (store.held_rows: a
shard at a time, the rest however the round ends). The conversations of round
k+1 are rebuilt from the rows of round k on disk (pipelines.geobuild.conversations), so a
killed run started again resumes at the first unfinished round, skips the problems that
round already holds, and ends with the rows of an uninterrupted run.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from geometry.dsl.dataset import Problem
from pipelines.engines.stages.node_reach import check_results_store
from pipelines.engines.stages.node_sources import node_sources
from pipelines.engines.stages.options import LIGHT_CPUS
from pipelines.engines.stages.vllm_path import before_rows
from pipelines.geobuild.conversations import Conversations
from pipelines.geobuild.engines import close_stage
from pipelines.geobuild.react_protocol import restore_reply, to_public_program
from pipelines.geobuild.rows import RoundWriter, round_dir
from pipelines.terminal.interrupt import kept_on_exit, on_interrupt, saved_rows
from pipelines.terminal.progress import Progress
from store.held_rows import HeldRows
from store.request_cache import CACHE_FOLDER
from store.run_lock import RunLock
from store.settings import check_settings, write_settings


class Loop(Conversations):
    """One GeoBuild run: the rounds that carry out its settings (Conversations)."""

    def run(self, problems: list[Problem]) -> None:
        """Rounds 1..max_rounds; each skips what the results directory already holds."""
        # One writer per results folder (run_lock), taken before anything is read from it.
        # A signal that ends the run releases the lock before its line counts the shards.
        with RunLock(self.root) as lock, kept_on_exit(lock.release_on_signal):
            self.token = lock.token
            self._run_locked(problems)

    def _run_locked(self, problems: list[Problem]) -> None:
        from pipelines.engines.session.ray_session import ensure_ray

        check_settings(self.root, self.settings(), self.checked_settings())
        on_interrupt(saved_rows(self.root))  # Ctrl-C's line counts the rows on disk
        by_id = {p.id: p for p in problems}
        pending = self.pending_round(by_id)
        canary = None
        if pending is not None:
            ensure_ray()
            check_results_store(self.out, "geobuild")  # before the settings and mirrors
            if self.cfg.engine in ("vllm", "hf"):  # several nodes: the files they load
                sources = node_sources(self.cfg, self.out, "geobuild")
                if sources is not None:
                    self.opts = dataclasses.replace(self.opts, sources=sources)
            # The model engines (vllm, hf, http) keep each answer as it comes and ask none
            # twice, whatever ends a round (store.request_cache), as evaluate's do.
            cache = str(self.root / CACHE_FOLDER)
            self.opts = dataclasses.replace(self.opts, request_cache=cache)
            if self.cfg.engine == "vllm":
                # A cluster that can never hold the engine refuses at once; then the first
                # round's requests through the processor (its sources the run's).
                requests = self.requests(pending, by_id)
                # Each round builds its own processor around the resident engine
                # (vllm_resident): only the canary's record is kept.
                _, canary = before_rows(self.cfg, self.opts, requests)
            write_settings(self.root, self.settings())
        self._record(problems, canary)
        if pending is None:
            # A finished run started again: no Ray (15-30 s of start-up) for nothing.
            print(f"nothing to do: {len(problems)} problem(s) already in {self.root}")
            return
        try:
            self.run_rounds(pending, by_id)
        finally:
            close_stage(self.engine.stage)  # the engine is kept across rounds, not runs

    def run_rounds(self, first: int, by_id: dict[str, Problem]) -> None:
        """Rounds `first`..max_rounds; only a round with conversations to run is printed
        (issue 39: "round 2 ... round 5: 0 conversation(s) to run" after every problem had
        ended in round 1)."""
        for round_number in range(first, self.max_rounds + 1):
            requests = self.requests(round_number, by_id)
            if not requests:
                continue
            print(f"round {round_number}: {len(requests)} conversation(s) to run")
            self.run_round(round_number, requests)

    def pending_round(self, by_id: dict[str, Problem]) -> int | None:
        """The first round with a conversation to run, read from the results on disk (no
        Ray); None when every round is done. A round's requests come from the rows of the
        round before, so a later round is known only once every earlier one is complete."""
        for round_number in range(1, self.max_rounds + 1):
            if self.requests(round_number, by_id):
                return round_number
        return None

    def run_round(self, round_number: int, requests: list[dict[str, Any]]) -> int:
        """Engine -> DSL executors -> the driver's shard writer for one round; returns rows
        written."""
        import ray

        from actors.dsl_executor import DSLExecutor

        ds = ray.data.from_items(requests)
        ds = self.engine.stage(ds, self.cfg, self.opts)
        # A quarter CPU, as the engine's light steps: at the default whole CPU it could not
        # start next to vLLM's stage actors and the executors on two CPUs (seen here).
        ds = ds.map_batches(_drop_messages, num_cpus=LIGHT_CPUS)
        if self.prompts is not None:  # the program the public agent parses out of the reply
            ds = ds.map_batches(to_public_program, num_cpus=LIGHT_CPUS)
        ds = ds.map_batches(
            DSLExecutor,
            fn_constructor_kwargs={
                "dataset": self.dataset,
                "lang": self.lang,
                "mode": self.feedback,
                "with_image": self.with_image,
                "max_rounds": self.max_rounds,
                "image_size": self.image_size,
            },
            batch_size=self.opts.batch_size,
            compute=ray.data.ActorPoolStrategy(size=self.executors),
            num_cpus=0.5,
        )
        if self.prompts is not None:
            ds = ds.map_batches(restore_reply, batch_format="pyarrow", num_cpus=LIGHT_CPUS)
        writer = RoundWriter(
            directory=str(round_dir(self.root, round_number).resolve()),
            lock_folder=str(self.root.resolve()),
            token=self.token,
            constants={
                "model": self.cfg.name,
                "revision": self.cfg.revision,
                "engine": self.cfg.engine,
                "feedback_mode": self.feedback,
            },
        )
        # The driver writes the shards, each full one at once and the rest however the round
        # ends: Ctrl-C keeps every conversation the executors finished (issue 39; a Ray step
        # of --shard-rows lost up to that many).
        held = HeldRows(writer, self.shard_rows)
        # A round of a CPU model can take minutes per conversation (issue 39: 2 minutes of
        # silence for one problem): its count shows from the start, a bar on a terminal.
        shown = Progress(len(requests), f"round {round_number}", "conversation")
        written = 0
        with kept_on_exit(held.close):
            try:
                batches = ds.iter_batches(batch_size=None, batch_format="numpy", prefetch_batches=0)
                for batch in batches:
                    rows = writer.rows(batch)
                    written += held.add(rows)
                    shown.update(len(rows))
            finally:
                written += held.flush()
        shown.close()
        return written


def _drop_messages(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The engine has read the messages; their JSON form (images by hash) is what is kept."""
    return {k: v for k, v in batch.items() if k != "messages"}
