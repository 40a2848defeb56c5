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
               "severity", "then", "aliases")
    __slots__ = _fields

    def __init__(self, probe: str, key: str, change: str, before: Any, after: Any,
                 phase: str | None = None, fixture: str | None = None,
                 scope: str | None = None, severity: int = 2,
                 then: dict[str, Any] | None = None,
                 aliases: list[str] | None = None) -> None:
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
        #: Other keys of the same probe naming the very same object, changed in place the same
        #: way (``from loguru import logger`` in forty test modules): listed once, under this
        #: key, its home (:func:`fold_aliases`).
        self.aliases = aliases

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
        if self.aliases:
            data["aliases"] = self.aliases
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
            aliases=([str(x) for x in aliases]
                     if isinstance(aliases := data.get("aliases"), list) else None),
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
        elif before[key] != after[key] and not (sep is not None
                                                and _home_moved(before, after, key)):
            out.append(Change(probe, key, CHANGED, before[key], after[key]))
    if summarised:
        out.sort(key=_by_key)
    return out


#: The fingerprint of a name whose object the probe describes under another key, its home
#: (``alias of pkg.mod:NAME #1a2b3c``: probes/attributes/_aliases.py).
_ALIAS = "alias of "


def _resolved(m: Mapping[str, Any], value: Any) -> Any:
    """An alias's fingerprint as its home's in the same map (what the name binds), else
    the value itself."""
    if isinstance(value, str) and value.startswith(_ALIAS):
        home, _, tag = value[len(_ALIAS):].rpartition(" ")
        found = m.get(home)
        if isinstance(found, str) and _tag_of(found) == tag:
            return found
    return value


def _home_moved(before: Mapping[str, Any], after: Mapping[str, Any], key: str) -> bool:
    """Whether ``key`` binds the same object reading the same on both sides, where only the
    name it is described under moved (its home rebound elsewhere, or back): no change."""
    b, a = before[key], after[key]
    if not ((isinstance(b, str) and b.startswith(_ALIAS))
            or (isinstance(a, str) and a.startswith(_ALIAS))):
        return False
    return bool(_resolved(before, b) == _resolved(after, a))


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
    if probes is None:
        # Only the probes whose map is not the very one on both sides (most are shared),
        # told in C; one absent from ``before`` is passed over below.
        bm, am = before.maps, after.maps
        names = sorted(compress(am, map(is_not, map(bm.get, am), am.values())))
    else:
        names = list(probes)
    out: list[Change] = []
    for name in names:
        a, b = before.maps.get(name), after.maps.get(name)
        if a is None or b is None or a is b:
            continue
        out.extend(diff_maps(name, a, b, values))
    return out



#: An identity tag in an ``attributes`` fingerprint (``#1a2b3c``): the object, not a copy.
_TAG = " #"


def _tag_of(value: Any) -> str | None:
    """The last identity tag of a fingerprint text (``#1a2b3c``), or None."""
    if not isinstance(value, str):
        return None
    at = value.rfind(_TAG)
    tag = value[at + 1:at + 8] if at >= 0 else ""
    if len(tag) == 7 and all(c in "0123456789abcdef" for c in tag[1:]):
        return tag
    return None


def _home_rank(key: str, before: Any) -> tuple[int, int, str]:
    """Which of several names of one object is its home: a module that its type's module
    lies in (``loguru`` for a ``loguru._logger.Logger``), then a module that is not a test
    module, then the shortest module name; ties by name (the same home every run)."""
    module = key.partition(":")[0]
    type_module = ""
    if isinstance(before, str) and before.startswith("<"):
        type_module = before[1:].split(" ", 1)[0].split(">", 1)[0].rpartition(".")[0]
    home = type_module == module or type_module.startswith(module + ".")
    test = any(part.startswith("test") or part.endswith("_test") or part == "conftest"
               for part in module.split("."))
    return (0 if home else 1) + (2 if test else 0), len(module), key


def fold_aliases(changes: list[Change]) -> list[Change]:
    """One change per object changed in place under several names of one probe.

    Two keys whose before and after fingerprints are the same texts, each with the same
    identity tag on both sides (the very object, changed in place), are names of one object:
    the change is kept once, under its home (:func:`_home_rank`), with the other keys in its
    ``aliases``.  A name rebound to another object reads differently and stays a change of
    its own; scalars (no tag) are copies, never aliases."""
    if len(changes) < 2:
        return changes
    groups: dict[tuple[Any, ...], list[Change]] = {}
    order: list[tuple[Any, ...] | Change] = []
    for ch in changes:
        tag = _tag_of(ch.after)
        if ch.change != CHANGED or tag is None or _tag_of(ch.before) != tag:
            order.append(ch)
            continue
        ident = (ch.probe, ch.before, ch.after, ch.phase, ch.fixture, ch.scope, ch.severity,
                 repr(ch.then))
        group = groups.get(ident)
        if group is None:
            groups[ident] = [ch]
            order.append(ident)
        else:
            group.append(ch)
    if all(len(g) == 1 for g in groups.values()):
        return changes
    result: list[Change] = []
    for item in order:
        if isinstance(item, Change):
            result.append(item)
            continue
        group = groups[item]
        if len(group) > 1:
            group.sort(key=lambda c: _home_rank(c.key, c.before))
            group[0].aliases = sorted(c.key for c in group[1:])
        result.append(group[0])
    return result
