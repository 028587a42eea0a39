"""What `human-export` writes (paper Appendix C): the pages for annotators and their key.

`human-export --items ITEMS --out DIR` writes every dotted-setup item of ITEMS (the models'
items, none set aside), shuffled with `--order-seed` (U-task pairs are stored yes-then-no,
so item order would give answers away), as static HTML pages of 10
(pipelines/human/pages.py): DIR/index.html links DIR/page-NNN.html, each item with
its figure embedded, its question and an answer field; a "Download CSV" button writes the
annotator's answers as the CSV human-import reads. By default as the paper ran it
(pipelines/human/quality.py): a training page with the answers shown, an
examination page, control items on every page (`--control-share`), 10 minutes per page
(`--page-time-limit`) and 3 annotators per item (`--overlap`, recorded for the import). The
training, examination and control items come from their own pool: items the same
generators draw with `--control-seed` (the item table's seed + 1 unless given), stratified
by task, never among the scored items. DIR/annotations-template.csv lists the page items
for annotating without a browser. The answers and the item roles go only to the key file,
outside DIR (`--key`, default DIR.key.json beside DIR), so DIR can be handed out whole.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipelines.human.answers import COLUMNS
from pipelines.human.items import dotted_items, question_text
from pipelines.human.key import KEY_FORMAT, default_key
from pipelines.human.pages import (
    QUALIFICATION_PAGE,
    TRAINING_PAGE,
    page_name,
    render_index,
    render_page,
)
from pipelines.human.quality import (
    DEFAULT_OVERLAP,
    DEFAULT_PAGE_TIME_LIMIT,
    DEFAULT_QUALIFICATION_PASS,
    controls_per_page,
    plan_pages,
    pool_needed,
)
from pipelines.noregeo.generate import read_manifest
from store.atomic import write_bytes_atomic
from store.errors import UsageError

HUMAN_FORMATS = {
    "choice": "one of the options",
    "number": "a number, e.g. 12.5",
    "point": "a point as x, y, e.g. (3, -2)",
}


def answer_for_people(answer: str, answer_type: str) -> str:
    """An answer as the training page shows it: `yes`, `12.5`, `(3, -2)`."""
    value = json.loads(answer)
    if answer_type == "point":
        return f"({value['x']}, {value['y']})"
    return str(value["answer"])


def control_pool(
    items: Path, scored: list[dict[str, Any]], needed: int, seed: int | None
) -> tuple[dict[str, dict[str, Any]], int]:
    """Dotted items drawn for training, examination and controls: the item table's
    generators, options and image size with another seed (`seed`, else the table's + 1),
    ceil(needed / tasks) per task (stratified), numbered after the task's scored items
    (ids like theirs: nothing on a page tells a control from a scored item); an item whose
    figure a scored item shows too (the same geometry: the dotted question names no
    coordinates) is left out. Returns (rows by id, the seed used)."""
    import functools

    from geometry.items import build_items
    from geometry.render import render_png
    from geometry.tasks.options import GeneratorOptions

    manifest = read_manifest(items)
    table_seed = int(manifest.get("seed", 0))
    seed = table_seed + 1 if seed is None else seed
    if seed == table_seed:
        raise UsageError(
            f"--control-seed {seed} is the item table's seed: the controls would be the "
            "scored items; give another"
        )
    options = GeneratorOptions(**manifest.get("options", {}))
    render = functools.partial(render_png, grid_step=options.grid_step)
    tasks = sorted({r["task"] for r in scored})
    per_task = -(-needed // len(tasks)) + 1  # one spare per task for a repeated question
    asked = {(r["task"], r["geometry"]) for r in scored}
    pool: dict[str, dict[str, Any]] = {}
    for task in tasks:
        drawn = build_items(
            task, per_task, seed, ["dotted"], int(manifest.get("image_size", 448)), render,
            options,
        )  # fmt: skip
        fresh = [i.to_row() for i in drawn if (i.task, i.geometry) not in asked]
        first = 1 + max(int(r["item_id"].rsplit("-", 1)[1]) for r in scored if r["task"] == task)
        for k, row in enumerate(fresh[: per_task - 1]):
            item_id = f"{task}-{first + k:04d}"
            pool[item_id] = row | {"item_id": item_id}
    return pool, seed


def export_pages(
    items: Path,
    out: Path,
    key: Path | None = None,
    seed: int = 0,
    control_share: float = 0.0,
    training_page: bool = True,
    page_time_limit: int | None = DEFAULT_PAGE_TIME_LIMIT,
    qualification_page: bool = True,
    qualification_pass: float = DEFAULT_QUALIFICATION_PASS,
    overlap: int = DEFAULT_OVERLAP,
    control_seed: int | None = None,
) -> int:
    """Writes the HTML pages and template to `out` and the answers and item roles to
    `key`; the number of pages of scored items. The key must lie outside `out`: the pages
    folder is what annotators get."""
    key = key if key is not None else default_key(out)
    if key.resolve().is_relative_to(out.resolve()):
        raise UsageError(f"--key {key} is inside --out {out}; the answers must not ship with it")
    if key.exists():
        raise UsageError(f"--key {key} exists; give another --key or remove it")
    scored = dotted_items(items)
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"--out {out} is not empty; give a new directory")
    per_page = controls_per_page(control_share)
    needed = pool_needed(len(scored), per_page, training_page, qualification_page)
    pool, control_seed = control_pool(items, scored, needed, control_seed) if needed else ({}, None)
    by_id = {r["item_id"]: r for r in scored} | pool
    tasks = {i: r["task"] for i, r in pool.items()}
    plan = plan_pages([r["item_id"] for r in scored], tasks, seed, control_share,
                      training_page, qualification_page)  # fmt: skip
    header = ",".join(COLUMNS)

    def shown(ids: list[str], with_answers: bool = False) -> list[dict[str, Any]]:
        rows = [by_id[i] | {"question": question_text(by_id[i])} for i in ids]
        if with_answers:
            rows = [r | {"shown_answer": answer_for_people(r["answer"], r["answer_type"])}
                    for r in rows]  # fmt: skip
        return rows

    pages = plan.pages
    for number, ids in enumerate(pages, start=1):
        text = render_page(number, len(pages), shown(ids), header, HUMAN_FORMATS, page_time_limit)
        write_bytes_atomic(out / page_name(number), text.encode("utf-8"))
    if plan.training:
        text = render_page(0, len(pages), shown(plan.training, True), header, HUMAN_FORMATS)
        write_bytes_atomic(out / TRAINING_PAGE, text.encode("utf-8"))
    if plan.qualification:
        text = render_page(
            -1, len(pages), shown(plan.qualification), header, HUMAN_FORMATS, page_time_limit,
            pass_mark=qualification_pass,
        )  # fmt: skip
        write_bytes_atomic(out / QUALIFICATION_PAGE, text.encode("utf-8"))
    index = render_index(
        pages, header, bool(plan.training), page_time_limit, bool(plan.qualification), overlap
    )
    write_bytes_atomic(out / "index.html", index.encode("utf-8"))
    once = dict.fromkeys(i for ids in [plan.qualification, *pages] for i in ids)
    template = "".join(f"{i},,\n" for i in once)
    write_bytes_atomic(out / "annotations-template.csv", (header + "\n" + template).encode())

    def entry(item_id: str) -> dict[str, Any]:
        row = by_id[item_id]
        base = {"task": row["task"], "role": plan.roles[item_id]}
        base["answer"] = json.loads(row["answer"])
        if item_id in pool:  # not in --items: the import scores it from here
            base |= {"answer_type": row["answer_type"], "options": list(row["options"] or [])}
        return base

    record = {
        "format": KEY_FORMAT,
        "order_seed": seed,
        "control_seed": control_seed,
        "control_share": control_share,
        "controls_per_page": plan.controls_per_page,
        "page_time_limit": page_time_limit,
        "qualification_pass": qualification_pass if plan.qualification else None,
        "overlap": overlap,
        "training": plan.training,
        "qualification": plan.qualification,
        "pages": pages,
        "items": {i: entry(i) for i in sorted(plan.roles)},
    }
    write_bytes_atomic(key, _json(record))
    return len(pages)


def _json(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode()
