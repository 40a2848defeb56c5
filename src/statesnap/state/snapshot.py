"""Taking snapshots: every active probe's map at one moment, cheap tokens first.

Pure of pytest.  A probe that raises is switched off for the rest of the run and reported
through ``on_error``; it never propagates into the test.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from statesnap.base.internal import note_internal_error
from statesnap.base.plain import Value
from statesnap.probes.base import Probe, ProbeMap, light_token_call

ErrorCallback = Callable[[Probe, str, BaseException], None]

_EMPTY: ProbeMap = {}


class Snapshot(Value):
    """All probes' maps at one moment, plus the tokens that let the next snapshot skip reads.

    Maps are shared between consecutive snapshots when a probe's token did not change; they are
    never mutated after creation.
    """

    _fields = ("maps", "tokens", "light_tokens", "rows")
    __slots__ = _fields

    def __init__(self, maps: dict[str, ProbeMap] | None = None,
                 tokens: dict[str, object] | None = None,
                 light_tokens: dict[str, object] | None = None,
                 rows: dict[bool, tuple[int, list[object]]] | None = None) -> None:
        self.maps: dict[str, ProbeMap] = {} if maps is None else maps
        self.tokens: dict[str, object] = {} if tokens is None else tokens
        #: Light tokens (:meth:`Probe.light_token`) of the same maps.
        self.light_tokens: dict[str, object] = {} if light_tokens is None else light_tokens
        #: A cache, not state: per kind of token (``True`` for light), the generation of the
        #: probe list and every probe's token in its order, for one C-level comparison.
        self.rows: dict[bool, tuple[int, list[object]]] = {} if rows is None else rows

    def get(self, probe: str) -> ProbeMap:
        return self.maps.get(probe, _EMPTY)


class ProbeCost(Value):
    """Time spent in one probe, in nanoseconds.

    Token calls are timed one by one on every :data:`SAMPLE_EVERY`-th snapshot only (a clock
    read around each of them would cost as much as the cheaper tokens); :attr:`total_ns`
    scales the timed ones up to all calls.  Full reads are rare and always timed.
    """

    _fields = ("token_ns", "tokens", "timed", "read_ns", "reads")
    __slots__ = _fields

    def __init__(self, token_ns: int = 0, tokens: int = 0, timed: int = 0, read_ns: int = 0,
                 reads: int = 0) -> None:
        self.token_ns = token_ns
        #: Token calls, timed or not.
        self.tokens = tokens
        #: Token calls that were timed.
        self.timed = timed
        self.read_ns = read_ns
        self.reads = reads

    @property
    def total_ns(self) -> int:
        tokens = self.token_ns * self.tokens // self.timed if self.timed else 0
        return tokens + self.read_ns


#: Every this many snapshots, each probe's token is timed on its own (see :class:`ProbeCost`).
SAMPLE_EVERY = 8

_FAILED = object()


class Snapshotter:
    """Runs the probes.  ``take(prev)`` reads only the probes whose token moved since ``prev``."""

    def __init__(self, probes: Sequence[Probe], on_error: ErrorCallback | None = None) -> None:
        self._probes: list[Probe] = list(probes)
        self.disabled: dict[str, str] = {}
        self.costs: dict[str, ProbeCost] = {p.name: ProbeCost() for p in self.probes}
        self._on_error = on_error
        #: Bumped whenever :attr:`probes` changes (a probe switched off): rows of tokens from
        #: an older list are not comparable.
        self._gen = 0
        self._takes = 0
        #: Snapshots whose tokens were not timed, and that count when each switched-off
        #: probe left (its share of them).
        self._untimed = 0
        self._untimed_at_exit: dict[str, int] = {}
        #: Per kind of token (``True`` for light): the probes' bound token methods, with the
        #: generation of the probe list they were taken from.
        self._calls: dict[bool, tuple[int, list[Callable[[], object]]]] = {
            False: (-1, []), True: (-1, [])}
        self._names_of: tuple[int, list[str]] = (-1, [])

    @property
    def probes(self) -> list[Probe]:
        """The active probes, in the order they run."""
        return self._probes

    @probes.setter
    def probes(self, probes: list[Probe]) -> None:
        self._probes = probes
        self._gen += 1
        for p in probes:
            self.costs.setdefault(p.name, ProbeCost())

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.probes]

    def probe(self, name: str) -> Probe | None:
        for p in self.probes:
            if p.name == name:
                return p
        return None

    def _fail(self, probe: Probe, where: str, exc: BaseException) -> None:
        self.disabled[probe.name] = f"{where}: {type(exc).__name__}: {exc}"
        self.probes = [p for p in self.probes if p is not probe]
        self._untimed_at_exit[probe.name] = self._untimed
        try:
            probe.close()
        except Exception as close_exc:
            note_internal_error(f"probe {probe.name}: close", close_exc)
        if self._on_error is not None:
            self._on_error(probe, where, exc)

    def take(
        self,
        prev: Snapshot | None = None,
        only: Iterable[str] | None = None,
        light: bool = False,
    ) -> Snapshot:
        """A new snapshot, reading only the probes whose token moved since ``prev``.

        ``light`` compares :meth:`Probe.light_token` instead (checkpoints inside a test).  Both
        tokens belong to the map they were computed with, so when a map is carried over
        unchanged both tokens are carried with it; when a probe is re-read both are refreshed.
        With ``only``, probes not named keep ``prev``'s map and tokens.  When nothing moved,
        ``prev`` itself is the answer (snapshots are never mutated), and no dict is copied.
        """
        self._takes += 1
        if prev is None or only is not None or self._takes % SAMPLE_EVERY == 0:
            return self._take_timed(prev, only, light)
        # The usual case, kept lean: every token in one loop, then one comparison in C with
        # the row of the snapshot they are compared against.
        probes = self.probes
        calls = self._calls[light]
        if calls[0] != self._gen:
            calls = self._calls[light] = (self._gen, [
                light_token_call(p) if light else p.token for p in probes])
        self._untimed += 1  # before the calls: a probe switched off below was called too
        tokens: list[object] = []
        append = tokens.append
        for call in calls[1]:
            try:
                append(call())
            except Exception as exc:
                self._fail(probes[len(tokens)], "token", exc)
                append(_FAILED)
        row = prev.rows.get(light)
        try:
            if row is not None and row[0] == self._gen:
                if row[1] == tokens and None not in tokens:
                    return prev
            elif None not in tokens:
                # No row of this kind yet: ``prev`` was made by the other kind of snapshot
                # (a full one after a light checkpoint re-read a probe).  Its tokens of this
                # kind, in probe order, are compared in one C comparison too; one missing is
                # None, which no token here is.
                slot = prev.light_tokens if light else prev.tokens
                if list(map(slot.get, self._names())) == tokens:
                    prev.rows[light] = (self._gen, tokens)  # a cache, as _settle keeps it
                    return prev
        except Exception:  # a token holding a test's object whose __eq__ raises
            pass  # (sys.path.insert(0, obj)): each probe's token compared on its own below
        return self._settle(prev, probes, tokens, light, whole=True)

    def _names(self) -> list[str]:
        """The active probes' names, in order (kept per generation of the probe list)."""
        names = self._names_of
        if names[0] != self._gen:
            names = self._names_of = (self._gen, [p.name for p in self.probes])
        return names[1]

    def _take_timed(self, prev: Snapshot | None, only: Iterable[str] | None,
                    light: bool) -> Snapshot:
        wanted = None if only is None or prev is None else set(only)
        clock = time.perf_counter_ns
        costs = self.costs
        probes: list[Probe] = []
        tokens: list[object] = []
        # One clock read per probe: each token's end is the next one's start.
        t1 = clock()
        for probe in list(self.probes):
            name = probe.name
            if wanted is not None and name not in wanted:
                continue
            t0 = t1
            try:
                token = light_token_call(probe)() if light else probe.token()
            except Exception as exc:
                self._fail(probe, "token", exc)
                token = _FAILED
            t1 = clock()
            cost = costs[name]
            cost.token_ns += t1 - t0
            cost.timed += 1
            cost.tokens += 1
            probes.append(probe)
            tokens.append(token)
        return self._settle(prev, probes, tokens, light, whole=wanted is None)

    def _settle(self, prev: Snapshot | None, probes: list[Probe], tokens: list[object],
                light: bool, whole: bool) -> Snapshot:
        """The snapshot after these tokens: ``prev`` when none moved, else one with the moved
        probes read again.  ``whole``: the tokens are every active probe's, in order."""
        clock = time.perf_counter_ns
        slot = None if prev is None else (prev.light_tokens if light else prev.tokens)
        moved: list[tuple[str, ProbeMap, object, object]] = []
        failed: list[str] = []
        for probe, token in zip(probes, tokens, strict=True):
            name = probe.name
            if token is _FAILED:
                failed.append(name)
                continue
            try:
                if (token is not None and slot is not None and name in slot
                        and slot[name] == token):
                    continue
            except Exception:  # an object in the token whose __eq__ raises: taken as
                pass  # moved (the read says what changed)
            t0 = clock()
            try:
                result = probe.read()
                if type(probe).light_token is Probe.light_token:
                    other = token
                else:
                    other = probe.token() if light else probe.light_token()
            except Exception as exc:
                self._fail(probe, "read", exc)
                failed.append(name)
                continue
            cost = self.costs[name]
            cost.read_ns += clock() - t0
            cost.reads += 1
            full, lite = (other, token) if light else (token, other)
            moved.append((name, result, full, lite))
        # The row is only worth keeping when every token is a real one of this probe list.
        row = ((self._gen, tokens) if whole and not failed and not moved else None)
        if prev is not None and not moved and not failed:
            if row is not None:
                prev.rows[light] = row  # a cache: prev's maps and tokens are untouched
            return prev
        if prev is None:
            snap = Snapshot()
        else:
            snap = Snapshot(dict(prev.maps), dict(prev.tokens), dict(prev.light_tokens))
        for name in failed:
            snap.maps.pop(name, None)
            snap.tokens.pop(name, None)
            snap.light_tokens.pop(name, None)
        for name, result, full, lite in moved:
            snap.maps[name] = result
            snap.tokens.pop(name, None)
            snap.light_tokens.pop(name, None)
            if full is not None:
                snap.tokens[name] = full
            if lite is not None:
                snap.light_tokens[name] = lite
        if whole and not failed:
            snap.rows[light] = (self._gen, tokens)
        return snap

    def settled_costs(self) -> dict[str, ProbeCost]:
        """:attr:`costs` with the untimed token calls counted in (for the footer)."""
        out: dict[str, ProbeCost] = {}
        for name, c in self.costs.items():
            untimed = self._untimed_at_exit.get(name, self._untimed)
            out[name] = ProbeCost(c.token_ns, c.tokens + untimed, c.timed, c.read_ns, c.reads)
        return out

    def stop(self) -> None:
        """No snapshot follows: each probe drops its watches (:meth:`Probe.stop`)."""
        for p in self.probes:
            try:
                p.stop()
            except Exception as exc:
                note_internal_error(f"probe {p.name}: stop", exc)

    def close(self) -> None:
        for p in self.probes:
            try:
                p.close()
            except Exception as exc:
                note_internal_error(f"probe {p.name}: close", exc)


def cost_table(costs: dict[str, ProbeCost], tests: int) -> dict[str, dict[str, Any]]:
    """Per-probe cost summary for the header/footer and the report (microseconds per test)."""
    out: dict[str, dict[str, Any]] = {}
    for name, c in sorted(costs.items()):
        out[name] = {
            "total_ms": round(c.total_ns / 1e6, 3),
            "per_test_us": round(c.total_ns / 1e3 / max(tests, 1), 2),
            "tokens": c.tokens,
            "reads": c.reads,
        }
    return out
