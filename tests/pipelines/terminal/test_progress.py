"""Progress off a terminal: plain lines, at most one per PLAIN_EVERY_S, never bar frames."""

from __future__ import annotations

import io

from pipelines.terminal.progress import PLAIN_EVERY_S, Progress, duration, progress


class SteppedClock:
    """A clock that moves only when told to: no sleeping, no dependence on load."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_plain_lines_at_start_every_interval_and_end() -> None:
    stream, clock = io.StringIO(), SteppedClock()
    shown = Progress(100, "evaluate m", "row", stream=stream, clock=clock)
    for _ in range(100):
        clock.now += 1.0  # 100 s of work, one row a second
        shown.update(1)
    shown.close()
    lines = stream.getvalue().splitlines()
    ticks = int(100 // PLAIN_EVERY_S)
    assert len(lines) == 1 + ticks + 1
    assert lines[0] == "evaluate m: 0/100 rows (0%)"
    n = int(PLAIN_EVERY_S)
    assert lines[1] == f"evaluate m: {n}/100 rows ({n}%), 1 rows/s, about {duration(100 - n)} left"
    assert lines[-1] == "evaluate m: 100/100 rows (100%), 1 rows/s, in 1 min 40 s"
    assert "\r" not in stream.getvalue()


def test_fast_work_prints_only_start_and_end_and_unknown_totals_have_no_share() -> None:
    stream, clock = io.StringIO(), SteppedClock()
    shown = Progress(None, "probe trials", "trial", initial=3, stream=stream, clock=clock)
    shown.update(2)
    shown.close()
    assert stream.getvalue().splitlines() == ["probe trials: 3 trials", "probe trials: 5 trials"]


def test_the_rate_is_this_runs_own_and_the_time_left_follows_it() -> None:
    """Resumed units are not counted in the rate; the time left is what remains at the
    measured rate, so a run slowed by load says so in its own lines."""
    stream, clock = io.StringIO(), SteppedClock()
    shown = Progress(1000, "generate", "task", initial=400, stream=stream, clock=clock)
    clock.now += 2 * PLAIN_EVERY_S
    shown.update(15)  # 15 units in 60 s: 0.25 a second, 585 left -> 2340 s
    shown.close()
    assert stream.getvalue().splitlines() == [
        "generate: 400/1000 tasks (40%)",
        "generate: 415/1000 tasks (42%), 0.25 tasks/s, about 39 min 0 s left",
    ]


def test_a_periodic_line_at_the_final_count_is_not_repeated_at_the_end() -> None:
    stream, clock = io.StringIO(), SteppedClock()
    shown = Progress(25, "evaluate tiny-llm", "row", stream=stream, clock=clock)
    clock.now += PLAIN_EVERY_S  # the whole batch lands after one interval
    shown.update(25)
    shown.close()
    assert stream.getvalue().splitlines() == [
        "evaluate tiny-llm: 0/25 rows (0%)",
        "evaluate tiny-llm: 25/25 rows (100%), 0.83 rows/s",
    ]


def test_the_wrapper_yields_every_item_once() -> None:
    assert list(progress(iter(range(7)), 7, "x", "item")) == list(range(7))
