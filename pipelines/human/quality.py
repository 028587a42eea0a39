"""Quality control of the human evaluation, as the paper ran it on Toloka (Appendix C):
training, an examination, control tasks, 10 items and 10 minutes per page, several
annotators per item.

Export: the scored items are the models' items: every dotted item of `--items`, shuffled,
none set aside. Training, examination and control items come from their own pool, drawn with
another seed by the same generators and stratified by task
(pipelines/human/export_pages.py builds it): a training page of PAGE_SIZE items
whose answers are shown, an examination page of PAGE_SIZE items an annotator must pass
before their pages count, and control items, round(S x PAGE_SIZE) slots of every page (at
least 1 when S > 0), cycled through the pool in task order and placed at random positions,
so a control looks like any other item. None of them is ever scored as the human result. The
roles and the page plan go to the key file, outside the pages.

Import: an annotator whose examination accuracy is below the pass mark (or who took no
examination when the export had one) is excluded, and so is one whose control accuracy is
below its threshold (or who answered no control when the export had controls); the vote is
over the others.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from store.errors import UsageError

PAGE_SIZE = 10
# Roles of the items in the key. Scored items were called "exam" in keys of format 2; the
# examination page is `qualification` (human.read_key reads the old name).
SCORED, CONTROL, TRAINING, QUALIFICATION = "scored", "control", "training", "qualification"
ROLES = (SCORED, CONTROL, TRAINING, QUALIFICATION)
DEFAULT_MIN_CONTROL_ACCURACY = 0.8
# The examination's pass mark: the paper does not state Toloka's; 0.7 of its 10 items.
DEFAULT_QUALIFICATION_PASS = 0.7
DEFAULT_PAGE_TIME_LIMIT = 600  # seconds: the paper's 10 minutes per page
DEFAULT_OVERLAP = 3  # annotators per item: the paper's main text (its appendix says 10)


def controls_per_page(share: float) -> int:
    """Control slots per page of PAGE_SIZE: round(share x PAGE_SIZE), at least 1 for any
    share above 0 and at most PAGE_SIZE - 1 (a page keeps one scored item).

    >>> [controls_per_page(s) for s in (0.0, 0.01, 0.2, 0.25, 0.99)]
    [0, 1, 2, 2, 9]
    """
    if share <= 0:
        return 0
    return min(max(round(share * PAGE_SIZE), 1), PAGE_SIZE - 1)


def pool_needed(scored: int, per_page: int, training: bool, qualification: bool) -> int:
    """Pool items an export needs: one per control slot of its pages (no control is shown
    twice), plus a page each for training and the examination."""
    pages = math.ceil(scored / (PAGE_SIZE - per_page))
    return pages * per_page + PAGE_SIZE * (int(training) + int(qualification))


def stratified(pool: Mapping[str, str], rng: random.Random) -> list[str]:
    """The pool's ids (id -> task) in task order, round after round: each task's items
    shuffled, then one of every task per round, so any stretch of the list spreads over
    the tasks."""
    by_task: dict[str, list[str]] = {}
    for item_id, task in sorted(pool.items()):
        by_task.setdefault(task, []).append(item_id)
    for ids in by_task.values():
        rng.shuffle(ids)
    rounds = max((len(ids) for ids in by_task.values()), default=0)
    return [ids[k] for k in range(rounds) for _, ids in sorted(by_task.items()) if k < len(ids)]


@dataclass(frozen=True)
class PagePlan:
    """Which item goes where: the training and examination pages (maybe empty), the pages
    of scored items with their controls mixed in, and each item's role."""

    training: list[str]
    qualification: list[str]
    pages: list[list[str]]
    roles: dict[str, str]
    controls_per_page: int


def plan_pages(
    scored: list[str],
    pool: Mapping[str, str],
    seed: int,
    control_share: float,
    training: bool,
    qualification: bool,
) -> PagePlan:
    """Shuffle the `scored` ids with `seed` and lay them out with items of the control
    `pool` (id -> task; module docstring); a UsageError when the pool is too small."""
    order = sorted(scored)
    rng = random.Random(seed)
    rng.shuffle(order)
    per_page = controls_per_page(control_share)
    needed = pool_needed(len(order), per_page, training, qualification)
    if len(pool) < needed or set(pool) & set(order):
        raise UsageError(
            f"the control pool holds {len(pool)} item(s) apart from the scored ones; the "
            f"pages need {needed}"
        )
    drawn = stratified(pool, rng)
    trained = drawn[:PAGE_SIZE] if training else []
    examined = drawn[len(trained) : len(trained) + PAGE_SIZE] if qualification else []
    controls = drawn[len(trained) + len(examined) : needed]
    slots = PAGE_SIZE - per_page
    pages = []
    for number, start in enumerate(range(0, len(order), slots)):
        page = order[start : start + slots]
        page += [controls[(number * per_page + k) % len(controls)] for k in range(per_page)]
        rng.shuffle(page)
        pages.append(page)
    roles = (
        {i: TRAINING for i in trained}
        | {i: QUALIFICATION for i in examined}
        | {i: CONTROL for i in controls}
        | {i: SCORED for i in order}
    )
    return PagePlan(trained, examined, pages, roles, per_page)


@dataclass
class Annotator:
    """One annotator's answers, examination and control record."""

    name: str
    answers: int = 0
    controls: int = 0
    controls_right: int = 0
    examined: int = 0
    examined_right: int = 0

    @property
    def control_accuracy(self) -> float | None:
        """Share of their control answers that are right; None without any."""
        return self.controls_right / self.controls if self.controls else None

    @property
    def qualification_accuracy(self) -> float | None:
        """Share of their examination answers that are right; None without any."""
        return self.examined_right / self.examined if self.examined else None


@dataclass(frozen=True)
class Answer:
    """One annotator's answer to one item, normalised, with the file it came from."""

    item_id: str
    annotator: str
    text: str
    source: str


@dataclass(frozen=True)
class Verdicts:
    """Who is kept for the vote, and who failed the examination (excluded, and said so)."""

    people: dict[str, Annotator]
    kept: set[str]
    failed_exam: set[str]


def check_annotators(
    answers: Iterable[Answer],
    roles: Mapping[str, str],
    is_right: Callable[[Answer], bool],
    min_accuracy: float,
    pass_mark: float = DEFAULT_QUALIFICATION_PASS,
) -> Verdicts:
    """Every annotator's record and the names kept: the examination passed (accuracy >=
    `pass_mark`) where `roles` hold one, and control accuracy >= `min_accuracy` where they
    hold controls; an annotator with no answer to either is not kept (nothing vouches for
    them). Without examination and controls, everyone is kept."""
    people: dict[str, Annotator] = {}
    for answer in answers:
        person = people.setdefault(answer.annotator, Annotator(answer.annotator))
        person.answers += 1
        role = roles.get(answer.item_id)
        if role == CONTROL:
            person.controls += 1
            person.controls_right += is_right(answer)
        elif role == QUALIFICATION:
            person.examined += 1
            person.examined_right += is_right(answer)
    present = set(roles.values())
    failed = set()
    if QUALIFICATION in present:
        failed = {
            name
            for name, p in people.items()
            if p.qualification_accuracy is None or p.qualification_accuracy < pass_mark
        }
    kept = set(people) - failed
    if CONTROL in present:
        kept = {
            name
            for name in kept
            if people[name].control_accuracy is not None
            and people[name].control_accuracy >= min_accuracy  # type: ignore[operator]
        }
    return Verdicts(people, kept, failed)


def overlap_counts(per_item: Mapping[str, int]) -> dict[int, int]:
    """How many items have each number of votes: {votes: items}, fewest votes first."""
    return dict(sorted(Counter(per_item.values()).items()))


def share_text(value: float | None) -> str:
    """A control accuracy for people: `0.85`, or `n/a` without control answers."""
    return "n/a" if value is None or math.isnan(value) else f"{value:.2f}"
