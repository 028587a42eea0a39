"""`evaluate`'s checks before any row is answered: the longest prompts for the context check,
whether anything is left to run (both without Ray), then the engine made ready: results that
every node reaches with the engine's files mirrored for them, and for vllm the prompt canary
on the run's own requests.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from geometry.item import IMAGE_SETUPS
from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.prompts.prompt_canary import CANARY_ROWS
from pipelines.engines.prompts.requests import ITEM_COLUMNS_NEEDED, add_requests, build_messages
from pipelines.engines.stages.options import EngineStage
from pipelines.engines.stages.vllm_path import before_rows
from pipelines.noregeo.run_settings import EvaluateSettings
from store.storage import Location, read_table

# Prompts the pre-flight check renders per setup kind (text, image): the longest by
# characters, since token counts follow characters closely but not exactly.
PREFLIGHT_PROMPTS = 4


def rows_in_run(
    table: pa.Table, tasks: list[str], setups: list[str], limit: int | None
) -> pa.Table:
    """The rows of `table` (items or results) that a run of these tasks/setups/limit covers."""
    keep = pc.and_(
        pc.is_in(table["task"], pa.array(tasks)), pc.is_in(table["setup"], pa.array(setups))
    )
    if limit is not None:
        index = [int(i.rsplit("-", 1)[1]) for i in table["item_id"].to_pylist()]
        keep = pc.and_(keep, pa.array([i < limit for i in index], pa.bool_()))
    return table.filter(keep)


def longest_prompts(
    files: list[Location], tasks: list[str], setups: list[str], limit: int | None, text_only: bool
) -> list[list[dict[str, Any]]]:
    """The messages of the run's longest requests, text and image setups apart, shaped as
    the engine gets them, for the pre-flight context check. Images are read only for the
    chosen rows."""
    columns = ["item_id", "task", "setup", "system_prompt", "prompt"]
    found: list[tuple[int, Location, dict[str, Any]]] = []
    for path in files:
        for row in rows_in_run(read_table(path, columns), tasks, setups, limit).to_pylist():
            found.append((len(row["system_prompt"]) + len(row["prompt"]), path, row))
    prompts = []
    for with_image in (False, True):
        kind = [f for f in found if (f[2]["setup"] in IMAGE_SETUPS) == with_image]
        for _, path, row in sorted(kind, key=lambda f: -f[0])[:PREFLIGHT_PROMPTS]:
            image = _item_image(path, row["item_id"], row["setup"]) if with_image else None
            prompts.append(build_messages(row["system_prompt"], row["prompt"], image, text_only))
    return prompts


def _item_image(path: Location, item_id: str, setup: str) -> bytes | None:
    table = read_table(path, ["item_id", "setup", "image"])
    mask = pc.and_(pc.equal(table["item_id"], item_id), pc.equal(table["setup"], setup))
    images = table.filter(mask)["image"].to_pylist()
    return images[0] if images else None


def _engine_ready(
    files: Sequence[Location], cfg: ModelConfig, run: EvaluateSettings, out: Location
) -> tuple[EvaluateSettings, EngineStage | None, dict[str, Any] | None]:
    """The engine's files where its nodes read them, then for vllm its path up to the first
    row (pipelines.engines.stages.vllm_path.before_rows: a cluster that can never hold the
    engine refuses at once, exit 2; then the canary on the run's own requests, before the
    engine loads). The run's settings with the sources in its engine options, the vllm
    stage that runs the processor the canary checked, and the canary's record (both None:
    not a vllm run)."""
    run = _with_node_sources(cfg, run, out)
    if cfg.engine != "vllm":
        return run, None, None
    stage, canary = before_rows(cfg, run.engine_options, _canary_requests(files, cfg, run))
    return run, stage, canary


def _with_node_sources(cfg: ModelConfig, run: EvaluateSettings, out: Location) -> EvaluateSettings:
    """On a cluster of several nodes: results that every node reaches and can write (else
    UsageError: pipelines.engines.stages.node_reach), and a vllm or hf engine's files
    mirrored there for its nodes (pipelines.engines.stages.node_sources)."""
    from pipelines.engines.stages.node_reach import check_results_store
    from pipelines.engines.stages.node_sources import node_sources

    check_results_store(out, "evaluate")
    if cfg.engine not in ("vllm", "hf"):
        return run
    sources = node_sources(cfg, out)
    if sources is None:
        return run
    opts = dataclasses.replace(run.engine_options, sources=sources)
    return run.model_copy(update={"engine_options": opts})


def _canary_requests(
    files: Sequence[Location], cfg: ModelConfig, run: EvaluateSettings
) -> list[dict[str, Any]]:
    """The request rows the prompt canary checks (pipelines.engines.stages.vllm_path): per
    setup, the first row of each task file until CANARY_ROWS, so the rows ask different
    tasks (answer formats)."""
    rows: list[dict[str, Any]] = []
    wanted = dict.fromkeys(run.setups, CANARY_ROWS)
    for path in files:
        if not any(wanted.values()):
            break
        if path.stem.removeprefix("part-") not in run.tasks:
            continue
        table = rows_in_run(
            read_table(path, ["task", *ITEM_COLUMNS_NEEDED]), run.tasks, run.setups, run.limit
        )
        for setup, left in wanted.items():
            first = table.filter(pc.equal(table["setup"], setup)).slice(0, 1 if left else 0)
            requests = add_requests(
                first, cfg.repo, cfg.revision, run.sampling, text_only=cfg.modality == "text"
            )
            rows += requests.to_pylist()
            wanted[setup] = left - requests.num_rows
    return rows


def _anything_pending(
    files: Sequence[Location],
    cfg: ModelConfig,
    run: EvaluateSettings,
    done: frozenset[str],
    expected: dict[str, int] | None,
) -> bool:
    """Whether any request of the run is not in `done`, found without Ray.

    Fewer finished keys than the run's rows settles it at once (a fresh or partial run);
    otherwise the run's request keys are computed here, as the pipeline would, and looked
    up: the finished keys may belong to other tasks, setups or item tables."""
    if expected is not None and len(done) < sum(expected.values()):
        return True
    for path in files:
        if path.stem.removeprefix("part-") not in run.tasks:
            continue
        rows = rows_in_run(
            read_table(path, ["task", *ITEM_COLUMNS_NEEDED]), run.tasks, run.setups, run.limit
        )
        requests = add_requests(rows, cfg.repo, cfg.revision, run.sampling, with_messages=False)
        if any(key not in done for key in requests["request_key"].to_pylist()):
            return True
    return False
