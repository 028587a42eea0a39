"""Progress of long work: a live bar on a terminal, plain periodic lines anywhere else.

tqdm redraws its bar with carriage returns; written to a pipe or a job's log file every
frame stays, so a log fills with thousands of partial lines. Here a terminal (stderr a
tty) gets tqdm's bar, and anything else gets one plain line at the start, one at most every
`PLAIN_EVERY_S` seconds, and one at the end. A line after the start gives the rate measured
since the start and, with a known total, the time left at that rate (the run's own rate, not
an estimate made on another machine at another load); the last line gives the time taken.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO, TypeVar

T = TypeVar("T")

# Seconds between two plain lines: a long run's log gets a few lines a minute, not frames.
PLAIN_EVERY_S = 30.0


class Progress:
    """Counts done work of `total` units; shows it as a bar on a tty, plain lines elsewhere.

    `clock` is injectable so tests can step time instead of sleeping."""

    def __init__(
        self,
        total: int | None,
        desc: str,
        unit: str,
        initial: int = 0,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total, self.desc, self.unit, self.done = total, desc, unit, initial
        self.stream = stream or sys.stderr
        self.clock = clock
        self._bar = None
        self._shown: int | None = None  # the count of the last plain line
        self._start, self._start_done = clock(), initial  # resumed units are not this run's
        if self.stream.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=total, initial=initial, desc=desc, unit=unit, file=self.stream)
        else:
            self._line()
        self._last = clock()

    def update(self, n: int = 1) -> None:
        """`n` more units done."""
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        elif self.clock() - self._last >= PLAIN_EVERY_S:
            self._line()
            self._last = self.clock()

    def close(self) -> None:
        """The final count (a plain line only if the last one shown is not already it)."""
        if self._bar is not None:
            self._bar.close()
        elif self._shown != self.done:
            self._line(final=True)

    def _line(self, final: bool = False) -> None:
        of = f"/{self.total}" if self.total is not None else ""
        share = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        line = f"{self.desc}: {self.done}{of} {self.unit}s{share}{self._pace(final)}"
        print(line, file=self.stream, flush=True)
        self._shown = self.done

    def _pace(self, final: bool) -> str:
        """The rate and time left, e.g. `, 2.5 rows/s, about 1 min 4 s left` (`, in 40 s` at
        the end); empty before any unit of this run is done."""
        elapsed, done = self.clock() - self._start, self.done - self._start_done
        if done <= 0 or elapsed <= 0:
            return ""
        rate = done / elapsed
        pace = f", {_rate(rate)} {self.unit}s/s"
        if final:
            return f"{pace}, in {duration(elapsed)}"
        if self.total is not None and self.total > self.done:
            return f"{pace}, about {duration((self.total - self.done) / rate)} left"
        return pace


def _rate(per_second: float) -> str:
    """Two significant digits: 0.031, 0.52, 4.2, 37, 1200."""
    return f"{per_second:.2g}" if per_second < 100 else f"{per_second:.0f}"


def duration(seconds: float) -> str:
    """A span as people say it: "8 s", "4 min 5 s", "2 h 3 min".

    >>> duration(8.4), duration(245), duration(7380)
    ('8 s', '4 min 5 s', '2 h 3 min')
    """
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


def progress(items: Iterable[T], total: int | None, desc: str, unit: str) -> Iterator[T]:
    """`items`, one unit each, with their progress shown (see `Progress`)."""
    shown = Progress(total, desc, unit)
    try:
        for item in items:
            yield item
            shown.update(1)
    finally:
        shown.close()
