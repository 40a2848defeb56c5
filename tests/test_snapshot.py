"""The snapshotter's two paths: the lean one (tokens compared in one go) and the timed one
(every SAMPLE_EVERY-th snapshot), with real probe objects whose state the tests move."""

from __future__ import annotations

from typing import Any

import pytest

from statesnap.probes.base import Probe, Severity
from statesnap.state.snapshot import SAMPLE_EVERY, Snapshotter, cost_table
from statesnap.state.tracker import Label, TestTracker


class Counter(Probe):
    """Reads a value the test sets; counts what the snapshotter asked."""

    def __init__(self, name: str, value: object = 0) -> None:
        self.name = name  # type: ignore[misc]
        self.value = value
        self.tokens = 0
        self.reads = 0
        self.raise_in_token = False

    def token(self) -> object:
        self.tokens += 1
        if self.raise_in_token:
            raise RuntimeError(f"{self.name} broke")
        return self.value

    def read(self) -> dict[str, object]:
        self.reads += 1
        return {"value": self.value}


class NoToken(Counter):
    def token(self) -> object:
        super().token()
        return None  # no cheap answer: read every time


def test_unchanged_state_returns_the_same_snapshot_on_every_path() -> None:
    a, b = Counter("a"), Counter("b")
    snap = Snapshotter([a, b])
    first = snap.take()
    current = first
    for _ in range(3 * SAMPLE_EVERY):  # both the lean and the timed path
        current = snap.take(current)
        assert current is first
    assert (a.reads, b.reads) == (1, 1)
    b.value = 5
    moved = snap.take(current)
    assert moved is not first
    assert moved.get("b") == {"value": 5} and moved.get("a") is first.get("a")
    assert (a.reads, b.reads) == (1, 2)  # only the probe whose token moved is read


def test_a_token_of_none_always_reads() -> None:
    probe = NoToken("n")
    snap = Snapshotter([probe])
    current = snap.take()
    for _ in range(SAMPLE_EVERY + 2):
        current = snap.take(current)
    assert probe.reads == SAMPLE_EVERY + 3


def test_costs_count_every_token_call_and_scale_the_timed_ones() -> None:
    a, b = Counter("a"), Counter("b")
    snap = Snapshotter([a, b])
    current = snap.take()
    takes = 5 * SAMPLE_EVERY
    for _ in range(takes - 1):
        current = snap.take(current)
    costs = snap.settled_costs()
    assert costs["a"].tokens == a.tokens == takes
    assert costs["b"].tokens == b.tokens == takes
    assert 0 < costs["a"].timed < takes  # sampled, not every call
    assert costs["a"].total_ns >= costs["a"].token_ns  # scaled up to all calls
    table = cost_table(costs, takes)
    assert table["a"]["tokens"] == takes and table["a"]["reads"] == 1


def test_a_raising_token_is_switched_off_once_on_the_lean_path() -> None:
    good, bad = Counter("good"), Counter("bad")
    errors: list[tuple[str, str]] = []
    snap = Snapshotter([good, bad], on_error=lambda p, where, exc: errors.append((p.name, where)))
    current = snap.take()
    current = snap.take(current)  # the 2nd take is a lean one
    calls_before = bad.tokens
    bad.raise_in_token = True
    current = snap.take(current)
    assert errors == [("bad", "token")]
    assert bad.tokens == calls_before + 1  # asked once, not asked again to find the culprit
    assert [p.name for p in snap.probes] == ["good"]
    assert "bad" not in current.maps and current.get("good") == {"value": 0}
    for _ in range(2 * SAMPLE_EVERY):
        current = snap.take(current)
    assert bad.tokens == calls_before + 1
    assert snap.settled_costs()["bad"].tokens == calls_before + 1


def test_a_new_probe_list_is_never_compared_with_an_old_row() -> None:
    a, b = Counter("a", 1), Counter("b", 2)
    snap = Snapshotter([a, b])
    current = snap.take()
    current = snap.take(current)  # the row [1, 2] is cached on this snapshot
    # Other probes whose tokens happen to read [1, 2]: the row belongs to the old list, so
    # they are compared (and read) as probes of their own, not waved through.
    c, d = Counter("c", 1), Counter("d", 2)
    snap.probes = [c, d]
    for _ in range(3):  # lean takes (and a timed one, should one fall here)
        current = snap.take(current)
    assert current.get("c") == {"value": 1} and current.get("d") == {"value": 2}
    assert (c.reads, d.reads) == (1, 1)


class Graded(Counter):
    """Grades its change by the value it went to; a value of -1 makes the grading raise."""

    def severity_of(self, key: str, before: object, after: object) -> Severity:
        if after == -1:
            raise ValueError("cannot grade")
        return Severity.LOW if after == 1 else Severity.HIGH


def test_changes_so_far_are_labelled_and_graded_as_the_end_labels_them() -> None:
    probe = Graded("g")
    tracker = TestTracker(Snapshotter([probe]))
    tracker.begin()
    probe.value = 1
    tracker.checkpoint(Label("setup", "db", "module"), light=False)
    assert tracker.latest is not None and tracker.latest.get("g") == {"value": 1}
    so_far = tracker.net_so_far(Label("teardown"))
    assert [(c.phase, c.fixture, c.scope, c.severity) for c in so_far] == [
        ("setup", "db", "module", Severity.LOW)]
    probe.value = -1  # changed again in teardown: still first seen in the fixture's setup
    (end,) = tracker.end()
    assert (end.phase, end.fixture, end.scope, end.severity) == (
        "setup", "db", "module", Severity.MEDIUM)  # the probe's default when grading raises
    assert tracker.latest is not None and tracker.latest.get("g") == {"value": -1}
    assert tracker.net_so_far(Label("teardown")) == []  # no test in progress


def test_a_key_a_wide_setup_made_then_changed_again_carries_the_setups_value() -> None:
    probe = Graded("g")
    tracker = TestTracker(Snapshotter([probe]))
    tracker.begin()
    probe.value = 2
    tracker.checkpoint(Label("setup", "setup_class", "class"), light=False)
    tracker.checkpoint(Label("setup"))
    probe.value = 3
    tracker.checkpoint(Label("call"))
    (end,) = tracker.end()
    assert (end.before, end.after, end.phase, end.scope) == (0, 3, "setup", "class")
    assert end.then == {"before": 2, "phase": "call"}
    rest = end.after_setup()
    assert rest is not None
    assert (rest.change, rest.before, rest.after, rest.phase) == ("changed", 2, 3, "call")
    assert end.to_json()["then"] == end.then  # kept in the record
    # Made by the wide setup and left alone: nothing after it.
    tracker.begin()
    probe.value = 4
    tracker.checkpoint(Label("setup", "db", "module"), light=False)
    (end,) = tracker.end()
    assert end.then is None and end.after_setup() is None
    # A function fixture's change is the test's own from the start.
    tracker.begin()
    probe.value = 5
    tracker.checkpoint(Label("setup", "f", "function"))
    probe.value = 6
    (end,) = tracker.end()
    assert end.then is None


class Restless(Counter):
    """A token that moves on every call (a counter of made objects) over state that may not."""

    def token(self) -> object:
        super().token()
        return self.tokens


def test_a_moved_token_over_unchanged_state_is_no_change_and_a_real_one_is_found() -> None:
    probe, still = Restless("r"), Counter("s")
    tracker = TestTracker(Snapshotter([probe, still]))
    tracker.begin()
    tracker.checkpoint(Label("setup"))
    assert tracker.end() == []
    tracker.begin()
    tracker.checkpoint(Label("setup"))
    probe.value = 7
    tracker.checkpoint(Label("call"))
    (change,) = tracker.end()
    assert (change.probe, change.before, change.after, change.phase) == ("r", 0, 7, "call")


class Gauged(Counter):
    """A probe with a gauge; counts how often it was asked."""

    def __init__(self, name: str, value: object = 0) -> None:
        super().__init__(name, value)
        self.asked = 0

    def gauges(self, current: dict[str, object]) -> dict[str, float]:
        self.asked += 1
        return {f"{self.name}.value": float(current["value"])}  # type: ignore[arg-type]


def test_gauges_are_read_again_only_for_a_new_map() -> None:
    from statesnap.record.gauges import Gauges

    g, other = Gauged("g", 1), Restless("r")
    snap = Snapshotter([g, other])
    gauges = Gauges()
    first = snap.take()
    assert gauges.of(first, snap.probes) == ({"g.value": 1.0}, '{"g.value":1.0}')
    moved = snap.take(first)  # r's token moved: g's map is shared
    assert moved is not first and moved.get("g") is first.get("g")
    assert gauges.of(moved, snap.probes) == ({"g.value": 1.0}, '{"g.value":1.0}')
    assert g.asked == 1
    g.value = 3
    changed = snap.take(moved)
    assert gauges.of(changed, snap.probes) == ({"g.value": 3.0}, '{"g.value":3.0}')
    assert g.asked == 2
    assert gauges.of(None, snap.probes) == ({}, None)
    none_here = Snapshotter([Counter("c")])
    assert Gauges().of(none_here.take(), none_here.probes) == ({}, None)


class Split(Counter):
    """A light token that stays put (``light``) and a full one that follows ``value``."""

    light = 0

    def light_token(self) -> object:
        return ("light", self.light)


def test_a_full_take_after_a_light_reread_compares_in_one_go_and_misses_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A light checkpoint that re-read a probe makes a snapshot with a row of light tokens
    # only; the full take after it (a test's end) compares the full tokens kept per probe.
    settles: list[bool] = []
    real = Snapshotter._settle

    def counted(self: Snapshotter, *args: Any, **kwargs: Any) -> Any:
        settles.append(True)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Snapshotter, "_settle", counted)
    a, s = Counter("a"), Split("s")
    snap = Snapshotter([a, s])
    start = snap.take()
    for case in range(SAMPLE_EVERY):  # every take on the lean path at least once
        a.value = case + 1
        light = snap.take(start, light=True)
        assert light is not start and light.get("a") == {"value": case + 1}
        settles.clear()
        same = snap.take(light)
        assert same is light  # nothing moved
        if snap._takes % SAMPLE_EVERY:  # the lean path: the dict's tokens in one comparison
            assert settles == []
        s.value = ("full moved", case)  # the full token alone moves: found and read
        reads = s.reads
        moved = snap.take(light)
        assert moved is not light and moved.get("s") == {"value": ("full moved", case)}
        assert s.reads == reads + 1
        start = moved
        assert snap.take(start) is start and snap.take(start, light=True) is start
