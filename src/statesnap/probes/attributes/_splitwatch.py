"""The ``attributes`` probe's watch in two: the modules whose watched objects stay, and the
few whose watched objects are replaced again and again, rebuilt alone.

structlog's autouse fixture gives ``_CONFIG`` a fresh processor list before every test: the
watch was rebuilt each time, laying out every watched dict of every tracked module again (the
suite's test modules and classes included), most of the probe's cost per test.  A module whose
watched objects were replaced (``Tracked.rewatch`` at a rebuild) is watched apart from
then on (after :data:`MOVES_TO_SPLIT` such rebuilds), and a rebuild caused only by such
modules lays out only theirs.
"""

from __future__ import annotations

from itertools import compress
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from statesnap.probes.attributes._watch import Swaps, Watch, swap_watched

if TYPE_CHECKING:
    from statesnap.probes.attributes._watch import Owner
    from statesnap.probes.attributes.scan import Tracked


#: Rebuilds that replaced a module's watched objects before it is watched apart.
MOVES_TO_SPLIT = 3


class _Both:
    """Both halves' :class:`~._watch.Bindings`, renewed together."""

    def __init__(self, *halves: Watch) -> None:
        self._halves = halves

    def renew(self) -> None:
        for w in self._halves:
            w.bindings.renew()


class SplitWatch:
    """A :class:`~._watch.Watch` over ``steady`` modules and one over ``moving`` ones, with the
    interface the probe uses of one (readings, tokens and the segments a rebuild carries the
    last readings from: the two halves' concatenated)."""

    def __init__(self, mods: list[Tracked], steady: Watch, moving: Watch,
                 moving_set: frozenset[Tracked], flags: tuple[bool, ...]) -> None:
        #: The probe's module list the halves were made for (a rescan makes a new one).
        self.mods = mods
        self.steady = steady
        self.moving = moving
        self.moving_set = moving_set
        #: Each steady module's ``by_bindings`` when built: a flip changes its segments.
        self.flags = flags
        self.bindings = _Both(steady, moving)

    @property
    def segments(self) -> list[list[Any]]:
        return [a + b for a, b in zip(self.steady.segments, self.moving.segments, strict=True)]

    @property
    def last(self) -> tuple[Any, ...] | None:
        a, b = self.steady.last, self.moving.last
        if a is None or b is None:
            return None
        # Segment 0 (raw tags) is never read from here: last_tag_items stands for it.
        return (None, *(x + y for x, y in zip(a[1:], b[1:], strict=True)))

    def last_tag_items(self) -> tuple[Any, ...]:
        return self.steady.last_tag_items() + self.moving.last_tag_items()

    def readings(self) -> tuple[Any, ...]:
        return self.steady.readings(), self.moving.readings()

    def dirty(self, now: tuple[Any, ...]) -> list[tuple[Owner, Any]]:
        return self.steady.dirty(now[0]) + self.moving.dirty(now[1])

    def remember(self, now: tuple[Any, ...]) -> None:
        self.steady.remember(now[0])
        self.moving.remember(now[1])

    def filled_moved(self) -> bool:
        return self.steady.filled_moved() or self.moving.filled_moved()

    def token(self) -> object:
        return self.steady.token(), self.moving.token()

    def swapped(self, new_of: Swaps, movers: frozenset[Tracked]) -> SplitWatch:
        """Both halves with the lists in ``new_of`` (of the modules ``movers``) swapped in
        (``Watch.swapped``); the steady one is not looked at where they are all moving."""
        steady = self.steady if movers <= self.moving_set else self.steady.swapped(new_of)
        moving = self.moving.swapped(new_of)
        if steady is self.steady and moving is self.moving:
            return self
        return SplitWatch(self.mods, steady, moving, self.moving_set, self.flags)

    def light(self) -> object:
        return self.steady.light(), self.moving.light()


def _steady_flags(mods: list[Tracked], moving: frozenset[Tracked]) -> tuple[bool, ...]:
    return tuple(t.by_bindings for t in mods if t not in moving)


def rebuilt(mods: list[Tracked], previous: Watch | SplitWatch) -> Watch | SplitWatch:
    """The watch after describing, its last readings not known: the probe reads it at once
    (:func:`readings_after`) and remembers those, so nothing of ``previous``'s readings is
    carried over (:meth:`Watch._carry` is for a watch laid out before its modules are
    described).  Only the moving half is laid out again where nothing else changed: every
    module whose watched objects were replaced (``rewatch``) is a moving one, no steady
    module switched to being watched by its bindings, and no steady sequence became empty or
    non-empty."""
    moved = frozenset(t for t in mods if t.rewatch)
    if (isinstance(previous, SplitWatch) and previous.mods is mods
            and moved <= previous.moving_set and not previous.steady.filled_moved()
            and _steady_flags(mods, previous.moving_set) == previous.flags):
        moving = previous.moving_set
        return SplitWatch(mods, previous.steady,
                          Watch([t for t in mods if t in moving], same_as=previous.moving),
                          moving, previous.flags)
    # Moving from now on: a module watched before (the parts it was described with gathered
    # for a watch) whose objects were replaced.  One described for the first time (a module
    # just imported, every module at the session's start) stays with the steady ones.
    again = [t for t in moved if t.watched is not None and t.watched[0]]
    for t in again:
        t.moves += 1
    # Only one that keeps moving: two halves cost a little more per token (click's suite has
    # a module moved once or twice a session), a rebuild per test far more.
    moved = frozenset(t for t in again if t.moves >= MOVES_TO_SPLIT)
    if isinstance(previous, SplitWatch):
        moved |= previous.moving_set & frozenset(mods)
    if not moved:
        return Watch(mods)
    steady = Watch([t for t in mods if t not in moved])
    moving_watch = Watch([t for t in mods if t in moved])
    return SplitWatch(mods, steady, moving_watch, moved, _steady_flags(mods, moved))


_SWAPS = attrgetter("swaps")


def watch_after(mods: list[Tracked], watch: Watch | SplitWatch, now: tuple[Any, ...],
                rewatch: bool) -> tuple[Watch | SplitWatch, tuple[Any, ...]]:
    """The watch after the probe described ``mods`` again, and its readings (``now``: the
    readings taken before describing): rebuilt where ``rewatch`` or a sequence filled or
    emptied, else with the lists replaced by equal copies swapped in (``Tracked.swaps``)."""
    swaps = list(compress(mods, map(_SWAPS, mods)))  # (C loops: every read)
    moving = watch.moving_set if isinstance(watch, SplitWatch) else frozenset()
    for t in swaps:
        # One that keeps swapping is watched apart, as one that keeps being rebuilt: its
        # swaps then touch only the small half, and the other half's readings compare equal
        # in one step.
        if t not in moving:
            t.moves += 1
            if t.moves >= MOVES_TO_SPLIT:
                t.rewatch = rewatch = True
    if rewatch or watch.filled_moved():
        previous = watch
        watch = rebuilt(mods, watch)
        now = readings_after(watch, previous, now)
    elif swaps:
        # A reset's equal copies: the watch reads the same of them, so its readings stand.
        new_of: Swaps = {}
        for t in swaps:
            for key, old, new in t.swaps:
                new_of.setdefault(id(old), {})[(t, key)] = new
        watch = (watch.swapped(new_of, frozenset(swaps)) if isinstance(watch, SplitWatch)
                 else watch.swapped(new_of))
        for t in swaps:
            swap_watched(t, new_of)
    for t in swaps:
        t.swaps = ()
    return watch, now


def readings_after(watch: Watch | SplitWatch, previous: Watch | SplitWatch,
                   now: tuple[Any, ...]) -> tuple[Any, ...]:
    """The readings of ``watch``, rebuilt from ``previous`` whose readings were ``now``.

    A steady half kept as it was (the moving half alone laid out again: structlog's reset,
    every test) keeps its part of ``now``: describing only reads, so what it read still
    holds, and only the moving half's few objects are read again.
    """
    if (isinstance(watch, SplitWatch) and isinstance(previous, SplitWatch)
            and watch.steady is previous.steady):
        return now[0], watch.moving.readings()
    return watch.readings()
