"""What the record says about a proven polluter's key candidates before any key replay runs.

The key-level proof (:mod:`statesnap.proof.keys`) replays one restore at a time, so every
candidate tried before the one that heals costs a replay.  These rules read the record and
the ranking's reasons only (pure); the proof itself still rests on the replays:

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

from collections.abc import Iterable, Sequence

from statesnap.analysis.findings import Candidate
from statesnap.record.journal import TestEntry
from statesnap.state.diff import Change

#: ``statesnap.analysis.attribution.rank``'s reason for a key the failing code names.
NAMED_IN_CODE = "key named in the failing code"
#: Keys restored together first at most (more: one at a time, as before).
MAX_JOINT = 6


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
    victim (a reason in the ranking), at most :data:`MAX_JOINT`.
    """
    if len(polluters) != 1:
        return []
    mine = [c for c in ranked if c.nodeid == polluters[0]]
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
