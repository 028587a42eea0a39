"""Every error category we record has exactly one of the public benchmark's error kinds."""

from __future__ import annotations

import typing

import pytest

import actors.dsl_executor as dsl_executor
from geometry.dsl.errors import ERROR_CATEGORIES, ErrorCategory
from geometry.dsl.public_categories import (
    LOOP_CATEGORIES,
    PUBLIC_ERROR_KINDS,
    PUBLIC_KIND,
    public_kind,
    unmapped,
)


def test_every_category_maps_to_a_public_kind() -> None:
    # The Literal type and the tuple are both sources of categories: a new one in either
    # must be mapped before this passes.
    ours = {*typing.get_args(ErrorCategory), *ERROR_CATEGORIES, *LOOP_CATEGORIES}
    assert unmapped() == []
    assert ours <= set(PUBLIC_KIND)
    assert set(PUBLIC_KIND) <= ours  # no stale entry for a category that is gone
    assert set(PUBLIC_KIND.values()) <= set(PUBLIC_ERROR_KINDS)


def test_the_loop_categories_are_the_executors() -> None:
    assert (dsl_executor.ENGINE_ERROR, dsl_executor.NO_PROGRAM) == LOOP_CATEGORIES


def test_no_error_has_no_kind_and_an_unknown_category_is_refused() -> None:
    assert public_kind(None) is None
    assert public_kind("syntax") == "syntax_error"
    with pytest.raises(KeyError):
        public_kind("a_category_nobody_mapped")
