"""Quality control of the human evaluation, as in the paper's protocol (Toloka: training,
control tasks, a time limit per page, several annotators per item).

Export: the dotted items are shuffled and split into roles. With `--training-page`, the
first PAGE_SIZE items form a training page whose answers are shown (they are never scored).
With `--control-share S`, round(S x PAGE_SIZE) slots of every page (at least 1 when S > 0)
hold control items: a reserved pool, about S of the remaining items, cycled through the
pages and placed at random positions, so a control looks like any other item. Their
answers are known, as every item's is; they measure each annotator and are never scored as
the human result (an annotator filtered on the items that are then scored would bias the
score). The roles and the page plan go to the key file, outside the pages.

Import: each annotator's control accuracy is the share of the control items they answered
that are right by the models' scoring rules; annotators below the threshold, or with no
control answer when the export had controls, are excluded before the vote.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from store.errors import UsageError

PAGE_SIZE = 10
EXAM, CONTROL, TRAINING = "exam", "control", "training"
ROLES = (EXAM, CONTROL, TRAINING)
DEFAULT_MIN_CONTROL_ACCURACY = 0.8


def controls_per_page(share: float) -> int:
    """Control slots per page of PAGE_SIZE: round(share x PAGE_SIZE), at least 1 for any
    share above 0 and at most PAGE_SIZE - 1 (a page keeps one exam item).

    >>> [controls_per_page(s) for s in (0.0, 0.01, 0.2, 0.25, 0.99)]
    [0, 1, 2, 2, 9]
    """
    if share <= 0:
        return 0
    return min(max(round(share * PAGE_SIZE), 1), PAGE_SIZE - 1)


def _control_slots(items: int, pool: int, per_page: int) -> int:
    """Control slots on the pages when `pool` of `items` are controls."""
    return math.ceil((items - pool) / (PAGE_SIZE - per_page)) * per_page


def _pool_size(items: int, per_page: int) -> int:
    """How many of `items` to reserve as controls: about per_page / PAGE_SIZE of them, and
    no more than the pages have slots for (every control shows). Where a size fills the
    slots exactly, the nearest such one, so no annotator sees a control twice."""
    if not per_page or items <= per_page:
        return per_page
    target = max(per_page, round(items * per_page / PAGE_SIZE))
    fits = [p for p in range(per_page, items) if p <= _control_slots(items, p, per_page)]
    exact = [p for p in fits if p == _control_slots(items, p, per_page)]
    return min(exact or fits, key=lambda p: (abs(p - target), p))


@dataclass(frozen=True)
class PagePlan:
    """Which item goes where: the training page (maybe empty), the exam pages with their
    controls mixed in, and each item's role."""

    training: list[str]
    pages: list[list[str]]
    roles: dict[str, str]
    controls_per_page: int


def plan_pages(ids: list[str], seed: int, control_share: float, training: bool) -> PagePlan:
    """Shuffle `ids` with `seed` and lay them out (module docstring); a UsageError when
    the items are too few for the training page and controls asked for."""
    order = sorted(ids)
    rng = random.Random(seed)
    rng.shuffle(order)
    trained = order[:PAGE_SIZE] if training else []
    rest = order[len(trained) :]
    per_page = controls_per_page(control_share)
    slots = PAGE_SIZE - per_page
    pool_size = _pool_size(len(rest), per_page)
    if len(rest) <= pool_size:
        raise UsageError(
            f"--control-share {control_share:g} needs more than {pool_size + len(trained)} "
            f"dotted items (--items holds {len(ids)}); lower it or generate more items"
        )
    pool, exam = rest[:pool_size], rest[pool_size:]
    pages = []
    for number, start in enumerate(range(0, len(exam), slots)):
        page = exam[start : start + slots]
        page += [pool[(number * per_page + k) % pool_size] for k in range(per_page)]
        rng.shuffle(page)
        pages.append(page)
    roles = {i: TRAINING for i in trained} | {i: CONTROL for i in pool} | {i: EXAM for i in exam}
    return PagePlan(trained, pages, roles, per_page)


@dataclass
class Annotator:
    """One annotator's answers and control record."""

    name: str
    answers: int = 0
    controls: int = 0
    controls_right: int = 0

    @property
    def control_accuracy(self) -> float | None:
        """Share of their control answers that are right; None without any."""
        return self.controls_right / self.controls if self.controls else None


@dataclass(frozen=True)
class Answer:
    """One annotator's answer to one item, normalised, with the file it came from."""

    item_id: str
    annotator: str
    text: str
    source: str


def check_annotators(
    answers: Iterable[Answer],
    roles: Mapping[str, str],
    is_right: Callable[[Answer], bool],
    min_accuracy: float,
) -> tuple[dict[str, Annotator], set[str]]:
    """Every annotator's record and the names kept: control accuracy >= `min_accuracy`;
    with controls in `roles`, an annotator who answered none is not kept (nothing vouches
    for them); without controls, everyone is."""
    people: dict[str, Annotator] = {}
    for answer in answers:
        person = people.setdefault(answer.annotator, Annotator(answer.annotator))
        person.answers += 1
        if roles.get(answer.item_id) == CONTROL:
            person.controls += 1
            person.controls_right += is_right(answer)
    if CONTROL not in roles.values():
        return people, set(people)
    kept = {
        name
        for name, person in people.items()
        if person.control_accuracy is not None and person.control_accuracy >= min_accuracy
    }
    return people, kept


def overlap_counts(per_item: Mapping[str, int]) -> dict[int, int]:
    """How many items have each number of votes: {votes: items}, fewest votes first."""
    return dict(sorted(Counter(per_item.values()).items()))


def share_text(value: float | None) -> str:
    """A control accuracy for people: `0.85`, or `n/a` without control answers."""
    return "n/a" if value is None or math.isnan(value) else f"{value:.2f}"
