"""What the record says about a proven polluter's key candidates before any key replay runs.

The key-level proof (:mod:`statesnap.proof.keys`) replays one restore at a time, so every
candidate tried before the one that heals costs a replay.  These rules read the record and
the ranking's reasons only (pure); the proof itself still rests on the replays:

- a class attribute that a method the victim calls reads or writes ranks as read by the
  code the victim runs (:func:`method_links`): the victim gets the object from a fixture, so
  its code names the method, never the module;
- a module's first import comes after the same polluter's changes of that module's
  attributes that connect to the victim (:func:`module_after_attributes`): taking the module
  out heals by re-importing all of it, the attribute is the leak;
- a key the victim's own set-up wrote before its body ran comes after the others
  (:func:`own_setup_last`): whatever the polluter left there, the victim's fixture replaced
  it, so it is seldom what the victim trips over;
- where the victim's failing code names several of the polluter's keys, those keys and the
  others connected to the victim are restored together first (:func:`joint_keys`): a config
  built from several variables fails until all of them are back;
- a module the run first imported inside a test's body is not in a replay child's saved
  state when the polluter imports it first (:func:`imported_in_a_body`): its key replay would
  put nothing back, so the module is imported before the child saves, from the first replay.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from statesnap.analysis.connection import REACHED, words
from statesnap.analysis.findings import Candidate
from statesnap.analysis.victimcode import SourceReader, VictimCode
from statesnap.record.journal import TestEntry
from statesnap.state.diff import Change

#: ``statesnap.analysis.attribution.rank``'s reason for a key the failing code names.
NAMED_IN_CODE = "key named in the failing code"
#: Probes whose keys hold one another (a folder, what is in it): never restored together
#: first.
NESTED = frozenset({"files", "cwd"})
#: Keys restored together first at most (more: one at a time, as before).
MAX_JOINT = 6


def key_order(victim: TestEntry, groups: Sequence[Sequence[Candidate]], code: VictimCode,
              reader: SourceReader) -> list[Candidate]:
    """The key candidates of a proven polluter, group after group, best first, with the
    rules above applied."""
    linked = [c for group in groups for c in method_links(group, code, reader)]
    return own_setup_last(victim, module_after_attributes(linked))


def method_links(ranked: Sequence[Candidate], code: VictimCode, reader: SourceReader
                 ) -> list[Candidate]:
    """``ranked`` (one group, best first) with each class attribute ``module:Cls.attr`` that
    a method of ``Cls`` the victim's code calls (``logger.force_level(...)``) names weighed
    as read by the code the victim runs, then ranked again (as
    :func:`statesnap.analysis.attribution.rank` orders)."""
    called = set(re.findall(r"\.(\w+)\s*\(", code.code))
    if not called:
        return list(ranked)
    out: list[Candidate] = []
    for c in ranked:
        module, _, path = c.key.partition(":")
        parts = path.split(".")
        attr = parts[-1]
        if (c.probe == "attributes" and len(parts) == 2 and not attr.startswith("__")
                and not any(r.startswith(f"{attr} is read") for r in c.reasons)):
            methods = reader.methods(module, parts[0])
            via = [m for m in sorted(called) if m in methods and not m.startswith("__")
                   and words(methods[m], [attr])]
            if via:
                c = Candidate(c.nodeid, c.index, c.probe, c.key, c.before, c.after,
                              round(c.score + REACHED, 3),
                              [*c.reasons, f"{attr} is used by {parts[0]}.{via[0]}, which "
                               "the victim calls"])
        out.append(c)
    return sorted(out, key=lambda c: (-c.score, -c.index, c.probe, c.key))


def module_after_attributes(ranked: Sequence[Candidate]) -> list[Candidate]:
    """``ranked`` with each ``modules:M`` key moved just after the last of the same test's
    ``attributes`` keys of ``M`` that the ranking connects to the victim (a reason)."""
    out = list(ranked)
    for c in ranked:
        if c.probe != "modules":
            continue
        linked = [i for i, a in enumerate(out) if a.probe == "attributes"
                  and a.nodeid == c.nodeid and a.key.startswith(f"{c.key}:") and a.reasons]
        here = out.index(c)
        if linked and linked[-1] > here:
            out.insert(linked[-1] + 1, c)
            del out[here]
    return out


def own_setup_last(victim: TestEntry, ranked: Sequence[Candidate]) -> list[Candidate]:
    """``ranked`` with the keys the victim's own set-up changed last (order kept otherwise).

    An autouse fixture that resets a registry (``Registry.items = {}``) records the reset as
    the victim's own set-up change: what the polluter left in that key was gone before the
    victim's body ran.  Only an order: a set-up that adds to what the polluter left (a list
    appended to) can still be the cause, and its key is still tried.
    """
    mine = {(c.probe, c.key) for c in victim.changes if c.phase == "setup"}
    return sorted(ranked, key=lambda c: (c.probe, c.key) in mine)


def joint_keys(ranked: Sequence[Candidate], polluters: Sequence[str]
               ) -> list[tuple[str, str]]:
    """The keys to restore together first, best ranked first; none where one key at a time
    is the better first try.

    Only for one polluter whose keys the victim's failing code names two or more of (the
    assertion is about several of them): then every key of it that anything connects to the
    victim (a reason in the ranking), at most :data:`MAX_JOINT`; files and the working
    directory never (:data:`NESTED`).
    """
    if len(polluters) != 1:
        return []
    # Not folders and files: a folder's key puts back what is in it, and the code that names
    # a path names each folder on it (``join(top, "foo", "bar")``).
    mine = [c for c in ranked if c.nodeid == polluters[0] and c.probe not in NESTED]
    if sum(NAMED_IN_CODE in c.reasons for c in mine) < 2:
        return []
    linked = list(dict.fromkeys((c.probe, c.key) for c in mine if c.reasons))
    return linked if len(linked) <= MAX_JOINT else []


def imported_in_a_body(module: str, collection: Iterable[Change],
                       tests: Iterable[TestEntry]) -> bool:
    """Whether the run's first import of ``module`` was in a test's body (the first change
    of ``modules:module`` is its addition in a ``call`` phase), not at collection or in a
    set-up, where a replay child's saves would hold it."""
    if any(c.probe == "modules" and c.key == module for c in collection):
        return False
    for t in sorted(tests, key=lambda t: t.index):
        for c in t.changes:
            if c.probe == "modules" and c.key == module:
                return c.change == "added" and c.phase == "call"
    return False
