"""The report's NoReGeo sections (and the provenance section before them): tables,
figures with the setups side by side, baselines as reference rows. docs/report.md explains
how to read each part."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines.noregeo.intervals import BOOTSTRAP_METHOD, WILSON_METHOD
from pipelines.noregeo.summarize import every_item, missing_rows
from pipelines.report import gap_tables, rate_tables
from pipelines.report import provenance as prov
from pipelines.report import tables as rt
from pipelines.report.figures import gap_distribution, panel_heatmap
from pipelines.report.html_page import Block, Figure, Section
from pipelines.report.html_page import table_blocks as _tables
from pipelines.report.provenance import Record
from store.storage import Location


def provenance_section(records: list[Record]) -> Section:
    """Where the numbers come from: items, models and settings, commits, packages."""
    section = Section(
        "Provenance: items, models, settings, software",
        "Read from the run records (RESULTS/<benchmark>/model=*/runs/*.json) and the item "
        "table's manifest, not recomputed. An item table that has moved shows found: no.",
        empty="no run records under RESULTS (results copied without their runs/ folders?)",
        folded=True,
    )
    section.blocks += _tables("provenance_items", "Item tables", prov.items_table(records))
    section.blocks += _tables(
        "provenance_runs",
        "Models and runs (engine, repo, revision, sampling, git commit)",
        prov.runs_table(records),
        folded=False,
    )
    section.blocks += _tables(
        "provenance_items_per_task",
        "Items per task and setup (item manifest)",
        prov.items_per_task(records),
        folded=True,
    )
    section.blocks += _tables(
        "provenance_prompt_canary",
        "Prompt canary: each vllm model's prompt as its engine got it (decoded ids)",
        prov.canary_table(records),
        folded=True,
    )
    section.blocks += _tables(
        "provenance_software",
        "Package versions of the runs",
        prov.software_table(records),
        folded=True,
    )
    return section


def missing_section(results: Location, df: pl.DataFrame) -> list[Section]:
    """Rows the recorded runs expected and the results lack (a killed run, a quarantined
    shard), so a smaller n never passes unnoticed; no section when none are missing."""
    missing = missing_rows(results, df).filter(pl.col("missing") > 0)
    if missing.is_empty():
        return []
    return [
        Section(
            "NoReGeo: missing rows",
            "Rows the recorded runs expected but the results do not hold, per model, task and "
            "setup; the tables above count only the rows present. Rerun the same evaluate "
            "command to fill them in.",
            _tables("missing_rows", "Missing rows", missing),
        )
    ]


def noregeo_sections(df: pl.DataFrame, out: Path) -> list[Section]:
    """Every NoReGeo section, in the order of the paper. Accuracy is the paper's, over every
    item: a row with no answer (an engine error, out of budget) counts as wrong; the overall
    table shows the answered-only accuracy and the unanswered rows beside it."""
    refs = rt.reference_models(df)
    scored = every_item(df)
    human = " The row human is the majority vote of annotators (human-import)."
    human = human if rt.HUMAN in df["model"].unique().to_list() else ""
    baselines = (
        f" Tagged rows below the line ({', '.join(refs)}) are not models under test: "
        "random-weight models answer noise, baselines are reference answerers (oracle = "
        "upper bound, random = chance, constant = one fixed answer); no mark and no "
        "across-model statistic counts them."
        if refs
        else ""
    )
    overview = Section(
        "NoReGeo: overall accuracy per model and setup",
        "Accuracy (%) over every item, as the paper scores (an engine error, a reply out of "
        "budget and an invalid answer all count as wrong), with its " + BOOTSTRAP_METHOD + "; "
        "beside it the accuracy (%) over the answered items only and the count of unanswered "
        "items; invalid-output rate (%) of the answered items; engine-error rate (%) of all "
        "items." + human + baselines,
        _tables(
            "overall",
            "Accuracy per model and setup, with intervals and error rates",
            rate_tables.intervals(df, ["model", "setup"]),
            folded=True,
        ),
        folded=True,  # the key results show its accuracies
    )
    table2 = rt.table2(scored)
    best = rt.table2_marks(table2, refs, scored)
    # Framed: the best across setups, where that cell earned its setup's best mark.
    overall = {
        c: m for c, m in rt.table2_best_overall(table2, refs).items() if best.get(c) == "best"
    }
    table2_section = Section(
        "Accuracy per category, setup and model (the paper's Table 2)",
        "Columns are kind-category (C: classification, N: numeric, U: unstable; the category "
        "code is the middle of the task ID). Cells: accuracy (%) over the group's items, "
        "every item counted (unanswered ones wrong), and under it its " + WILSON_METHOD + " "
        "[low, high]: the uncertainty from the number of items (the CSV and Markdown copies "
        "give it as the column beside). N-SCP holds triangle_type (N-SCP-TTT), "
        "a three-way choice (acute, right, obtuse: a third right by chance) that the paper "
        "files as numeric; N-SCP w/o TTT is the column without it. Bold: the best model of "
        "the setup in that column, underlined: the second best, framed: the best across all "
        "setups (the paper underlines it; ties share a mark; only models under test "
        "compete: not human, no tagged row, and only where the model's 95% interval lies "
        "above chance and the random baseline)." + human + baselines,
        _tables(
            "table2",
            "Accuracy per category (%), each with its 95% Wilson interval, the paper's Table 2",
            rt.table2_with_intervals(table2, scored),
            folded=False,
            marks=rt.merged_marks(best, overall),
        ),
    )
    return [
        overview,
        headline_section(scored, refs),
        table2_section,
        table3_section(scored, refs),
        task_figure_section(scored, out, refs, "accuracy"),
        task_figure_section(scored, out, refs, "mse"),
        gap_section(scored, out, refs),
        Section(
            "U-task pair consistency",
            "Unstable tasks come in pairs one grid step apart with different answers; a pair "
            "counts only when both items are right (%).",
            _tables("pair_consistency", "Pair consistency (%)", gap_tables.pair_table(df)),
            empty="no paired (U-task) results",
            folded=True,
        ),
        Section(
            "Bootstrap 95% intervals per category",
            "The " + BOOTSTRAP_METHOD + " of each model's accuracy per category and setup, as "
            "summarize prints it.",
            _tables(
                "intervals_category",
                "Accuracy (%) with 95% interval, per model, category and setup",
                rate_tables.intervals(df, ["model", "category", "setup"]),
                folded=True,
            ),
            folded=True,
        ),
        health_section(df, refs),
    ]


def headline_section(scored: pl.DataFrame, refs: list[str]) -> Section:
    """The paper's headline figures by its definition (the mean of a model's Classification
    cells of Table 2), then our pooled binary and multiple-choice accuracy; human and the
    baselines as reference rows."""
    headline = rt.paper_headline(rt.table2_cells(scored))
    section = Section(
        "Headline: the paper's figure, and binary and multiple-choice accuracy",
        "The paper's definition first: per setup and model, the mean of the three "
        "Classification cells of Table 2 (C-ACM, C-BCT, C-SYM), the paper's \"multiple-choice "
        'tasks": its human 74.5% is the mean of the human cells 81.5, 70.0 and 72.0, '
        'Phi-3.5-Vision\'s "about 55%" the mean of its dotted cells (55.5); cells counts the '
        "cells a figure averages, and the best model is taken among those with all of them. "
        "Then ours, not the paper's: accuracy over every binary item (two options, yes/no) "
        "and over every multiple-choice item (binary ones included), pooled over items, with "
        "the item counts. In both, human and the tagged rows never count as the best model, nor "
        "a model whose 95% interval on the items a figure is over does not lie above chance "
        "and the random baseline (no best model in a setup then).",
        empty="no multiple-choice results",
    )
    if headline.is_empty():
        return section
    paper_best = rt.paper_headline_best(headline, refs, scored)
    if paper_best.is_empty() and not headline.filter(~pl.col("model").is_in(refs)).is_empty():
        section.intro += (
            " No best model on the paper's figure: no model under test has its 95% interval "
            "on the Classification items above chance and the random baseline."
        )
    section.blocks += _tables(
        "headline_paper_best",
        "The paper's headline: best model under test per setup, and human (%)",
        paper_best,
        folded=False,
    ) + _tables(
        "headline_paper",
        "Mean of the Classification cells per setup and model (%)",
        headline,
    )  # fmt: skip
    table = rt.answer_format_accuracy(scored)
    section.blocks += _tables(
        "headline_best",
        "Ours, pooled items: best model under test per setup (and human on multiple-choice "
        "items)",
        rt.best_answer_format(table, refs, scored),
    ) + _tables(
        "headline_answer_formats",
        "Ours, pooled items: binary and multiple-choice accuracy per setup and model (%)",
        table,
    )  # fmt: skip
    return section


def table3_section(scored: pl.DataFrame, refs: list[str]) -> Section:
    """Table 3 by the method the paper's own numbers favour (tables.TABLE3_METHOD); says so
    when only baselines (and human) ran."""
    long3 = rt.table3_over_tasks(scored)
    section = Section(
        "Mean ± std per category (the paper's Table 3)",
        f"Method: {rt.TABLE3_METHOD}. Per category and setup, the mean and sample standard "
        "deviation (ddof=1) over the accuracies of every model under test on every task of "
        "the category (the values of the per-task figure below), so the spread holds both "
        "the differences between models and between the category's tasks. Of the candidate "
        "computations, this one reproduces the paper's Table 3 best from its printed Table 2 "
        "rows (docs/report.md gives the residuals). Counted: the models under test only; "
        "human, random-weight models and baselines are not. A cell of one value has no "
        "spread: it prints ± –. The ± is that spread, not an uncertainty: a cell of few items "
        "can print ± 0.0 and still be far from certain (the bootstrap intervals section gives "
        "the uncertainty; the long table below, the value, model and task counts).",
        _tables("table3", "Mean ± std over model × task values (%; the ± is their spread, "
                "not an uncertainty), the paper's Table 3",
                rt.table3(long3), folded=False)
        + _tables("table3_long", "The paper's Table 3 as numbers, with value, model and task "
                  "counts", long3, folded=True),
    )  # fmt: skip
    if refs:
        section.empty = (
            f"only reference rows ({', '.join(refs)}) have results, no model under test: a "
            "mean across them says nothing about models. Their rows are in the per-category "
            "table above."
        )
    else:
        section.empty = "no model results"
    return section


def task_figure_section(scored: pl.DataFrame, out: Path, refs: list[str], value: str) -> Section:
    """Tasks x models, the setups side by side in one figure; the tables behind it folded."""
    panels = {}
    tables: list[Block] = []
    what = "Accuracy (%)" if value == "accuracy" else "MSE (valid answers)"
    for setup in rt.setup_order(scored):
        wide = rt.task_by_model(scored, setup, value)
        if wide.is_empty():
            continue
        panels[rt.SETUP_TITLES[setup]] = wide
        tables += _tables(
            f"{value}_tasks_{setup}",
            f"{what} per task, {rt.SETUP_TITLES[setup]}",
            wide,
            folded=True,
            digits=None if value == "accuracy" else 3,  # MSE spans orders of magnitude
        )
    if value == "accuracy":
        section = Section(
            "Accuracy per task: the three setups side by side",
            "Tasks x models, one panel per setup (the paper's Figures 3a-5a). Green is high "
            "accuracy, red low; grey: the model did not run that task. The tables behind the "
            "figure are folded below it.",
            empty="no results",
            folded=True,
        )
    else:
        section = Section(
            "MSE on numeric tasks",
            "Mean squared error of valid number and point answers (points: mean of dx² and "
            "dy²); invalid outputs are excluded here and counted as wrong in accuracy. Each "
            "task has its own colour scale (its cells divided by the task's largest MSE across "
            "models and setups): areas, lengths and coordinates differ by orders of magnitude. "
            "Cells print the raw MSE.",
            empty="no numeric-task results",
            folded=True,
        )
    if not panels:
        return section
    path = panel_heatmap(
        panels,
        f"{what}: tasks x models per setup",
        out / f"figures/{value}_tasks.png",
        value,
        refs,
        rt.model_tags(scored),
    )
    section.blocks.append(
        Figure(
            f"figures/{path.name}",
            f"{what}, tasks x models, one panel per setup",
            "Colour bar: "
            + (
                "accuracy (%)."
                if value == "accuracy"
                else "per-task share of the "
                "task's largest MSE (0 = exact, 1 = the worst model on that task)."
            )
            + (
                " Italic columns right of the dashed line: tagged rows (random weights, baselines)."
                if refs
                else ""
            ),
        )
    )
    section.blocks += tables
    return section


def health_section(df: pl.DataFrame, refs: list[str]) -> Section:
    """Engine errors and invalid outputs apart: one is the serving stack, the other the
    model."""
    section = Section(
        "Output health: engine errors and invalid outputs",
        "Engine errors: requests that got no answer (a failed call, a crashed engine), share "
        "of all items; they are left out of accuracy. Invalid outputs: answers that are not "
        "valid JSON with the answer's keys, share of the answered items; scored wrong.",
        folded=True,
    )
    section.blocks += _tables(
        "engine_error_rates",
        "Engine-error rate (%), of all items",
        rate_tables.engine_error_rates(df),
    )
    section.blocks += _tables(
        "invalid_rates",
        "Invalid-output rate (%), of the answered items",
        rate_tables.invalid_rates(df),
    )
    section.empty = "no rows"
    return section


def gap_section(df: pl.DataFrame, out: Path, refs: list[str]) -> Section:
    """Full-minus-dotted gaps: the task x model heatmap and the per-category distribution."""
    section = Section(
        "Full minus dotted images",
        "Accuracy(full) - accuracy(dotted) in points for models that ran both setups: blue, "
        "full images help; red, they hurt. Below: tasks x models (the last row is the mean "
        "over tasks; the paper's Figure 6), the same gaps summarised per task over the models "
        "(its Figure 7), and per category (its Figure 2).",
        empty="no model has both dotted and full results",
        folded=True,
    )
    gap = gap_tables.gap_by_task(df)
    if gap.is_empty():
        return section
    path = panel_heatmap(
        {"full - dotted": gap},
        "Accuracy(full) - accuracy(dotted), points",
        out / "figures/gap_tasks.png",
        "gap",
        refs,
        rt.model_tags(df),
    )
    section.blocks.append(
        Figure(
            f"figures/{path.name}",
            "Gap per task and model (the paper's Figure 6)",
            "Colour bar: points; blue above 0 (full images help), red below.",
        )
    )
    per_task = gap_tables.gap_by_task_long(gap)
    tags = rt.model_tags(df)
    path = gap_distribution(
        per_task, out / "figures/gap_task_summary.png", refs, key="task", tags=tags
    )
    section.blocks.append(
        Figure(
            f"figures/{path.name}",
            "Gap per task (the paper's Figure 7)",
            "The task-level summary: per task, a box over the models under test (quartiles, "
            "whiskers to 1.5 IQR) and one coloured point per model; tagged rows as hollow grey "
            "markers, not in the box.",
        )
    )
    per_category = gap_tables.gap_by_category(df)
    path = gap_distribution(per_category, out / "figures/gap_categories.png", refs, tags=tags)
    section.blocks.append(
        Figure(
            f"figures/{path.name}",
            "Gap per category (the paper's Figure 2)",
            "Box: the models under test (quartiles, whiskers to 1.5 IQR); one coloured point "
            "per model (legend); tagged rows as hollow grey markers, not in the box.",
        )
    )
    section.blocks += _tables("gap_tasks", "Gap per task and model (points)", gap, folded=True)
    section.blocks += _tables(
        "gap_categories",
        "Gap per category and model",
        per_category,
        folded=True,
    )
    section.blocks += _tables(
        "gap_task_summary",
        "Gap distribution per task, over the models under test (the paper's Figure 7)",
        gap_tables.gap_summary(per_task, refs, keys=("task",)),
        folded=True,
    )
    section.blocks += _tables(
        "gap_category_summary",
        "Gap distribution per category, over the models under test",
        gap_tables.gap_summary(per_category, refs),
        folded=True,
    )
    return section
