"""Which computation is the paper's Table 3? Each candidate is fed the paper's printed Table
2 rows and compared with its printed Table 3; the report uses the one with the smallest
total residual (tables.TABLE3_METHOD; the residual table is in docs/report.md).

The candidates, per category and setup, over the models of that setup's Table 2 block:

- `cells`: mean and sample std over the category's Table 2 cells, one per model and kind
  (`C-BCT` and `N-BCT` are two cells of BCT).
- `pooled items`: each model's accuracy over all of the category's items, then mean and
  sample std across models. A Table 2 cell averages its tasks' items, and every task has
  the same number of items (the paper: 100), so a model's pooled figure is its cells
  weighted by their task counts.
- `model x task`: mean and sample std over the (model, task) accuracies, the values of the
  paper's per-task heatmaps. Table 2 prints cells, not tasks: the mean is the pooled one
  (equal items per task) and the std is exact only where every kind of the category has
  one task; elsewhere the printed rows bound it, from below by the std with every task at
  its cell's value and from above by the std with each cell's tasks as far apart as the
  range 0-100 lets them be (cell mean kept).

A residual is |candidate - paper|; for a bounded std, the distance from the paper's value to
the interval (0 inside it). The decision total adds every row's mean residual and the std
residuals of the rows where every candidate's std is exact; the best and worst cases add
the bounded stds too, at the interval's nearest and farthest end.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

METHODS = ("cells", "pooled items", "model x task")
SETUP_ORDER = ("text", "dotted", "full")
FULL_SCORE = 100.0  # accuracies are percentages


@dataclass(frozen=True)
class Table2Row:
    """One printed Table 2 row: setup, model, accuracy (%) per kind-category head."""

    setup: str
    model: str
    cells: dict[str, float]


@dataclass(frozen=True)
class PaperTables:
    """The paper's printed tables as the fixture holds them."""

    task_ids: list[str]
    table2: list[Table2Row]
    human_row: str
    table3: dict[tuple[str, str], tuple[float, float]]  # (code, setup) -> (mean, std)
    categories: dict[str, str]  # code -> the category's name as Table 3 prints it


@dataclass(frozen=True)
class Estimate:
    """A candidate's figure for one category and setup; std_low == std_high when exact."""

    method: str
    code: str
    setup: str
    mean: float
    std_low: float
    std_high: float

    @property
    def exact(self) -> bool:
        """Whether the printed rows determine the std."""
        return math.isclose(self.std_low, self.std_high)


@dataclass(frozen=True)
class Residual:
    """|candidate - paper| for one method, category and setup."""

    estimate: Estimate
    paper_mean: float
    paper_std: float

    @property
    def mean(self) -> float:
        """The mean's residual."""
        return abs(self.estimate.mean - self.paper_mean)

    def std(self, end: str = "nearest") -> float:
        """The std's residual: to the interval's nearest end (0 inside it) or farthest."""
        low, high = self.estimate.std_low, self.estimate.std_high
        if end == "farthest":
            return max(abs(self.paper_std - low), abs(self.paper_std - high))
        return (
            0.0
            if low <= self.paper_std <= high
            else min(abs(self.paper_std - low), abs(self.paper_std - high))
        )


@dataclass(frozen=True)
class Totals:
    """A method's summed residuals."""

    method: str
    means: float  # every row
    exact_stds: float  # the rows where every candidate's std is exact
    best: float  # means + every std at its nearest end
    worst: float  # means + every std at its farthest end

    @property
    def decision(self) -> float:
        """What the default is chosen by: the residuals the printed rows determine."""
        return self.means + self.exact_stds


def load_paper_tables(path: Path) -> PaperTables:
    """The fixture of the paper's Tables 1-3 (tests/pipelines/fixtures/)."""
    raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    heads = raw["table2"]["heads"]
    rows = [
        Table2Row(r["setup"], r["model"], dict(zip(heads, r["values"], strict=True)))
        for r in raw["table2"]["rows"]
    ]
    table3 = {
        (r["code"], setup): (r[setup][0], r[setup][1])
        for r in raw["table3"]
        for setup in SETUP_ORDER
    }
    categories = {r["code"]: r["category"] for r in raw["table3"]}
    return PaperTables(raw["table1_task_ids"], rows, raw["table2"]["human_row"], table3, categories)


def tasks_per_group(task_ids: Iterable[str]) -> dict[str, int]:
    """Number of tasks per kind-category head (`N-BCT-MT` counts for `N-BCT`)."""
    return dict(Counter(task_id.rsplit("-", 1)[0] for task_id in task_ids))


def _spread_tasks(cell: float, tasks: int) -> list[float]:
    """`tasks` values in [0, 100] with mean `cell` and the largest sum of squares: as many
    at 100 as fit, one remainder, the rest at 0 (the farthest apart they can be)."""
    total = cell * tasks
    full = min(int(total // FULL_SCORE), tasks)
    values = [FULL_SCORE] * full
    if full < tasks:
        values.append(total - FULL_SCORE * full)
    return values + [0.0] * (tasks - len(values))


def candidates(
    rows: Sequence[Table2Row], counts: Mapping[str, int], exclude: Iterable[str] = ()
) -> list[Estimate]:
    """Every method's estimate for every category and setup of `rows` (the models of each
    setup's block; `exclude` names rows that are not models, such as the human one)."""
    left_out = set(exclude)
    estimates = []
    for setup in [s for s in SETUP_ORDER if any(r.setup == s for r in rows)]:
        block = [r for r in rows if r.setup == setup and r.model not in left_out]
        codes = sorted({head.split("-")[1] for r in block for head in r.cells})
        for code in codes:
            groups = sorted({h for r in block for h in r.cells if h.split("-")[1] == code})
            cells = [r.cells[g] for r in block for g in groups]
            weight = sum(counts[g] for g in groups)
            pooled = [sum(r.cells[g] * counts[g] for g in groups) / weight for r in block]
            flat = [r.cells[g] for r in block for g in groups for _ in range(counts[g])]
            apart = [v for r in block for g in groups for v in _spread_tasks(r.cells[g], counts[g])]
            cells_std = statistics.stdev(cells)
            pooled_std = statistics.stdev(pooled)
            estimates += [
                Estimate("cells", code, setup, statistics.mean(cells), cells_std, cells_std),
                Estimate(
                    "pooled items", code, setup, statistics.mean(pooled), pooled_std, pooled_std
                ),
                Estimate(
                    "model x task",
                    code,
                    setup,
                    statistics.mean(flat),
                    statistics.stdev(flat),
                    statistics.stdev(apart),
                ),  # fmt: skip
            ]
    return estimates


def residuals(
    estimates: Iterable[Estimate], paper: Mapping[tuple[str, str], tuple[float, float]]
) -> list[Residual]:
    """Each estimate beside the paper's printed mean and std of its category and setup."""
    return [Residual(e, *paper[(e.code, e.setup)]) for e in estimates]


def totals(found: Sequence[Residual]) -> list[Totals]:
    """Summed residuals per method, in METHODS order."""
    rows = {(r.estimate.code, r.estimate.setup) for r in found}
    exact_rows = {
        key
        for key in rows
        if all(r.estimate.exact for r in found if (r.estimate.code, r.estimate.setup) == key)
    }
    result = []
    for method in METHODS:
        mine = [r for r in found if r.estimate.method == method]
        means = sum(r.mean for r in mine)
        exact = sum(r.std() for r in mine if (r.estimate.code, r.estimate.setup) in exact_rows)
        best = means + sum(r.std() for r in mine)
        worst = means + sum(r.std("farthest") for r in mine)
        result.append(Totals(method, means, exact, best, worst))
    return result


def winner(summed: Sequence[Totals]) -> str:
    """The method with the smallest decision total."""
    return min(summed, key=lambda t: t.decision).method


def evidence(paper: PaperTables) -> tuple[list[Residual], list[Totals]]:
    """The residuals and totals of every method on the paper's printed rows."""
    estimates = candidates(paper.table2, tasks_per_group(paper.task_ids), [paper.human_row])
    found = residuals(estimates, paper.table3)
    return found, totals(found)


def _figure(e: Estimate) -> str:
    if e.exact:
        return f"{e.mean:.1f} ± {e.std_low:.1f}"
    return f"{e.mean:.1f} ± [{e.std_low:.1f}, {e.std_high:.1f}]"


def markdown(paper: PaperTables) -> str:
    """The residual table and the totals as Markdown, recomputed from the paper's rows."""
    found, summed = evidence(paper)
    by_key = {(r.estimate.method, r.estimate.code, r.estimate.setup): r for r in found}
    head = "| category | setup | paper | " + " | ".join(METHODS) + " |"
    lines = [head, "|" + "---|" * (3 + len(METHODS))]
    for code in sorted(paper.categories):
        for setup in SETUP_ORDER:
            mean, std = paper.table3[(code, setup)]
            cells = []
            for method in METHODS:
                r = by_key[(method, code, setup)]
                cells.append(f"{_figure(r.estimate)} ({r.mean:.1f} / {r.std():.1f})")
            lines.append(
                f"| {code} | {setup} | {mean:.1f} ± {std:.1f} | " + " | ".join(cells) + " |"
            )
    exact = {(r.estimate.code, r.estimate.setup) for r in found} - {
        (r.estimate.code, r.estimate.setup) for r in found if not r.estimate.exact
    }
    rows = len(paper.table3)
    lines += [
        "",
        f"| method | Σ mean residuals ({rows} rows) | Σ std residuals ({len(exact)} exact rows) "
        "| decision total "
        "| best case (bounded stds at the nearest end) | worst case (at the farthest end) |",
        "|---|---|---|---|---|---|",
    ]
    for t in summed:
        lines.append(
            f"| {t.method} | {t.means:.1f} | {t.exact_stds:.1f} | {t.decision:.1f} "
            f"| {t.best:.1f} | {t.worst:.1f} |"
        )
    lines += ["", f"Smallest decision total: **{winner(summed)}**."]
    return "\n".join(lines) + "\n"


DOCS_BEGIN = "<!-- table3-evidence:begin (scripts/table3_evidence.py writes this block) -->"
DOCS_END = "<!-- table3-evidence:end -->"


def docs_block(text: str) -> str:
    """The generated block of docs/report.md (between DOCS_BEGIN and DOCS_END)."""
    if DOCS_BEGIN not in text or DOCS_END not in text:
        raise ValueError(f"no block between {DOCS_BEGIN!r} and {DOCS_END!r}")
    return text.split(DOCS_BEGIN, 1)[1].split(DOCS_END, 1)[0].strip("\n") + "\n"


def with_docs_block(text: str, block: str) -> str:
    """`text` with its generated block replaced by `block`."""
    before = text.split(DOCS_BEGIN, 1)[0]
    after = text.split(DOCS_END, 1)[1]
    return f"{before}{DOCS_BEGIN}\n{block}{DOCS_END}{after}"
