"""Per-test tracking: checkpoints inside a test, and the net diff with its phase.

Pure of pytest.  The plugin calls :meth:`TestTracker.begin` before a test's setup,
:meth:`checkpoint` at phase and fixture boundaries, and :meth:`end` after teardown.  Checkpoints
use light tokens, so a test that changes nothing costs a few token reads per probe; a change is
diffed where it happened, which names the phase and the fixture that made it.

A project module the test imported shows in the net diff as the module appearing, and its
attributes go with it (:data:`~statesnap.state.diff.OWNED_KEYS`); what the test then changed
on it -- a fixture imports the library, the test body forces a class attribute -- is diffed
from the module as first seen at a checkpoint, so that change is recorded too.
"""

from __future__ import annotations

from typing import Any, Final

from statesnap.base.deltamap import changed_keys
from statesnap.base.plain import Frozen
from statesnap.probes.base import Probe, ProbeMap, Severity
from statesnap.state.diff import (
    OWNED_KEYS,
    REMOVED,
    Change,
    diff_maps,
    diff_snapshots,
    fold_aliases,
)
from statesnap.state.settle import collect_garbage, resource_added
from statesnap.state.snapshot import Snapshot, Snapshotter


class Label(Frozen):
    """Where a checkpoint sits: a phase, and the fixture whose setup/finaliser just ran."""

    _fields = ("phase", "fixture", "scope")
    __slots__ = _fields

    def __init__(self, phase: str, fixture: str | None = None, scope: str | None = None
                 ) -> None:
        self.phase: Final = phase
        self.fixture: Final = fixture
        self.scope: Final = scope


class _Test:
    """The test in progress: a plain slotted class, made once per test."""

    _fields = ("appeared", "before", "first_seen", "held", "last")
    __slots__ = _fields

    def __init__(self, before: Snapshot, last: Snapshot) -> None:
        self.before = before
        self.last = last
        #: First sighting of each changed key: ``(probe, key) -> Label``.
        self.first_seen: dict[tuple[str, str], Label] = {}
        #: ``(probe, owner key) -> the probe's map`` at the checkpoint where an owner (a
        #: module) appeared during the test.
        self.appeared: dict[tuple[str, str], ProbeMap] = {}
        #: Keys a wide-scoped fixture's setup made or changed: ``(probe, key) -> [value it
        #: left, Label of the next change or None]``.  None until such a setup moves a key.
        self.held: dict[tuple[str, str], list[Any]] | None = None


class TestTracker:
    """Holds the current snapshot between tests and the checkpoints within one."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, snapshotter: Snapshotter) -> None:
        self.snapshotter = snapshotter
        self.current: Snapshot | None = None
        self._test: _Test | None = None
        self._exact: frozenset[str] = frozenset()
        self._exact_for: list[Probe] | None = None

    def baseline(self) -> Snapshot:
        """A full snapshot that becomes the reference for the next test."""
        self.current = self.snapshotter.take(self.current)
        return self.current

    def begin(self) -> None:
        if self.current is None:
            self.baseline()
        assert self.current is not None
        self._test = _Test(self.current, self.current)

    def checkpoint(self, label: Label, light: bool = True) -> None:
        """A snapshot; changes since the previous checkpoint are labelled ``label``.

        Phase boundaries run on every test and use light tokens; a wide-scoped fixture's
        setup or finaliser runs once per scope and uses full tokens, because telling its
        changes apart is what keeps a module fixture's socket from looking like a leak.
        """
        t = self._test
        if t is None:
            return
        snap = self.snapshotter.take(t.last, light=light)
        if snap is not t.last:  # the same snapshot back: no token moved, nothing to note
            self._note(t, t.last, snap, label)
            t.last = snap

    def end(self, final_phase: str = "teardown") -> list[Change]:
        """Full snapshot after teardown; the net changes of the test, each with its phase."""
        t = self._test
        if t is None:
            return []
        after = self.snapshotter.take(t.last)
        if after is not t.before and resource_added(t.before, after) and collect_garbage():
            # A resource the test added may be held only by garbage: read again after a
            # collection, so that whether it is listed is not the collector's timing.
            after = self.snapshotter.take(after)
        if after is t.before:  # nothing moved at all (the usual test): no diff to make
            self.current = after
            self._test = None
            return []
        if after is not t.last:
            self._label_final(t, after, final_phase)
        net = self._net(t, after)
        self.current = after
        self._test = None
        return net

    def net_so_far(self, label: Label) -> list[Change]:
        """The test's net changes up to now, labelled as :meth:`end` labels them.

        Takes a full checkpoint labelled ``label`` first (strict mode, at the end of the
        teardown); the later :meth:`end` reuses its tokens.
        """
        t = self._test
        if t is None:
            return []
        self.checkpoint(label, light=False)
        if resource_added(t.before, t.last) and collect_garbage():
            self.checkpoint(label, light=False)  # as end() does (statesnap.state.settle)
        return self._net(t, t.last)

    @property
    def latest(self) -> Snapshot | None:
        """The latest snapshot: the test in progress's last checkpoint, or the baseline."""
        return self._test.last if self._test is not None else self.current

    def _net(self, t: _Test, after: Snapshot) -> list[Change]:
        """Changes from before the test to ``after``, each with where it first happened and
        its severity by its probe (the probe's default where ``severity_of`` raises)."""
        net = diff_snapshots(t.before, after) + self._changed_since_seen(t, after)
        for ch in net:
            label = t.first_seen.get((ch.probe, ch.key))
            if label is not None:
                ch.phase, ch.fixture, ch.scope = label.phase, label.fixture, label.scope
            if t.held is not None:
                _then(ch, t.held.get((ch.probe, ch.key)))
            probe = self.snapshotter.probe(ch.probe)
            if probe is not None:
                try:
                    ch.severity = int(probe.severity_of(ch.key, ch.before, ch.after))
                except Exception:
                    ch.severity = int(probe.severity)
        if net:
            self._rate_memos(t, net)
            net = fold_aliases(net)
            for ch in net:
                if not ch.aliases:
                    # The probe described the object once, under this key: its other names.
                    probe = self.snapshotter.probe(ch.probe)
                    try:
                        ch.aliases = (probe.aliases(ch.key) if probe is not None else None) or None
                    except Exception:  # a third-party probe's answer: none rather than a crash
                        ch.aliases = None
        return net

    def _rate_memos(self, t: _Test, net: list[Change]) -> None:
        """A function cache filled (LOW on its own, :meth:`Probe.is_memo`) is MEDIUM when the
        same test changed state that feeds caches: at a checkpoint (a patch put back by the
        end) or in its net changes above LOW."""
        probes = {p.name: p for p in self.snapshotter.probes}

        def memo(name: str, key: str) -> bool:
            probe = probes.get(name)
            try:
                return probe is not None and probe.is_memo(key)
            except Exception:  # a third-party probe's answer: none rather than a crash
                return False

        def feeds(name: str, key: str) -> bool:
            probe = probes.get(name)
            try:
                return probe is not None and probe.feeds_memos(key)
            except Exception:
                return False

        memos = [ch for ch in net if ch.severity <= Severity.LOW and memo(ch.probe, ch.key)]
        if not memos:
            return
        low = {(ch.probe, ch.key) for ch in net if ch.severity <= Severity.LOW}
        fed = any(ch.severity > Severity.LOW and feeds(ch.probe, ch.key) for ch in net) or any(
            ref not in low and feeds(*ref) for ref in t.first_seen)
        if fed:
            for ch in memos:
                ch.severity = int(Severity.MEDIUM)

    def _label_final(self, t: _Test, after: Snapshot, final_phase: str) -> None:
        # Probes whose light token equals their full token were watched at every checkpoint,
        # so a change seen only now happened after the last one, in the final phase.  For the
        # others we cannot tell and say nothing rather than guess.
        probes = self.snapshotter.probes
        if self._exact_for is not probes:
            self._exact = frozenset(p.name for p in probes if _light_is_full(p))
            self._exact_for = probes
        exact = set(self._exact)
        # A probe with a separate light token still knows when its light token moved since
        # the last checkpoint (both tokens are refreshed on a read): then the change is in
        # the final phase too.
        for name, token in after.light_tokens.items():
            try:
                if name in t.last.light_tokens and t.last.light_tokens[name] != token:
                    exact.add(name)
            except Exception:  # a test's object in the token, whose __eq__ raises: it moved
                exact.add(name)
        held = t.held
        for ch in diff_snapshots(t.last, after, values=False):
            ref = (ch.probe, ch.key)
            if ch.probe not in exact:
                continue
            if ref not in t.first_seen:
                t.first_seen[ref] = Label(final_phase)
            elif held is not None and ref in held and held[ref][1] is None:
                held[ref][1] = Label(final_phase)

    def abort(self) -> None:
        """Forget the test in progress (the next begin() starts from a fresh snapshot)."""
        self._test = None
        self.current = None

    @staticmethod
    def _note(t: _Test, a: Snapshot, b: Snapshot, label: Label) -> None:
        changes = diff_snapshots(a, b)
        first_seen, held = t.first_seen, t.held
        wide = label.phase == "setup" and label.scope not in (None, "function")
        for ch in changes:
            ref = (ch.probe, ch.key)
            if ref not in first_seen:
                first_seen[ref] = label
                if wide:
                    # A wide fixture's setup: what it left is its scope's, shared by the
                    # tests in that scope; a later change of it in this test is the test's.
                    if held is None:
                        held = t.held = {}
                    held[ref] = [None if ch.change == REMOVED else ch.after, None]
            elif held is not None:
                entry = held.get(ref)
                if entry is not None and entry[1] is None:
                    entry[1] = label  # changed again after the wide setup that made it
        for probe, sep in OWNED_KEYS.items():
            before, now = a.get(probe), b.get(probe)
            if before is now:
                continue
            # An owner's own key is never a change (it goes with the owner): found here.  Two
            # maps of one lineage differ only in the keys it touched (a handful, where the
            # maps hold thousands): those alone are looked at.
            touched = changed_keys(before, now)
            for key in (now.keys() - before.keys() if touched is None else touched):
                if key.endswith(sep) and key in now and key not in before:
                    t.appeared.setdefault((probe, key), now)

    @staticmethod
    def _changed_since_seen(t: _Test, after: Snapshot) -> list[Change]:
        """Changes of owned keys of owners that appeared during the test, from the owner as
        first seen to the end (the net diff leaves them to the owner's appearing)."""
        out: list[Change] = []
        for (probe, owner), first in t.appeared.items():
            now = after.get(probe)
            if owner not in now:
                continue  # gone again by the end: nothing of it is left behind
            start = t.before.get(probe)
            if start is not None and owner in start:
                # There at the test's start too (taken out of sys.modules and imported again
                # inside the test): the net diff already compares its keys from the start, and
                # the copy first seen in between (the re-import) is no state the test left.
                continue
            mine = {k: v for k, v in first.items() if k.startswith(owner)}
            later = {k: v for k, v in now.items() if k.startswith(owner)}
            out += diff_maps(probe, mine, later)
        return out


def _then(ch: Change, held: list[Any] | None) -> None:
    """Mark ``ch`` as changed again after the wide setup that made it (``Change.then``)."""
    if held is None:
        return
    value, later = held
    if (None if ch.change == REMOVED else ch.after) == value:
        return  # nothing after the setup's own change
    then: dict[str, Any] = {"before": value}
    if later is not None:
        then["phase"] = later.phase
        if later.fixture is not None:
            then["fixture"], then["scope"] = later.fixture, later.scope
    ch.then = then


def _light_is_full(probe: Probe) -> bool:
    return type(probe).light_token is Probe.light_token
