"""An owner (a module) that appears during a test, seen by the tracker at a checkpoint: what
the test then changes on it is recorded, whether the maps share a lineage
(:class:`~statesnap.base.deltamap.DeltaMap`, only the touched keys looked at) or not."""

from __future__ import annotations

import pytest

from statesnap.base.deltamap import DeltaMap
from statesnap.probes.base import Probe
from statesnap.state.snapshot import Snapshotter
from statesnap.state.tracker import Label, TestTracker

#: Keys of modules watched from the start; ``new:`` is the module the test imports.
START = {f"m{i}:": "module" for i in range(50)} | {f"m{i}:x": i for i in range(50)}


class Owners(Probe):
    """An ``attributes``-like probe (the name the owner rule applies to) whose next map the
    test sets, derived from the last one (one lineage) or started afresh."""

    name = "attributes"

    def __init__(self, lineage: bool) -> None:
        self.lineage = lineage
        self.map = DeltaMap.start(dict(START))
        self.version = 0

    def set(self, removed: list[str], updated: dict[str, object]) -> None:
        if self.lineage:
            self.map = self.map.derive(removed, updated)
        else:
            items = {k: v for k, v in self.map.items() if k not in removed} | updated
            self.map = DeltaMap.start(items)
        self.version += 1

    def token(self) -> object:
        return self.version

    def read(self) -> dict[str, object]:
        return self.map


@pytest.mark.parametrize("lineage", [True, False], ids=["one lineage", "new lineages"])
def test_a_change_on_a_module_that_appeared_in_the_test_is_recorded(lineage: bool) -> None:
    probe = Owners(lineage)
    tracker = TestTracker(Snapshotter([probe]))
    tracker.baseline()
    tracker.begin()
    probe.set([], {"new:": "module", "new:flag": False})   # a fixture imports it
    tracker.checkpoint(Label("setup", "fx", "function"))
    probe.set([], {"new:flag": True, "m3:x": -3})           # the test changes it, and m3
    changes = {(c.key, c.before, c.after) for c in tracker.end("call")}
    # The module's own appearing is not a change of each of its attributes; what the test
    # did to it after it appeared is.
    assert changes == {("new:flag", False, True), ("m3:x", 3, -3)}


def test_a_module_that_appeared_and_went_again_leaves_nothing() -> None:
    probe = Owners(lineage=True)
    tracker = TestTracker(Snapshotter([probe]))
    tracker.baseline()
    tracker.begin()
    probe.set([], {"new:": "module", "new:flag": False})
    tracker.checkpoint(Label("setup", "fx", "function"))
    probe.set(["new:", "new:flag"], {})
    assert tracker.end("call") == []
