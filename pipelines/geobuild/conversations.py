"""A GeoBuild run's bookkeeping: the settings a results folder holds one choice of, the run
record, and each round's requests rebuilt from the rows of the round before on disk
(messages with images by sha256, the reply, the feedback and its figure), so a run started
again resumes where the rows end. The rounds themselves: pipelines.geobuild.rounds.
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any

import polars as pl

from actors.contract import chat_message, image_part, text_part
from geometry.dsl.dataset import Problem
from geometry.dsl.prompts import problem_prompt, system_prompt
from pipelines.engines.models.model_schema import ModelConfig
from pipelines.geobuild.engines import Engine
from pipelines.geobuild.public_prompts import PublicPrompts, load_public_prompts
from pipelines.geobuild.react_protocol import FINAL_DSL_COLUMN, Step, final_dsl
from pipelines.geobuild.react_protocol import messages as public_messages
from pipelines.geobuild.rows import finished_problems, read_round
from pipelines.geobuild.settings import GeoBuildSettings
from pipelines.geobuild.stored_messages import with_images, without_images
from store.errors import UsageError
from store.records import model_dir, write_run_record
from store.settings import SETTINGS_FILE
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


class Conversations:
    """One GeoBuild run's settings and record, and its conversations read back from disk."""

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
