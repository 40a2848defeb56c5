"""The key-level proof of a verified finding: which of its polluters' changes the victim
relies on.

One restorable key at a time is put back before the victim; where none heals it alone, the
smallest set that does (:mod:`statesnap.analysis.keyproof`).  See docs/ARCHITECTURE.md
("Verification").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from statesnap.analysis.attribution import FailureText, Write
from statesnap.analysis.findings import Finding
from statesnap.analysis.hints import restorable
from statesnap.analysis.keyproof import (
    lead_first,
    leave_one_out,
    narrowed_directory,
    restore_spec,
    smallest_healing_set,
)
from statesnap.analysis.keyrank import imported_in_a_body
from statesnap.proof.replays import STOPS, Replayer, Verdict
from statesnap.record.journal import TestEntry
from statesnap.state.diff import REMOVED

MAX_KEY_REPLAYS = 6
#: Restorable keys a set-level proof restores together (then shrinks) at most.
MAX_SET_KEYS = 24


def prove_keys(replayer: Replayer, finding: Finding, polluters: list[str], victim: TestEntry,
               writes: dict[tuple[str, str], Write],
               ranking: Sequence[tuple[str, str]] | None = None,
               more: Callable[[], Sequence[tuple[str, str]]] | None = None,
               joint: Sequence[tuple[str, str]] = ()) -> None:
    """Restore one key at a time before the victim: the first that heals it is named.

    Each polluter gets its own proof, so a failure that needs two polluters names the
    key of each.  ``ranking``: every key of ``writes`` best first (else the finding's
    candidates' order).  ``more``: called once, after the first key replay did not heal
    the victim, for keys to try after the others (it adds them to ``writes``).  ``joint``:
    keys to restore together first (:func:`statesnap.analysis.keyrank.joint_keys`).
    """
    ranked = ranking if ranking is not None else [(c.probe, c.key) for c in finding.candidates]
    rank = {ref: i for i, ref in enumerate(ranked)}
    keys = sorted((ref for ref in writes if restorable(ref[0], replayer.record.header)),
                  key=lambda ref: (rank.get(ref, len(rank)), ref))
    order = [*polluters, victim.nodeid]
    baselines = {ref: w.baseline for ref, w in writes.items()}
    proven: list[tuple[str, str]] = []
    healed: set[str] = set()
    tried = 0
    stopped = False
    alone = False
    # What pytest said when the victim failed: a folder it quotes is not narrowed.
    failure = FailureText.of(victim.failure).said

    # Each set restored once: putting the lead first asks again about sets already replayed.
    ran: dict[tuple[frozenset[tuple[str, str]], tuple[str, ...]], Verdict] = {}
    #: Modules every later key replay imports before the child saves its state
    #: (:func:`_import_first`); each module tried once.
    imports: list[str] = []
    tried_imports: set[str] = set()

    def restoring(subset: Sequence[tuple[str, str]], label: str) -> Verdict:
        ref = (frozenset(subset), tuple(imports))
        found = ran.get(ref)
        if found is None:
            what = (", ".join(f"{p}:{k}" for p, k in subset) if label == "key"
                    else f"{len(subset)} key(s)")
            first = f" (importing {', '.join(imports)} first)" if imports else ""
            replayer.progress(f"statesnap: restoring {what} before {victim.nodeid}{first}")
            spec = restore_spec(victim.nodeid, subset, baselines, imports)
            found = ran[ref] = replayer.replay(order, victim.nodeid, finding, label,
                                               restore=spec)
        return found

    def heals(subset: Sequence[tuple[str, str]]) -> bool:
        v = restoring(subset, "key" if len(subset) == 1 else "keys")
        return v.ran and not v.failed  # a victim that never ran is not healed

    def fails_as_recorded(others: Sequence[tuple[str, str]]) -> bool | None:
        # The hunt's test of the lead (hunt/keys.py): the same exception at the same line
        # of the victim; unknown where the run's failure has no line or no replay answered.
        if finding.signature().where is None:
            return None
        try:
            v = restoring(others, "key" if len(others) == 1 else "keys")
        except STOPS:
            return None
        return v.ran and replayer.same_failure(v, finding)

    def control() -> bool:
        return replayer.same_failure(restoring([], "import"), finding)

    def import_ahead(ref: tuple[str, str]) -> None:
        # The run imported the key's module in a test's body: a replay child saves its
        # state before that, so the module is imported first from the key's first replay
        # (once the control replay still fails the victim), not after one that put nothing
        # back.
        module = ref[1].partition(":")[0]
        if (ref[0] == "attributes" and module and module not in tried_imports
                and imported_in_a_body(module, replayer.record.collection, replayer.record.tests)):
            _imported(module, imports, tried_imports, control)

    def one_at_a_time() -> None:
        nonlocal more, tried, stopped
        for ref in keys:
            writer = writes[ref].test.nodeid
            if writer in healed:
                continue
            if tried >= MAX_KEY_REPLAYS:
                break
            tried += 1
            try:
                import_ahead(ref)
                if not heals([ref]):
                    if more is not None:
                        extra = [r for r in more() if r not in keys
                                 and restorable(r[0], replayer.record.header)]
                        more = None
                        keys.extend(extra)
                        baselines.update({r: writes[r].baseline for r in extra})
                    if not _import_first(ref, restoring([ref], "key"), imports, tried_imports,
                                         control):
                        continue
                    if not heals([ref]):  # put back this time
                        continue
            except STOPS:
                stopped = True
                break
            # The hunt names the same key for the same victim (the innermost directory).
            proven.append(narrowed_directory(ref, keys, heals, STOPS, failure))
            healed.add(writer)
            if healed >= set(polluters):
                break

    together = [ref for ref in keys if ref in set(joint)]
    found: list[tuple[str, str]] | None = None
    if len(together) >= 2:
        # The failing code names several of the polluter's keys: all that connect to the
        # victim together first, then each left out in turn (the set named is 1-minimal,
        # as the set-level proof's); one key at a time where they do not heal together.
        try:
            for ref in together:
                import_ahead(ref)
            if heals(together):
                found = leave_one_out(together, heals)
        except STOPS:
            stopped = True
            found = []
    if found is None:
        one_at_a_time()
        alone = bool(proven)  # each key proven healed the victim by itself
        if not proven and len(keys) > 1:
            found = _healing_set(keys, lambda subset: restoring(subset, "keys"))
            stopped = found is None  # [] is an answer: all of them together did not heal
    if found:
        proven = found
        alone = len(proven) == 1
        if alone:
            proven = [narrowed_directory(proven[0], keys, heals, STOPS, failure)]
        else:
            # Led by the key the failure is about, as the hunt's and the CLI's answer for the
            # same victim is: one finding, one key, whoever proved it.
            proven = lead_first(proven, fails_as_recorded)
    proven = list(dict.fromkeys(proven))
    why = None if proven or stopped else _no_key_note(keys, writes)
    if why:
        finding.note = f"{finding.note}; {why}" if finding.note else why
    finding.proven_keys = [f"{p}:{k}" for p, k in proven]
    if proven:
        probe, key = proven[0]
        cand = next((c for c in finding.candidates if (c.probe, c.key) == (probe, key)
                     and c.nodeid in polluters), None)
        finding.probe, finding.key = probe, key
        if cand is not None:
            finding.before, finding.after = cand.before, cand.after
        else:  # a key ranked below the candidates kept (a folder inside the named one)
            change = writes[(probe, key)].change
            finding.before = change.before
            finding.after = None if change.change == REMOVED else change.after
        # A set heals together only: the named key's fix alone is not proven (the hunt's
        # rule too); the terminal says "heals only together with", not "makes it pass".
        finding.hint_proven = alone


def _import_first(ref: tuple[str, str], verdict: Verdict, imports: list[str],
                  tried: set[str], control: Callable[[], bool]) -> bool:
    """Whether ``ref``'s replay, which did not heal the victim, is to run again with its
    module imported before the child saves its state (``imports`` then has it, for every
    later key replay too).

    A child saves its state after collection and again after the setup a key first exists
    after; a module that the polluter's body imports first (``import l293d`` inside the
    test) is in neither save, so its attributes are not put back at all, and such a replay
    says nothing about the key.  Importing the module first changes the run, so it is kept
    only where the ``control`` replay (the module imported first, nothing put back) still
    fails the victim as the run did: a key that heals then heals that failure, in that same
    run, and not another one the early import brought.
    """
    module = ref[1].partition(":")[0]
    if (ref[0] != "attributes" or not module or not verdict.ran or not verdict.failed
            or f"{ref[0]}:{ref[1]}" in verdict.restored or module in tried):
        return False
    return _imported(module, imports, tried, control)


def _imported(module: str, imports: list[str], tried: set[str],
              control: Callable[[], bool]) -> bool:
    """``module`` is added to ``imports`` (tried once) and kept there where the ``control``
    replay, with it imported first and nothing put back, still fails the victim as the run
    did."""
    tried.add(module)
    imports.append(module)
    if control():
        return True
    imports.remove(module)
    return False


def _healing_set(keys: list[tuple[str, str]],
                 restoring: Callable[[Sequence[tuple[str, str]]], Verdict]
                 ) -> list[tuple[str, str]] | None:
    """No single key heals the victim: the smallest set of them that does ([] if none;
    None where a replay could not answer: no time left, timed out, not deterministic)."""

    def heals(subset: Sequence[tuple[str, str]]) -> bool:
        v = restoring(subset)
        return v.ran and not v.failed

    try:
        return smallest_healing_set(keys[:MAX_SET_KEYS], heals, singles=0)
    except STOPS:
        return None


def _no_key_note(keys: Sequence[tuple[str, str]],
                 writes: Mapping[tuple[str, str], Write]) -> str | None:
    """Why a verified finding names no proven key, where the replays answered."""
    if not keys:
        refs = ", ".join(f"{p}:{k}" for p, k in list(writes)[:3]) + (
            f" and {len(writes) - 3} more" if len(writes) > 3 else "")
        return (f"no key proven: no replay can put back what the polluter changed ({refs})"
                if writes else None)
    if len(keys) > MAX_SET_KEYS:
        return None  # not all were restored: nothing to say of the rest
    return (f"no key proven: restoring the polluter's {len(keys)} restorable change(s) before "
            "the victim does not make it pass")
