"""build_items: row layout, determinism, seeds, pairs, images and the Parquet schema."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter

import pyarrow as pa
import pytest

from geometry.answers import parse_answer, score_answer
from geometry.figure import Draw
from geometry.item import ITEM_SCHEMA, SETUPS
from geometry.items import GENERATOR_VERSION, build_items, item_seed
from geometry.prompts import SYSTEM_PROMPT
from geometry.tasks.registry import all_tasks
from tests.conftest import REPO


def _fake_render(draw: Draw, setup: str, size: int) -> bytes:
    return f"{setup}:{size}:{draw.geometry_json()}".encode()


def test_rows_share_item_fields_across_setups() -> None:
    rows = build_items("N-BCT-MT", 4, 1, SETUPS, 64, _fake_render)
    assert len(rows) == 12
    assert [r.item_id for r in rows[:3]] == ["N-BCT-MT-0000"] * 3
    assert [r.setup for r in rows[:3]] == list(SETUPS)
    for i in range(0, 12, 3):
        group = rows[i : i + 3]
        assert len({(r.item_id, r.answer, r.geometry, r.seed) for r in group}) == 1
        assert group[0].image is None
        # the renderer got this item's figure, the setup and the size
        assert group[1].image == f"dotted:64:{group[0].geometry}".encode()
        assert group[2].image == f"full:64:{group[0].geometry}".encode()
    for row in rows:
        assert row.system_prompt == SYSTEM_PROMPT
        assert row.generator_version == GENERATOR_VERSION
        assert (row.task, row.task_name, row.kind, row.answer_type) == (
            "N-BCT-MT",
            "midpoint",
            "numeric",
            "point",
        )
        assert row.seed == item_seed(1, "N-BCT-MT", int(row.item_id[-4:]))


def test_without_renderer_images_are_none() -> None:
    rows = build_items("C-BCT-CT", 2, 1, ("dotted", "full"), 64, None)
    assert all(r.image is None for r in rows)


def test_same_seed_same_rows_other_seed_other_rows() -> None:
    for task_id in ("C-ACM-TST", "N-SCP-OCCT", "U-RLT-SLT"):
        first = build_items(task_id, 10, 5, ("text",), 64, None)
        assert first == build_items(task_id, 10, 5, ("text",), 64, None)
        other = build_items(task_id, 10, 6, ("text",), 64, None)
        assert [r.geometry for r in first] != [r.geometry for r in other]


def test_seeds_fit_int64_and_depend_on_all_inputs() -> None:
    seeds = {item_seed(s, t, i) for s in (0, 1) for t in ("A", "B") for i in (0, 1)}
    assert len(seeds) == 8
    assert all(0 <= s < 2**63 for s in seeds)


def test_odd_count_ends_with_a_lone_unpaired_item() -> None:
    rows = build_items("U-PAP-RAT", 5, 3, ("text",), 64, None)
    assert [r.pair_id for r in rows] == ["U-PAP-RAT-p000"] * 2 + ["U-PAP-RAT-p001"] * 2 + [None]
    assert Counter(json.loads(r.answer)["answer"] for r in rows) == {"yes": 3, "no": 2}


def test_rows_fit_the_parquet_schema_and_the_oracle_scores_them_right() -> None:
    rows = [r for t in all_tasks() for r in build_items(t, 2, 9, ("text",), 64, None)]
    table = pa.Table.from_pylist([r.to_row() for r in rows], schema=ITEM_SCHEMA)
    assert table.num_rows == 50
    for row in rows:
        parsed = parse_answer(row.answer, row.answer_type, row.options)
        assert parsed.valid, (row.item_id, parsed.error)
        assert score_answer(parsed, row.answer, row.answer_type).correct


def test_bad_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="setups"):
        build_items("N-BCT-MT", 1, 0, ("text", "video"), 64, None)
    with pytest.raises(KeyError, match="unknown task"):
        build_items("X-NOPE", 1, 0, ("text",), 64, None)


def test_all_tasks_at_100_items_are_fast() -> None:
    start = time.perf_counter()
    total = sum(len(build_items(t, 100, 11, ("text",), 64, None)) for t in all_tasks())
    assert total == 2500
    assert time.perf_counter() - start < 30  # measured ~1.5 s on one busy core


def test_rows_do_not_depend_on_the_python_hash_seed() -> None:
    script = (
        "from geometry.items import build_items\n"
        "for t in ('C-SYM-SST', 'U-RLT-SLT', 'N-GTR-RT'):\n"
        "    print([r.to_row() for r in build_items(t, 6, 2, ('text',), 64, None)])\n"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
            cwd=REPO,
        ).stdout
        for hash_seed in ("1", "2")
    }
    assert len(outputs) == 1
