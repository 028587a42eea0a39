"""How often, and how long, a request to the results store is retried: one budget for
pyarrow's S3 client (store.storage) and for the boto3 clients Ray's downloader makes
(store.model_mirror.endpoint_env hands them the AWS_* variables below).

S3 answers 503 SlowDown while it scales a busy prefix; a 45-model sweep's writes meet it
routinely. pyarrow's `FileSystem.from_uri` retries every 200 ms for 6 s and then gives up
(a shard write raised after 6.7 s and 31 requests), which is shorter than a SlowDown
spell. The AWS "standard" strategy instead backs off with jitter, a random delay below
1 s, 2 s, 4 s, ... (at most 20 s each), and stops retrying early when most of the client's
recent requests failed (its retry quota), so a store that is down fails fast.

GEOSEE_S3_MAX_ATTEMPTS and GEOSEE_S3_RETRY_MODE override the budget for one process and
whatever it starts (the retry tests use mode "default", whose backoff is short and fixed).
"""

from __future__ import annotations

import os
import random

import pyarrow.fs as pafs

from store.errors import UsageError

# Attempts per request, the first included. Six standard-mode retries wait at most
# 1+2+4+8+16+20 = 51 s in all (about 25 s on average): long enough to ride out a SlowDown
# spell, short enough that a store that is really gone ends the run within a minute.
S3_MAX_ATTEMPTS = 7
S3_RETRY_MODE = "standard"
ATTEMPTS_ENV = "GEOSEE_S3_MAX_ATTEMPTS"
MODE_ENV = "GEOSEE_S3_RETRY_MODE"
# pyarrow's two strategies. "default" is the SDK's older one: no jitter, the first retry
# at once, then 50 ms doubling; its argument counts retries, not attempts.
_STRATEGIES = {
    "standard": lambda n: pafs.AwsStandardS3RetryStrategy(max_attempts=n),
    "default": lambda n: pafs.AwsDefaultS3RetryStrategy(max_attempts=n - 1),
}


def retry_budget() -> tuple[str, int]:
    """(mode, attempts per request): the constants above, or the environment's override.
    A malformed override is a UsageError naming it."""
    mode = os.environ.get(MODE_ENV) or S3_RETRY_MODE
    attempts_text = os.environ.get(ATTEMPTS_ENV) or str(S3_MAX_ATTEMPTS)
    if mode not in _STRATEGIES:
        raise UsageError(f"{MODE_ENV}={mode!r}: expected one of {', '.join(_STRATEGIES)}")
    if not attempts_text.isdigit() or int(attempts_text) < 1:
        raise UsageError(f"{ATTEMPTS_ENV}={attempts_text!r}: expected a whole number >= 1")
    return mode, int(attempts_text)


def s3_retry_strategy() -> pafs.S3RetryStrategy:
    """The retry strategy every S3FileSystem of the results store is built with."""
    mode, attempts = retry_budget()
    strategy: pafs.S3RetryStrategy = _STRATEGIES[mode](attempts)
    return strategy


def boto_retry_env() -> dict[str, str]:
    """The same budget for boto3/botocore clients, which read it from the environment (Ray's
    model downloader makes its own). botocore knows "standard" but not pyarrow's "default",
    so that test-only mode maps to its "legacy" one."""
    mode, attempts = retry_budget()
    return {
        "AWS_RETRY_MODE": "standard" if mode == "standard" else "legacy",
        "AWS_MAX_ATTEMPTS": str(attempts),
    }


def retry_delay(retried: int) -> float:
    """Seconds to wait before retry number `retried` (0 for the first) of a request the
    SDK does not retry itself (store.storage.RemotePath.read_bytes): the delays of the
    budget's own mode, so both kinds of retry wait alike."""
    mode, _ = retry_budget()
    if mode == "standard":
        return random.uniform(0.0, min(2.0**retried, 20.0))
    return 0.0 if retried == 0 else 0.025 * 2**retried
