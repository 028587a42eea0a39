"""The report's probe sections (GeoBuild and the solver audit: geobuild_sections.py)."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from pipelines.report.figures import transfer_heatmap
from pipelines.report.html_page import Figure, Heading, Section
from pipelines.report.html_page import table_blocks as _tables
from store.storage import Location


def probe_sections(
    results: Location, min_accuracy: float = 70.0, out: Path | None = None
) -> list[Section]:
    """Paper Tables 4-5 per probed encoder, and (with `out`, the report folder the figure
    goes to) Figure 8, the transfer matrix."""
    intro = (
        "Linear probes on vision encoders (paper Appendix B). Probe accuracy (the paper's "
        "Table 4): accuracy (%) per training regime and config (U/F: unfrozen/frozen; F/D: "
        "full/dot training images), tested on full (F) and dot (D) images. Cross-task "
        f"transfer (its Table 5): transfers at or above {min_accuracy:g}% (report "
        "--min-accuracy). The transfer matrix (its Figure 8): every separate probe on every "
        "task."
    )
    if not isinstance(results, Path):
        return [Section("Probes (Tables 4-5)", intro, empty="probes write local folders only")]
    if not (results / "probes").exists():
        # probes.tables imports the probe trainer (torch, 10 s on 2 busy cores): not for a
        # report without probes (issue 50). The message is the one summarize() raises.
        missing = f"no probe results under {results / 'probes'}; run `probe` first"
        return [Section("Probes (Tables 4-5)", intro, empty=missing)]
    from probes.tables import summarize, transfer_panels

    try:
        tables = summarize(results, min_accuracy)
    except FileNotFoundError as err:
        return [Section("Probes (Tables 4-5)", intro, empty=str(err))]
    sections = []
    for encoder, parts in tables.items():
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", encoder)
        section = Section(f"Probes: {encoder}", intro)
        section.blocks += [
            Heading(
                "Probe accuracy (%), the paper's Table 4",
                "Rows: training regime (All: one probe on every task; Separate: one per task; "
                "Shuffled labels: one per task trained on permuted labels, a control at chance) "
                "and config; columns: the test task and test images.",
            )
        ]
        section.blocks += _tables(
            f"probe_table4_{slug}",
            f"Probe accuracy (%), {encoder}",
            readable_probe_columns(parts["table4"]),
        )
        table5 = parts["table5"]
        none = "" if not table5.is_empty() else f"No cross-task transfer reaches {min_accuracy:g}%."
        section.blocks += [
            Heading(
                "Cross-task transfer, the paper's Table 5",
                none or "Configs as config/test images.",
            )
        ]
        section.blocks += _tables(f"probe_table5_{slug}", f"Cross-task transfer, {encoder}", table5)
        panels = transfer_panels(parts["transfer"])
        if panels and out is not None:
            path = transfer_heatmap(
                panels,
                f"Probe transfer matrix, {encoder}",
                out / f"figures/probe_transfer_{slug}.png",
            )
            section.blocks.append(
                Figure(
                    f"figures/{path.name}",
                    "Transfer matrix (the paper's Figure 8)",
                    "One panel per config and test images: rows the task a separate probe was "
                    "trained on, columns the task it was tested on, cells accuracy (%); the "
                    "diagonal is the probe accuracy table's Separate rows, the rest the "
                    "transfers the cross-task table filters. Grey: not run.",
                )
            )
        section.blocks += _tables(
            f"probe_transfer_{slug}",
            f"Transfer matrix, {encoder} (accuracy %, long)",
            parts["transfer"].with_columns(pl.col("Accuracy").round(1)),
            folded=True,
        )
        section.empty = f"no probe accuracies for {encoder}"
        sections.append(section)
    return sections


def readable_probe_columns(table4: pl.DataFrame) -> pl.DataFrame:
    """Table 4's paper-style heads (`AllF`, `C-BCT-CTD`) spelled out: `all tasks, full
    images`, `C-BCT-CT, dotted images`."""
    from probes.data import SETUP_OF_SUBSCRIPT

    names = {}
    for column in table4.columns:
        subscript, stem = column[-1:], column[:-1]
        if subscript in SETUP_OF_SUBSCRIPT and stem and column not in ("Config", "Train DS"):
            task = "all tasks (mean)" if stem == "All" else stem
            names[column] = f"{task}, {SETUP_OF_SUBSCRIPT[subscript]} images"
    return table4.rename({"Train DS": "training regime", "Config": "config", **names})
