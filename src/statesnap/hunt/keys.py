"""The key-level proof of a latent hunt finding: which of its polluters' changes it relies on.

The smallest set of the polluters' restorable changes whose restoration before the victim lets
it pass (:func:`~statesnap.analysis.keyproof.smallest_healing_set`); then what that change
rests on: the wide fixture (or class or module set-up) of a polluter that made it, and, where
the runs went with the collector off, whether a collection before the victim heals it.  See
docs/ARCHITECTURE.md ("The hunt").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from statesnap.analysis.attribution import FailureText, Write, dirty_before
from statesnap.analysis.findings import BRITTLE, LATENT, Finding
from statesnap.analysis.gctiming import mark_gc_timing
from statesnap.analysis.hints import hint_for, restorable
from statesnap.analysis.keyproof import (
    fresh_module_attributes,
    lead_first,
    named_first,
    narrowed_directory,
    restore_spec,
    smallest_healing_set,
)
from statesnap.analysis.leaks import fixture_note, setup_hint
from statesnap.hunt.plan import HuntSuite, observe
from statesnap.hunt.runs import KEY, Observed, Replays
from statesnap.hunt.suspect import Suspect
from statesnap.probes.fixtures import EVERY, FixturesProbe, scope_of
from statesnap.record.signature import Signature
from statesnap.replay.gcmode import COLLECT, cycle_held_key, with_gc
from statesnap.replay.repro import gc_off_command
from statesnap.replay.runner import BudgetSpent
from statesnap.state.diff import ADDED, REMOVED, Change

#: Keys restored one at a time (best ranked first) before all of them together.
MAX_SINGLE_KEYS = 4
#: Restorable keys a key-level proof considers at most.
MAX_PROOF_KEYS = 24


def key_proof(suite: HuntSuite, replays: Replays, header: dict[str, Any], s: Suspect,
              causes: list[str], proof: Observed) -> None:
    """The key-level proof of ``s``'s finding, proven after ``causes`` by ``proof``, and what
    the key's change rests on, in its note and hint."""
    f = s.finding
    if f is None or f.status not in (LATENT, BRITTLE):
        return  # none, or left suspected: its printed line did not fail it
    extra = prove_keys(suite, replays, f, s, causes, proof)
    if extra:
        f.note = f"{f.note}; {extra}" if f.note else extra
    _name_the_setup(suite, f, causes)
    _gc_timing(replays, header, f, s, causes)


def _gc_timing(replays: Replays, header: dict[str, Any], f: Finding, s: Suspect,
               causes: list[str]) -> None:
    """Runs went with the collector off (state only reference cycles keep): one more
    with a collection just before the victim says whether the failure rests on it."""
    if not (replays.runner.gc_off and cycle_held_key(f.probe, f.key)):
        return
    order = [*causes, s.nodeid]
    try:
        obs = replays.run(order, "gc", "gc", f"collecting garbage before {s.nodeid}",
                          restore=with_gc({"before": s.nodeid, "keys": []}, COLLECT))
    except BudgetSpent:
        return  # the finding stands as proven with the collector off, unqualified
    s.note_log(obs)
    if obs.passed(s.nodeid):
        mark_gc_timing(f, gc_off_command(header, order))


def _name_the_setup(suite: HuntSuite, f: Finding, causes: list[str]) -> None:
    """Where a wide fixture (or a class or module set-up) of a cause made the key's
    change, say so, and give the set-up's fix: the test is only how a replay runs it."""
    for cause in causes:
        made = _made_in(suite, cause, f.probe, f.key) if f.probe and f.key else None
        if made is None:
            continue
        f.hint = setup_hint(made) or f.hint
        where = fixture_note(made, cause)
        if where:
            f.note = f"{f.note}; {where}" if f.note else where
        return


def _made_in(suite: HuntSuite, nodeid: str, probe: str, key: str) -> Change | None:
    """The recorded change of ``probe:key`` by ``nodeid``, where a wide fixture (or a
    class or module set-up) made it: the test is then only how a replay runs it."""
    t = suite.by_id.get(nodeid)
    for ch in t.changes if t is not None else ():
        if ch.probe == probe and ch.key == key and ch.fixture:
            return ch
    return None


def prove_keys(suite: HuntSuite, replays: Replays, f: Finding, s: Suspect, causes: list[str],
               proof: Observed) -> str | None:
    """Name the smallest set of the causes' restorable changes whose restoration before
    the victim makes it pass (every probe that can restore: cwd and env included); a
    sentence for the note where the key named is not the one restored."""
    child = proof.child()
    if child is None:
        return None
    seen = observe(child, s.nodeid)
    if seen is None:
        return None
    writes = {ref: w for ref, w in dirty_before(seen.tests, seen.entry).writes.items()
              if w.test.nodeid in causes and restorable(ref[0], child.header)}
    rank = {(c.probe, c.key): i for i, c in enumerate(s.candidates)}
    keys = sorted(writes, key=lambda ref: (rank.get(ref, len(rank)), ref))[:MAX_PROOF_KEYS]
    order = [*causes, s.nodeid]
    ran: dict[frozenset[tuple[str, str]], Observed] = {}
    baselines = {ref: w.baseline for ref, w in writes.items()}

    def restoring(subset: Sequence[tuple[str, str]]) -> Observed:
        found = ran.get(frozenset(subset))
        if found is not None:
            return found
        spec = restore_spec(s.nodeid, subset, baselines)
        what = ", ".join(f"{p}:{k}" for p, k in subset[:3]) + (
            f" (+{len(subset) - 3})" if len(subset) > 3 else "")
        obs = ran[frozenset(subset)] = replays.run(
            order, KEY, KEY, f"restoring {what} before {s.nodeid}", restore=spec)
        s.note_log(obs)
        return obs

    def heals(subset: Sequence[tuple[str, str]]) -> bool:
        return restoring(subset).passed(s.nodeid)

    proved = Signature.of(seen.entry.failure)

    def fails_as_recorded(others: Sequence[tuple[str, str]]) -> bool | None:
        # The same exception at the same line of the victim: the same failure.
        try:
            obs = restoring(others)
        except BudgetSpent:
            return None
        child = obs.child()
        there = observe(child, s.nodeid) if child is not None else None
        if there is None or not obs.failed(s.nodeid) or proved.where is None:
            return None
        return Signature.of(there.entry.failure) == proved

    try:
        healing = smallest_healing_set(keys, heals, MAX_SINGLE_KEYS)
    except BudgetSpent:
        return None
    if not healing:
        return _prove_fixture(f, s, restoring, heals, writes)
    if len(healing) == 1:
        healing = [narrowed_directory(healing[0], keys, heals, (BudgetSpent,),
                                      FailureText.of(seen.entry.failure).said)]
    healing = lead_first(healing, fails_as_recorded)
    f.proven_keys = [f"{p}:{k}" for p, k in healing]
    f.probe, f.key = healing[0]
    change = writes[healing[0]].change
    f.before, f.after = change.before, (None if change.change == REMOVED else change.after)
    f.hint = (setup_hint(change)
              or hint_for(f.probe, f.key, change.change, change.before, change.after))
    f.hint_proven = True
    if all(p == "modules" and writes[(p, k)].change.change == ADDED for p, k in healing):
        # Modules the causes imported first (a package and its submodules, taken out
        # together): which of the settings the causes changed on them is the leak.
        f.hint_proven = len(healing) == 1
        return _prove_module_settings(suite, replays, f, s, causes,
                                      [k for _, k in healing], writes)
    if f.probe == FixturesProbe.name and len(healing) == 1:
        return (f"re-creating the {scope_of(f.after) or 'wide'} fixture {f.key!r} before "
                "the victim heals it (pytest's own teardown of it, so the victim builds it "
                "fresh): a test changed its shared value in place")
    if len(healing) > 1:
        # The named key's fix alone is not proven to heal it: the set's is.
        f.hint_proven = False
        # What delta debugging's answer guarantees: it is 1-minimal.
        return (f"restoring {f.probe}:{f.key} together with "
                f"{', '.join(f'{p}:{k}' for p, k in healing[1:])} makes the victim pass; "
                "leaving any one of them out, it fails")
    return None


def _prove_fixture(f: Finding, s: Suspect,
                   restoring: Callable[[Sequence[tuple[str, str]]], Observed],
                   heals: Callable[[Sequence[tuple[str, str]]], bool],
                   writes: Mapping[tuple[str, str], object]) -> str | None:
    """No recorded change heals the victim: try re-creating the wide fixtures live before
    it (the state may lie in what one made: a directory, a repository), then the fewest of
    them that still heal it.  Where none does, say what is not watched."""
    name = FixturesProbe.name
    try:
        everything = restoring([(name, EVERY)])
        if not everything.passed(s.nodeid):
            return _not_watched(writes)
        child = everything.child()
        seen = observe(child, s.nodeid) if child is not None else None
        restored = (seen.entry.extra or {}).get("restored") if seen is not None else None
        live = [(name, ref.split(":", 1)[1]) for ref in restored or []
                if isinstance(ref, str) and ref.startswith(f"{name}:")]
        if not live:
            return _not_watched(writes)
        healing = smallest_healing_set(live, heals, MAX_SINGLE_KEYS)
    except BudgetSpent:
        return None
    if not healing:
        return _not_watched(writes)
    f.proven_keys = [f"{p}:{k}" for p, k in healing]
    f.probe, f.key = healing[0]
    f.before = f.after = None
    f.hint = made_hint(f.key)
    f.hint_proven = len(healing) == 1
    named = ", ".join(repr(k) for _, k in healing)
    return (f"no recorded change of the polluter heals the victim, but re-creating the wide "
            f"fixture(s) {named} before it does (pytest's own teardown, so the victim builds "
            "them fresh): the state lies in what the fixture made, outside its value; "
            f"{NOT_WATCHED}")


def made_hint(key: str) -> str:
    """The fix for a state that lies in what a wide fixture made."""
    per_test = ("move it to setup_method so each test gets its own"
                if key.endswith(".setup_class") else
                "move it to setUp so each test gets its own" if key.endswith(".setUpClass")
                else "narrow its scope so each test gets its own")
    return (f"tests share what {key!r} made (a directory, its files, a repository, a server) "
            f"and a test changes it: {per_test}, or undo the change in the test's teardown")


#: What no probe watches, said where a proof found nothing to restore.
NOT_WATCHED = ("files outside the watched roots (the temporary directories a suite makes: "
               "pytest's basetemp, tempfile.mkdtemp) are not watched: their names differ in "
               "every process, so no replay could name or restore them")


def _not_watched(writes: Mapping[tuple[str, str], object]) -> str:
    tried = (f"restoring the polluter's {len(writes)} recorded change(s) does not heal the "
             "victim, nor does re-creating the wide fixtures" if writes else
             "the polluter has no recorded change that can be restored, and re-creating the "
             "wide fixtures does not heal the victim")
    return f"no key proven: {tried}; {NOT_WATCHED}"


def _prove_module_settings(suite: HuntSuite, replays: Replays, f: Finding, s: Suspect,
                           causes: list[str], modules: list[str],
                           writes: dict[tuple[str, str], Write]) -> str:
    """Taking ``modules`` (which the causes imported first in the proof) out of
    ``sys.modules`` heals the victim.  Which of the settings the causes changed on them is
    the leak is proven by replays that import the modules before the tests (their state as
    imported is saved) and put candidate settings back before the victim; the finding keeps
    the modules key when none is proven."""
    text = " ".join(str((s.failure or {}).get(k) or "") for k in ("message", "text"))
    owned = tuple(f"{m}:" for m in modules)
    # This order's own record first (its values are this order's), then the recorded run,
    # where the modules were already imported when the causes changed them.
    found: dict[tuple[str, str], Change] = {}
    for ch in [*(w.change for (p, k), w in writes.items()
                 if p == "attributes" and k.startswith(owned)),
               *(c for m in modules for c in fresh_module_attributes(m, causes, suite.tests))]:
        found.setdefault((ch.probe, ch.key), ch)
    ranked = [(c.probe, c.key) for c in named_first(found.values(), text)][:MAX_PROOF_KEYS]
    taken = (f"taking {modules[0]}"
             + (f" with {len(modules) - 1} other module(s) it imported" if len(modules) > 1
                else "")
             + " out of sys.modules before the victim makes it pass (the polluter imported "
             "it first there)")
    if not ranked:
        return taken
    order = [*causes, s.nodeid]

    def importing(subset: Sequence[tuple[str, str]]) -> Observed:
        what = ", ".join(f"{p}:{k}" for p, k in subset[:3]) + (
            f" (+{len(subset) - 3})" if len(subset) > 3 else "") or "nothing"
        obs = replays.run(order, KEY, KEY, f"importing {', '.join(modules)} first, restoring "
                          f"{what} before {s.nodeid}",
                          restore=restore_spec(s.nodeid, subset, {}, imports=modules))
        s.note_log(obs)
        return obs

    unproven = (f"{taken}; of the settings the polluter changed on it, "
                f"{', '.join(k for _, k in ranked[:3])}")
    try:
        control = importing([])
        if not control.failed(s.nodeid):
            # Importing the modules first heals by itself: no setting can be told apart.
            return (f"{unproven}: not proven (with the modules imported before the tests the "
                    "victim passes without restoring any)")
        healing = smallest_healing_set(
            ranked, lambda subset: importing(subset).passed(s.nodeid), MAX_SINGLE_KEYS)
    except BudgetSpent:
        return f"{unproven}: not proven (no time left for the replays)"
    if not healing:
        return (f"{unproven}: not proven (with the modules imported before the tests, "
                "restoring them before the victim does not make it pass)")
    top = found[healing[0]]
    f.probe, f.key, f.before, f.after = top.probe, top.key, top.before, top.after
    f.hint = hint_for(top.probe, top.key, top.change, top.before, top.after)
    f.hint_proven = len(healing) == 1
    f.proven_keys = [f"{p}:{k}" for p, k in healing]
    if f.hint_proven:
        # Taking the modules out heals it too (proven first): "restoring also heals it".
        f.proven_keys += [f"modules:{m}" for m in modules]
    restored = ", ".join(f"{p}:{k}" for p, k in healing)
    return (f"{taken}; with it imported before the tests, restoring {restored} before the "
            f"victim makes it pass" + ("" if len(healing) == 1 else
                                       "; leaving any one of them out, it fails"))
