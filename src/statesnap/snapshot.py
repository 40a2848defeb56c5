"""Taking snapshots: every active probe's map at one moment, cheap tokens first.

Pure of pytest.  A probe that raises is switched off for the rest of the run and reported
through ``on_error``; it never propagates into the test.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from statesnap.probes.base import Probe, ProbeMap

ErrorCallback = Callable[[Probe, str, BaseException], None]

_EMPTY: ProbeMap = {}


@dataclass
class Snapshot:
    """All probes' maps at one moment, plus the tokens that let the next snapshot skip reads.

    Maps are shared between consecutive snapshots when a probe's token did not change; they are
    never mutated after creation.
    """

    maps: dict[str, ProbeMap] = field(default_factory=dict)
    tokens: dict[str, object] = field(default_factory=dict)
    #: Light tokens (:meth:`Probe.light_token`) of the same maps.
    light_tokens: dict[str, object] = field(default_factory=dict)

    def get(self, probe: str) -> ProbeMap:
        return self.maps.get(probe, _EMPTY)


@dataclass
class ProbeCost:
    """Time spent in one probe: cheap token reads and full reads, in nanoseconds."""

    token_ns: int = 0
    tokens: int = 0
    read_ns: int = 0
    reads: int = 0

    @property
    def total_ns(self) -> int:
        return self.token_ns + self.read_ns


class Snapshotter:
    """Runs the probes.  ``take(prev)`` reads only the probes whose token moved since ``prev``."""

    def __init__(self, probes: Sequence[Probe], on_error: ErrorCallback | None = None) -> None:
        self.probes: list[Probe] = list(probes)
        self.disabled: dict[str, str] = {}
        self.costs: dict[str, ProbeCost] = {p.name: ProbeCost() for p in self.probes}
        self._on_error = on_error

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
        try:
            probe.close()
        except Exception:
            pass
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
        With ``only``, probes not named keep ``prev``'s map and tokens.
        """
        wanted = None if only is None else set(only)
        clock = time.perf_counter_ns
        slot = None if prev is None else (prev.light_tokens if light else prev.tokens)
        # Most snapshots find nothing moved: then ``prev`` itself is the answer (snapshots are
        # never mutated), and no dict is copied.
        moved: list[tuple[str, ProbeMap, object, object]] = []
        failed: list[str] = []
        costs = self.costs
        # One clock read per probe: each token's end is the next one's start.
        t1 = clock()
        for probe in list(self.probes):
            name = probe.name
            if wanted is not None and prev is not None and name not in wanted:
                continue
            cost = costs[name]
            t0 = t1
            try:
                token = probe.light_token() if light else probe.token()
            except Exception as exc:
                self._fail(probe, "token", exc)
                failed.append(name)
                t1 = clock()
                continue
            t1 = clock()
            cost.token_ns += t1 - t0
            cost.tokens += 1
            if token is not None and slot is not None and name in slot and slot[name] == token:
                continue
            try:
                result = probe.read()
                if type(probe).light_token is Probe.light_token:
                    other = token
                else:
                    other = probe.token() if light else probe.light_token()
            except Exception as exc:
                self._fail(probe, "read", exc)
                failed.append(name)
                t1 = clock()
                continue
            t2 = clock()
            cost.read_ns += t2 - t1
            cost.reads += 1
            t1 = t2
            full, lite = (other, token) if light else (token, other)
            moved.append((name, result, full, lite))
        if prev is not None and not moved and not failed:
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
        return snap

    def changed_probes(self, a: Snapshot, b: Snapshot) -> list[str]:
        """Names of probes whose maps differ between two snapshots (identity first)."""
        out = []
        for name in set(a.maps) | set(b.maps):
            ma, mb = a.maps.get(name), b.maps.get(name)
            if ma is mb:
                continue
            if ma != mb:
                out.append(name)
        return sorted(out)

    def close(self) -> None:
        for p in self.probes:
            try:
                p.close()
            except Exception:
                pass


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
