"""Delta debugging (Zeller's ddmin): a 1-minimal subset that still makes the victim fail.

Plain halving loses a failure that needs two polluters in different halves; ddmin also tries
complements and finer splits, so both are kept.  Pure: ``fails(subset)`` runs the replay.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def ddmin(items: Sequence[T], fails: Callable[[Sequence[T]], bool],
          known_failing: bool = False) -> list[T]:
    """The smallest subset (order kept) found such that ``fails(subset)`` holds.

    ``known_failing`` skips the initial check that ``items`` as a whole fails.
    """
    seen: dict[tuple[int, ...], bool] = {}

    def test(subset: list[int]) -> bool:
        # ddmin can meet the same subset twice (a chunk, later a complement); a replay costs
        # seconds, so each subset runs once.  Subsets are positions, so duplicates are safe.
        key = tuple(subset)
        if key not in seen:
            seen[key] = fails([items[i] for i in subset])
        return seen[key]

    current = list(range(len(items)))
    if not known_failing and not test(current):
        raise ValueError("ddmin needs a failing input")
    if len(current) <= 1:
        return [items[i] for i in current]  # callers check the victim passes alone first
    n = 2
    while len(current) >= 2:
        chunks = _split(current, n)
        reduced = False
        for chunk in chunks:
            if test(chunk):
                current, n, reduced = chunk, 2, True
                break
        if not reduced and n > 2:
            for i in range(len(chunks)):
                complement = [x for j, c in enumerate(chunks) if j != i for x in c]
                if test(complement):
                    current, n, reduced = complement, max(n - 1, 2), True
                    break
        if not reduced:
            if n >= len(current):
                break
            n = min(len(current), 2 * n)
    return [items[i] for i in current]


def _split(items: list[int], n: int) -> list[list[int]]:
    size, extra = divmod(len(items), n)
    out: list[list[int]] = []
    start = 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        if end > start:
            out.append(items[start:end])
        start = end
    return out
