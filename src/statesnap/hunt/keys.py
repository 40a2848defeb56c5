"""The key-level proof of a latent hunt finding: which of its polluters' changes it relies on.

The smallest set of the polluters' restorable changes whose restoration before the victim lets
it pass (:func:`~statesnap.analysis.keyproof.smallest_healing_set`).  See docs/ARCHITECTURE.md
("The hunt").
"""

from __future__ import annotations

from collections.abc import Sequence

from statesnap.analysis.attribution import dirty_before
from statesnap.analysis.findings import Finding
from statesnap.analysis.hints import hint_for, restorable
from statesnap.analysis.keyproof import fresh_module_attributes, smallest_healing_set
from statesnap.hunt.plan import HuntSuite, observe
from statesnap.hunt.runs import KEY, Observed, Replays
from statesnap.hunt.suspect import Suspect
from statesnap.replay.runner import BudgetSpent
from statesnap.state.diff import ADDED, REMOVED

#: Keys restored one at a time (best ranked first) before all of them together.
MAX_SINGLE_KEYS = 4
#: Restorable keys a key-level proof considers at most.
MAX_PROOF_KEYS = 24


def prove_keys(suite: HuntSuite, replays: Replays, f: Finding, s: Suspect, causes: list[str],
               proof: Observed) -> str | None:
    """Name the smallest set of the causes' restorable changes whose restoration before
    the victim makes it pass (every probe that can restore: cwd and env included); a
    sentence for the note where the key named is not the one restored."""
    child = proof.child()
    seen = observe(child, s.nodeid) if child is not None else None
    if seen is None:
        return None
    writes = {ref: w for ref, w in dirty_before(seen.tests, seen.entry).writes.items()
              if w.test.nodeid in causes and restorable(ref[0])}
    rank = {(c.probe, c.key): i for i, c in enumerate(s.candidates)}
    keys = sorted(writes, key=lambda ref: (rank.get(ref, len(rank)), ref))[:MAX_PROOF_KEYS]
    order = [*causes, s.nodeid]

    def heals(subset: Sequence[tuple[str, str]]) -> bool:
        spec = {"before": s.nodeid, "keys": [list(ref) for ref in subset]}
        what = ", ".join(f"{p}:{k}" for p, k in subset[:3]) + (
            f" (+{len(subset) - 3})" if len(subset) > 3 else "")
        obs = replays.run(order, KEY, KEY, f"restoring {what} before {s.nodeid}",
                               restore=spec)
        s.note_log(obs)
        return obs.passed(s.nodeid)

    try:
        healing = smallest_healing_set(keys, heals, MAX_SINGLE_KEYS)
    except BudgetSpent:
        return None
    if not healing:
        return None
    f.proven_keys = [f"{p}:{k}" for p, k in healing]
    f.probe, f.key = healing[0]
    change = writes[healing[0]].change
    f.before, f.after = change.before, (None if change.change == REMOVED else change.after)
    f.hint = hint_for(f.probe, f.key, change.change)
    f.hint_proven = True
    if len(healing) == 1 and f.probe == "modules" and change.change == ADDED:
        return _name_module_settings(suite, f, s, causes)
    return None

def _name_module_settings(suite: HuntSuite, f: Finding, s: Suspect, causes: list[str]
                          ) -> str | None:
    """A module the causes imported first in the proof heals the victim when taken out;
    where the recorded run saw them change its attributes, those are the leak's key."""
    module = str(f.key)
    text = " ".join(str((s.failure or {}).get(k) or "") for k in ("message", "text"))
    changed = fresh_module_attributes(module, causes, suite.tests, text)
    if not changed:
        return None
    top = changed[0]
    f.probe, f.key, f.before, f.after = top.probe, top.key, top.before, top.after
    f.hint = hint_for(top.probe, top.key, top.change)
    f.hint_proven = False  # proven: taking the module out; the attribute: the record
    return (f"taking {module} out of sys.modules before the victim makes it pass (the "
            f"polluter imported it first there); in the recorded run, where it was "
            f"already imported, the polluter changed {top.key}")
