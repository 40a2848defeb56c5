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
    current = list(items)
    if not known_failing and not fails(current):
        raise ValueError("ddmin needs a failing input")
    if len(current) <= 1:
        return current  # callers check that the victim passes alone before minimising
    n = 2
    while len(current) >= 2:
        chunks = _split(current, n)
        reduced = False
        for chunk in chunks:
            if fails(chunk):
                current, n, reduced = chunk, 2, True
                break
        if not reduced and n > 2:
            for i in range(len(chunks)):
                complement = [x for j, c in enumerate(chunks) if j != i for x in c]
                if fails(complement):
                    current, n, reduced = complement, max(n - 1, 2), True
                    break
        if not reduced:
            if n >= len(current):
                break
            n = min(len(current), 2 * n)
    return current


def _split(items: list[T], n: int) -> list[list[T]]:
    size, extra = divmod(len(items), n)
    out: list[list[T]] = []
    start = 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        if end > start:
            out.append(items[start:end])
        start = end
    return out
