"""The row contract's one engine-output schema, and what Ray's numpy round trip changes."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from actors.baselines import ConstantEngine, OracleEngine, RandomEngine
from actors.contract import (
    ENGINE_OUTPUT,
    arrow_columns,
    arrow_ready,
    no_token_outputs,
    numpy_columns,
    prompt_ids_digest,
    restore_types,
    with_outputs,
)
from actors.dsl_executor import JUDGED
from pipelines.geobuild.rows import RESULT_SCHEMA as GEOBUILD_SCHEMA
from pipelines.noregeo.results import RESULT_SCHEMA as NOREGEO_SCHEMA

# A block holding the cases Ray changes, each typed as a result row would be.
EDGE_SCHEMA = pa.schema(
    [
        ("engine_error", pa.string()),  # no row failed: all null
        ("num_input_tokens", pa.int64()),  # one row failed before tokenising: a null
        ("options", pa.list_(pa.string())),  # numeric items have none
        ("generated_text", pa.string()),  # some text, one failure
    ]
)
EDGE_ROWS: dict[str, list[Any]] = {
    "engine_error": [None, None],
    "num_input_tokens": [7, None],
    "options": [None, []],
    "generated_text": ['{"answer": 1}', None],
}


def test_every_results_schema_takes_the_engine_columns_from_the_contract() -> None:
    for schema in (NOREGEO_SCHEMA, GEOBUILD_SCHEMA):
        for field in ENGINE_OUTPUT:
            assert schema.field(field.name) == field
    for field in JUDGED:
        assert GEOBUILD_SCHEMA.field(field.name) == field


@pytest.mark.parametrize("engine", [OracleEngine(), RandomEngine(), ConstantEngine()])
def test_baselines_add_exactly_the_engine_output_schema(engine: Any) -> None:
    batch = pa.table(
        {
            "request_key": ["k0", "k1"],
            "answer_type": ["number", "choice"],
            "options": pa.array([None, ["yes", "no"]], pa.list_(pa.string())),
            "answer": ['{"answer": 3}', '{"answer": "no"}'],
        }
    )
    out = engine(batch)
    assert out.schema.remove_metadata() == pa.schema(list(batch.schema) + list(ENGINE_OUTPUT))


def test_numpy_columns_keep_numbers_as_numbers_and_missing_values_as_none() -> None:
    out = numpy_columns(ENGINE_OUTPUT, no_token_outputs(["a", "b"], 0.5))
    assert out["num_input_tokens"].dtype == np.int64
    assert out["time_taken_llm"].dtype == np.float64
    assert list(out["engine_error"]) == [None, None]
    partial = numpy_columns(EDGE_SCHEMA, EDGE_ROWS)
    assert partial["num_input_tokens"].dtype == object  # numpy has no missing int
    assert list(partial["num_input_tokens"]) == [7, None]
    batch = with_outputs({"problem_id": np.array(["p1"])}, ["reply"])
    assert set(batch) == {"problem_id", *ENGINE_OUTPUT.names}


def test_arrow_columns_type_values_by_the_schema_even_when_all_null() -> None:
    out = arrow_columns(pa.table({"k": ["a", "b"]}), EDGE_SCHEMA, EDGE_ROWS)
    assert out.schema == pa.schema([("k", pa.string()), *EDGE_SCHEMA])


def _numpy_round_trip(block: pa.Table) -> pa.Table:
    """`block` through two numpy steps of a real Ray Data pipeline (as engine then scorer)."""
    import ray

    ds = ray.data.from_arrow(block)
    for _ in range(2):
        ds = ds.map_batches(lambda b: b, batch_format="numpy")
    return pa.concat_tables([ray.get(ref) for ref in ds.to_arrow_refs()])


def test_ray_changes_what_restore_types_says_and_restore_types_undoes_it(ray_local) -> None:
    block = pa.Table.from_pydict(EDGE_ROWS, schema=EDGE_SCHEMA)
    after = _numpy_round_trip(block)
    # The changes restore_types documents; if Ray stops making one, its repair can go.
    assert after.schema.field("engine_error").type in (pa.null(), pa.float32(), pa.float64())
    assert after.schema.field("num_input_tokens").type == pa.float64()
    assert after.schema.field("options").type not in (pa.list_(pa.string()),)
    assert after.schema.field("generated_text").type == pa.string()  # unchanged: has text
    restored = restore_types(after, EDGE_SCHEMA)
    assert restored.schema == EDGE_SCHEMA
    assert restored.to_pydict() == {**EDGE_ROWS, "options": [None, []]}


def test_arrow_ready_gives_ray_list_and_struct_columns_it_converts_without_pickling(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Ray's own numpy form of a request block (BlockAccessor, as map_batches hands it over)
    and its own conversion back: unchanged, the list and struct columns are pickled (with
    Ray's ArrowConversionError warning); through arrow_ready they keep their Arrow types."""
    from ray.data.block import BlockAccessor

    schema = pa.schema(
        [
            ("options", pa.list_(pa.string())),
            ("messages", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
            ("answer_type", pa.string()),
        ]
    )
    rows = {
        "options": [["yes", "no"], None, ["A", "B", "C"]],
        "messages": [[{"role": "user", "content": f"q{i}"}] for i in range(3)],
        "answer_type": ["choice", "number", "choice"],
    }
    batch = BlockAccessor.for_block(pa.Table.from_pydict(rows, schema=schema)).to_batch_format(
        "numpy"
    )
    assert isinstance(batch["options"][0], np.ndarray)  # the form the engines receive
    pickled = BlockAccessor.batch_to_block(batch)
    assert pickled.schema.field("options").type != schema.field("options").type  # not vacuous
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        table = BlockAccessor.batch_to_block(arrow_ready(batch))
    assert table.schema == schema
    assert table.to_pydict() == rows
    assert "ArrowConversionError" not in caplog.text


def test_prompt_ids_digest_is_the_same_for_every_container_of_the_same_ids() -> None:
    """Engines report ids as lists (vLLM), numpy arrays (Ray) or tensor rows turned to lists
    (hf): one digest, recomputed here from its definition; other ids, another digest."""
    import hashlib

    ids = [1, 9690, 198, 67, 2]
    expected = hashlib.sha256(b"1,9690,198,67,2").hexdigest()
    assert prompt_ids_digest(ids) == expected
    assert prompt_ids_digest(np.array(ids, dtype=np.int64)) == expected
    assert prompt_ids_digest(tuple(np.int32(i) for i in ids)) == expected
    assert prompt_ids_digest([1, 9690, 198, 6, 72]) != expected  # same digits, other ids
    assert prompt_ids_digest(None) is None
