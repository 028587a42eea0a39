"""A Ray temp folder of a test's own (`RAY_TMPDIR`).

`ray start` and Ray's test `Cluster` record their address in the machine's default Ray temp
folder (/tmp/ray/ray_current_cluster, `ray._private.utils.write_ray_address` at Ray 2.60),
and every plain `ray.init()` on the machine then joins that cluster: a test that starts one
there breaks every other test and command running beside it (stop 56's rehearsal: 11
failures in the other lane, "When connecting to an existing cluster, _system_config must
not be provided"). Under this folder the record is the test's alone.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


@contextmanager
def own_ray_tmpdir(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """RAY_TMPDIR set to a fresh short folder (Ray's socket paths are length-limited) for
    the block; the folder removed after."""
    folder = tempfile.mkdtemp(prefix="rt", dir="/tmp")
    monkeypatch.setenv("RAY_TMPDIR", folder)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
