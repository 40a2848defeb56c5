"""Resources only garbage holds, released before a test's end is read: the same list every run.

An event loop, a socket pair or a pool a test leaves unclosed and unreachable keeps its
descriptors (or its threads, its worker processes) until the garbage collector finalises it,
and when the collector runs shifts with every allocation -- inside the test (no leak seen), or
during a later one (a leak seen).  So when a test's end reading shows a resource it added
(:data:`RESOURCE_PROBES`), statesnap runs one full collection and reads again: what garbage
held is released now, in that test, on every run; what is still reachable is a real leak and
stays listed.  A test that adds no resource pays nothing.

Why the collection changes no test's outcome: it runs between tests, and frees only objects
no code can reach; while the collector is on, a collection at that point is one plain pytest
may run too (statesnap's own allocations already move when it runs), so no test can count on
it not happening.  With the collector off (``gc.disable()``, left so by a test or a conftest)
nothing collects in plain pytest either, so statesnap does not: the resource stays listed,
again on every run.  Why and how: docs/probes.md ("Resources held only by garbage").
"""

from __future__ import annotations

import gc

from statesnap.state.snapshot import Snapshot

#: Probes of resources (a descriptor, a thread, a child process) that a test can leave held
#: only by garbage, which the collector's finalisers release whenever it runs.
RESOURCE_PROBES = frozenset({"fds", "threads", "children"})


def resource_added(before: Snapshot, after: Snapshot) -> bool:
    """Whether ``after`` holds a resource that ``before`` did not (a key added, or one whose
    fingerprint changed: a descriptor number reused for something else)."""
    for name in RESOURCE_PROBES:
        now = after.maps.get(name)
        was = before.maps.get(name)
        if now is None or now is was:  # off, or its token did not move: the same map
            continue
        was = was or {}
        try:
            if any(key not in was or was[key] != value for key, value in now.items()):
                return True
        except Exception:  # a value whose comparison raises: read again rather than guess
            return True
    return False


def collect_garbage() -> bool:
    """One full collection, where the collector is on; whether one ran."""
    if not gc.isenabled():
        return False
    gc.collect()
    return True
