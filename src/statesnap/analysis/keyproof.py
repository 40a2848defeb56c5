"""Key-level proof: the smallest set of recorded changes whose restoration heals a victim.

One key at a time first; when none suffices, all restorable keys together, then delta debugging
over them.  Pure: ``heals(keys)`` runs the replay.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from statesnap.analysis.minimize import ddmin
from statesnap.record.journal import TestEntry
from statesnap.state.diff import Change

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


def fresh_module_attributes(module: str, causes: Sequence[str],
                            recorded: Iterable[TestEntry], failure_text: str = ""
                            ) -> list[Change]:
    """What ``causes`` changed on ``module``'s attributes in the recorded run, best first.

    A polluter that imports a settings module and then changes it shows, in a replay where
    it imported the module first, one change: the module appeared (``modules:M``).  Taking
    the module out heals the victim (it imports a fresh copy), but the leak is the changed
    settings, which the recorded run (where the module was already there) did see.  Those
    named in the failure come first.
    """
    wanted = set(causes)
    found = [c for t in recorded if t.nodeid in wanted for c in t.changes
             if c.probe == "attributes" and c.key.startswith(f"{module}:")]
    return sorted(found, key=lambda c: c.key.rsplit(":", 1)[-1].rsplit(".", 1)[-1]
                  not in failure_text)
