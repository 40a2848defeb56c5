"""Key-level proof: the smallest set of recorded changes whose restoration heals a victim.

Restoring one key at a time before the victim names the key it relies on when one suffices.
When none does (the victim reads two leaked variables, or a working directory and the file it
expected there), every restorable key is restored together; when that heals the victim, delta
debugging over the keys keeps the smallest set that still does.  Pure: ``heals(keys)`` runs
the replay.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from statesnap.minimize import ddmin

K = TypeVar("K")


def smallest_healing_set(keys: Sequence[K], heals: Callable[[Sequence[K]], bool],
                         singles: int) -> list[K]:
    """The smallest subset of ``keys`` whose restoration lets the victim pass ([] if none).

    The first ``singles`` keys (best ranked first) are tried alone; then all together, then
    delta debugging shrinks that set.
    """
    for key in keys[:singles]:
        if heals([key]):
            return [key]
    if len(keys) <= 1 or not heals(list(keys)):
        return []
    return ddmin(list(keys), heals, known_failing=True)
