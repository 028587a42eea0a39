"""One results root (issue 14, item 5): every command's `--out RESULTS` writes under
RESULTS/<benchmark>/..., so evaluate, human-import and geobuild can share one folder and
`report RESULTS` finds them all."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from pipelines import cli
from pipelines.human.items import dotted_items
from pipelines.noregeo.summarize import load_results
from tests.conftest import SHARED

TASKS = "C-BCT-CT,N-ECL-SLT"
DATA = SHARED / "geobuildbench"
# One GeoBuild problem's reply: any reply makes a row; its score is not the point here.
PROBLEM = "367"
REPLY = {"id": PROBLEM, "round": 1, "text": "point : 0 0 -> O"}


def _annotations(items: Path, path: Path) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["item_id", "annotator", "answer"])
        writer.writerows([row["item_id"], "a1", "yes"] for row in dotted_items(items))
    return path


def test_evaluate_human_import_and_geobuild_write_under_one_root(ray_local, tmp_path: Path) -> None:
    items, root = tmp_path / "items", tmp_path / "results"
    generate = ["generate", "--out", str(items), "--per-task", "2", "--tasks", TASKS]
    assert cli.main([*generate, "--setups", "dotted", "--image-size", "64"]) == 0
    evaluate = ["evaluate", "--items", str(items), "--engine", "oracle", "--model", "oracle"]
    assert cli.main([*evaluate, "--per-task", "1", "--out", str(root)]) == 0
    annotations = _annotations(items, tmp_path / "annotations.csv")
    human = ["human-import", "--annotations", str(annotations), "--items", str(items)]
    assert cli.main([*human, "--out", str(root)]) == 0
    benchmarks = {"noregeo"}
    if DATA.is_dir():  # the GeoBuild data set lives beside the repository, when it is there
        replies = tmp_path / "replies.jsonl"
        replies.write_text(json.dumps(REPLY) + "\n", encoding="utf-8")
        geobuild = ["geobuild", "--dataset", str(DATA), "--engine", "programs"]
        geobuild += ["--model", str(replies), "--ids", PROBLEM, "--max-rounds", "1"]
        assert cli.main([*geobuild, "--out", str(root)]) == 0
        benchmarks.add("geobuild")
        (model,) = (root / "geobuild").iterdir()
        assert model.name.startswith("model=") and (model / "round=1").is_dir()

    assert {p.name for p in root.iterdir()} == benchmarks
    noregeo = root / "noregeo"
    assert {p.name for p in noregeo.iterdir()} == {"model=oracle", "model=human"}
    assert {p.name for p in (noregeo / "model=human").glob("setup=*")} == {"setup=dotted"}
    assert {p.name for p in (noregeo / "model=oracle").glob("setup=*")} == {"setup=dotted"}
    rows = load_results(root)
    assert sorted(set(rows["model"])) == ["human", "oracle"]
    assert rows.filter(rows["model"] == "oracle").height == 2  # --per-task 1 x 2 tasks
