"""The report's numbers as the paper computes them: Table 3 over Table 2's cells, the
binary / multiple-choice headline, best-in-column marks, Figures 7-8 and the probe section's
--min-accuracy; every expected value recomputed here by hand from small hand-built rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from PIL import Image

from pipelines import cli
from pipelines.report import tables as rt
from pipelines.report.html_page import Section as PageSection
from pipelines.report.html_page import Table, page, table_blocks

# The paper's Table 2, text-only block (its seven rows), as printed: the column heads are
# kind-category, the paper's order.
PAPER_HEADS = ("C-ACM", "C-BCT", "C-SYM", "N-BCT", "N-ECL", "N-GTR", "N-RLT", "N-SCP",
               "U-CPR", "U-PAP", "U-RLT", "U-SCP", "U-SYM")  # fmt: skip
PAPER_TEXT_ROWS = {  # names shortened
    "Qwen2.5-3B-In.": (69.2, 44.0, 54.0, 3.9, 32.3, 0.0, 98.5, 32.2, 53.0, 47.8, 34.5, 0.0, 46.5),
    "Qwen2.5-7B-In.": (24.5, 52.0, 57.0, 5.6, 12.7, 92.0, 99.0, 21.2, 6.0, 21.3, 22.0, 7.0, 47.0),
    "Qwen3-4B": (56.5, 61.0, 52.0, 5.0, 17.0, 0.0, 40.0, 36.2, 52.0, 52.7, 31.0, 49.0, 89.0),
    "Qwen3-8B": (58.0, 73.0, 67.0, 6.8, 10.7, 0.0, 4.0, 25.8, 52.0, 53.0, 47.0, 64.0, 91.0),
    "Mistral-Small": (57.5, 56.0, 59.0, 3.8, 12.0, 0.0, 3.0, 14.5, 52.0, 45.3, 32.0, 50.0, 79.0),
    "LLaMa-3.1 8B": (64.5, 51.0, 96.0, 1.6, 9.3, 0.0, 18.0, 15.2, 53.0, 52.0, 40.0, 67.0, 68.0),
    "LLaMa-3.1 70B": (67.0, 78.0, 97.0, 6.4, 16.7, 0.0, 0.0, 17.2, 97.0, 53.7, 43.0, 52.0, 84.0),
}  # fmt: skip


def _paper_cells() -> pl.DataFrame:
    rows = [
        {"setup": "text", "model": model, "group": head, "accuracy": value}
        for model, values in PAPER_TEXT_ROWS.items()
        for head, value in zip(PAPER_HEADS, values, strict=True)
    ]
    return pl.DataFrame(rows)


def test_table3_from_the_papers_text_rows_is_over_table2_cells() -> None:
    long = rt.table3_over_cells(_paper_cells(), {"BCT": "Basic coordinate tasks"})
    bct = long.filter(pl.col("code") == "BCT").row(0, named=True)
    # BCT: the 14 cells C-BCT and N-BCT of the seven models, by hand.
    values = [v[1] for v in PAPER_TEXT_ROWS.values()] + [v[3] for v in PAPER_TEXT_ROWS.values()]
    assert len(values) == 14
    assert bct["mean"] == 32.0 == round(sum(values) / 14, 1)
    assert bct["std"] == pytest.approx(29.5)  # the paper, over all its models: 32.4 ± 39.5
    assert (bct["cells"], bct["models"], bct["category"]) == (14, 7, "Basic coordinate tasks")
    # Every category likewise: pool the columns whose head ends in the code.
    table = np.array(list(PAPER_TEXT_ROWS.values()))
    for row in long.iter_rows(named=True):
        columns = [i for i, h in enumerate(PAPER_HEADS) if h.endswith(row["code"])]
        cells = table[:, columns].ravel()
        assert row["cells"] == cells.size
        assert row["mean"] == pytest.approx(round(cells.mean(), 1))
        assert row["std"] == pytest.approx(round(cells.std(ddof=1), 1))
    assert sorted(long["code"]) == sorted({h[2:] for h in PAPER_HEADS})
    shown = rt.table3(long).filter(pl.col("Task category").str.contains("BCT"))
    assert shown["Text"][0] == "32.0 ± 29.5"


def _item_rows(model: str, setup: str, task: str, correct: list[bool], engine: str = "hf"):
    spec = {
        "C-BCT-CT": ("Basic coordinate tasks", "choice", ["yes", "no"]),
        "N-BCT-PAT": ("Basic coordinate tasks", "number", []),
        "C-ACM-TST": ("Area comparison", "choice", ["ABC", "DEF", "equal"]),
        "U-PAP-PT": ("Parallelism and perpendicularity", "choice", ["yes", "no"]),
    }[task]
    return [
        {
            "model": model,
            "engine": engine,
            "setup": setup,
            "task": task,
            "category": spec[0],
            "answer_type": spec[1],
            "options": spec[2],
            "correct": c,
            "valid": True,
        }
        for c in correct
    ]


def _results() -> pl.DataFrame:
    """Two models under test, `human` and the oracle baseline, text and dotted; BCT has one
    classification task (4 items) and one numeric task (8 items) so pooling and cells differ."""
    rows = []
    for setup in ("text", "dotted"):
        rows += _item_rows("m1", setup, "C-BCT-CT", [True, True, True, False])
        rows += _item_rows("m1", setup, "N-BCT-PAT", [False] * 7 + [True])
        rows += _item_rows("m1", setup, "C-ACM-TST", [True, False])
        rows += _item_rows("m1", setup, "U-PAP-PT", [True, True, False, False])
        rows += _item_rows("m2", setup, "C-BCT-CT", [True, False, False, False])
        rows += _item_rows("m2", setup, "N-BCT-PAT", [True] * 4 + [False] * 4)
        rows += _item_rows("m2", setup, "C-ACM-TST", [True, True])
        rows += _item_rows("m2", setup, "U-PAP-PT", [True, True, True, False])
        for task, n in (("C-BCT-CT", 4), ("N-BCT-PAT", 8), ("C-ACM-TST", 2), ("U-PAP-PT", 4)):
            rows += _item_rows("oracle", setup, task, [True] * n, engine="oracle")
    rows += _item_rows("human", "dotted", "C-BCT-CT", [True, True, False, False], "human")
    rows += _item_rows("human", "dotted", "C-ACM-TST", [True, True], "human")
    return pl.DataFrame(rows)


def test_table3_long_counts_table2_cells_of_models_under_test_only() -> None:
    long = rt.table3_long(_results())
    bct = long.filter((pl.col("code") == "BCT") & (pl.col("setup") == "dotted")).row(0, named=True)
    # Cells: m1 C-BCT 75, N-BCT 12.5; m2 C-BCT 25, N-BCT 50 (human and oracle not counted).
    cells = [75.0, 12.5, 25.0, 50.0]
    assert (bct["cells"], bct["models"]) == (4, 2)
    assert bct["mean"] == pytest.approx(round(float(np.mean(cells)), 1))
    assert bct["std"] == pytest.approx(round(float(np.std(cells, ddof=1)), 1))
    # The pooled variant: each model's 12 BCT items at once, then across the two models.
    pooled = rt.table3_pooled_long(_results())
    row = pooled.filter(pl.col("code") == "BCT", pl.col("setup") == "dotted").row(0, named=True)
    per_model = [4 / 12 * 100, 5 / 12 * 100]
    assert row["models"] == 2
    assert row["mean"] == pytest.approx(round(float(np.mean(per_model)), 1))
    assert row["std"] == pytest.approx(round(float(np.std(per_model, ddof=1)), 1))
    assert row["std"] != bct["std"]


def test_binary_and_multiple_choice_accuracy_with_reference_rows() -> None:
    df = _results()
    table = rt.answer_format_accuracy(df)
    got = {(r["setup"], r["model"]): r for r in table.iter_rows(named=True)}
    m1 = got[("text", "m1")]
    # Binary: C-BCT-CT (3 of 4) + U-PAP-PT (2 of 4); MC adds C-ACM-TST (1 of 2).
    assert (m1["binary_n"], m1["multiple_choice_n"]) == (8, 10)
    assert m1["binary"] == pytest.approx(round(5 / 8 * 100, 1))
    assert m1["multiple_choice"] == pytest.approx(round(6 / 10 * 100, 1))
    human = got[("dotted", "human")]
    assert human["binary"] == 50.0
    assert human["multiple_choice"] == pytest.approx(round(4 / 6 * 100, 1))
    assert table["model"].to_list()[:4] == ["m1", "m2", "oracle", "m1"]  # text block, then dotted
    best = rt.best_answer_format(table, ["oracle"]).row(1, named=True)
    # m2 dotted: binary 1+3 of 8 = 50%, MC 6 of 10; m1: 62.5% and 60%; oracle (100%) is out.
    assert (best["setup"], best["best_binary_model"], best["best_binary"]) == ("dotted", "m1", 62.5)
    assert best["best_multiple_choice"] == 60.0
    assert best["human_multiple_choice"] == human["multiple_choice"]


def test_table2_marks_best_and_second_per_setup_among_models_only() -> None:
    table = pl.DataFrame(
        {
            "setup": ["text", "text", "text", "text", "text", "dotted", "dotted"],
            "model": ["a", "b", "c", "human", "oracle", "a", "b"],
            "C-ACM": [50.0, 70.0, 70.0, 99.0, 100.0, 10.0, 20.0],
            "N-BCT": [30.0, 20.0, None, 99.0, 100.0, 5.0, 5.0],
        }
    )
    marks = rt.table2_marks(table, ["oracle"])
    assert marks == {
        (1, "C-ACM"): "best",  # b and c tie: both best, a second
        (2, "C-ACM"): "best",
        (0, "C-ACM"): "second",
        (0, "N-BCT"): "best",
        (1, "N-BCT"): "second",
        (6, "C-ACM"): "best",
        (5, "C-ACM"): "second",
        (5, "N-BCT"): "best",  # a tie and nothing lower: no second
        (6, "N-BCT"): "best",
    }
    html = page("t", "s", [PageSection("x", "y", table_blocks("t2", "T2", table, marks=marks))])
    rows = html.split("<tbody>")[1].split("</tr>")
    assert 'class="num best"' in rows[1] and 'class="num second"' in rows[1]
    assert 'class="num second"' in rows[0] and 'class="num best"' in rows[0]
    assert not any(mark in rows[i] for mark in ("best", "second") for i in (3, 4))


def test_table_without_marks_renders_as_before() -> None:
    frame = pl.DataFrame({"model": ["a"], "x": [1.0]})
    html = page("t", "s", [PageSection("x", "y", [Table("n", "T", frame)])])
    assert '<td class="num">1.0</td>' in html


def _probe_results(root: Path) -> Path:
    """A probe result file: separate probes on two tasks, UF config, full and dot images,
    with cross-task accuracies of 65% and 85%."""
    tasks = ("C-BCT-CT", "U-PAP-PT")
    rows = []
    for regime, trained in (("joint", "All"), ("separate", tasks[0]), ("separate", tasks[1])):
        for eval_task in tasks:
            for setup in ("F", "D"):
                own = trained in ("All", eval_task)
                cross = 0.85 if trained == tasks[0] else 0.65
                rows.append(
                    {
                        "arch": "ViT-T",
                        "pretrained": "none",
                        "token_norm": "none",  # as probe runs write it (docs/probes.md)
                        "regime": regime,
                        "train_tasks": trained,
                        "config": "UF",
                        "eval_task": eval_task,
                        "eval_setup": setup,
                        "accuracy": 0.95 if own else cross,
                    }
                )
    folder = root / "probes" / "vit"
    folder.mkdir(parents=True)
    pl.DataFrame(rows).write_parquet(folder / "trial-0.parquet")
    return root


@pytest.mark.parametrize(("threshold", "pairs"), [("60", 2), ("80", 1), ("90", 0)])
def test_report_min_accuracy_reaches_the_probe_section(
    tmp_path: Path, threshold: str, pairs: int
) -> None:
    results = _probe_results(tmp_path / "results")
    out = tmp_path / "report"
    assert cli.main(["report", str(results), "--out", str(out), "--min-accuracy", threshold]) == 0
    html = (out / "index.html").read_text()
    assert f"at or above {threshold}%" in html
    table5 = out / "tables" / "probe_table5_ViT-T_none.csv"
    rows = pl.read_csv(table5).height if table5.exists() else 0
    assert rows == pairs
    if not pairs:
        assert f"No cross-task transfer reaches {threshold}%." in html


def test_figure8_transfer_matrix_panels_and_png(tmp_path: Path) -> None:
    from probes.tables import load_results, transfer_matrix, transfer_panels

    results = _probe_results(tmp_path / "results")
    panels = transfer_panels(transfer_matrix(load_results(results)))
    assert list(panels) == ["UF, full test images", "UF, dotted test images"]
    full = panels["UF, full test images"]
    assert full.columns == ["Train Dataset", "C-BCT-CT", "U-PAP-PT"]
    by_train = {r["Train Dataset"]: r for r in full.iter_rows(named=True)}
    assert by_train["C-BCT-CT"]["U-PAP-PT"] == pytest.approx(85.0)
    assert by_train["U-PAP-PT"]["C-BCT-CT"] == pytest.approx(65.0)
    assert by_train["U-PAP-PT"]["U-PAP-PT"] == pytest.approx(95.0)
    out = tmp_path / "report"
    assert cli.main(["report", str(results), "--out", str(out)]) == 0
    figure = out / "figures" / "probe_transfer_ViT-T_none.png"
    with Image.open(figure) as image:
        assert image.format == "PNG" and image.width > 200
    assert 'src="figures/probe_transfer_ViT-T_none.png"' in (out / "index.html").read_text()


def test_figure7_summarises_the_gap_per_task_over_models() -> None:
    df = _results()
    gap = rt.gap_by_task(df)
    long = rt.gap_by_task_long(gap)
    summary = rt.gap_summary(long, ["oracle"], keys=("task",))
    # No `full` rows yet: no gap at all.
    assert gap.is_empty() and long.is_empty() and summary.is_empty()
    full = df.filter(pl.col("setup") == "dotted").with_columns(setup=pl.lit("full"))
    # Flip m1's C-BCT-CT answers in `full`: 1 of 4 right instead of 3 -> gap -50 points.
    flipped = full.with_columns(
        correct=pl.when((pl.col("model") == "m1") & (pl.col("task") == "C-BCT-CT"))
        .then(~pl.col("correct"))
        .otherwise(pl.col("correct"))
    )
    long = rt.gap_by_task_long(rt.gap_by_task(pl.concat([df, flipped])))
    summary = rt.gap_summary(long, ["oracle"], keys=("task",))
    ct = summary.filter(pl.col("task") == "C-BCT-CT").row(0, named=True)
    assert ct["models"] == 2  # m1 and m2; human and the oracle are not models
    assert (ct["min"], ct["max"], ct["mean"]) == (-50.0, 0.0, -25.0)
    assert "mean" not in long["task"].to_list()
