"""Table 4 / Table 5 layout from hand-made result rows."""

from __future__ import annotations

import polars as pl

from probes.tables import table4, table5, transfer_matrix

TASKS = ("C-BCT-CT", "U-PAP-PT")


def _rows() -> pl.DataFrame:
    rows = []
    for regime, trained in (("joint", "All"), ("separate", TASKS[0]), ("separate", TASKS[1])):
        for config in ("FD", "UF"):
            for task in TASKS:
                for setup in ("F", "D"):
                    own = trained in ("All", task)
                    acc = 0.9 if own and setup == config[1] else 0.6 if own else 0.75
                    rows.append(
                        {
                            "regime": regime,
                            "train_tasks": trained,
                            "config": config,
                            "eval_task": task,
                            "eval_setup": setup,
                            "acc": acc * 100,
                        }
                    )
    return pl.DataFrame(rows)


def test_table4_rows_columns_and_means() -> None:
    t4 = table4(_rows())
    assert t4.select("Train DS", "Config").rows() == [
        ("All", "UF"),
        ("All", "FD"),
        ("Separate", "UF"),
        ("Separate", "FD"),
    ]
    assert t4.columns[2:] == ["AllF", "AllD", "C-BCT-CTF", "C-BCT-CTD", "U-PAP-PTF", "U-PAP-PTD"]
    uf = t4.row(0, named=True)
    assert uf["C-BCT-CTF"] == 90.0 and uf["C-BCT-CTD"] == 60.0
    assert uf["AllF"] == (uf["C-BCT-CTF"] + uf["U-PAP-PTF"]) / 2


def test_table5_lists_only_cross_task_cells_above_threshold() -> None:
    t5 = table5(_rows(), min_accuracy=70.0)
    assert set(t5.select("Train Dataset", "Eval Dataset").rows()) == {TASKS, TASKS[::-1]}
    assert all(cell.count("(75.0)") == 4 for cell in t5["Configs with Accuracy"])
    assert table5(_rows(), min_accuracy=80.0).is_empty()
    assert transfer_matrix(_rows()).height == 2 * 2 * 2 * 2
