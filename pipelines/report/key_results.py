"""The report's first screen: what was run (models, setups, items), the headline numbers,
the models under test with real weights first, and the banner naming the rows that are not
models under test (random weights, baselines). Everything else follows it on the page."""

from __future__ import annotations

import polars as pl

from pipelines.engines.models.engine_kinds import BASELINES
from pipelines.noregeo.intervals import WILSON_METHOD
from pipelines.noregeo.summarize import every_item
from pipelines.report import tables as rt
from pipelines.report.chance import (
    above_chance,
    first_option_lines,
    interval_text,
    one_value_lines,
    random_baselines,
)
from pipelines.report.html_page import INTERVAL_SUFFIX, Section
from pipelines.report.html_page import table_blocks as _tables
from pipelines.report.provenance import Record

# What a tag means, for the banner.
TAG_MEANINGS = {
    rt.RANDOM_WEIGHTS: "config weights: random, a randomly initialised model whose answers "
    "are noise",
    rt.BASELINE: "a reference answerer, not a model (oracle = upper bound, random = chance, "
    "constant = one fixed answer)",
    rt.SOLVER_TAG: "GeoBuild's numerical solver, its programs run through the agent loop: "
    "the upper bound, not a model",
    rt.REPLAY_TAG: "scripted GeoBuild replies replayed through the agent loop, not a model",
}


def with_weights(df: pl.DataFrame, records: list[Record]) -> pl.DataFrame:
    """`df` with the WEIGHTS column: each model's `weights` (real, random, none) as its
    NoReGeo run records' model config names it (the latest record that names one); null for
    a model without such a record (records from before the field)."""
    weights: dict[str, str] = {}
    for record in records:
        model = record.data.get("model")
        if record.benchmark == "noregeo" and isinstance(model, dict) and model.get("weights"):
            name = model.get("name") or record.folder.removeprefix("model=")
            weights[str(name)] = str(model["weights"])
    return df.with_columns(
        pl.col("model")
        .replace_strict(weights, default=None, return_dtype=pl.String)
        .alias(rt.WEIGHTS)
    )


def banner(tags: dict[str, str]) -> str:
    """One paragraph naming every tagged model and what its tag means, and that tagged rows
    get no best marks; empty when every model is under test."""
    if not tags:
        return ""
    parts = []
    for tag, meaning in TAG_MEANINGS.items():
        names = sorted(m for m, t in tags.items() if t == tag)
        if names:
            parts.append(f"{', '.join(names)}: tagged {tag} ({meaning})")
    return (
        "Not models under test. "
        + "; ".join(parts)
        + ". Their rows and columns carry the tag in every table, come after the models "
        "under test, never get a best or second-best mark and are left out of every "
        "across-model statistic."
    )


def key_table(df: pl.DataFrame) -> pl.DataFrame:
    """One row per model in model_order (real weights first, tagged rows last): weights,
    engine, then per setup (README order) the accuracy (%) over every item (unanswered items
    wrong, the paper's), its 95% Wilson interval and the items it is over."""
    order = rt.model_order(df)
    scored = every_item(df)
    cells = scored.group_by("model", "setup").agg(
        (pl.col("correct").mean() * 100).round(1).alias("accuracy"),
        pl.col("correct").sum().alias("right"),
        pl.len().alias("n"),
    )
    # Each cell's interval and item count: a 100-item row beside a 500-item one read as
    # equally sure without them (issue 39).
    found = {(m, s): (a, r, n) for m, s, a, r, n in cells.iter_rows()}
    setups = rt.setup_order(df)
    about = df.group_by("model").agg(
        pl.col(rt.WEIGHTS).first() if rt.WEIGHTS in df.columns else pl.lit(None).alias(rt.WEIGHTS),
        pl.col("engine").first(),
    )
    rows = []
    for model in order:
        row: dict[str, object] = {"model": model}
        info = about.filter(pl.col("model") == model).row(0, named=True)
        row["weights"] = _weights_text(model, info[rt.WEIGHTS], info["engine"])
        row["engine"] = info["engine"]
        for setup in setups:
            title = rt.SETUP_TITLES[setup]
            accuracy, right, n = found.get((model, setup), (None, 0, None))
            row[f"{title} (%)"] = accuracy
            row[f"{title} (%){INTERVAL_SUFFIX}"] = None if n is None else interval_text(right, n)
            row[f"{title}, items"] = n
        rows.append(row)
    return pl.DataFrame(rows, infer_schema_length=None)


def _weights_text(model: str, weights: str | None, engine: str | None) -> str:
    if model == rt.HUMAN:
        return "human annotators"
    if engine in BASELINES:
        return "none (baseline)"
    return weights or "not recorded"


def key_marks(
    table: pl.DataFrame, tags: dict[str, str], scored: pl.DataFrame | None = None
) -> dict[tuple[int, str], str]:
    """Best and second-best accuracy of each setup column among the models under test (not
    human, no tagged model) whose interval lies above chance and the random baseline on
    `scored`'s answered rows of that setup (pipelines.report.chance): {(row, column): mark};
    none when no model under test ran or none beat chance."""
    marks: dict[tuple[int, str], str] = {}
    columns = [c for c in table.columns if c.endswith("(%)")]
    rows = [
        (i, r)
        for i, r in enumerate(table.iter_rows(named=True))
        if r["model"] not in tags and r["model"] != rt.HUMAN
    ]
    setup_of = {f"{title} (%)": setup for setup, title in rt.SETUP_TITLES.items()}
    for column in columns:
        competing = rows
        if scored is not None:
            cell = pl.col("setup") == setup_of[column]
            randoms = random_baselines(scored)
            competing = [(i, r) for i, r in rows if above_chance(scored, r["model"], cell, randoms)]
        values = sorted({r[column] for _, r in competing if r[column] is not None}, reverse=True)
        for i, r in competing:
            if values and r[column] == values[0]:
                marks[(i, column)] = "best"
            elif len(values) > 1 and r[column] == values[1]:
                marks[(i, column)] = "second"
    return marks


def run_summary(df: pl.DataFrame) -> str:
    """One sentence: tasks, setups, items per task and setup, and who answered."""
    tags = rt.model_tags(df)
    models = df["model"].unique().to_list()
    tested = [m for m in models if m not in tags and m != rt.HUMAN]
    random = [m for m in models if tags.get(m) == rt.RANDOM_WEIGHTS]
    baselines = [m for m in models if tags.get(m) == rt.BASELINE]
    setups = rt.setup_order(df)
    per_cell = df.group_by("task", "setup").agg(pl.col("item_id").n_unique())["item_id"]
    items = int(per_cell.max() or 0)  # type: ignore[arg-type]
    who = [
        f"{len(tested)} model{'s' if len(tested) != 1 else ''} under test",
        f"{len(random)} random-weight model{'s' if len(random) != 1 else ''}",
        f"{len(baselines)} baseline{'s' if len(baselines) != 1 else ''}",
    ]
    if rt.HUMAN in models:
        who.append("human annotators")
    return (
        f"NoReGeo: {df['task'].n_unique()} tasks in {len(setups)} setup"
        f"{'s' if len(setups) != 1 else ''} ({', '.join(setups)}), up to {items} items per "
        f"task and setup; answered by {', '.join(who)}. Accuracy is over every item, as the "
        "paper scores: an item with no answer (an engine error, out of budget) counts as wrong."
    )


def key_section(df: pl.DataFrame | None, lines: list[str]) -> Section:
    """The first section: the run summary, the accuracy table per model and setup with the
    best models under test marked, and one line per other part (`lines`: GeoBuild, the
    solver's upper bound, probes)."""
    if df is None:
        return Section("Key results", " ".join(lines), empty="no NoReGeo results")
    tags = rt.model_tags(df)
    table = key_table(df)
    scored = every_item(df)  # the rows the reported accuracy is over
    marks = key_marks(table, tags, scored)
    tested = [m for m in df["model"].unique().to_list() if m not in tags and m != rt.HUMAN]
    if marks:
        best = (
            "Bold: the best model under test per setup, underlined: the second; a mark "
            "needs the model's 95% interval above chance and the random baseline."
        )
    elif tested:
        best = (
            "No best marks: no model under test has its 95% interval above chance and the "
            "random baseline in any setup."
        )
    else:
        best = "No model under test ran (every row is tagged): no best marks."
    fixed = one_value_lines(scored, tested) + first_option_lines(scored, tested)
    if fixed:
        shown = "; ".join(fixed[:6]) + (f"; and {len(fixed) - 6} more" if len(fixed) > 6 else "")
        best += f" One answer on most items (a fixed answer, not a reading): {shown}."
    intro = " ".join([run_summary(df), best, *lines])
    return Section(
        "Key results",
        intro,
        _tables("key_results", "Accuracy (%) per model and setup, over every item; under each "
                "accuracy its " + WILSON_METHOD + " [low, high] (the uncertainty from the number "
                "of items), and beside it the items it is over", table, folded=False,
                marks=marks),
        empty="no NoReGeo results",
    )  # fmt: skip
