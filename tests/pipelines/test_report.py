"""report: values recomputed from the raw result rows, CSV/Markdown copies, figures, notes."""

from __future__ import annotations

import csv
import html
import json
import re
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from PIL import Image

from pipelines import cli
from pipelines.human.items import dotted_items
from pipelines.noregeo.summarize import load_results
from pipelines.report.html_page import INTERVAL_SUFFIX
from pipelines.report.tables import TABLE3_SPREAD

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


@pytest.fixture(scope="module")
def model_report(small_items: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The report of the baselines plus MODELS."""
    with pytest.MonkeyPatch.context() as mp:
        _register(mp)
        base = tmp_path_factory.getbasetemp()
        results = with_models(baseline_results(small_items, base), base)
        out = tmp_path_factory.mktemp("model_report")
        assert cli.main(["report", str(results), "--out", str(out)]) == 0
    return results, out


@pytest.fixture(scope="module")
def report(small_items: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    with pytest.MonkeyPatch.context() as mp:
        _register(mp)
        results = baseline_results(small_items, tmp_path_factory.getbasetemp())
        out = tmp_path_factory.mktemp("report")
        assert cli.main(["report", str(results), "--out", str(out)]) == 0
    return results, out


def _csv(out: Path, name: str) -> pl.DataFrame:
    return pl.read_csv(out / "tables" / f"{name}.csv")


def test_table2_oracle_is_100_everywhere_and_cells_match_raw_rows(report) -> None:
    results, out = report
    table2 = _csv(out, "table2")
    table2 = table2.select(c for c in table2.columns if not c.endswith(INTERVAL_SUFFIX))
    oracle = table2.filter(pl.col("model") == "oracle").drop("setup", "model", "tag")
    assert oracle.height == 3 and (oracle.to_numpy() == 100.0).all()
    raw = load_results(results)
    for row in table2.iter_rows(named=True):
        for group in (c for c in table2.columns if c not in ("setup", "model", "tag")):
            kind, code = group.split(" ")[0].split("-")
            part = raw.filter(
                (pl.col("model") == row["model"])
                & (pl.col("setup") == row["setup"])
                & pl.col("task").str.starts_with(f"{kind}-{code}-")
            )
            if group == "N-SCP w/o TTT":  # N-SCP without triangle_type
                part = part.filter(pl.col("task") != "N-SCP-TTT")
            expected = (
                round(float(np.mean(part["correct"].to_numpy())) * 100, 1) if part.height else None
            )
            assert (
                row[group] == pytest.approx(expected)
                if expected is not None
                else row[group] is None
            )


def test_human_row_only_in_dotted_block_and_not_in_table3(model_report) -> None:
    _results, out = model_report
    table2 = _csv(out, "table2")
    assert table2.filter(pl.col("model") == "human")["setup"].to_list() == ["dotted"]
    assert set(_csv(out, "table3_long")["models"].to_list()) == {len(UNDER_TEST)}


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


def test_random_weights_and_baselines_are_tagged_rows_after_the_models(model_report) -> None:
    _results, out = model_report
    table2 = _csv(out, "table2")
    for setup in ("text", "full"):
        order = table2.filter(pl.col("setup") == setup)["model"].to_list()
        # the model under test first, then the random-weight model, then the baselines
        assert order == ["model-a", "model-b", *BASELINES]
    page = (out / "index.html").read_text()
    expected = {"model-b": "random weights"} | {m: "baseline" for m in BASELINES}
    for table in ("key_results", "overall", "table2", "headline_answer_formats"):
        assert _tagged_rows(page, table) == expected, table
    for table in ("key_results", "overall", "table2"):
        body = page[page.index(f'id="{table}"') :].split("</table>")[0]
        assert '<td class="txt">model-a</td>' in body, table  # untagged: a model under test
    # Where models are columns, the column heads carry the tag.
    gap = page[page.index('id="gap_tasks"') :].split("</thead>")[0]
    assert '<th class=ref>model-b <span class="tag">random weights</span></th>' in gap
    assert '<th class=ref>oracle <span class="tag">baseline</span></th>' in gap
    # The banner names each tagged model once, with what its tag means.
    banner = re.search(r'<p class="banner">(.*?)</p>', page, re.S)
    assert banner is not None
    assert "model-b: tagged random weights" in banner.group(1)
    assert "constant, oracle, random: tagged baseline" in banner.group(1)
    assert "model-a" not in banner.group(1)


def test_csv_and_markdown_copies_carry_the_row_tags(model_report) -> None:
    """A reader of tables/*.csv or *.md sees what the page's row tags say (issue 39)."""
    _results, out = model_report
    expected = {"model-b": "random weights"} | {m: "baseline" for m in BASELINES}
    for table in ("key_results", "overall", "table2"):
        frame = _csv(out, table)
        assert frame.columns[frame.columns.index("model") + 1] == "tag", table
        tags = dict(frame.select("model", "tag").unique().iter_rows())
        assert {m: t for m, t in tags.items() if t is not None} == expected, table
        assert tags["model-a"] is None, table  # a model under test: no tag
        header = _markdown_rows(out / "tables" / f"{table}.md")[0]
        assert header[header.index("model") + 1] == "tag", table
    page = (out / "index.html").read_text()
    for table in ("key_results", "overall", "table2"):  # the page tags the model cell instead
        head = page[page.index(f'id="{table}"') :].split("</thead>")[0]
        assert "<th>tag</th>" not in head, table


def test_no_best_marks_on_tagged_rows_and_none_without_a_model_under_test(
    model_report, report
) -> None:
    _results, out = model_report
    page = (out / "index.html").read_text()
    for table in ("key_results", "table2"):
        body = page[page.index(f'id="{table}"') :].split("</table>")[0]
        rows = body.split("<tr")[2:]
        marked = [r for r in rows if "best" in r or "second" in r]
        assert marked and all(">model-a</td>" in r for r in marked), table
    _results, baselines_only = report
    page = (baselines_only / "index.html").read_text()
    assert ' best"' not in page and ' second"' not in page  # no mark in any cell
    assert "No model under test ran (every row is tagged): no best marks." in page


def test_only_baselines_means_no_table3(report) -> None:
    _results, out = report
    assert not (out / "tables" / "table3.csv").exists()
    assert not (out / "tables" / "table3_long.csv").exists()
    page = (out / "index.html").read_text()
    assert "only reference rows (oracle, random, constant) have results" in page


def test_table3_is_mean_and_sample_std_over_model_task_values(model_report) -> None:
    """TABLE3_METHOD: one value per model under test and task of the category."""
    results, out = model_report
    raw = load_results(results)  # engine errors count as wrong (the paper's accuracy)
    long = _csv(out, "table3_long")
    assert long.height
    for row in long.iter_rows(named=True):
        values = []
        for model in UNDER_TEST:
            part = raw.filter(
                (pl.col("model") == model)
                & (pl.col("setup") == row["setup"])
                & (pl.col("task").str.split("-").list.get(1) == row["code"])
            )
            for task in sorted(set(part["task"].to_list())):
                values.append(part.filter(pl.col("task") == task)["correct"].mean() * 100)
        assert row["values"] == len(values)
        assert row["mean"] == pytest.approx(round(np.mean(values), 1), abs=0.051)
        if len(values) == 1:  # one value has no sample std
            assert row["std"] is None
        else:
            assert row["std"] == pytest.approx(round(np.std(values, ddof=1), 1), abs=0.051)
    display = _csv(out, "table3")
    first = long.filter(pl.col("code") == "ACM", pl.col("setup") == "full").row(0, named=True)
    acm = display.filter(pl.col("Task category").str.contains("ACM"))
    assert acm["Text with full images" + TABLE3_SPREAD][0] == f"{first['mean']} ± {first['std']}"
    page = (out / "index.html").read_text()
    assert "Method: model x task." in page and "Pooled variant" not in page
    assert not (out / "tables" / "table3_pooled.csv").exists()


def test_table3_cell_of_one_model_has_no_spread() -> None:
    """With one model in a setup, ddof=1 has no std: the cell says so, not "± 0.0"."""
    from pipelines.report.tables import table3

    long = pl.DataFrame(
        {
            "category": ["Area comparison", "Area comparison"],
            "code": ["ACM", "ACM"],
            "setup": ["text", "dotted"],
            "models": [2, 1],
            "mean": [40.0, 37.5],
            "std": [5.0, None],
        }
    )
    row = table3(long).row(0, named=True)
    assert row["Text" + TABLE3_SPREAD] == "40.0 ± 5.0"
    assert row["Text with dotted images" + TABLE3_SPREAD] == "37.5 ± –"  # every cell's shape


def test_gap_is_full_minus_dotted_per_task(report) -> None:
    _results, out = report
    gap = _csv(out, "gap_tasks")
    full, dotted = _csv(out, "accuracy_tasks_full"), _csv(out, "accuracy_tasks_dotted")
    tasks = gap.filter(pl.col("task") != "mean")
    assert "human" not in gap.columns  # the human ran the dotted setup only
    for model in BASELINES:
        expected = full[model].to_numpy() - dotted[model].to_numpy()
        assert np.allclose(tasks[model].to_numpy(), expected, atol=0.051)
        mean_row = gap.filter(pl.col("task") == "mean")[model][0]
        assert mean_row == pytest.approx(expected.mean(), abs=0.051)


def test_mse_table_uses_valid_numeric_answers(report) -> None:
    results, out = report
    raw = load_results(results)
    mse = _csv(out, "mse_tasks_text")
    assert set(mse["task"].to_list()) == set(
        raw.filter(pl.col("answer_type") != "choice")["task"].to_list()
    )
    assert np.allclose(mse["oracle"].to_numpy(), 0.0, atol=1e-6)
    part = raw.filter(
        (pl.col("model") == "random")
        & (pl.col("setup") == "text")
        & (pl.col("task") == "N-ECL-SLT")
    )
    sq = [s for s, v in zip(part["sq_error"], part["valid"], strict=True) if v and s is not None]
    value = mse.filter(pl.col("task") == "N-ECL-SLT")["random"][0]
    assert value == pytest.approx(sum(sq) / len(sq), abs=1e-3)


def _plain_markdown(text: str) -> str:
    """A Markdown cell's text without its escapes (backslashes, then entities)."""
    return html.unescape(re.sub(r"\\(.)", r"\1", text))


def _markdown_rows(path: Path) -> list[list[str]]:
    lines = path.read_text().splitlines()
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in lines if line != lines[1]]


def test_every_table_has_matching_csv_and_markdown(model_report) -> None:
    _results, out = model_report
    names = sorted(p.stem for p in (out / "tables").glob("*.csv"))
    assert sorted(p.stem for p in (out / "tables").glob("*.md")) == names
    expected = {"table2", "table3", "pair_consistency", "invalid_rates", "engine_error_rates"}
    assert expected | {"gap_tasks", "provenance_runs", "provenance_items"} <= set(names)
    for name in names:
        with (out / "tables" / f"{name}.csv").open() as f:
            csv_rows = list(csv.reader(f))
        md_rows = _markdown_rows(out / "tables" / f"{name}.md")
        assert len(md_rows) == len(csv_rows), name
        for csv_row, md_row in zip(csv_rows, md_rows, strict=True):
            for a, b in zip(csv_row, md_row, strict=True):
                try:
                    assert float(a) == pytest.approx(float(b), abs=1e-4), name
                except ValueError:
                    assert a.strip('"') == _plain_markdown(b), name
    html = (out / "index.html").read_text()
    assert html.count("<table>") == len(names)


def test_engine_errors_apart_from_invalid_outputs(model_report) -> None:
    results, out = model_report
    raw = load_results(results).filter(pl.col("model") == "model-a")
    errors, invalid = _csv(out, "engine_error_rates"), _csv(out, "invalid_rates")
    for setup in ("text", "dotted", "full"):
        part = raw.filter(pl.col("setup") == setup)
        failed = part["engine_error"].is_not_null()
        expected_errors = round(100 * failed.sum() / part.height, 1)
        answered = part.filter(~failed)
        expected_invalid = round(100 * (~answered["valid"]).sum() / answered.height, 1)
        row = errors.filter(pl.col("model") == "model-a")[setup][0]
        assert row == pytest.approx(expected_errors) and row > 0
        assert invalid.filter(pl.col("model") == "model-a")[setup][0] == pytest.approx(
            expected_invalid
        )
    assert (errors.filter(pl.col("model") == "oracle").drop("model", "tag").to_numpy() == 0).all()


def test_provenance_from_run_records_and_manifest(model_report, small_items: Path) -> None:
    _results, out = model_report
    manifest = json.loads((small_items / "manifest.json").read_text())
    items = _csv(out, "provenance_items")
    assert items["content sha256"].to_list() == [manifest["content_sha256"]]
    assert items["item seed"].to_list() == [manifest["seed"]]
    per_task = _csv(out, "provenance_items_per_task")
    assert per_task.height == len(manifest["counts"])
    first = per_task.row(0, named=True)
    assert first["dotted"] == manifest["counts"][first["task"]]["dotted"]
    runs = _csv(out, "provenance_runs")
    engines = dict(
        runs.filter(pl.col("benchmark") == "noregeo").select("model", "engine").iter_rows()
    )
    assert {m: engines[m] for m in BASELINES} == {m: m for m in BASELINES}
    assert engines["human"] == "human"
    assert all(len(c) == 12 for c in runs["git commit"].to_list())  # recorded, not "?"
    weights = dict(
        runs.filter(pl.col("benchmark") == "noregeo").select("model", "weights").iter_rows()
    )
    assert {m: weights[m] for m in BASELINES} == {m: "none" for m in BASELINES}


@pytest.mark.parametrize(
    ("weights", "shown"),
    [("random", "RANDOM (answers are noise)"), ("real", "real"), (None, "?")],
)
def test_runs_table_marks_random_weight_models(weights: str | None, shown: str) -> None:
    """A record's model config names its weights; random ones are marked, old records
    (written before the field existed) show `?`."""
    from pipelines.report import provenance as prov

    model = {"name": "m", "engine": "hf", "repo": "r", "revision": "local"}
    if weights is not None:
        model["weights"] = weights
    record = prov.Record("noregeo", "model=m", {"model": model, "git_commit": "0" * 40})
    assert prov.runs_table([record])["weights"].to_list() == [shown]


def test_figures_are_valid_pngs_referenced_by_the_page(report) -> None:
    _results, out = report
    figures = sorted((out / "figures").glob("*.png"))
    # accuracy and MSE (setups side by side), the gap heatmap (Figure 6), the per-task gap
    # summary (Figure 7) and the category distribution (Figure 2)
    assert len(figures) == 5
    html = (out / "index.html").read_text()
    for figure in figures:
        with Image.open(figure) as image:
            image.verify()
        assert f'src="figures/{figure.name}"' in html
    assert "http://" not in html and "https://" not in html  # no network assets


def test_sections_without_data_say_so(report, tmp_path: Path, monkeypatch) -> None:
    _results, out = report
    html = (out / "index.html").read_text()
    assert (
        "No data: " in html
        and "no audit at RESULTS/audit/audit.csv" in html
        and "no probe results" in html
    )
    _register(monkeypatch)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["report", str(empty), "--out", str(tmp_path / "r")]) == 0
    page = (tmp_path / "r" / "index.html").read_text()
    # key results, NoReGeo, GeoBuild, audit, probes, provenance (no run records)
    assert page.count('class="empty"') == 6
    assert not (tmp_path / "r" / "samples.html").exists()  # no results, no samples
    assert "<table>" not in page


def test_audit_counts(report, tmp_path: Path, monkeypatch) -> None:
    results, _out = report
    audit = tmp_path / "audit.csv"
    audit.write_text(
        "id,status,conflicts,reason,restarts,residual,seconds\n"
        "1,solved,,,1,1e-12,0.1\n2,solved,,,1,1e-12,0.3\n"
        '3,no_construction,"angle_value(angle=ABC, value=25) | point_on_line(point=D, line=BC)",'
        "x,8,0.01,2.0\n"
    )
    _register(monkeypatch)
    out = tmp_path / "r"
    assert cli.main(["report", str(results), "--out", str(out), "--audit", str(audit)]) == 0
    status = dict(_csv(out, "audit_status").select("status", "problems").iter_rows())
    assert status == {"solved": 2, "no_construction": 1}
    conflicts = dict(_csv(out, "audit_conflicts").iter_rows())
    assert conflicts == {"angle_value": 1, "point_on_line": 1}


def test_missing_results_dir_exits_2(tmp_path: Path, monkeypatch, capsys) -> None:
    _register(monkeypatch)
    assert cli.main(["report", str(tmp_path / "nope"), "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.startswith("error:")
    assert not (tmp_path / "r").exists()


def test_pair_consistency_counts_pairs_with_both_items_right(report) -> None:
    results, out = report
    raw = load_results(results).filter(pl.col("pair_id").is_not_null())
    table = _csv(out, "pair_consistency")
    assert (table["oracle"].to_numpy() == 100.0).all()
    for row in table.iter_rows(named=True):
        part = raw.filter(
            (pl.col("model") == "random")
            & (pl.col("setup") == row["setup"])
            & (pl.col("task") == row["task"])
        )
        both: dict[str, list[bool]] = {}
        for pair, correct in zip(part["pair_id"], part["correct"], strict=True):
            both.setdefault(pair, []).append(correct)
        full = [all(v) for v in both.values() if len(v) == 2]
        assert row["pairs"] == len(full)
        assert row["random"] == pytest.approx(round(100 * sum(full) / len(full), 1))


def test_sample_browser_rows_images_and_verdicts(model_report) -> None:
    results, out = model_report
    raw = load_results(results)
    page = (out / "samples.html").read_text()
    rows = re.findall(r'<tr class="sample (\w+)" data-task="([^"]+)" data-setup="(\w+)" '
                      r'data-model="([^"]+)">(.*?)</tr>', page, re.S)  # fmt: skip
    # every item of each task x setup, each with every model that ran it
    expected = raw
    assert len(rows) == expected.height > 0
    assert sorted((t, s, m) for _c, t, s, m, _b in rows) == sorted(
        expected.select("task", "setup", "model").iter_rows()
    )
    for css, _task, setup, model, body in rows:
        images = re.findall(r'<img src="(samples/[0-9a-f]{16}\.png)"', body)
        assert len(images) == (0 if setup == "text" else 1)
        for image in images:
            with Image.open(out / image) as picture:
                assert max(picture.size) <= 140
        verdict = re.findall(r"<td>([a-z ]+)</td>$", body)[0]
        assert {"right": "right", "wrong": "wrong", "invalid output": "invalid"}.get(
            verdict, "error"
        ) == css
        if model == "oracle":
            assert verdict == "right"
    assert "engine error" in page  # model-a's failed rows show as such, not as wrong
    # The model cell carries the same tag as the report's tables.
    cells = {m: b.split("</td><td>")[2] for _c, _t, _s, m, b in rows}
    assert cells["model-b"] == 'model-b <span class="tag">random weights</span>'
    assert cells["oracle"] == 'oracle <span class="tag">baseline</span>'
    assert cells["model-a"] == "model-a"


def test_probe_table4_heads_are_spelled_out() -> None:
    from pipelines.report.probe_sections import readable_probe_columns

    table4 = pl.DataFrame(
        {"Train DS": ["All"], "Config": ["UF"], "AllF": [50.0], "AllD": [51.0],
         "C-BCT-CTF": [60.0], "C-BCT-CTD": [61.0]}
    )  # fmt: skip
    assert readable_probe_columns(table4).columns == [
        "training regime",
        "config",
        "all tasks (mean), full images",
        "all tasks (mean), dotted images",
        "C-BCT-CT, full images",
        "C-BCT-CT, dotted images",
    ]


def test_audit_found_in_results_without_flag(report, tmp_path: Path, monkeypatch) -> None:
    results, _out = report
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    (copy / "audit").mkdir()
    (copy / "audit" / "audit.csv").write_text(
        "id,status,conflicts,reason,restarts,residual,seconds\n1,solved,,,1,1e-12,0.1\n"
    )
    _register(monkeypatch)
    out = tmp_path / "r"
    assert cli.main(["report", str(copy), "--out", str(out)]) == 0
    assert dict(_csv(out, "audit_status").select("status", "problems").iter_rows()) == {"solved": 1}


def test_headline_binary_and_multiple_choice_recomputed(model_report) -> None:
    results, out = model_report
    raw = load_results(results)  # engine errors count as wrong (the paper's accuracy)
    table = _csv(out, "headline_answer_formats")
    assert {"model-a", "model-b", "human", *BASELINES} == set(table["model"].to_list())
    for row in table.iter_rows(named=True):
        part = raw.filter(
            (pl.col("model") == row["model"])
            & (pl.col("setup") == row["setup"])
            & (pl.col("answer_type") == "choice")
        )
        binary = part.filter(pl.col("options").list.len() == 2)
        assert row["multiple_choice_n"] == part.height and row["binary_n"] == binary.height
        assert row["multiple_choice"] == pytest.approx(round(part["correct"].mean() * 100, 1))
        if binary.is_empty():  # the human's few voted items may hold no binary one
            assert row["binary"] is None
        else:
            assert row["binary"] == pytest.approx(round(binary["correct"].mean() * 100, 1))
    best = _csv(out, "headline_best")
    for row in best.iter_rows(named=True):
        models = table.filter((pl.col("setup") == row["setup"]) & pl.col("model").is_in(UNDER_TEST))
        assert row["best_binary"] == pytest.approx(models["binary"].max())
        assert row["best_multiple_choice"] == pytest.approx(models["multiple_choice"].max())
    # The paper's definition: the mean of the Classification cells (C-ACM, C-BCT, C-SYM).
    paper = _csv(out, "headline_paper")
    assert paper.height
    for row in paper.iter_rows(named=True):
        part = raw.filter(
            (pl.col("model") == row["model"])
            & (pl.col("setup") == row["setup"])
            & pl.col("task").str.starts_with("C-")
        )
        groups = part.group_by(pl.col("task").str.slice(0, 5)).agg(pl.col("correct").mean())
        assert row["cells"] == groups.height
        assert row["classification"] == pytest.approx(
            round(groups["correct"].mean() * 100, 1), abs=0.051
        )


def test_table2_best_cells_are_bold_models_only(model_report) -> None:
    _results, out = model_report
    page = (out / "index.html").read_text()
    table2 = page.split('id="table2"')[1].split("</table>")[0]
    for row in table2.split("<tr")[2:]:
        if 'class="ref"' in row or ">human<" in row:
            assert "best" not in row and "second" not in row
    assert 'class="num best"' in table2


def test_tables_and_figures_numbered_in_page_order(model_report) -> None:
    _results, out = model_report
    page = (out / "index.html").read_text()
    tables = [int(n) for n in re.findall(r"(?:<figcaption>|<summary>)Table (\d+)\. ", page)]
    figures = [int(n) for n in re.findall(r"<figcaption>Figure (\d+)\. ", page)]
    assert tables == list(range(1, page.count("<table>") + 1))
    assert figures == list(range(1, page.count("<img ") + 1)) and len(figures) >= 4
    # The paper's numbers appear only as references ("the paper's Figure 6"), never as ours.
    assert not re.search(r"<figcaption>Figure \d+\. Figure", page)


def _heads_and_numbers(page: str) -> tuple[list[str], list[str]]:
    heads = [html.unescape(h) for h in re.findall(r"<th(?: class=ref)?>([^<]*)<", page)]
    numbers = re.findall(r'<td class="num[^"]*">([^<]*)</td>', page)
    return heads, numbers


def test_page_formatting_is_uniform(model_report) -> None:
    """One decimal for every number that is not a count, prose column heads, no Markdown
    marks, no absolute path as a repo."""
    _results, out = model_report
    page = (out / "index.html").read_text()
    text = re.sub(r"<script>.*?</script>|<style>.*?</style>", "", page, flags=re.S)
    assert "`" not in text and "**" not in text
    heads, numbers = _heads_and_numbers(page)
    models = set(MODELS) | set(BASELINES) | {"human"}
    snake = [h for h in heads if re.fullmatch(r"[a-z]+(_[a-z]+)+", h) and h not in models]
    assert not snake, snake
    # MSE tables keep significant digits (values span orders of magnitude); elsewhere a
    # float prints one decimal and an integer none.
    mse = "".join(re.findall(r'id="mse_tasks_.*?</table>', page, flags=re.S))
    _, mse_numbers = _heads_and_numbers(mse)
    others = list(numbers)
    for n in mse_numbers:
        others.remove(n)
    assert others and all(re.fullmatch(r"-?\d+(\.\d)?", n) or n == "" for n in others), {
        n for n in others if not re.fullmatch(r"-?\d+(\.\d)?", n)
    }
    runs = _csv(out, "provenance_runs")
    repos = dict(runs.filter(pl.col("model") == "model-a").select("model", "repo").iter_rows())
    assert repos == {"model-a": "local folder model-a"}  # recorded as /tmp/x/model-a


def test_setups_in_the_readme_order_everywhere(model_report) -> None:
    _results, out = model_report
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    order = ["text", "dotted", "full"]
    assert "(`text`,\n  `dotted` image, `full` image)" in readme  # the order this test keeps
    for name in ("overall", "table2", "headline_paper", "headline_answer_formats"):
        setups = list(dict.fromkeys(_csv(out, name).filter(model="oracle")["setup"].to_list()))
        assert setups == order, name
    intervals = _csv(out, "intervals_category").filter(model="oracle")
    first = intervals["category"][0]
    assert intervals.filter(category=first)["setup"].to_list() == order
    page = (out / "index.html").read_text()
    key = page[page.index('id="key_results"') :].split("</thead>")[0]
    titles = ["Text (%)", "Text with dotted images (%)", "Text with full images (%)"]
    assert [key.index(t) for t in titles] == sorted(key.index(t) for t in titles)


def test_results_and_report_files_get_the_umask_mode(report) -> None:
    """evaluate's shards, run records, settings and results.json (written by Ray workers and
    the driver) and every report file: the mode open() gives under the umask, not 0600."""
    from store.atomic import process_umask

    results, out = report
    expected = 0o666 & ~process_umask()
    for root in (results / "noregeo", out):
        modes = {p: p.stat().st_mode & 0o777 for p in root.rglob("*") if p.is_file()}
        assert len(modes) > 10 and all(m == expected for m in modes.values()), {
            str(p): oct(m) for p, m in modes.items() if m != expected
        }


def test_runs_table_weights_of_the_solver_and_an_untrained_probe_tower() -> None:
    """Issue 39: the GeoBuild solver's weights showed as "real" and an untrained probe
    tower as "RANDOM (answers are noise)" beside its 100% probe."""
    from pipelines.geobuild.engines import GEOBUILD_ENGINES
    from pipelines.report import provenance as prov
    from tests.conftest import SHARED

    solver = GEOBUILD_ENGINES["solver"][0](str(SHARED / "geobuildbench"), None)
    record = prov.Record("geobuild", "model=solver", {"model": solver.model_dump()})
    assert prov.runs_table([record])["weights"].to_list() == ["none"]
    grid = {"grid": {"encoder": {"arch": "ViT-B-32", "pretrained": None}}}
    probe = prov.runs_table([prov.Record("probes", "model=clip-random", grid)])
    assert probe["weights"].to_list() == [prov.UNTRAINED_ENCODER]
    assert "noise" not in prov.UNTRAINED_ENCODER
