"""Planning a hunt: which tests leak, how to group them, which orders to run.  Pure functions.

From the record's leaks (:func:`~statesnap.analysis.leaks.resolve_leaks`): leakers grouped so
that no two leave the same key with different values, then the orders (leakers first, without
leakers, reversed rest, cleaners last, low leakers first, reversed) and the candidates for a new
failure.  What each order reaches: docs/ARCHITECTURE.md ("The hunt").
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from statesnap.analysis.attribution import dirty_before, rank
from statesnap.analysis.findings import Candidate
from statesnap.analysis.leaks import resolve_leaks
from statesnap.analysis.victimcode import VictimCode
from statesnap.probes.base import Severity
from statesnap.record.journal import Record, TestEntry
from statesnap.state.diff import REMOVED, Change

#: Outcomes of a test that count as "it passed" in the recorded run.
PASSED = frozenset({"passed"})
#: Outcomes that count as a new failure in a hunt run.
FAILED = frozenset({"failed", "error", "crashed"})

#: Probes an exception type points at, for ranking suspects whose key the failure never
#: quotes (a relative path that stopped resolving says nothing about the working directory).
EXCEPTION_AFFINITY: dict[str, tuple[str, ...]] = {
    "FileNotFoundError": ("cwd", "files"),
    "NotADirectoryError": ("cwd", "files"),
    "IsADirectoryError": ("cwd", "files"),
    "PermissionError": ("cwd", "files", "process"),
    "FileExistsError": ("files", "cwd"),
    "ModuleNotFoundError": ("syspath", "modules"),
    "ImportError": ("syspath", "modules"),
    "ResourceWarning": ("fds", "threads", "children"),
    "ConnectionRefusedError": ("fds",),
    "OSError": ("fds", "cwd", "files"),
}
AFFINITY_SCORE = 30.0


@dataclass
class HuntSuite:
    """The tests a hunt works on, in their usual order, with what each leaked."""

    #: Every test, lane by lane, each lane in the order it ran.
    tests: list[TestEntry]
    #: ``{worker: tests of that lane in order}``.
    lanes: dict[str, list[TestEntry]]
    #: The leaks considered, by node id (only tests with at least one).
    leaks: dict[str, list[Change]]
    #: How many LOW-severity leaks were left out (``all_leaks=False``).
    ignored_low: int = 0
    #: Tests whose every leak was LOW and left out of ``leaks``, in their usual order.
    low_leakers: list[str] = field(default_factory=list)
    #: Those LOW leaks, by node id (what :func:`low_groups` splits the tests by).
    low_leaks: dict[str, list[Change]] = field(default_factory=dict)
    #: Tests left out of every order (the one that was running when a lane's process died).
    left_out: list[str] = field(default_factory=list)
    by_id: dict[str, TestEntry] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.by_id = {t.nodeid: t for t in self.tests}

    def order(self) -> list[str]:
        return [t.nodeid for t in self.tests]

    def lane_of(self, nodeid: str) -> list[TestEntry]:
        """The tests of ``nodeid``'s lane, in the order they ran."""
        t = self.by_id.get(nodeid)
        return [] if t is None else self.lanes.get(t.worker, [])

    def leakers(self) -> list[str]:
        """Leaking tests in their usual order."""
        return [t.nodeid for t in self.tests if t.nodeid in self.leaks]


def build_suite(records: Sequence[Record], worker: str | None = None,
                all_leaks: bool = False) -> HuntSuite:
    """The tests of ``records`` (lanes of one run, or one record), optionally one worker's."""
    lanes: dict[str, list[TestEntry]] = {}
    left_out: list[str] = []
    leaks: dict[str, list[Change]] = {}
    low: list[str] = []
    low_leaks: dict[str, list[Change]] = {}
    ignored = 0
    seen: set[str] = set()
    for record in records:
        tests = sorted(record.tests, key=lambda t: t.index)
        by_worker: dict[str, list[TestEntry]] = {}
        for t in tests:
            by_worker.setdefault(t.worker, []).append(t)
        if record.running is not None:
            left_out.append(str(record.running["nodeid"]))
        for w, lane in by_worker.items():
            if worker is not None and w != worker:
                continue
            resolved = resolve_leaks(lane)
            keep: list[TestEntry] = []
            for t in lane:
                if t.nodeid in seen:
                    continue  # a rerun of the same test: its first run stands for it
                seen.add(t.nodeid)
                keep.append(t)
                mine = resolved.get(t.index, [])
                kept = [c for c in mine if all_leaks or c.severity > Severity.LOW]
                ignored += len(mine) - len(kept)
                if kept:
                    leaks[t.nodeid] = kept
                elif mine:
                    low.append(t.nodeid)
                    low_leaks[t.nodeid] = mine
            lanes.setdefault(w, []).extend(keep)
    ordered = [t for lane in lanes.values() for t in lane]
    return HuntSuite(tests=ordered, lanes=lanes, leaks=leaks, ignored_low=ignored,
                     left_out=left_out, low_leakers=low, low_leaks=low_leaks)


def value_id(value: Any) -> str:
    """A hashable stand-in for a fingerprint (fingerprints are JSON-able)."""
    return json.dumps(value, sort_keys=True, default=repr)


def _left(ch: Change) -> Any:
    return None if ch.change == REMOVED else ch.after


def leaker_groups(suite: HuntSuite) -> list[list[str]]:
    """Leakers in as few groups as possible, none leaving a key another leaves differently."""
    return _groups(suite.leakers(), suite.leaks)


def low_groups(suite: HuntSuite) -> list[list[str]]:
    """The tests whose only leaks are LOW, grouped as the leakers are: one that fills a cache
    and one that empties it (the same key left two ways) never run first in one order, where
    the second would undo the first before any test could meet it."""
    return _groups(suite.low_leakers, suite.low_leaks)


def _groups(leakers: Sequence[str], leaks: dict[str, list[Change]]) -> list[list[str]]:
    groups: list[list[str]] = []
    values: list[dict[tuple[str, str], str]] = []
    for nodeid in leakers:
        mine = {(c.probe, c.key): value_id(_left(c)) for c in leaks.get(nodeid, [])}
        for group, held in zip(groups, values, strict=True):
            if all(held.get(ref, v) == v for ref, v in mine.items()):
                group.append(nodeid)
                held.update(mine)
                break
        else:
            groups.append([nodeid])
            values.append(dict(mine))
    return groups


def leakers_first(suite: HuntSuite, group: Sequence[str], rest_reversed: bool = False
                  ) -> list[str]:
    """The group's leakers last to first, then every other test in its usual order (or
    backwards: a cleaner that ran before a victim then runs after it)."""
    first = list(reversed(group))
    chosen = set(first)
    rest = suite.order()
    if rest_reversed:
        rest.reverse()
    return first + [n for n in rest if n not in chosen]


def touched(tests: Iterable[TestEntry], keys: set[tuple[str, str]],
            skip: Iterable[str] = ()) -> list[str]:
    """Tests (not in ``skip``) that changed one of ``keys`` in a run: after a leaker, a test
    that changes its key again resets it (a cleaner) or builds on it."""
    left_out = set(skip)
    return [t.nodeid for t in sorted(tests, key=lambda t: t.index)
            if t.nodeid not in left_out and any((c.probe, c.key) in keys for c in t.changes)]


def cleaners_last(suite: HuntSuite, group: Sequence[str], cleaners: Iterable[str]
                  ) -> list[str]:
    """The group's leakers first, then every other test but ``cleaners`` in its usual
    order, then the cleaners: no test seen resetting the leaked state stands in between."""
    moved = [n for n in dict.fromkeys(cleaners) if n not in group]
    out = set(moved)
    return [n for n in leakers_first(suite, group) if n not in out] + moved


def group_keys(suite: HuntSuite, group: Iterable[str]) -> set[tuple[str, str]]:
    """``(probe, key)`` of every leak of the group's tests."""
    return {(c.probe, c.key) for n in group for c in suite.leaks.get(n, [])}


def reversed_order(suite: HuntSuite) -> list[str]:
    """The usual order backwards: each test after every test that followed it."""
    return list(reversed(suite.order()))


def without_leakers(suite: HuntSuite, then: Iterable[str] = ()) -> list[str]:
    """Every test that leaked nothing (of the leaks considered), in its usual order.

    ``then`` are leaking tests to run at the end (leaking victims found already: there they
    can show that they pass without the others, and they run after every test they could
    have set state up for).
    """
    tail = [n for n in dict.fromkeys(then) if n in suite.leaks]
    return [n for n in suite.order() if n not in suite.leaks] + tail


def neighbour_orders(tests: Sequence[str]) -> list[list[str]]:
    """Orders of ``tests`` in which each test stands right before each other one at least once.

    ``n`` tests have ``n * (n - 1)`` ordered pairs and an order of them ``n - 1`` adjacent
    ones, so ``n`` orders are the least that can do it: Walecki's zigzag paths (``0, 1,
    n-1, 2, n-2, ...`` shifted by ``0 .. n/2-1``) cover every unordered pair once, and each
    is run both ways.  An odd count gets a stand-in test, dropped from every order (its two
    neighbours become adjacent: a pair covered twice, none missed).
    """
    items = list(tests)
    n = len(items)
    if n < 2:
        return []
    m = n + n % 2
    base = [0]
    for j in range(1, m // 2 + 1):
        base.append(j)
        if len(base) < m:
            base.append(m - j)
    orders: list[list[str]] = []
    for shift in range(m // 2):
        path = [(v + shift) % m for v in base]
        for way in (path, path[::-1]):
            orders.append([items[v] for v in way if v < n])
    return orders


def random_order(suite: HuntSuite, seed: int) -> list[str]:
    """The suite shuffled with ``random.Random(seed)``: the same seed gives the same order."""
    order = suite.order()
    random.Random(seed).shuffle(order)
    return order


def new_failures(suite: HuntSuite, order: Iterable[str], outcomes: dict[str, str]) -> list[str]:
    """Tests of ``order`` that passed in the record and failed (or crashed) in this run."""
    by_id = suite.by_id
    out: list[str] = []
    for nodeid in order:
        t = by_id.get(nodeid)
        if t is not None and t.outcome in PASSED and outcomes.get(nodeid) in FAILED:
            out.append(nodeid)
    return out


# -- candidates ------------------------------------------------------------------------------
@dataclass
class Observation:
    """One run's view of a test: the tests in the order they ran there, and the test itself."""

    tests: list[TestEntry]
    entry: TestEntry


def observe(record: Record, nodeid: str) -> Observation | None:
    """``nodeid`` as it ran in ``record`` (one process), or None where it did not run."""
    tests = sorted(record.tests, key=lambda t: t.index)
    entry = next((t for t in tests if t.nodeid == nodeid), None)
    if entry is None:
        return None
    lane = [t for t in tests if t.worker == entry.worker]
    return Observation(lane, entry)


def dirty_values(obs: Observation) -> set[tuple[str, str, str]]:
    """``(probe, key, value)`` of every key that was dirty when the observed test started."""
    dirty = dirty_before(obs.tests, obs.entry)
    return {(p, k, value_id(_left(w.change))) for (p, k), w in dirty.writes.items()}


def candidates(obs: Observation, failure: dict[str, Any] | None,
               cleared_by: Iterable[Observation] = (), code: VictimCode | None = None
               ) -> tuple[list[Candidate], int]:
    """Ranked suspects for the observed test, and how many were set aside.

    ``failure`` is the failure the ranking reads (the test's own in ``obs`` when None).  A
    suspect whose key had the same value in one of ``cleared_by`` is set aside: there that
    value was in place and the outcome was the other one, so it alone does not decide it.
    ``code``: the test's code, which ranking weighs (statesnap.analysis.connection).
    """
    entry = obs.entry
    failure = failure if failure is not None else entry.failure
    entry = TestEntry(index=entry.index, nodeid=entry.nodeid, outcome=entry.outcome,
                      worker=entry.worker, phases=entry.phases,
                      failure=None if failure is None else without_locations(failure))
    ranked = rank(entry, dirty_before(obs.tests, obs.entry), code)
    cleared: set[tuple[str, str, str]] = set()
    for other in cleared_by:
        cleared |= dirty_values(other)
    kept = [c for c in ranked if (c.probe, c.key, value_id(c.after)) not in cleared]
    exc_type = str((entry.failure or {}).get("exc_type") or "")
    preferred = EXCEPTION_AFFINITY.get(exc_type, ())
    for c in kept:
        if c.probe in preferred:
            c.score = round(c.score + AFFINITY_SCORE, 3)
            c.reasons.append(f"{exc_type} points at {c.probe}")
    kept.sort(key=lambda c: (-c.score, -c.index, c.probe, c.key))
    return kept, len(ranked) - len(kept)


_LOCATION = re.compile(r"^\S+:\d+: [\w.]+$")


def without_locations(failure: dict[str, Any]) -> dict[str, Any]:
    """The failure without pytest's ``path:line: ExcType`` lines.

    Their paths name the rootdir (absolutely, once a test changed directory), and so every
    ``sys.path`` entry under it, which would read as "the failing code names this key".
    """
    text = failure.get("text")
    if not isinstance(text, str):
        return failure
    kept = [line for line in text.splitlines() if not _LOCATION.match(line.strip())]
    return {**failure, "text": "\n".join(kept)}


def suspects(cands: Iterable[Candidate]) -> list[str]:
    """Distinct suspect tests, best first."""
    return list(dict.fromkeys(c.nodeid for c in cands))
