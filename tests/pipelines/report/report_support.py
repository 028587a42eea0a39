"""Helpers of the report tests: results of the baselines and of models at set accuracies, the
report built on them."""

from __future__ import annotations

import csv
import html
import json
import re
import shutil
from pathlib import Path

import polars as pl
import pytest

from pipelines import cli
from pipelines.human.items import dotted_items
from pipelines.noregeo.summarize import load_results

BASELINES = ("oracle", "random", "constant")


def _register(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(cli.COMMANDS, "report", ("pipelines.report.build", "report"))
    monkeypatch.setitem(cli.COMMANDS, "human-import", ("pipelines.human.import_command", "import"))


def baseline_results(small_items: Path, root: Path) -> Path:
    """Baselines through `evaluate` (6 items per task) + 12 human-voted items, built once
    per session directory (the browser test reuses it)."""
    out = root / "report_results"
    done = out / "done"
    if done.exists():
        return out
    for engine in BASELINES:
        args = ["evaluate", "--items", str(small_items), "--engine", engine, "--model", engine]
        assert cli.main([*args, "--per-task", "6", "--out", str(out)]) == 0
    rows = dotted_items(small_items)[:12]
    annotations = root / "annotations.csv"
    with annotations.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["item_id", "annotator", "answer"])
        for i, row in enumerate(rows):
            truth = json.loads(row["answer"])
            typed = truth.get("answer", f"{truth.get('x')}, {truth.get('y')}")
            writer.writerow([row["item_id"], "a1", typed if i % 3 else "0"])
    cmd = ["human-import", "--annotations", str(annotations), "--items", str(small_items)]
    cmd += ["--out", str(out)]
    assert cli.main(cmd) == 0
    done.write_text("")
    return out


# Two models made from baseline rows: name -> the baseline whose rows it takes, the engine
# and the weights its run record names. model-a (real weights) is the model under test,
# with the oracle's answers: a best mark needs an interval above chance and the random
# baseline (pipelines/report/chance.py), which random answers would not earn; model-b has
# random weights, so the report tags it and keeps it out of every mark and across-model
# statistic, as it does the baselines.
MODELS = {"model-a": ("oracle", "hf", "real"), "model-b": ("constant", "http", "random")}

UNDER_TEST = ["model-a"]

ERROR_EVERY = 4  # every 4th row of model-a becomes an engine error


def with_models(results: Path, root: Path) -> Path:
    """A copy of the baseline results plus MODELS (relabelled rows: model, engine, request
    key; a run record naming the weights), a share of model-a's rows turned into engine
    errors; built once per session."""
    out = root / "report_models"
    if (out / "done").exists():
        return out
    shutil.copytree(results, out)
    raw = load_results(results)
    for name, (source, engine, weights) in MODELS.items():
        rows = raw.filter(pl.col("model") == source).sort("request_key")
        rows = rows.with_columns(
            model=pl.lit(name),
            engine=pl.lit(engine),
            request_key=pl.lit(f"{name}:") + pl.col("request_key"),
        )
        if name == "model-a":
            failed = (pl.int_range(pl.len()) % ERROR_EVERY) == 0
            rows = rows.with_columns(
                engine_error=pl.when(failed).then(pl.lit("HTTP 503")).otherwise(None),
                generated_text=pl.when(failed).then(None).otherwise(pl.col("generated_text")),
                valid=pl.when(failed).then(False).otherwise(pl.col("valid")),
                correct=pl.when(failed).then(False).otherwise(pl.col("correct")),
            )
        folder = out / "noregeo" / f"model={name}"
        folder.mkdir(parents=True)
        rows.drop([c for c in rows.columns if c.startswith("__")]).write_parquet(
            folder / "part-test.parquet"
        )
        (folder / "runs").mkdir()
        model = {"name": name, "engine": engine, "repo": f"/tmp/x/{name}", "weights": weights}
        record = {"model": model, "git_commit": "0" * 40, "started_utc": "20260101T000000Z"}
        (folder / "runs" / "20260101T000000Z-1-test.json").write_text(json.dumps(record))
    (out / "done").write_text("")
    return out


def _csv(out: Path, name: str) -> pl.DataFrame:
    return pl.read_csv(out / "tables" / f"{name}.csv")


def _tagged_rows(page: str, table: str) -> dict[str, str]:
    """Model -> tag of every row of a table that carries one (and is shown as a reference
    row)."""
    body = page[page.index(f'id="{table}"') :].split("</table>")[0].split("</thead>")[1]
    tagged = {}
    for row in body.split("<tr")[1:]:
        found = re.findall(r'<td class="txt">([^<]+) <span class="tag">([^<]+)</span></td>', row)
        assert row.startswith(' class="ref">') == bool(found), row  # tagged <=> reference row
        tagged.update(found)
    return tagged


def _plain_markdown(text: str) -> str:
    """A Markdown cell's text without its escapes (backslashes, then entities)."""
    return html.unescape(re.sub(r"\\(.)", r"\1", text))


def _markdown_rows(path: Path) -> list[list[str]]:
    lines = path.read_text().splitlines()
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in lines if line != lines[1]]


def _heads_and_numbers(page: str) -> tuple[list[str], list[str]]:
    heads = [html.unescape(h) for h in re.findall(r"<th(?: class=ref)?>([^<]*)<", page)]
    numbers = re.findall(r'<td class="num[^"]*">([^<]*)</td>', page)
    return heads, numbers
