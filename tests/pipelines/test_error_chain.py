"""One walk over an error's chain (store.errors.error_chain) serves the storage-failure line
and the disk-full line: Python's `__cause__`/`__context__` and Ray's task errors' `cause`."""

from __future__ import annotations

from store.errors import error_chain
from store.storage import RemotePath, storage_failure


class RayTaskError(Exception):
    """Ray's task error keeps the worker's exception in `cause`, not `__cause__`."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__("task failed")
        self.cause = cause


def _raised_from(outer: Exception, inner: BaseException) -> Exception:
    try:
        try:
            raise inner
        except BaseException as err:
            raise outer from err
    except Exception as err:  # noqa: BLE001
        return err


def test_the_walk_reaches_a_worker_error_behind_a_python_cause_once() -> None:
    worker = OSError("AWS Error NETWORK_CONNECTION ... bucket 'b1'")
    err = _raised_from(RuntimeError("dataset failed"), RayTaskError(worker))
    chain = list(error_chain(err))
    assert worker in chain and len(chain) == len({id(e) for e in chain}) == 3


def test_the_storage_line_names_the_bucket_found_deep_in_the_chain() -> None:
    root = RemotePath.parse("s3://b1/results?endpoint_override=127.0.0.1:9&scheme=http")
    worker = OSError("When reading information for key 'x' in bucket 'b1': timed out\nmore")
    line = storage_failure(_raised_from(RuntimeError("x"), RayTaskError(worker)), [root])
    assert line == (
        "the store s3://b1/results (endpoint 127.0.0.1:9) stopped answering: When reading "
        "information for key 'x' in bucket 'b1': timed out"
    )
    assert storage_failure(RuntimeError("unrelated"), [root]) is None
