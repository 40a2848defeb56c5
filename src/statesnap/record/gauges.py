"""The gauges written with each test (open fds, live threads...), read again only where a map
changed.

A probe's gauges are a function of its map, and maps are shared between snapshots while their
probe's state is unchanged: only the probes that define gauges are asked, and only when one of
their maps is a new object.
"""

from __future__ import annotations

from operator import is_not

from statesnap.base.internal import note_internal_error
from statesnap.probes.base import Probe, ProbeMap
from statesnap.record.journal import dumps
from statesnap.state.snapshot import Snapshot

#: The gauges and their JSON text (None when there are none).
Reading = tuple[dict[str, float], str | None]

_NONE: Reading = ({}, None)


class Gauges:
    """The gauges of the latest snapshot, remembered between tests."""

    def __init__(self) -> None:
        self._snap: Snapshot | None = None
        self._reading: Reading = _NONE
        #: The probe list the gauging probes were picked from, those probes, and their names.
        self._probes: tuple[list[Probe] | None, list[Probe], list[str]] = (None, [], [])
        #: The maps the last reading was made from, one per gauging probe.
        self._maps: list[ProbeMap | None] = []

    def of(self, snap: Snapshot | None, probes: list[Probe]) -> Reading:
        """The gauges of ``snap``, whose probes (in order) are ``probes``."""
        if snap is None:
            return _NONE
        if snap is self._snap:
            return self._reading  # nothing moved since the last test: the same numbers
        if self._probes[0] is not probes:
            # The probe list is replaced (never changed in place) when a probe is switched
            # off: picked again then.
            picked = [p for p in probes if type(p).gauges is not Probe.gauges]
            self._probes = (probes, picked, [p.name for p in picked])
        gauging = self._probes[1]
        # Looked up and compared by identity in C: this runs after every test whose
        # snapshot is new (about half the cost of a comprehension and a generator).
        maps = list(map(snap.maps.get, self._probes[2]))
        last = self._maps
        if len(maps) != len(last) or any(map(is_not, maps, last)):
            out: dict[str, float] = {}
            for probe, m in zip(gauging, maps, strict=True):
                if m is None:
                    continue
                try:
                    out.update(probe.gauges(m))
                except Exception as exc:
                    note_internal_error(f"probe {probe.name}: gauges", exc)
            self._reading = (out, dumps(out) if out else None)
            self._maps = maps
        self._snap = snap
        return self._reading
