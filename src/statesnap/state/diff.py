"""Diffs between snapshots: keys added, removed and changed, with before/after fingerprints.

Pure functions.  A :class:`Change` is also the unit stored in the record (as a dict).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import compress, repeat
from operator import is_not
from typing import Any

from statesnap.base.deltamap import changed_keys
from statesnap.base.plain import Value
from statesnap.state.folders import FOLDER_SUMMARY_AT, summarise_folders
from statesnap.state.snapshot import Snapshot

ADDED = "added"
REMOVED = "removed"
CHANGED = "changed"


class Change(Value):
    """One key that differs between two moments."""

    _fields = ("probe", "key", "change", "before", "after", "phase", "fixture", "scope",
               "severity", "then")
    __slots__ = _fields

    def __init__(self, probe: str, key: str, change: str, before: Any, after: Any,
                 phase: str | None = None, fixture: str | None = None,
                 scope: str | None = None, severity: int = 2,
                 then: dict[str, Any] | None = None) -> None:
        self.probe = probe
        self.key = key
        self.change = change  # added | removed | changed
        self.before = before
        self.after = after
        #: Where the change first happened: collection, setup, call, teardown (None if
        #: unknown).
        self.phase = phase
        #: The fixture whose setup or finalisation made it, with its scope, when known.
        self.fixture = fixture
        self.scope = scope
        self.severity = severity
        #: A key a wide-scoped fixture's setup made or changed, then changed again in the same
        #: test: ``{"before": value the setup left, "phase", "fixture", "scope"}`` of the later
        #: change (phase unknown: absent).  The setup's part is shared by the tests of its
        #: scope; the rest is the test's own (:meth:`after_setup`).
        self.then = then

    def to_json(self) -> dict[str, Any]:
        # Built by hand: an asdict would deep-copy every value, and this runs for every
        # change written.  Unknown phase/fixture/scope are left out to keep records small.
        data: dict[str, Any] = {"probe": self.probe, "key": self.key, "change": self.change,
                                "before": self.before, "after": self.after}
        if self.phase is not None:
            data["phase"] = self.phase
        if self.fixture is not None:
            data["fixture"] = self.fixture
        if self.scope is not None:
            data["scope"] = self.scope
        data["severity"] = self.severity
        if self.then is not None:
            data["then"] = self.then
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
            then=then if isinstance(then := data.get("then"), dict) else None,
        )

    def after_setup(self) -> Change | None:
        """What the test changed after the wide setup that made this key (None if nothing)."""
        if self.then is None:
            return None
        then = self.then
        kind = REMOVED if self.change == REMOVED else (
            ADDED if then.get("before") is None else CHANGED)
        return Change(self.probe, self.key, kind, then.get("before"), self.after,
                      then.get("phase"), then.get("fixture"), then.get("scope"), self.severity)

    @property
    def ref(self) -> str:
        """``probe:key``, the name users type (``env:ZOO_MODE``)."""
        return f"{self.probe}:{self.key}"


#: Probes whose keys are ``owner<sep>rest``, with a key ``owner<sep>`` for each owner.  Keys
#: added under an owner that had no key before, or removed with their owner, are not changes:
#: the owner itself came or went (a project module imported, which the ``modules`` probe
#: reports once), and listing each of its attributes would only bury the real changes (and
#: make the collection entry as big as the project).
OWNED_KEYS: dict[str, str] = {"attributes": ":"}


#: Stands for a key absent from a map (no fingerprint is this object).
_ABSENT = object()


def diff_maps(probe: str, before: Mapping[str, Any], after: Mapping[str, Any],
              values: bool = True) -> list[Change]:
    """Changes of one probe's map, keys in sorted order.  Without ``values``, a summarised
    folder's change (:mod:`statesnap.state.folders`) has None on both sides: for callers
    that only look at which keys changed."""
    if before is after:
        return []
    out: list[Change] = []
    sep = OWNED_KEYS.get(probe)
    touched = changed_keys(before, after)
    keys: Iterable[str]
    if touched is None or len(touched) * 4 > len(after):
        try:
            # The keys whose entry differs, found in C (maps of thousands of keys, few
            # changed); values that cannot be hashed fall back to every key.
            keys = {k for k, _ in before.items() ^ after.items()}
        except TypeError:
            keys = set(before) | set(after)
    else:
        # A lineage's touched keys grow over the whole run (~85 on click's suite), and most
        # hold the very object they held on the other side: an entry is the same value as
        # itself, as the set comparison above counts it too, so those are dropped in C
        # before the loop (~170 K -> ~125 K instructions a diff on click's maps).
        keys = compress(touched, map(is_not, map(before.get, touched, repeat(_ABSENT)),
                                     map(after.get, touched, repeat(_ABSENT))))
    ordered = sorted(keys)
    summarised = False
    if probe == "files" and len(ordered) > FOLDER_SUMMARY_AT:
        # The keys may be every key of both maps (fingerprints are dicts, which the set
        # comparison above cannot hash): the ones that differ, in one pass.
        ordered = [k for k in ordered
                   if k not in before or k not in after or before[k] != after[k]]
    if probe == "files" and len(ordered) > FOLDER_SUMMARY_AT:
        # A folder filled or emptied with thousands of files is one change, not one a file.
        ordered, folders = summarise_folders(ordered, before, after, values)
        out.extend(Change(probe, key, kind, old, new) for key, kind, old, new in folders)
        summarised = bool(folders)
    for key in ordered:
        if key not in after:
            if key not in before:
                continue  # a lineage's key removed on both sides
            if sep is None or key.partition(sep)[0] + sep in after:
                out.append(Change(probe, key, REMOVED, before[key], None))
        elif key not in before:
            if sep is None or key.partition(sep)[0] + sep in before:
                out.append(Change(probe, key, ADDED, None, after[key]))
        elif before[key] != after[key]:
            out.append(Change(probe, key, CHANGED, before[key], after[key]))
    if summarised:
        out.sort(key=_by_key)
    return out


def _by_key(change: Change) -> str:
    return change.key


def change_kind(before: Any, after: Any) -> str:
    """ADDED, REMOVED or CHANGED, from a key's two sides where None stands for "absent".

    How a finding or a candidate stores them; a :class:`Change` says its kind itself
    (``change``), which is exact where a key's value was None.
    """
    if after is None:
        return REMOVED
    if before is None:
        return ADDED
    return CHANGED


def diff_snapshots(
    before: Snapshot, after: Snapshot, probes: Iterable[str] | None = None, values: bool = True
) -> list[Change]:
    """All changes between two snapshots; maps shared by identity are skipped for free
    (``values``: :func:`diff_maps`)."""
    names = sorted(set(before.maps) & set(after.maps)) if probes is None else list(probes)
    out: list[Change] = []
    for name in names:
        a, b = before.maps.get(name), after.maps.get(name)
        if a is None or b is None or a is b:
            continue
        out.extend(diff_maps(name, a, b, values))
    return out

