"""The pytest plugins CI loaded, and the replays that load those and no others.

A ``-v`` console log's header names the plugins CI loaded with their versions
(``plugins: xdist-3.8.0, rerunfailures-14.0``); a statesnap record's header lists them too.  A
plugin installed on the backfill machine that CI did not load is blocked in every replay
(``-p no:NAME`` for each of its ``pytest11`` entry points), so that, say, pytest-rerunfailures'
server thread does not make a victim that checks for stray threads fail alone.  A plugin CI
loaded that this machine lacks, or has at another version, cannot be made up for: it is named
in the finding and the summary, and a victim that fails alone with such a difference is not
called "not order-dependent".  JUnit XML and pytest-replay files name no plugins: their
findings say CI's plugin set is unknown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import metadata

from statesnap.analysis.findings import NOT_ORDER_DEPENDENT, UNEXPLAINED, Finding

#: The header line pytest prints (``_pytest.terminal``), after colours and timestamps are gone.
PLUGINS_LINE = re.compile(r"^plugins: (?P<list>\S.*?)\s*$")
#: The plugins statesnap itself handles: pytest-randomly is switched off (or pinned) in every
#: replay whatever CI did, since the order is what a replay gives.
HANDLED = frozenset({"randomly"})


def plugin_name(dist: str) -> str:
    """A distribution's name as pytest's header shows it: normalised, ``pytest-`` dropped."""
    name = re.sub(r"[-_.]+", "-", dist).lower()
    return name.removeprefix("pytest-")


def parse_labels(labels: Iterable[str]) -> dict[str, str]:
    """``{name: version}`` from ``name-version`` labels (pytest's header, a record's)."""
    out: dict[str, str] = {}
    for label in labels:
        name, sep, version = label.strip().rpartition("-")
        if sep and name and version[:1].isdigit():
            out[plugin_name(name)] = version
    return out


def parse_plugins_line(line: str) -> dict[str, str] | None:
    """The plugins of a ``plugins: a-1.0, b-2.0`` header line (None: not that line)."""
    found = PLUGINS_LINE.match(line)
    if found is None:
        return None
    return parse_labels(found.group("list").split(", "))


@dataclass
class Installed:
    """A plugin distribution installed here: its version and its ``pytest11`` entry points."""

    version: str
    entry_points: list[str] = field(default_factory=list)


def installed() -> dict[str, Installed]:
    """The pytest plugins installed where the backfill runs, by :func:`plugin_name`."""
    out: dict[str, Installed] = {}
    for ep in metadata.entry_points(group="pytest11"):
        dist = ep.dist
        if dist is None:
            continue
        item = out.setdefault(plugin_name(dist.name), Installed(dist.version))
        if ep.name not in item.entry_points:
            item.entry_points.append(ep.name)
    return out


@dataclass
class PluginPlan:
    """What the replays of one CI process load, against what CI loaded."""

    #: CI's ``{name: version}``; None where the artifact names none (JUnit, pytest-replay).
    ci: dict[str, str] | None
    #: Where CI's list would have come from (the artifact's kind), for the words.
    kind: str
    here: dict[str, Installed]
    #: ``-p no:NAME`` names: installed here, not loaded by CI.
    blocked: list[str] = field(default_factory=list)
    #: ``name-version`` of the plugins CI loaded that are not installed here.
    missing: list[str] = field(default_factory=list)
    #: ``(name, CI's version, this machine's)``.
    other_version: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def differs(self) -> bool:
        """Whether the replays cannot load what CI loaded."""
        return bool(self.missing or self.other_version)

    def block_args(self) -> list[str]:
        return [arg for name in self.blocked for arg in ("-p", f"no:{name}")]

    def difference(self) -> str | None:
        """The words for a finding: what the replays lacked or had at another version."""
        if self.ci is None:
            here = ", ".join(f"{n}-{p.version}" for n, p in sorted(self.here.items())) or "none"
            return (f"CI's pytest plugins are unknown ({self.kind} artifacts do not name "
                    f"them): the replays ran with this machine's ({here})")
        parts = []
        if self.missing:
            parts.append(f"CI loaded {', '.join(self.missing)}, not installed here")
        if self.other_version:
            parts.append("; ".join(f"{n} is {here} here, {ci} in CI"
                                   for n, ci, here in self.other_version))
        return "the replays could not load CI's plugins: " + "; ".join(parts) if parts else None

    def to_json(self) -> dict[str, object]:
        return {"ci": self.ci, "blocked": self.blocked, "missing": self.missing,
                "other_version": [list(x) for x in self.other_version],
                "unknown": self.ci is None}


def plan(ci: dict[str, str] | None, kind: str,
         here: dict[str, Installed] | None = None) -> PluginPlan:
    """The replays' plugins for a CI process that loaded ``ci`` (None: not known)."""
    here = installed() if here is None else here
    out = PluginPlan(ci=ci, kind=kind, here=here)
    if ci is None:
        return out
    for name, item in sorted(here.items()):
        if name not in ci and name not in HANDLED:
            out.blocked += item.entry_points
    for name, version in sorted(ci.items()):
        if name in HANDLED:
            continue
        if name not in here:
            out.missing.append(f"{name}-{version}")
        elif here[name].version != version:
            out.other_version.append((name, version, here[name].version))
    return out


def qualify(f: Finding, p: PluginPlan) -> bool:
    """Say in ``f`` what the plugin difference means for its verdict.

    A victim that failed alone here, where the replays could not load CI's plugins, may fail
    alone because of that difference: it is not called "not order-dependent" (returns True).
    """
    words = p.difference()
    if words is None:
        return False
    doubt = False
    if f.status == NOT_ORDER_DEPENDENT and p.differs:
        doubt = True
        f.status = UNEXPLAINED
        words = (f"it fails alone here, but {words}: that difference, not the order, may be "
                 "why; whether it depends on the order in CI is not known")
    elif f.status == NOT_ORDER_DEPENDENT:
        words = f"it fails alone here; {words}, so a plugin may be why"
    f.note = f"{f.note}; {words}" if f.note else words
    return doubt
