"""statesnap's markers: names and the help lines pytest shows for them (``pytest --markers``).

Each feature registers its own marker's line at configure; the names live here so that the
core and other features can read a marker without importing the feature that owns it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest
    from _pytest.nodes import Node

ISOLATE = "statesnap_isolate"
ALLOW = "statesnap_allow"
REQUIRES_CLEAN = "statesnap_requires_clean"

#: Each marker's help line; the feature that owns it registers it.
HELP = {
    ISOLATE: f"{ISOLATE}(mode='auto'): run this test in a fresh child process (fork, or spawn when "
    "CUDA is initialised or mode='spawn'), so what it leaks dies with it",
    ALLOW: f"{ALLOW}('env:FOO', 'modules', ...): state that --statesnap-strict tolerates from "
    "this test (probe:key globs; a bare probe means all its keys)",
    REQUIRES_CLEAN: f"{REQUIRES_CLEAN}('cuda', 'env:CUDA_VISIBLE_DEVICES', ...): error at "
    "setup, naming the test that dirtied it, when this state differs from the session's start",
}


def names_on(items: Iterable[pytest.Item]) -> set[str]:
    """Every marker name on ``items`` or on any of their parents (what ``get_closest_marker``
    looks through), each collection node read once.

    A feature asks this once at collection instead of one ``get_closest_marker`` per item:
    that walks every item's parents again, and three features asking cost a few percent of
    a trivial test.  Markers added later (``item.add_marker`` in a fixture) are not seen,
    as ``get_closest_marker`` at collection does not see them either.
    """
    names: set[str] = set()
    seen: set[int] = set()
    for item in items:
        node: Node | None = item
        while node is not None and id(node) not in seen:
            seen.add(id(node))
            for mark in node.own_markers:
                names.add(mark.name)
            node = node.parent
    return names
