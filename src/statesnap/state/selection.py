"""Which changes strict and restore mode act on: a probe selection and a severity floor.

Alone, every (restorable) probe above low severity, on-demand probes (``fixtures``) only
where named; named probes (``=env,cwd``) with low
severity too; ``=-files`` drops probes.  Allowances are ``probe:key`` globs; a ``files``
directory (``dir/``) is allowed by its name without the slash too.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from typing import Final

from statesnap.base.plain import Frozen
from statesnap.probes import parse_selection
from statesnap.probes.base import Probe, Severity
from statesnap.probes.files.probe import FilesProbe, is_directory_key
from statesnap.state.diff import Change

#: Probes that run in replays whatever the recorded run had (the fixtures probe): strict and
#: restore mode act on them only where named, or a replay of a strict run would fail tests
#: its recording passed, and a restore run would re-create fixtures its recording did not.
ON_DEMAND_NAMES = frozenset({"fixtures"})


class SelectionError(ValueError):
    """A probe selection names probes that do not exist or cannot do what it asks."""


class ProbeSelection(Frozen):
    """Probes a mode covers, and the lowest severity of change it acts on."""

    _fields = ("names", "min_severity")
    __slots__ = _fields

    def __init__(self, names: frozenset[str], min_severity: int = int(Severity.MEDIUM)
                 ) -> None:
        self.names: Final = names
        self.min_severity: Final = min_severity

    def covers(self, change: Change) -> bool:
        return change.probe in self.names and change.severity >= self.min_severity


def resolve(spec: str, option: str, active: Sequence[Probe], known: Iterable[str],
            restorable_only: bool = False) -> ProbeSelection:
    """Turn ``all`` or a ``--statesnap-probes``-style list into a selection.

    Unknown probe names, and (for restore) probes that cannot put state back, raise
    :class:`SelectionError` (the features turn it into pytest's usage error).
    """
    known_names = set(known) | {p.name for p in active}
    pool = [p for p in active if p.restorable or not restorable_only]
    if spec == "all":
        return ProbeSelection(frozenset(p.name for p in pool if p.name not in ON_DEMAND_NAMES))
    only, drop = parse_selection(spec)
    unknown = ((only or set()) | drop) - known_names
    if unknown:
        raise SelectionError(
            f"{option}: unknown probe(s) {', '.join(sorted(unknown))} "
            f"(known: {', '.join(sorted(known_names))}); write the probes attached "
            f"({option}=env,cwd) or put the option after the test paths"
        )
    if restorable_only and only:
        cannot = sorted(n for n in only if n in {p.name for p in active if not p.restorable})
        if cannot:
            can = ", ".join(sorted(p.name for p in pool)) or "none"
            raise SelectionError(
                f"{option}: probe(s) {', '.join(cannot)} cannot put state back "
                f"(restorable: {can})"
            )
    names = {p.name for p in pool if (only is None or p.name in only) and p.name not in drop
             and (p.name not in ON_DEMAND_NAMES or (only is not None and p.name in only))}
    floor = int(Severity.LOW) if only else int(Severity.MEDIUM)
    return ProbeSelection(frozenset(names), floor)


def normalise_allow(pattern: str) -> str:
    """``env`` (a bare probe name) means every key of that probe: ``env:*``."""
    return pattern if ":" in pattern else f"{pattern}:*"


def allowed(change: Change, patterns: Iterable[str]) -> bool:
    """Whether ``probe:key`` of ``change`` matches one of the allowance globs (a directory's
    also without its trailing slash: ``files:build`` allows the folder ``build/``)."""
    refs = [change.ref]
    if change.probe == FilesProbe.name and is_directory_key(change.key):
        refs.append(change.ref[:-1])
    return any(fnmatch.fnmatchcase(ref, p) for ref in refs for p in patterns)


def made_directories(changes: Iterable[Change]) -> list[str]:
    """The outermost ``files`` directories among ``changes`` that were made (absent before):
    what is in them was made with them."""
    made = sorted({c.key for c in changes if c.probe == FilesProbe.name
                   and is_directory_key(c.key) and c.before is None and c.after is not None})
    return [k for k in made if not any(k != o and k.startswith(o) for o in made)]


def within(key: str, directories: Iterable[str]) -> str | None:
    """The directory of ``directories`` (``dir/`` keys) that ``key`` lies in or is."""
    return next((d for d in directories if key.startswith(d)), None)


def allowance_refs(changes: Iterable[Change]) -> list[str]:
    """Allowance globs that cover ``changes``, in order: a directory made with what is in it
    is one glob (``files:out/*``; ``*`` matches the folder itself too), not a ref for each
    folder and file in it."""
    changes = list(changes)
    files = [c.key for c in changes if c.probe == FilesProbe.name]
    # Only directories with more of the changes in them: an empty one is its own ref.
    made = [d for d in made_directories(changes)
            if any(k != d and k.startswith(d) for k in files)]
    out: dict[str, None] = {}
    for c in changes:
        top = within(c.key, made) if c.probe == FilesProbe.name else None
        out[f"{c.probe}:{top}*" if top is not None else c.ref] = None
    return list(out)
