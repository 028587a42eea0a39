"""The study at full size: `summarize`, `geobuild-summarize`, `report` and the sample pages on
synthetic results of 5, 15 and 45 models, locally and on S3 (issue 50).

The results are well formed because they are made from real ones: the bench runs the real
`geosee generate` (the paper's 100 items per task x 3 setups, 7,500 rows) and the real
`evaluate` of the `oracle` and `random` baselines on them, and one real `geobuild --engine
solver` on three problems. Each synthetic model is then a copy of those rows under its own
name, engine `hf` (a model under test) and request keys: per row, with the model's set
accuracy the oracle's answer (right), else the random baseline's (right by chance only), a
few invalid outputs and engine errors (each scored by the real scorer), written with the
real shard writer in the random run's shard layout, with its run record, settings, results
JSON and per-sample logs (`evaluate --log-samples`). GeoBuild: every problem of the data
set over up to three rounds, solved at the model's accuracy per round.

Each command runs in its own process under `/usr/bin/time -v`: wall seconds and the peak
resident memory (the largest of the process and the children it waited for). S3 is moto's
server on loopback (tests/pipelines/s3_server.py), the results copied there first. The
table gives the growth from the fewest to the most models as a ratio.

Usage: python -m bench.study_scale [--models 5,15,45] [--quick] [--work DIR] [--no-s3]
(`--quick`: 4 items per task, 40 GeoBuild problems, models 2,4; for tests and a first look.)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from geometry.dsl.dataset import load_problems
from pipelines.geobuild.rows import RESULT_SCHEMA as GEOBUILD_SCHEMA
from pipelines.noregeo.results import RESULT_SCHEMA
from pipelines.noregeo.sample_log import write_sample_logs
from pipelines.noregeo.scoring import score_row
from pipelines.noregeo.summarize import load_results
from store.atomic import write_parquet_atomic
from store.records import model_slug

REPO = Path(__file__).resolve().parents[1]
DATASET = REPO.parent / "shared" / "geobuildbench"
GEOSEE = [sys.executable, "-m", "pipelines"]
INVALID_SHARE = 0.03  # answered, but not the answer's JSON
ERROR_SHARE = 0.005  # requests that got no answer
MAX_ROUNDS = 3


def _run(args: list[str], env: dict[str, str] | None = None) -> str:
    """A geosee command that must work; its output (stdout and stderr)."""
    done = subprocess.run(
        args, cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=3600
    )
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout + done.stderr


def base_runs(work: Path, per_task: int) -> tuple[Path, Path, Path]:
    """(items, base results, geobuild template), each made once and kept in `work`."""
    items, base, solver = work / f"items-{per_task}", work / f"base-{per_task}", work / "solver"
    if not (items / "manifest.json").is_file():
        shutil.rmtree(items, ignore_errors=True)
        _run([*GEOSEE, "generate", "--out", str(items), "--per-task", str(per_task)])
    for engine in ("oracle", "random"):
        if not (base / "noregeo" / f"model={engine}" / "results.json").is_file():
            _run([*GEOSEE, "evaluate", "--items", str(items), "--engine", engine,
                  "--model", engine, "--out", str(base)])  # fmt: skip
    if not (solver / "geobuild" / "model=solver" / "results.json").is_file():
        _run([*GEOSEE, "geobuild", "--dataset", str(DATASET), "--engine", "solver",
              "--model", str(DATASET), "--ids", "367,368,370", "--max-rounds", str(MAX_ROUNDS),
              "--out", str(solver)])  # fmt: skip
    return items, base, solver


def model_names(count: int) -> list[str]:
    """`count` model names shaped like real ones (org/family-size), all different."""
    families = ["qwen", "llava", "phi", "gemma", "idefics", "internvl", "pixtral", "smol", "molmo"]
    return [
        f"org{i % 5}/{families[i % len(families)]}-{1 + i // len(families)}.{i % 7}b-instruct"
        for i in range(count)
    ]


def accuracies(count: int, seed: int = 0) -> np.ndarray:
    """Each model's share of oracle answers: spread over 0.2-0.9, in a seeded order."""
    return np.random.default_rng(seed).permutation(np.linspace(0.2, 0.9, count))


def _variants(oracle: pl.DataFrame, random: pl.DataFrame) -> pl.DataFrame:
    """Per request of the random run: its row, with the oracle's answer and an invalid one
    beside it, each scored by the real scorer (so every variant is a row evaluate writes)."""
    keep = ["item_id", "setup", "generated_text", "parsed", "valid", "correct", "parse_error",
            "abs_error", "sq_error"]  # fmt: skip
    right = oracle.select(keep).rename({c: f"right_{c}" for c in keep[2:]})
    rows = random.join(right, on=["item_id", "setup"], how="left")
    bad = [
        score_row("I think the answer is", a, t, o or [])
        for a, t, o in rows.select("answer", "answer_type", "options").iter_rows()
    ]
    return rows.with_columns(
        pl.lit("I think the answer is").alias("bad_generated_text"),
        *[pl.Series(f"bad_{k}", [b[k] for b in bad]) for k in bad[0]],
    )


def _model_rows(
    rows: pl.DataFrame, model: str, accuracy: float, rng: np.random.Generator
) -> pl.DataFrame:
    """One synthetic model's rows: the oracle's answer at `accuracy`, else the random
    baseline's, then a few invalid outputs and engine errors."""
    draw = rng.random(rows.height)
    right = pl.Series(draw < accuracy)
    bad = pl.Series((draw >= accuracy) & (draw < accuracy + INVALID_SHARE))
    failed = pl.Series(rng.random(rows.height) < ERROR_SHARE)
    scored = ["generated_text", "parsed", "valid", "correct", "parse_error", "abs_error",
              "sq_error"]  # fmt: skip
    picked = [
        pl.when(right).then(pl.col(f"right_{c}")).when(bad).then(pl.col(f"bad_{c}"))
        .otherwise(pl.col(c)).alias(c)
        for c in scored
    ]  # fmt: skip
    frame = rows.with_columns(*picked).with_columns(
        pl.lit(model).alias("model"),
        pl.lit(hashlib.sha256(model.encode()).hexdigest()[:40]).alias("revision"),
        pl.lit("hf").alias("engine"),
        (pl.col("request_key") + model)
        .map_elements(lambda k: hashlib.sha256(k.encode()).hexdigest(), return_dtype=pl.String)
        .alias("request_key"),
        pl.when(failed).then(pl.lit("synthetic: the engine timed out")).otherwise(None)
        .alias("engine_error"),
        (pl.col("num_generated_tokens") + 12).alias("num_generated_tokens"),
    )  # fmt: skip
    failed_text = pl.when(failed).then(None)
    return frame.with_columns(
        failed_text.otherwise(pl.col("generated_text")).alias("generated_text"),
        failed_text.otherwise(pl.col("parsed")).alias("parsed"),
    )


def write_noregeo(base: Path, out: Path, names: list[str], seed: int = 0) -> None:
    """Every synthetic model's NoReGeo shards (the random run's layout), run record,
    settings, results JSON and sample logs under `out`."""
    oracle, random = load_results(base, "oracle"), load_results(base, "random")
    rows = _variants(oracle, random)
    source = base / "noregeo" / "model=random"
    layout = {
        shard.relative_to(source): set(pl.read_parquet(shard, columns=["request_key"])[
            "request_key"].to_list())
        for shard in sorted(source.rglob("part-*.parquet"))
    }  # fmt: skip
    record_file = sorted((source / "runs").glob("*.json"))[0]
    rng = np.random.default_rng(seed)
    for name, accuracy in zip(names, accuracies(len(names), seed), strict=True):
        folder = out / "noregeo" / f"model={model_slug(name)}"
        frame = _model_rows(rows, name, float(accuracy), rng)
        keys = random["request_key"].to_list()
        frame = frame.with_columns(pl.Series("_source", keys))
        for shard, members in layout.items():
            part = frame.filter(pl.col("_source").is_in(list(members))).drop("_source")
            table = pa.Table.from_pylist(part.select(RESULT_SCHEMA.names).to_dicts(),
                                         schema=RESULT_SCHEMA)  # fmt: skip
            digest = hashlib.sha256("".join(sorted(part["request_key"])).encode()).hexdigest()
            write_parquet_atomic(folder / shard.parent / f"part-{digest[:24]}.parquet", table)
        record = json.loads(record_file.read_text())
        record["argv"] = [a if a != "random" else name for a in record["argv"]]
        record["model"] = {**record["model"], "name": name, "engine": "hf", "repo": name,
                           "weights": "real"}  # fmt: skip
        (folder / "runs").mkdir(parents=True, exist_ok=True)
        (folder / "runs" / record_file.name).write_text(json.dumps(record, indent=2))
        settings = json.loads((source / "settings.json").read_text())
        (folder / "settings.json").write_text(json.dumps({**settings, "engine": "hf",
                                                          "repo": name}))  # fmt: skip
        shutil.copy(source / "results.json", folder / "results.json")
        write_sample_logs(frame.drop("_source"), name, out / "samples")


def write_geobuild(solver: Path, out: Path, names: list[str], problems: int, seed: int = 0) -> None:
    """Every synthetic model's GeoBuild rounds: each problem of the data set (the first
    `problems`) tried until solved or MAX_ROUNDS, solved at the model's accuracy a round."""
    source = solver / "geobuild" / "model=solver"
    template = pl.read_parquet(source / "round=1").row(0, named=True)
    record_file = sorted((source / "runs").glob("*.json"))[0]
    chosen = load_problems(DATASET)[:problems]
    rng = np.random.default_rng(seed + 1)
    for name, accuracy in zip(names, accuracies(len(names), seed), strict=True):
        folder = out / "geobuild" / f"model={model_slug(name)}"
        pending = chosen
        for round_number in range(1, MAX_ROUNDS + 1):
            rows, still = [], []
            for problem in pending:
                solved = bool(rng.random() < accuracy)
                verdict = json.loads(template["verdict"]) | {
                    "id": problem.id, "success": solved, "success_public": solved,
                    "failed_conditions": [] if solved else [{"type": "perpendicular"}],
                    "missing_objects": [] if solved else ["segment AB"],
                }  # fmt: skip
                rows.append(template | {
                    "problem_id": problem.id, "round": round_number,
                    "category": problem.category, "difficulty": problem.difficulty,
                    "model": name, "revision": "synthetic", "engine": "hf",
                    "request_key": hashlib.sha256(f"{name}/{problem.id}/{round_number}"
                                                  .encode()).hexdigest(),
                    "verdict": json.dumps(verdict), "success": solved,
                    "success_public": solved, "condition_score": 1.0 if solved else 0.5,
                    "partial_score": 1.0 if solved else 0.65,
                    "error_category": None if solved else "geometric",
                    "error_category_public": None if solved else "other_error",
                })  # fmt: skip
                if not solved:
                    still.append(problem)
            for start in range(0, len(rows), 64):  # batches of 64 rows, as the loop writes
                batch = rows[start : start + 64]
                digest = hashlib.sha256("".join(sorted(r["request_key"] for r in batch))
                                        .encode()).hexdigest()  # fmt: skip
                write_parquet_atomic(
                    folder / f"round={round_number}" / f"part-{digest[:24]}.parquet",
                    pa.Table.from_pylist(batch, schema=GEOBUILD_SCHEMA),
                )
            pending = still
            if not pending:
                break
        record = json.loads(record_file.read_text()) | {"engine": "hf", "max_rounds": MAX_ROUNDS}
        record["model"] = {**record["model"], "name": name, "engine": "hf", "weights": "real"}
        record["problems"] = [{"id": p.id, "category": p.category, "difficulty": p.difficulty}
                              for p in chosen]  # fmt: skip
        (folder / "runs").mkdir(parents=True, exist_ok=True)
        (folder / "runs" / record_file.name).write_text(json.dumps(record, indent=2))
        shutil.copy(source / "settings.json", folder / "settings.json")


def measure(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, peak resident MiB of the process and its children) of one command,
    run under /usr/bin/time -v; exits naming the command when it fails."""
    done = subprocess.run(["/usr/bin/time", "-v", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", done.stderr)
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    assert wall is not None and peak is not None, done.stderr[-2000:]
    hours, minutes, seconds = int(wall.group(1) or 0), int(wall.group(2)), float(wall.group(3))
    return hours * 3600 + minutes * 60 + seconds, int(peak.group(1)) / 1024


def samples_only(results: str, out: str) -> None:
    """The sample pages alone (what `report` writes for them), for timing apart."""
    from pipelines.report.provenance import run_records
    from pipelines.report.samples import samples_page
    from store.storage import location

    where = location(results)
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    samples_page(load_results(where), run_records(where), target)


def steps(results: str, out: Path) -> dict[str, list[str]]:
    """The commands the bench times, on a results location (a folder or a URI)."""
    return {
        "summarize": [*GEOSEE, "summarize", results, "--all"],
        "geobuild-summarize": [*GEOSEE, "geobuild-summarize", results, "--all"],
        "report": [*GEOSEE, "report", results, "--out", str(out / "report")],
        "report (again, nothing new)": [*GEOSEE, "report", results, "--out", str(out / "report")],
        "samples pages": [
            sys.executable,
            "-m",
            "bench.study_scale",
            "--samples-only",
            results,
            str(out / "samples-only"),
        ],  # fmt: skip
    }


def upload(folder: Path, server: Any, prefix: str) -> str:
    """Copy `folder` to the S3 server under `prefix`; the URI to read it back."""
    from pyarrow import fs as pafs

    pafs.copy_files(str(folder), server.path(prefix), destination_filesystem=server.filesystem(),
                    use_threads=True)  # fmt: skip
    return str(server.uri(prefix))


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as uptime prints them."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    """Write the results of each model count, time every step on each place, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="5,15,45", help="model counts, comma-separated")
    parser.add_argument("--quick", action="store_true", help="4 items a task, models 2,4")
    parser.add_argument("--work", type=Path, default=REPO / "work" / "study_scale")
    parser.add_argument("--no-s3", action="store_true", help="local folder only")
    parser.add_argument("--samples-only", nargs=2, metavar=("RESULTS", "OUT"),
                        help=argparse.SUPPRESS)  # fmt: skip
    args = parser.parse_args(argv)
    if args.samples_only:
        samples_only(*args.samples_only)
        return 0
    counts = [2, 4] if args.quick and args.models == "5,15,45" else [
        int(c) for c in args.models.split(",")]  # fmt: skip
    per_task, problems = (4, 40) if args.quick else (100, 10_000)
    args.work.mkdir(parents=True, exist_ok=True)
    items, base, solver = base_runs(args.work, per_task)
    table: dict[tuple[str, str], dict[int, tuple[float, float]]] = {}
    loads: list[str] = []
    server_context = None
    if not args.no_s3:
        from tests.pipelines.s3_server import _environment, s3_server

        server_context = s3_server("study-scale")
        server = server_context.__enter__()
        env_context = _environment(server.env)
        env_context.__enter__()
    try:
        for count in counts:
            names = model_names(count)
            results = args.work / f"results-{per_task}-{count}"
            if not (results / "done").is_file():
                shutil.rmtree(results, ignore_errors=True)
                started = time.monotonic()
                write_noregeo(base, results, names)
                write_geobuild(solver, results, names, problems)
                (results / "done").write_text("")
                print(f"wrote {count} models in {time.monotonic() - started:.0f} s", flush=True)
            where = {"local": str(results)}
            if server_context is not None:
                where["S3"] = upload(results, server, f"{count}")
            for place, location in where.items():
                outputs = args.work / f"out-{per_task}-{count}-{place}"
                shutil.rmtree(outputs, ignore_errors=True)
                outputs.mkdir()
                for step, command in steps(location, outputs).items():
                    seconds, peak = measure(command, dict(os.environ))
                    table.setdefault((step, place), {})[count] = (seconds, peak)
                    loads.append(load_average())
                    print(f"{count} models, {place}, {step}: {seconds:.1f} s, {peak:.0f} MiB "
                          f"(load {loads[-1]})", flush=True)  # fmt: skip
    finally:
        if server_context is not None:
            env_context.__exit__(None, None, None)
            server_context.__exit__(None, None, None)
    print(render(table, counts, per_task, loads))
    return 0


def render(
    table: dict[tuple[str, str], dict[int, tuple[float, float]]],
    counts: list[int],
    per_task: int,
    loads: list[str],
) -> str:
    """The Markdown table: seconds and peak MiB per step, place and model count, and the
    growth from the fewest models to the most as a ratio."""
    low, high = min(counts), max(counts)
    head = ["step", "where", *[f"{c} models" for c in counts], f"growth {low} -> {high}"]
    lines = [
        f"{per_task} items per task x 3 setups; load averages during the runs: "
        f"{loads[0] if loads else '?'} ... {loads[-1] if loads else '?'}",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for (step, place), cells in table.items():
        values = [f"{cells[c][0]:.1f} s, {cells[c][1]:,.0f} MiB" for c in counts]
        growth = (
            f"{cells[high][0] / cells[low][0]:.2f}x time, {cells[high][1] / cells[low][1]:.2f}x "
            "memory"
        )
        lines.append("| " + " | ".join([step, place, *values, growth]) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
