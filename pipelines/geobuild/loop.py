"""`geobuild`: the round-synchronous GeoBuild agent loop on Ray Data.

Round k sends every unsolved conversation through the engine stage, then through a pool of
DSL-executor actors (execute, validate, render, feedback); the driver writes one row per
problem under `<out>/geobuild/model=<slug>/round=<k>/part-*.parquet` (store.held_rows: a
shard at a time, the rest however the round ends). The conversations of round
k+1 are rebuilt from the rows of round k on disk (messages with images by sha256, the
reply, the feedback and its figure), so a killed run started again resumes at the first
unfinished round, skips the problems that round already holds, and ends with the rows of
an uninterrupted run.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from actors.contract import chat_message, image_part, text_part
from geometry.dsl.dataset import Problem, load_problems
from geometry.dsl.prompts import FEEDBACK_MODES, problem_prompt, system_prompt
from pipelines.command_line.args import (
    image_size_int,
    output_location,
    positive_int,
    replicas_int,
    seed_int,
)
from pipelines.engines.model_resolution import add_model_arguments, config_engine
from pipelines.engines.model_schema import ModelConfig, ModelConfigError
from pipelines.engines.node_sources import check_shared_results, node_sources
from pipelines.engines.prompt_canary import CanaryError, check_model_prompts
from pipelines.engines.requests import add_sampling_arguments
from pipelines.engines.stages import LIGHT_CPUS, NoGPUError, check_gpus
from pipelines.geobuild.dataset_args import add_dataset_arguments, load_dataset
from pipelines.geobuild.engines import (
    Engine,
    close_stage,
    model_stage,
    resolve_engine,
    valid_engines,
)
from pipelines.geobuild.problem_selection import select_problems, stratified_problems
from pipelines.geobuild.public_prompts import PublicPrompts, load_public_prompts
from pipelines.geobuild.react_protocol import (
    FINAL_DSL_COLUMN,
    PROTOCOLS,
    Step,
    final_dsl,
    restore_reply,
    to_public_program,
)
from pipelines.geobuild.react_protocol import messages as public_messages
from pipelines.geobuild.rows import RoundWriter, finished_problems, read_round, round_dir
from pipelines.geobuild.settings import (
    GEOSEE_MAX_TOKENS,
    PUBLIC_MAX_TOKENS,
    GeoBuildSettings,
    default,
)
from pipelines.geobuild.stored_messages import with_images, without_images
from pipelines.terminal.interrupt import keep_on_exit, on_interrupt, saved_rows
from pipelines.terminal.progress import Progress
from store.errors import UsageError
from store.held_rows import KEEP_WAIT_S, HeldRows
from store.records import model_dir, write_run_record
from store.run_lock import RunLock
from store.settings import SETTINGS_FILE, check_settings, write_settings
from store.storage import Location

BENCHMARK = "geobuild"
# Settings that change what a round asks; a results directory holds one choice of them.
# `protocol` and `public_prompts` are recorded only for --protocol public, so the folders of
# earlier (geosee) runs still match.
FIXED_SETTINGS = (
    "engine", "repo", "revision", "lang", "feedback", "with_image", "sampling", "image_size",
    "max_rounds", "protocol", "public_prompts",
)  # fmt: skip
# Fields added to FIXED_SETTINGS by issue 26: a settings.json written before them lacks them,
# and its folder resumes without their check rather than being refused for a None.
LATER_SETTINGS = ("repo", "max_rounds")


# -- the loop ------------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `geobuild` command's options (defaults: GeoBuildSettings)."""
    add_dataset_arguments(parser)
    # Not argparse choices: an answer baseline gets resolve_engine's reason, not "invalid".
    engines = valid_engines()
    parser.add_argument(
        "--engine",
        default=None,
        metavar="{" + ",".join(engines) + "}",
        help="what answers; default: the engine the model config names",
    )
    add_model_arguments(parser, "model config/checkpoint, hub id, or JSONL file")
    parser.add_argument(
        "--max-rounds", type=positive_int, default=default("max_rounds"),
        help="replies per problem at most",
    )  # fmt: skip
    parser.add_argument(
        "--feedback", default=default("feedback"), choices=FEEDBACK_MODES,
        help="what the next round is told: the error, plus the conditions, plus the figure",
    )  # fmt: skip
    parser.add_argument(
        "--no-image", action="store_true",
        help="never attach the figure (with --protocol public: its vision-off arm)",
    )  # fmt: skip
    parser.add_argument(
        "--protocol", default=default("protocol"), choices=PROTOCOLS,
        help="geosee: our multi-turn chat with feedback; public: the GeoBuildBench ReAct "
        "agent's prompts, 3-step memory and latest figure (needs --public-repo)",
    )  # fmt: skip
    parser.add_argument(
        "--public-repo", default=None, metavar="PATH",
        help="a GeoBuildBench checkout: --protocol public reads its prompts/ files",
    )  # fmt: skip
    parser.add_argument(
        "--stratified-sample", type=positive_int, default=None, metavar="N",
        help="N problems, 70%% solved and 30%% failed in --stratify-from (the public "
        "vision ablation's sample)",
    )  # fmt: skip
    parser.add_argument(
        "--stratify-from", default=None, metavar="PRIOR",
        help="an earlier geobuild --out (or its geobuild/model=NAME folder) whose outcomes "
        "--stratified-sample draws on",
    )  # fmt: skip
    parser.add_argument(
        "--sample-seed", type=seed_int, default=default("sample_seed"),
        help="seed of --stratified-sample",
    )  # fmt: skip
    parser.add_argument(
        "--first", type=positive_int, help="the first N problems only (in data order, after --ids)"
    )
    parser.add_argument("--ids", default=None, help="comma-separated problem ids")
    add_sampling_arguments(
        parser,
        temperature_help="sampling temperature; 0 is greedy (the public GeoBuildBench runner "
        "uses 0)",
        max_tokens_help="tokens a reply may have at most (clamped to what the context "
        f"leaves); default: {GEOSEE_MAX_TOKENS} with --protocol geosee, {PUBLIC_MAX_TOKENS} "
        "(the public runner's) with --protocol public",
        max_tokens_default=None,
    )
    parser.add_argument(
        "--pool-size", type=replicas_int, default=default("pool_size"), help="engine replicas"
    )
    parser.add_argument(
        "--batch-size", type=positive_int, default=default("batch_size"),
        help="rows per engine call",
    )  # fmt: skip
    parser.add_argument(
        "--executors", type=replicas_int, default=default("executors"),
        help="DSL-executor actors",
    )  # fmt: skip
    # Checked here, not in the Ray executors: a bad size must fail before settings.json.
    parser.add_argument(
        "--image-size", type=image_size_int(64), default=default("image_size"), help="figure pixels"
    )
    parser.add_argument(
        "--shard-rows", type=positive_int, default=default("shard_rows"), help="rows per shard"
    )
    parser.add_argument(
        "--out", required=True, type=output_location, metavar="RESULTS",
        help="results root or URI (s3://...); rows go under RESULTS/geobuild",
    )  # fmt: skip


def check_protocol(args: argparse.Namespace) -> None:
    """The public protocol's prompts and the prior run of a stratified sample are readable;
    UsageError naming the flag otherwise. (Which of these flags go together is declared in
    pipelines.command_line.conflicts, which the CLI checks before this runs.)"""
    if args.public_repo is not None:
        load_public_prompts(args.public_repo)  # a missing prompt file: before anything else
    if args.stratify_from is not None:
        from pipelines.geobuild.stratified import prior_folder

        prior_folder(args.stratify_from)  # before the data set is read


def run(args: argparse.Namespace) -> int:
    """Run `geobuild` with parsed options and print its summary; the exit code."""
    check_protocol(args)
    problems = load_dataset(args.dataset, args.lang)
    settings = GeoBuildSettings.from_args(args, str(Path(args.dataset).resolve()))
    chosen = select_problems(problems, settings.ids, settings.limit)
    if settings.stratified_sample is not None and settings.stratify_from is not None:
        chosen = stratified_problems(
            chosen, settings.stratify_from, settings.stratified_sample, settings.sample_seed
        )
    try:  # no --engine: the model config's own (lm-eval's habit)
        engine_name = args.engine or config_engine(args.model)
    except ModelConfigError as err:
        raise UsageError(str(err)) from err
    engine = resolve_engine(engine_name, args.model, args.revision, args.trust_remote_code)
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out} is a file; give a directory")
    try:
        Loop(settings, engine, args.out).run(chosen)
    except (NoGPUError, CanaryError) as err:
        raise UsageError(str(err)) from err
    from pipelines.geobuild.summarize import print_tables, summary_tables

    print_tables(summary_tables(args.out, model=engine.cfg.name))
    from pipelines.geobuild.results_json import write_results_json

    print(f"wrote {write_results_json(args.out, engine.cfg.name)}")
    return 0


class Loop:
    """One GeoBuild run: its settings, and the rounds that carry them out."""

    def __init__(self, settings: GeoBuildSettings, engine: Engine, out: Location) -> None:
        self.run_settings, self.engine = settings, engine
        self.cfg: ModelConfig = engine.cfg
        self.dataset, self.lang, self.feedback = settings.dataset, settings.lang, settings.feedback
        self.max_rounds = settings.max_rounds
        self.sampling = settings.sampling.for_model(self.cfg).model_dump()
        # The figure goes only to image-text models, and only with full feedback.
        self.with_image = (
            settings.attach_image and self.cfg.modality == "image-text" and self.feedback == "full"
        )
        self.protocol = settings.protocol
        self.prompts: PublicPrompts | None = None
        if self.protocol == "public":
            if settings.public_repo is None:
                raise UsageError("--protocol public needs --public-repo PATH")
            self.prompts = load_public_prompts(settings.public_repo)
        self.opts, self.executors = settings.engine_options(), settings.executors
        self.image_size, self.shard_rows = settings.image_size, settings.shard_rows
        self.out = out
        self.root = model_dir(out, BENCHMARK, self.cfg.name)
        self.token: str | None = None  # the run lock's, while `run` holds it
        self.text_only = self.cfg.modality == "text"

    def settings(self) -> dict[str, Any]:
        """What changes a round's requests: one choice of it per results folder."""
        return {
            "engine": self.cfg.engine,
            "repo": self.cfg.repo,
            "revision": self.cfg.revision,
            "lang": self.lang,
            "feedback": self.feedback,
            "with_image": self.with_image,
            "sampling": self.sampling,
            "image_size": self.image_size,
            # "round k of N" is in every prompt, and a longer run continues conversations.
            "max_rounds": self.max_rounds,
        } | self.protocol_settings()

    def protocol_settings(self) -> dict[str, Any]:
        """The public protocol and its prompt files' digest; nothing for ours (FIXED_SETTINGS)."""
        if self.prompts is None:
            return {}
        return {"protocol": self.protocol, "public_prompts": self.prompts.digest}

    def checked_settings(self) -> tuple[str, ...]:
        """FIXED_SETTINGS, less the LATER_SETTINGS a folder's older settings.json lacks."""
        try:
            stored = json.loads((self.root / SETTINGS_FILE).read_text())
        except (OSError, ValueError):  # absent or unreadable: check_settings decides
            return FIXED_SETTINGS
        if not isinstance(stored, dict):
            return FIXED_SETTINGS
        return tuple(k for k in FIXED_SETTINGS if k in stored or k not in LATER_SETTINGS)

    def run(self, problems: list[Problem]) -> None:
        """Rounds 1..max_rounds; each skips what the results directory already holds."""
        # One writer per results folder (run_lock), taken before anything is read from it.
        with RunLock(self.root) as lock:
            self.token = lock.token
            self._run_locked(problems)

    def _run_locked(self, problems: list[Problem]) -> None:
        from pipelines.engines.ray_session import ensure_ray

        check_settings(self.root, self.settings(), self.checked_settings())
        on_interrupt(saved_rows(self.root))  # Ctrl-C's line counts the rows on disk
        by_id = {p.id: p for p in problems}
        pending = self.pending_round(by_id)
        canary = None
        if pending is not None:
            ensure_ray()
            check_shared_results(self.out, "geobuild")
            if self.cfg.engine in ("vllm", "hf"):  # several nodes: the files they load
                sources = node_sources(self.cfg, self.out, "geobuild")
                if sources is not None:
                    self.opts = dataclasses.replace(self.opts, sources=sources)
            if self.cfg.engine == "vllm":
                # A cluster that can never hold the engine refuses at once; then the first
                # round's requests through the processor (its sources the run's).
                check_gpus(self.cfg)
                requests = self.requests(pending, by_id)
                canary = check_model_prompts(self.cfg, self.opts, requests)
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

    def _record(self, problems: list[Problem], canary: dict[str, Any] | None = None) -> None:
        """The run record; `canary`: the vllm prompt canary's record (prompt_canary)."""
        canary_field = {} if canary is None else {"prompt_canary": canary}
        write_run_record(
            self.root,
            {
                "benchmark": BENCHMARK,
                "model": self.cfg.model_dump(),
                **self.settings(),
                "max_rounds": self.max_rounds,
                "dataset": self.dataset,
                "run_settings": self.run_settings.model_dump(mode="json"),
                "problems": [
                    {"id": p.id, "category": p.category, "difficulty": p.difficulty}
                    for p in problems
                ],
                "argv": sys.argv,
                **canary_field,
            },
        )

    def requests(self, round_number: int, by_id: dict[str, Problem]) -> list[dict[str, Any]]:
        """Request rows of a round: unsolved conversations this round does not hold yet."""
        if self.prompts is not None:
            return self.public_requests(round_number, by_id, self.prompts)
        done = finished_problems(self.root, round_number)
        if round_number == 1:
            conversations = {pid: self.opening(p) for pid, p in by_id.items()}
        else:
            conversations = self.continued(round_number - 1, set(by_id))
        return [
            self.request(by_id[pid], round_number, messages)
            for pid, messages in conversations.items()
            if pid not in done
        ]

    def public_requests(
        self, round_number: int, by_id: dict[str, Problem], prompts: PublicPrompts
    ) -> list[dict[str, Any]]:
        """--protocol public: each unfinished problem's next iteration, its prompt rebuilt
        from the steps earlier rounds recorded (react_protocol)."""
        done = finished_problems(self.root, round_number)
        steps = self.public_steps(round_number - 1, set(by_id))
        out = []
        for pid, problem in by_id.items():
            past = steps.get(pid, [])
            if pid in done or (round_number > 1 and not past):
                continue
            if past and (past[-1].iteration != round_number - 1 or past[-1].ends_problem):
                continue
            asked = public_messages(
                problem, past, prompts, vision=self.with_image, text_only=self.text_only
            )
            request = self.request(problem, round_number, asked)
            out.append(request | {FINAL_DSL_COLUMN: final_dsl(past)})
        return out

    def public_steps(self, last: int, ids: set[str]) -> dict[str, list[Step]]:
        """The steps of rounds 1..last by problem, in round order (figures: round `last` only,
        the one figure the public agent sends)."""
        steps: dict[str, list[Step]] = {}
        for k in range(1, last + 1):
            rows = read_round(self.root, k, with_images=self.with_image and k == last)
            for row in rows.iter_rows(named=True):
                if row["problem_id"] in ids:
                    steps.setdefault(row["problem_id"], []).append(Step.of_row(row))
        return steps

    def opening(self, problem: Problem) -> list[dict[str, Any]]:
        """A problem's first messages: the system prompt and the problem."""
        return [
            chat_message("system", [text_part(system_prompt())], self.text_only),
            chat_message("user", [text_part(problem_prompt(problem, self.lang))], self.text_only),
        ]

    def continued(self, previous: int, ids: set[str]) -> dict[str, list[dict[str, Any]]]:
        """Round `previous`'s unsolved conversations, each with its reply and feedback."""
        rows = read_round(self.root, previous, with_images=self.with_image)
        images = self.figures(previous) if self.with_image else {}
        out: dict[str, list[dict[str, Any]]] = {}
        for row in rows.filter(~pl.col("success")).iter_rows(named=True):
            if row["problem_id"] not in ids:
                continue
            messages = [with_images(m, images) for m in json.loads(row["messages_json"])]
            reply = [text_part(row["generated_text"] or "")]
            messages.append(chat_message("assistant", reply, self.text_only))
            feedback = [text_part(row["feedback_text"])]
            if row.get("feedback_image") is not None:
                feedback.insert(0, image_part(row["feedback_image"]))
            messages.append(chat_message("user", feedback, self.text_only))
            out[row["problem_id"]] = messages
        return out

    def figures(self, last: int) -> dict[str, bytes]:
        """Feedback figures of rounds 1..last by sha256, to rebuild earlier image parts."""
        found: dict[str, bytes] = {}
        for k in range(1, last + 1):
            rows = read_round(self.root, k, with_images=True)
            for sha, png in zip(rows["feedback_image_sha256"], rows["feedback_image"], strict=True):
                if sha is not None:
                    found[sha] = png
        return found

    def request(
        self, problem: Problem, round_number: int, messages: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """One request row; its key covers the problem, round, model, messages and sampling."""
        stored = json.dumps([without_images(m) for m in messages], ensure_ascii=False)
        key = {
            "problem": [problem.id, round_number],
            "model": [self.cfg.repo, self.cfg.revision],
            "messages": stored,
            "sampling_params": self.sampling,
        }
        return {
            "problem_id": problem.id,
            "round": round_number,
            "category": problem.category,
            "difficulty": problem.difficulty,
            "request_key": hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest(),
            "messages": messages,
            "messages_json": stored,
            "sampling_params": self.sampling,
        }

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
        keep_on_exit(lambda: held.flush(wait_s=KEEP_WAIT_S))
        # A round of a CPU model can take minutes per conversation (issue 39: 2 minutes of
        # silence for one problem): its count shows from the start, a bar on a terminal.
        shown = Progress(len(requests), f"round {round_number}", "conversation")
        written = 0
        try:
            batches = ds.iter_batches(batch_size=None, batch_format="numpy", prefetch_batches=0)
            for batch in batches:
                rows = writer.rows(batch)
                written += held.add(rows)
                shown.update(len(rows))
        finally:
            written += held.flush()
            keep_on_exit(None)
        shown.close()
        return written


def _drop_messages(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The engine has read the messages; their JSON form (images by hash) is what is kept."""
    return {k: v for k, v in batch.items() if k != "messages"}


# -- the sweep's entry ---------------------------------------------------------------------
def sweep_model(
    cfg: ModelConfig,
    out: Location,
    limit: int | None,
    *,
    max_rounds: int | None = None,
    max_tokens: int | None = None,
) -> int:
    """GeoBuild for one sweep model with GeoBuildSettings' defaults; returns rows written.

    `sweep --benchmarks geobuild` calls this once per model with the materialised config
    (local repos already filled in), so the config is used as given, never re-resolved by
    name. The data set is `$GEOBUILD_DATASET`, else `<repo>/../shared/geobuildbench`;
    `limit` keeps the first N problems. `max_rounds` and `max_tokens` override the
    defaults (tests use them to keep a CPU run short). NoReGeo's answer baselines have no
    GeoBuild program: they write nothing and return 0.
    """
    import os

    from pipelines.engines.engine_kinds import BASELINES

    if cfg.engine in BASELINES:
        print(f"GeoBuild not run for {cfg.name}: {cfg.engine} is a NoReGeo answer baseline")
        return 0
    beside_repo = Path(__file__).resolve().parents[3] / "shared" / "geobuildbench"
    dataset = Path(os.environ.get("GEOBUILD_DATASET") or beside_repo)
    if not dataset.exists():
        raise FileNotFoundError(
            f"GeoBuild data not found at {dataset}; set GEOBUILD_DATASET to the directory "
            "holding geoqa3_dataset_en.json"
        )
    settings = GeoBuildSettings(dataset=str(dataset.resolve()), limit=limit)
    if max_rounds is not None:
        settings = settings.model_copy(update={"max_rounds": max_rounds})
    if max_tokens is not None:
        sampling = settings.sampling.model_copy(update={"max_tokens": max_tokens})
        settings = settings.model_copy(update={"sampling": sampling})
    problems = select_problems(load_problems(dataset, settings.lang), None, limit)
    loop = Loop(settings, Engine(cfg, model_stage(cfg.engine)), out)
    rounds = range(1, loop.max_rounds + 1)
    before = sum(read_round(loop.root, k).height for k in rounds)
    loop.run(problems)
    return sum(read_round(loop.root, k).height for k in rounds) - before
