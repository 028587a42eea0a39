"""Progress off a terminal: plain lines, at most one per PLAIN_EVERY_S, never bar frames."""

from __future__ import annotations

import io

from pipelines.terminal.progress import PLAIN_EVERY_S, Progress, progress


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
    assert lines[1] == f"evaluate m: {int(PLAIN_EVERY_S)}/100 rows ({int(PLAIN_EVERY_S)}%)"
    assert lines[-1] == "evaluate m: 100/100 rows (100%)"
    assert "\r" not in stream.getvalue()


def test_fast_work_prints_only_start_and_end_and_unknown_totals_have_no_share() -> None:
    stream, clock = io.StringIO(), SteppedClock()
    shown = Progress(None, "probe trials", "trial", initial=3, stream=stream, clock=clock)
    shown.update(2)
    shown.close()
    assert stream.getvalue().splitlines() == ["probe trials: 3 trials", "probe trials: 5 trials"]


def test_a_periodic_line_at_the_final_count_is_not_repeated_at_the_end() -> None:
    stream, clock = io.StringIO(), SteppedClock()
    shown = Progress(25, "evaluate tiny-llm", "row", stream=stream, clock=clock)
    clock.now += PLAIN_EVERY_S  # the whole batch lands after one interval
    shown.update(25)
    shown.close()
    assert stream.getvalue().splitlines() == [
        "evaluate tiny-llm: 0/25 rows (0%)",
        "evaluate tiny-llm: 25/25 rows (100%)",
    ]


def test_the_wrapper_yields_every_item_once() -> None:
    assert list(progress(iter(range(7)), 7, "x", "item")) == list(range(7))
