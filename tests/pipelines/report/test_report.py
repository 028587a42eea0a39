"""report: values recomputed from the raw result rows, CSV/Markdown copies, figures, notes."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import polars as pl
import pytest
from PIL import Image

from pipelines import cli
from pipelines.noregeo.summarize import load_results
from tests.conftest import REPO
from tests.pipelines.report.report_support import (
    BASELINES,
    MODELS,
    _csv,
    _heads_and_numbers,
    _register,
)


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


def test_sample_browser_rows_images_and_verdicts(model_report) -> None:
    results, out = model_report
    raw = load_results(results)
    pages = [json.loads(p.read_text()) for p in (out / "samples/pages").glob("*.json")]
    rows = [
        (page["task"], page["setup"], item, answer)
        for page in pages
        for item in page["items"]
        for answer in item["answers"]
    ]
    # every item of each task x setup, each with every model that ran it
    assert len(rows) == raw.height > 0
    assert sorted((t, s, a["model"]) for t, s, _i, a in rows) == sorted(
        raw.select("task", "setup", "model").iter_rows()
    )
    for _task, setup, item, answer in rows:
        assert (item["image"] is None) == (setup == "text")
        if item["image"]:
            with Image.open(out / item["image"]) as picture:
                assert picture.format == "PNG"
        assert answer["verdict"] in ("right", "wrong", "invalid output", "engine error")
        if answer["model"] == "oracle":
            assert answer["verdict"] == "right"
    assert any(a["verdict"] == "engine error" for *_x, a in rows)  # model-a's failed rows
    # The model carries the same tag as the report's tables, on the page too.
    tags = {a["model"]: a["tag"] for *_x, a in rows}
    assert tags["model-b"] == "random weights" and tags["oracle"] == "baseline"
    assert tags["model-a"] is None
    page = next((out / "samples/pages").glob("*.html")).read_text()
    assert 'model-b <span class="tag">random weights</span>' in page
    assert len(pages) < raw.height / 10  # pages of items, not a page per row or one for all


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


def test_tables_and_figures_numbered_in_page_order(model_report) -> None:
    _results, out = model_report
    page = (out / "index.html").read_text()
    tables = [int(n) for n in re.findall(r"(?:<figcaption>|<summary>)Table (\d+)\. ", page)]
    figures = [int(n) for n in re.findall(r"<figcaption>Figure (\d+)\. ", page)]
    assert tables == list(range(1, page.count("<table>") + 1))
    assert figures == list(range(1, page.count("<img ") + 1)) and len(figures) >= 4
    # The paper's numbers appear only as references ("the paper's Figure 6"), never as ours.
    assert not re.search(r"<figcaption>Figure \d+\. Figure", page)


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
    readme = (REPO / "README.md").read_text()
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
