"""human-export pages as the paper ran its evaluation: every dotted item scored; training,
examination and control items from their own pool; a time limit; the answers saved in the
browser and downloaded as the CSV human-import reads.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pipelines.human.answers import COLUMNS, read_annotations
from pipelines.human.items import dotted_items, question_text
from pipelines.human.pages import QUALIFICATION_PAGE, TRAINING_PAGE
from pipelines.human.quality import (
    CONTROL,
    PAGE_SIZE,
    QUALIFICATION,
    SCORED,
    TRAINING,
    controls_per_page,
    plan_pages,
)
from tests.pipelines.human.human_support import (
    NODE_DOM,
    TIME_LIMIT,
    TIMER_DOM,
    _export,
    _key,
    _parse,
    _pool,
    _truths,
)


def test_export_pages_mix_controls_into_every_page(small_items: Path, exported: Path) -> None:
    dotted = {r["item_id"]: r for r in dotted_items(small_items)}
    key = _key(exported)
    roles = {i: k["role"] for i, k in key["items"].items()}
    # The scored items are exactly the models' items; every other role is from the pool,
    # drawn apart (other ids, other questions).
    assert {i for i, r in roles.items() if r == SCORED} == set(dotted)
    pool = {i: k for i, k in key["items"].items() if roles[i] != SCORED}
    assert pool and not set(pool) & set(dotted)
    assert all(i.startswith(k["task"] + "-") and "answer_type" in k for i, k in pool.items())
    pages = sorted(exported.glob("page-*.html"))
    parsed = [_parse(p) for p in pages]
    assert [[e["id"] for e in p.items] for p in parsed] == key["pages"]
    sizes = [len(p.items) for p in parsed]
    assert all(s == PAGE_SIZE for s in sizes[:-1]) and 1 <= sizes[-1] <= PAGE_SIZE
    per_page = controls_per_page(0.2)
    assert key["controls_per_page"] == per_page == 2
    for page in parsed:  # two distinct controls on every page, the last one included
        controls = [e["id"] for e in page.items if roles[e["id"]] == CONTROL]
        assert len(controls) == len(set(controls)) == per_page
    shown = [e["id"] for p in parsed for e in p.items]
    exam = sorted(i for i, r in roles.items() if r == SCORED)
    assert sorted(i for i in shown if roles[i] == SCORED) == exam  # each exam item once
    pool = sorted(i for i, r in roles.items() if r == CONTROL)
    # 500 scored items: 63 pages of 8, their 126 control slots filled once each.
    assert sorted(i for i in shown if roles[i] == CONTROL) == pool and len(pool) == 126
    # Stratified by task: the controls spread over the 25 tasks, 5 or 6 each.
    per_task = {key["items"][i]["task"] for i in pool}
    counts = [sum(key["items"][i]["task"] == task for i in pool) for task in per_task]
    assert len(per_task) == 25 and max(counts) - min(counts) <= 1
    template = (exported / "annotations-template.csv").read_text().splitlines()[1:]
    asked = set(shown) | set(key["qualification"])
    assert sorted(line.split(",")[0] for line in template) == sorted(asked)
    training = _parse(exported / TRAINING_PAGE)
    assert [e["id"] for e in training.items] == key["training"]
    assert len(key["training"]) == PAGE_SIZE and not set(key["training"]) & set(shown)
    exam = _parse(exported / QUALIFICATION_PAGE)
    assert [e["id"] for e in exam.items] == key["qualification"]
    assert {roles[i] for i in key["qualification"]} == {QUALIFICATION}
    assert not set(key["qualification"]) & (set(shown) | set(key["training"]))
    assert len({key["items"][i]["task"] for i in key["qualification"]}) == PAGE_SIZE
    assert key["qualification_pass"] == 0.7 and key["overlap"] == 3
    for entry in [e for p in parsed for e in p.items if e["id"] in dotted]:
        row = dotted[entry["id"]]
        assert entry["src"] == "data:image/png;base64," + base64.b64encode(row["image"]).decode()
        assert entry["question"] == question_text(row)
        assert "Provide your answer as JSON" not in entry["question"]
        if row["answer_type"] == "choice":
            assert entry["field"] == ("select", row["item_id"])
            assert entry["options"] == list(row["options"])
        else:
            assert entry["field"] == ("input", row["item_id"])
    # Shuffled: U-task pairs (yes then no) must not sit next to each other in item order.
    assert [i for i in shown if roles[i] == SCORED] != exam
    index = _parse(exported / "index.html")
    links = [link for link in index.links if link.endswith(".html") and link != "index.html"]
    assert links == [TRAINING_PAGE, QUALIFICATION_PAGE] + [p.name for p in pages]
    for page in parsed:  # the button writes the header human-import reads
        assert page.button["data-header"] == ",".join(COLUMNS)
        assert "http" not in page.script and "src=" not in page.script  # no network assets
    for page in pages:  # the time limit is in every exam page, and in the key
        assert f'<body data-time-limit="{TIME_LIMIT}">' in page.read_text(encoding="utf-8")
    assert key["page_time_limit"] == TIME_LIMIT
    assert "<body>" in (exported / TRAINING_PAGE).read_text(encoding="utf-8")  # no limit


def test_the_key_is_outside_the_pages_and_only_training_answers_are_shown(
    small_items: Path, exported: Path
) -> None:
    dotted = _truths(small_items, exported)
    key = _key(exported)
    assert {i: k["answer"] for i, k in key["items"].items()} == {
        i: json.loads(r["answer"]) for i, r in dotted.items()
    }
    files = [p for p in exported.rglob("*") if p.is_file()]
    text = "".join(p.read_text(encoding="utf-8") for p in files if p.name != TRAINING_PAGE)
    assert '"answer"' not in text and "key" not in {p.stem for p in files}
    assert '"role"' not in text and CONTROL not in text  # nothing marks a control
    for item_id, row in dotted.items():
        if key["items"][item_id]["role"] == TRAINING:
            continue
        answer = json.loads(row["answer"])
        assert row["answer"] not in text and json.dumps(answer) not in text
        # Numbers with several digits cannot appear by chance in a question or figure text.
        for value in answer.values():
            if not isinstance(value, str) and len(repr(value)) >= 6:
                assert repr(value) not in text, row["item_id"]
    training = _parse(exported / TRAINING_PAGE)
    page = (exported / TRAINING_PAGE).read_text(encoding="utf-8")
    for entry in training.items:  # shown behind a click, as an annotator reads it
        truth = json.loads(dotted[entry["id"]]["answer"])
        shown = f"({truth['x']}, {truth['y']})" if "x" in truth else str(truth["answer"])
        assert f"<summary>Show the answer</summary><p>{shown}</p>" in page


@pytest.mark.parametrize("share", [0.0, 0.05, 0.2, 0.5, 0.9])
@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("qualification", [False, True])
def test_page_plan_roles_and_control_slots(share: float, training: bool, qualification: bool):
    ids = [f"T-{i:04d}" for i in range(95)]
    pool = _pool(2000)
    plan = plan_pages(ids, pool, 3, share, training, qualification)
    per_page = controls_per_page(share)
    assert sorted(i for i, r in plan.roles.items() if r == SCORED) == ids  # none set aside
    assert all(plan.roles[i] == TRAINING for i in plan.training)
    assert all(plan.roles[i] == QUALIFICATION for i in plan.qualification)
    assert len(plan.training) == (PAGE_SIZE if training else 0)
    assert len(plan.qualification) == (PAGE_SIZE if qualification else 0)
    scored = [i for p in plan.pages for i in p if plan.roles[i] == SCORED]
    assert sorted(scored) == ids  # each once
    for page in plan.pages:
        controls = [i for i in page if plan.roles[i] == CONTROL]
        assert len(controls) == len(set(controls)) == per_page
        assert set(controls) <= set(pool)
        assert len(page) <= PAGE_SIZE and len(page) > per_page
        assert {plan.roles[i] for i in page} <= {SCORED, CONTROL}
    controls = [i for p in plan.pages for i in p if plan.roles[i] == CONTROL]
    assert len(controls) == len(set(controls))  # no control shown twice
    tasks = [pool[i] for i in controls]
    if controls:  # stratified: the tasks take turns
        counts = [tasks.count(t) for t in set(tasks)]
        assert max(counts) - min(counts) <= 1
    assert plan_pages(ids, pool, 3, share, training, qualification) == plan  # the seed decides


def test_page_plan_refuses_a_pool_too_small_or_holding_scored_items() -> None:
    from store.errors import UsageError

    ids = [f"T-{i}" for i in range(9)]
    with pytest.raises(UsageError, match="the pages need 101"):
        plan_pages(ids, _pool(28), 0, 0.9, True, True)
    with pytest.raises(UsageError, match="apart from the scored ones"):
        plan_pages(ids, {"T-1": "T"} | _pool(40), 0, 0.2, True, True)


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the page's script")
def test_the_download_button_writes_a_csv_human_import_reads(
    small_items: Path, exported: Path, tmp_path: Path
) -> None:
    page = _parse(exported / "page-001.html")
    script = tmp_path / "page.js"
    script.write_text(page.script, encoding="utf-8")
    driver = tmp_path / "dom.js"
    driver.write_text(NODE_DOM, encoding="utf-8")
    dotted = _truths(small_items, exported)
    typed = {}
    for entry in page.items:  # a comma, a quote and an empty field: CSV quoting matters
        truth = json.loads(dotted[entry["id"]]["answer"])
        typed[entry["id"]] = f"{truth['x']}, {truth['y']}" if "x" in truth else str(truth["answer"])
    skipped = page.items[-1]["id"]
    typed[skipped] = "  "
    env = os.environ | {"BUTTON": json.dumps(page.button)}
    done = subprocess.run(
        ["node", str(driver), str(script), json.dumps(typed)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    csv_path = tmp_path / "download.csv"
    csv_path.write_bytes(done.stdout.encode("utf-8"))
    rows = read_annotations(csv_path)
    assert [r["item_id"] for r in rows] == [e["id"] for e in page.items if e["id"] != skipped]
    assert all(r["annotator"] == "ann 1" and r["answer"] == typed[r["item_id"]] for r in rows)


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the page's script")
def test_the_index_downloads_every_pages_saved_answers(exported: Path, tmp_path: Path) -> None:
    """Answers are saved per page (a control on two pages must not arrive filled in); the
    index's download collects them page by page."""
    index = _parse(exported / "index.html")
    script = tmp_path / "index.js"
    script.write_text(index.script, encoding="utf-8")
    driver = tmp_path / "dom.js"
    driver.write_text(NODE_DOM, encoding="utf-8")
    key = _key(exported)
    first, second = key["pages"][0][:2], key["pages"][1][:1]
    saved = {f"answer:annotations-page-001:{first[0]}": "yes", f"answer:{first[1]}": "lost",
             f"answer:annotations-page-002:{second[0]}": "3, 4"}  # fmt: skip
    stored = {f"geosee-human:{name}": value for name, value in saved.items()}  # the prefix
    env = os.environ | {"BUTTON": json.dumps(index.button), "STORAGE": json.dumps(stored)}
    done = subprocess.run(
        ["node", str(driver), str(script), "{}"], env=env, capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    csv_path = tmp_path / "all.csv"
    csv_path.write_bytes(done.stdout.encode("utf-8"))
    rows = [(r["item_id"], r["answer"]) for r in read_annotations(csv_path)]
    assert rows == [(first[0], "yes"), (second[0], "3, 4")]  # the unkeyed answer is not read


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the page's script")
def test_the_page_time_limit_locks_the_fields_and_survives_a_reload(
    exported: Path, tmp_path: Path
) -> None:
    script = tmp_path / "page.js"
    script.write_text(_parse(exported / "page-001.html").script, encoding="utf-8")
    driver = tmp_path / "timer.js"
    driver.write_text(TIMER_DOM, encoding="utf-8")
    done = subprocess.run(
        ["node", str(driver), str(script), "60"], capture_output=True, text=True, check=True
    )
    before, after = json.loads(done.stdout)
    assert before == ["0 min 1 s left", [False, False]]
    assert after[0].startswith("Time is up") and after[1] == [True, True]


def test_export_refuses_a_non_empty_out(small_items: Path, tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_text("keep")
    assert _export(small_items, tmp_path, "--key", str(tmp_path.parent / "k.json")) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.txt"]
    assert not (tmp_path.parent / "k.json").exists()


@pytest.mark.parametrize("where", ["inside", "exists"])
def test_export_refuses_a_key_inside_the_pages_or_an_existing_one(
    small_items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    out = tmp_path / "pages"
    key = out / "sub" / "key.json" if where == "inside" else tmp_path / "old.key.json"
    if where == "exists":
        key.write_text("{}")
    assert _export(small_items, out, "--key", str(key)) == 2
    assert "--key" in capsys.readouterr().err
    assert not out.exists()
