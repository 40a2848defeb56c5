"""Diffs between snapshots: keys added, removed and changed, with before/after fingerprints.

Pure functions.  A :class:`Change` is also the unit stored in the record (as a dict).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from statesnap.snapshot import Snapshot

ADDED = "added"
REMOVED = "removed"
CHANGED = "changed"


@dataclass
class Change:
    """One key that differs between two moments."""

    probe: str
    key: str
    change: str  # added | removed | changed
    before: Any
    after: Any
    #: Where the change first happened: collection, setup, call, teardown (None if unknown).
    phase: str | None = None
    #: The fixture whose setup or finalisation made it, with its scope, when known.
    fixture: str | None = None
    scope: str | None = None
    severity: int = 2

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        # Keep records small: omit what is unknown.
        for name in ("phase", "fixture", "scope"):
            if data[name] is None:
                del data[name]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Change:
        return cls(
            probe=str(data["probe"]),
            key=str(data["key"]),
            change=str(data["change"]),
            before=data.get("before"),
            after=data.get("after"),
            phase=data.get("phase"),
            fixture=data.get("fixture"),
            scope=data.get("scope"),
            severity=int(data.get("severity", 2)),
        )

    @property
    def ref(self) -> str:
        """``probe:key``, the name users type (``env:ZOO_MODE``)."""
        return f"{self.probe}:{self.key}"


def diff_maps(probe: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Change]:
    """Changes of one probe's map, keys in sorted order."""
    if before is after:
        return []
    out: list[Change] = []
    for key in sorted(set(before) | set(after)):
        if key not in after:
            out.append(Change(probe, key, REMOVED, before[key], None))
        elif key not in before:
            out.append(Change(probe, key, ADDED, None, after[key]))
        elif before[key] != after[key]:
            out.append(Change(probe, key, CHANGED, before[key], after[key]))
    return out


def diff_snapshots(
    before: Snapshot, after: Snapshot, probes: Iterable[str] | None = None
) -> list[Change]:
    """All changes between two snapshots; maps shared by identity are skipped for free."""
    names = sorted(set(before.maps) & set(after.maps)) if probes is None else list(probes)
    out: list[Change] = []
    for name in names:
        a, b = before.maps.get(name), after.maps.get(name)
        if a is None or b is None or a is b:
            continue
        out.extend(diff_maps(name, a, b))
    return out


def apply_changes(state: dict[tuple[str, str], Any], changes: Iterable[Change]) -> None:
    """Fold changes into a ``{(probe, key): value}`` state (used to replay a record's history).

    A removed key is stored as the sentinel :data:`ABSENT` so that "removed" and "never seen"
    stay distinct.
    """
    for ch in changes:
        state[(ch.probe, ch.key)] = ABSENT if ch.change == REMOVED else ch.after


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()
