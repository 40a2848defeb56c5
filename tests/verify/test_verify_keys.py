"""Which keys verify proves, and how many replays that may take, against a rule-answered runner.

One restorable key at a time before the victim, then a set among the best-ranked keys; each
polluter its own key; the limits; a key replay that times out, disagrees with itself or never
ran the victim; and the note on a wide fixture that never undid its change.  Each test pins
the verdict and the replays asked, so that a changed limit fails one of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rule_world import (
    ABSENT,
    MAX_KEY_REPLAYS,
    MAX_SET_KEYS,
    Outcome,
    Restore,
    env_change,
    failure,
    labels,
    needs_a,
    nid,
    one_polluter,
    record_of,
    restored_keys,
    verify,
)

from statesnap.analysis.attribution import attribute
from statesnap.analysis.findings import (
    VERIFIED,
)
from statesnap.analysis.hints import hint_for
from statesnap.record.journal import Record
from statesnap.replay.result import ReplayResult

# -- which keys are proven ------------------------------------------------------------------

def test_the_key_whose_restoring_heals_the_victim_is_named(tmp_path: Path) -> None:
    record = record_of(tmp_path / "r.jsonl", [
        ("test_a", [env_change("ZOO_A", None, "1"), env_change("ZOO_B", "0", "2"),
                    env_change("ZOO_C", None, "1"),
                    {"probe": "files", "key": "out.txt", "change": "added", "before": None,
                     "after": {"size": 1}}]), ("test_b", [])],
        "test_victim", failure())

    def rule(order: list[str], restore: Restore) -> Outcome:
        return needs_a(restore, order, key="ZOO_B")

    f, runner = verify(record, rule)
    assert f.status == VERIFIED
    assert f.proven_keys == ["env:ZOO_B"] and f.hint_proven
    assert (f.probe, f.key, f.before, f.after) == ("env", "ZOO_B", "0", "2")
    assert f.hint == hint_for("env", "ZOO_B", "changed")
    tried = [restored_keys(r) for r, label in zip(runner.restores, labels(runner), strict=True)
             if label == "key"]
    # Best-ranked first (attribution's order), stopping at the one that heals; a file is no
    # key a replay can put back.
    ranked = [c.key for c in f.candidates if c.probe == "env"]
    assert tried == [{k} for k in ranked[:ranked.index("ZOO_B") + 1]]
    assert "out.txt" in {c.key for c in f.candidates}


def test_a_key_holding_a_colon_is_named_whole(tmp_path: Path) -> None:
    record = one_polluter(tmp_path, "ZOO:A")
    f, _ = verify(record, lambda order, restore: needs_a(restore, order, key="ZOO:A"))
    assert f.proven_keys == ["env:ZOO:A"] and (f.probe, f.key) == ("env", "ZOO:A")


def test_each_polluter_gets_its_key_and_a_healed_polluter_is_not_tried_again(
        tmp_path: Path) -> None:
    record = record_of(tmp_path / "r.jsonl", [
        ("test_a", [env_change("ZOO_A", None, "1"), env_change("ZOO_A2", None, "1")]),
        ("test_c", [env_change("ZOO_C", None, "1"), env_change("ZOO_C2", None, "1")])],
        "test_victim", failure())

    def rule(order: list[str], restore: Restore) -> Outcome:
        put_back = restored_keys(restore)
        a = nid("test_a") in order and "ZOO_A" not in put_back and "ZOO_A2" not in put_back
        c = nid("test_c") in order and "ZOO_C" not in put_back and "ZOO_C2" not in put_back
        return failure() if a and c else None

    f, runner = verify(record, rule)
    assert f.status == VERIFIED and f.polluters == [nid("test_a"), nid("test_c")]
    tried = [restored_keys(r) for r, label in zip(runner.restores, labels(runner), strict=True)
             if label == "key"]
    # Every key heals on its own: the first of each polluter is proven, and once both are,
    # no further key is tried.
    assert len(tried) == 2 and len(f.proven_keys) == 2
    assert f"{f.probe}:{f.key}" == f.proven_keys[0]  # the first proven names the finding
    assert {k.split("_")[1][0] for k in f.proven_keys} == {"A", "C"}
    assert [f"env:{k}" for (k,) in tried] == f.proven_keys


def test_key_replays_stop_at_the_limit_then_a_set_is_looked_for(tmp_path: Path) -> None:
    keys = [f"ZOO_{i}" for i in range(MAX_KEY_REPLAYS + 2)]
    record = one_polluter(tmp_path, *keys)

    def rule(order: list[str], restore: Restore) -> Outcome:
        # Only putting back two keys together heals it.
        healed = {"ZOO_2", "ZOO_5"} <= restored_keys(restore)
        return failure() if nid("test_a") in order and not healed else None

    f, runner = verify(record, rule)
    assert f.status == VERIFIED
    assert labels(runner).count("key") == MAX_KEY_REPLAYS
    assert "keys" in labels(runner)
    assert sorted(f.proven_keys) == ["env:ZOO_2", "env:ZOO_5"]
    assert f.key in ("ZOO_2", "ZOO_5")
    assert not f.hint_proven  # neither heals it alone


def test_a_set_is_looked_for_among_the_best_ranked_keys_only(tmp_path: Path) -> None:
    keys = [f"ZOO_{i:02}" for i in range(MAX_SET_KEYS + 2)]
    record = one_polluter(tmp_path, *keys)
    (f,) = attribute(record)
    # Attribution's candidates first, in its order, then the keys it did not rank, by name.
    ranked = [c.key for c in f.candidates]
    ranked += sorted(set(keys) - set(ranked))
    last = ranked[MAX_SET_KEYS]  # the first key left out of the set

    def rule(order: list[str], restore: Restore) -> Outcome:
        healed = {ranked[0], last} <= restored_keys(restore)
        return failure() if nid("test_a") in order and not healed else None

    f, runner = verify(record, rule)
    assert f.status == VERIFIED and f.proven_keys == []
    sets = [restored_keys(r) for r, label in zip(runner.restores, labels(runner), strict=True)
            if label == "keys"]
    assert sets == [set(ranked[:MAX_SET_KEYS])]


def test_no_key_and_no_set_heals_it(tmp_path: Path) -> None:
    record = one_polluter(tmp_path, "ZOO_A", "ZOO_B")

    def rule(order: list[str], restore: Restore) -> Outcome:
        return failure() if nid("test_a") in order else None

    f, runner = verify(record, rule)
    assert f.status == VERIFIED and f.proven_keys == [] and not f.hint_proven
    assert labels(runner) == ["alone", "pair-printed", "key", "key", "keys"]
    assert (f.probe, f.key) in {("env", "ZOO_A"), ("env", "ZOO_B")}
    assert f.hint is not None  # attribution's key, with its hint, unproven


def _b_outranks_a(tmp_path: Path) -> Record:
    """test_a sets ZOO_A (added) and changes ZOO_B; ZOO_B's higher severity ranks it first,
    although its name sorts after ZOO_A's."""
    record = record_of(tmp_path / "r.jsonl", [
        ("test_a", [env_change("ZOO_A", None, "1"),
                    {**env_change("ZOO_B", "0", "2"), "severity": 4}]), ("test_b", [])],
        "test_victim", failure())
    (f,) = attribute(record)
    assert [c.key for c in f.candidates] == ["ZOO_B", "ZOO_A"]
    return record


def test_no_key_healing_it_names_the_best_ranked_change_of_the_polluter(
        tmp_path: Path) -> None:
    record = _b_outranks_a(tmp_path)
    f, runner = verify(record, lambda order, restore: (
        failure() if nid("test_a") in order else None))
    assert f.status == VERIFIED and f.proven_keys == [] and not f.hint_proven
    assert (f.probe, f.key, f.before, f.after) == ("env", "ZOO_B", "0", "2")
    assert f.hint == hint_for("env", "ZOO_B", "changed")
    assert labels(runner) == ["alone", "pair-printed", "key", "key", "keys"]


def test_the_proven_key_takes_its_own_values_not_a_better_ranked_keys(
        tmp_path: Path) -> None:
    record = _b_outranks_a(tmp_path)
    f, runner = verify(record, lambda order, restore: needs_a(restore, order))
    assert f.status == VERIFIED and f.proven_keys == ["env:ZOO_A"] and f.hint_proven
    assert (f.probe, f.key, f.before, f.after) == ("env", "ZOO_A", None, "1")
    assert f.hint == hint_for("env", "ZOO_A", "added")
    tried = [restored_keys(r) for r, label in zip(runner.restores, labels(runner), strict=True)
             if label == "key"]
    assert tried == [{"ZOO_B"}, {"ZOO_A"}]


def test_a_single_key_that_does_not_heal_is_not_looked_for_in_sets(tmp_path: Path) -> None:
    record = one_polluter(tmp_path, "ZOO_A")
    f, runner = verify(record, lambda order, restore: needs_a(restore, order, key="NONE"))
    assert f.status == VERIFIED and f.proven_keys == []
    assert labels(runner) == ["alone", "pair-printed", "key"]


def test_a_key_replay_that_times_out_ends_the_key_proofs_only(tmp_path: Path) -> None:
    record = one_polluter(tmp_path, "ZOO_A", "ZOO_B")

    def rule(order: list[str], restore: Restore) -> ReplayResult | Outcome:
        if restore is not None:
            return ReplayResult(order=order, timed_out=True, timeout=5)
        return failure() if nid("test_a") in order else None

    f, runner = verify(record, rule)
    assert f.status == VERIFIED and f.polluters == [nid("test_a")]
    assert f.proven_keys == [] and f.note is None
    assert f.hint is not None
    # One key replay, then the set replay: each timed out, and nothing else was tried.
    assert labels(runner) == ["alone", "pair-printed", "key", "keys"]


def test_a_key_replay_that_disagrees_with_itself_ends_the_key_proofs_only(
        tmp_path: Path) -> None:
    record = one_polluter(tmp_path, "ZOO_A", "ZOO_B")
    flips: list[int] = []

    def rule(order: list[str], restore: Restore) -> Outcome:
        if restore is not None:
            flips.append(1)
            return failure() if len(flips) % 2 else None
        return failure() if nid("test_a") in order else None

    f, runner = verify(record, rule, repeat=2)
    assert f.status == VERIFIED and f.proven_keys == [] and f.note is None
    assert labels(runner) == (["alone"] * 2 + ["pair-printed"] * 2 + ["key"] * 2
                              + ["keys"] * 2)


# -- fixture notes ------------------------------------------------------------------------

def _fixture_record(tmp_path: Path, polluter: str, fixture: str, scope: str) -> Record:
    change = {**env_change("ZOO_A", None, "1"), "phase": "setup", "fixture": fixture,
              "scope": scope}
    return record_of(tmp_path / "r.jsonl", [(polluter, [change]), ("test_b", [])],
                     "test_victim", failure())


DB = "tests/test_db.py::test_a"
IN_CLASS = "tests/test_db.py::TestZoo::test_a"


@pytest.mark.parametrize(("polluter", "fixture", "scope", "note"), [
    (DB, "db", "module", "the change was made by the module-scoped fixture 'db' (set up for "
     f"{DB}) and never undone: undo it after its yield (or in a finaliser)"),
    (IN_CLASS, "_unittest_setUpClass_fixture_TestZoo", "class", "the change was made in "
     f"TestZoo.setUpClass (set up for {IN_CLASS}), not by the test, and never undone: undo "
     "it in tearDownClass "
     "(or addClassCleanup)"),
    (DB, "db", "function", None),
])
def test_a_wide_fixture_that_never_undid_its_change_is_named(
        tmp_path: Path, polluter: str, fixture: str, scope: str, note: str | None) -> None:
    record = _fixture_record(tmp_path, polluter, fixture, scope)

    def rule(order: list[str], restore: Restore) -> Outcome:
        return failure() if polluter in order and not restored_keys(restore) else None

    f, _ = verify(record, rule)
    assert f.status == VERIFIED and f.proven_keys == ["env:ZOO_A"]
    assert f.note == note


def test_a_key_replay_in_which_the_victim_never_ran_proves_nothing(tmp_path: Path) -> None:
    # Restoring ZOO_A stops the replay before the victim (an earlier test crashes on it): the
    # victim did not fail there, but nothing showed it healed either.
    record = one_polluter(tmp_path, "ZOO_A", "ZOO_B")

    def rule(order: list[str], restore: Restore) -> Outcome:
        if restore is not None and "ZOO_A" in restored_keys(restore):
            return ABSENT
        return failure() if nid("test_a") in order else None

    f, runner = verify(record, rule)
    assert f.status == VERIFIED and f.polluters == [nid("test_a")]
    assert f.proven_keys == [] and not f.hint_proven
    assert "key" in labels(runner)
