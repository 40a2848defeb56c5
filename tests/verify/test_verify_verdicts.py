"""The verdict logic of :mod:`~statesnap.proof.verify`, case by case, against a world given as a
rule.

A replay here is answered by a rule (how the victim fares after a given order) instead of a
fresh interpreter: every branch of the verdicts runs in milliseconds, and each test pins the
replays asked for as well as the verdict, so that a flipped comparison or a dropped condition
fails one of them.  The end-to-end cases (real processes) are in ``test_verdicts_e2e.py``;
files an earlier run left, in ``test_verify_leftover_files.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from rule_world import (
    ABSENT,
    Outcome,
    RuleRunner,
    env_change,
    failure,
    labels,
    nid,
    record_of,
    verify,
)

from statesnap.analysis.attribution import attribute
from statesnap.analysis.findings import (
    NOT_ORDER_DEPENDENT,
    NOT_REPRODUCED,
    NOT_THE_CAUSE,
    SUSPECTED,
    UNEXPLAINED,
    VERIFIED,
    Finding,
)
from statesnap.output.explain import format_finding
from statesnap.proof.verify import ReplayError, Verifier
from statesnap.record.signature import Signature, failing_frame

# -- the failure signature ----------------------------------------------------------------

@pytest.mark.parametrize(("a", "b", "same"), [
    (Signature("KeyError", "t.py:3"), Signature("KeyError", "t.py:3"), True),
    (Signature("KeyError", "t.py:3"), Signature("KeyError", "t.py:4"), False),
    (Signature("KeyError", "t.py:3"), Signature("OSError", "t.py:3"), False),
    (Signature("KeyError", None), Signature("KeyError", "t.py:4"), True),   # an old record
    (Signature("KeyError", "t.py:3"), Signature("KeyError", None), True),
    (Signature(None), Signature("OSError", "t.py:3"), True),
    (Signature("crash"), Signature("OSError", "t.py:3"), True),
    (Signature("OSError", "t.py:3"), Signature("crash"), True),
])
def test_signatures_compare_type_and_frame(a: Signature, b: Signature, same: bool) -> None:
    assert a.same_as(b) is same
    assert b.same_as(a) is same


def test_the_failing_frame_is_the_deepest_in_the_test_file(tmp_path: Path) -> None:
    class Entry:
        def __init__(self, path: str, lineno: int) -> None:
            self.path, self.lineno = path, lineno

    test_file = tmp_path / "tests" / "test_x.py"
    entries = [Entry("/usr/lib/python3/site-packages/_pytest/python.py", 10),
               Entry(str(test_file), 4), Entry(str(test_file), 11),
               Entry(str(tmp_path / "helpers.py"), 8), Entry("/usr/lib/python3/os.py", 700)]
    # The test's own frame, not the helper it called, nor the library below.
    assert failing_frame(entries, test_file, tmp_path) == "tests/test_x.py:12"
    # Failing in a conftest fixture: no frame in the test file, the deepest under the root.
    assert failing_frame(entries, tmp_path / "other.py", tmp_path) == "helpers.py:9"
    assert failing_frame(entries[:1], test_file, tmp_path) is None
    assert Signature("KeyError", "tests/test_x.py:12").text() == (
        "KeyError at tests/test_x.py:12")


# -- verdicts -------------------------------------------------------------------------------

def test_unexplained_when_no_replay_reproduces_it(tmp_path: Path) -> None:
    record = record_of(tmp_path / "r.jsonl", [
        ("test_a", [env_change("ZOO_MODE", None, "fast")]), ("test_b", []), ("test_c", [])],
        "test_victim", failure())
    f, runner = verify(record, lambda order, restore: None)
    assert f.status == UNEXPLAINED
    assert (f.polluters, f.probe, f.key, f.hint, f.repro, f.cleaners) == (
        [], None, None, None, "", [])
    assert "outside the suite's order" in (f.note or "")
    assert NOT_REPRODUCED in f.candidates[0].reasons
    # alone, the one suspect (as printed, then replayed), then the whole prefix once: no
    # minimising a passing prefix.
    assert runner.asked == [
        ("alone", [nid("test_victim")]),
        ("pair-printed", [nid("test_a"), nid("test_victim")]),
        ("pair", [nid("test_a"), nid("test_victim")]),
        ("ddmin", [nid("test_a"), nid("test_b"), nid("test_c"), nid("test_victim")])]
    lines = "\n".join(format_finding(f))
    assert "state:" not in lines and "reproduce:" not in lines and "polluted by" not in lines


def test_minimising_the_whole_prefix_when_no_recorded_change_explains_it(
        tmp_path: Path) -> None:
    names = [f"test_{i}" for i in range(8)]
    record = record_of(tmp_path / "r.jsonl", [(n, []) for n in names], "test_victim",
                       failure())

    def rule(order: list[str], restore: Mapping[str, Any] | None) -> Outcome:
        # Two tests together, far apart, that no probe saw change anything.
        return failure() if {nid("test_1"), nid("test_6")} <= set(order) else None

    f, runner = verify(record, rule)
    assert f.status == VERIFIED
    assert f.polluters == [nid("test_1"), nid("test_6")]
    assert f.probe is None and f.key is None and f.hint is None
    assert "recorded no state change" in (f.note or "")
    assert f.repro.endswith(f"{nid('test_1')} {nid('test_6')} {nid('test_victim')}")
    # No suspects: straight from alone to the whole prefix, then ddmin's subsets.
    assert runner.asked[0] == ("alone", [nid("test_victim")])
    assert runner.asked[1] == ("ddmin", [*map(nid, names), nid("test_victim")])
    assert set(labels(runner)[1:-1]) == {"ddmin"} and labels(runner)[-1] == "confirm"
    # The whole prefix is known to fail once asked: ddmin never replays it (nor any subset)
    # a second time.
    orders = [tuple(o) for label, o in runner.asked if label != "confirm"]
    assert len(set(orders)) == len(orders)


def test_two_suspects_that_fail_it_only_together_are_minimised_without_a_second_replay(
        tmp_path: Path) -> None:
    record = record_of(tmp_path / "r.jsonl", [
        ("test_a", [env_change("ZOO_A", None, "1")]), ("test_b", []),
        ("test_c", [env_change("ZOO_C", None, "1")])], "test_victim", failure())

    def rule(order: list[str], restore: Mapping[str, Any] | None) -> Outcome:
        return failure() if {nid("test_a"), nid("test_c")} <= set(order) else None

    f, runner = verify(record, rule)
    assert f.status == VERIFIED and f.polluters == [nid("test_a"), nid("test_c")]
    a, c, v = nid("test_a"), nid("test_c"), nid("test_victim")
    # Both suspects together fail it: ddmin starts from that answer and tries each half.
    assert [o for label, o in runner.asked if label == "ddmin"] == [[a, c, v], [a, v], [c, v]]
    assert nid("test_b") not in {n for _label, o in runner.asked for n in o}


def test_the_prefix_is_tried_when_the_suspects_together_do_not_do_it(tmp_path: Path) -> None:
    record = record_of(tmp_path / "r.jsonl", [
        ("test_a", [env_change("ZOO_A", None, "1")]), ("test_hidden", []),
        ("test_c", [env_change("ZOO_C", None, "1")])], "test_victim", failure())

    def rule(order: list[str], restore: Mapping[str, Any] | None) -> Outcome:
        return failure() if nid("test_hidden") in order else None

    f, runner = verify(record, rule)
    assert f.status == VERIFIED and f.polluters == [nid("test_hidden")]
    assert f.probe is None and "recorded no state change" in (f.note or "")
    asked = runner.asked
    # The top suspect as printed, the next one's replay, then the top one's replay.
    assert asked[:4] == [("alone", [nid("test_victim")]),
                         ("pair-printed", [nid("test_c"), nid("test_victim")]),
                         ("pair", [nid("test_a"), nid("test_victim")]),
                         ("pair", [nid("test_c"), nid("test_victim")])]
    assert asked[4] == ("ddmin", [nid("test_a"), nid("test_c"), nid("test_victim")])
    assert asked[5] == ("ddmin", [nid("test_a"), nid("test_hidden"), nid("test_c"),
                                  nid("test_victim")])


def test_a_victim_that_did_not_run_alone_is_no_verdict(tmp_path: Path) -> None:
    record = record_of(tmp_path / "r.jsonl", [("test_a", [env_change("ZOO", None, "1")])],
                       "test_victim", failure())

    def rule(order: list[str], restore: Mapping[str, Any] | None) -> Outcome:
        return ABSENT if len(order) == 1 else failure()

    f, runner = verify(record, rule)
    assert f.status == SUSPECTED  # what attribution said stands, unproven
    assert f.note == (f"a replay could not run: {nid('test_victim')} did not run when "
                      "replayed alone")
    assert labels(runner) == ["alone"]  # no pair is tried on a replay that proves nothing
    with pytest.raises(ReplayError, match="did not run when replayed alone"):
        verify(record, rule, raise_errors=True)


def test_failing_alone_the_same_way_is_not_order_dependent(tmp_path: Path) -> None:
    record = record_of(tmp_path / "r.jsonl", [("test_a", [env_change("ZOO", None, "1")])],
                       "test_victim", failure())
    f, runner = verify(record, lambda order, restore: failure())
    assert f.status == NOT_ORDER_DEPENDENT
    assert (f.polluters, f.probe, f.key, f.before, f.after, f.hint) == (
        [], None, None, None, None, None)
    assert f.repro.endswith(f" {nid('test_victim')}") and nid("test_a") not in f.repro
    assert f.alone_failure is None
    assert labels(runner) == ["alone"]
    assert f.candidates[0].nodeid == nid("test_a")
    assert NOT_THE_CAUSE in f.candidates[0].reasons
    lines = format_finding(f)
    assert not any("state:" in ln or "fix:" in ln for ln in lines)
    assert f"    earlier change, not the cause: env:ZOO by {nid('test_a')}" in lines


@pytest.mark.parametrize("alone", [failure("KeyError", 30), failure("AssertionError", 29)],
                         ids=["another-type", "another-line"])
def test_failing_alone_differently_keeps_attributing(tmp_path: Path,
                                                     alone: dict[str, Any]) -> None:
    record = record_of(tmp_path / "r.jsonl", [
        ("test_a", [env_change("ZOO_A", None, "1")]), ("test_b", [])], "test_victim",
        failure())

    def rule(order: list[str], restore: Mapping[str, Any] | None) -> Outcome:
        if restore is not None:
            return alone  # the key put back: it is missing, as alone
        return failure() if nid("test_a") in order else alone

    f, runner = verify(record, rule)
    assert f.status == VERIFIED
    assert f.polluters == [nid("test_a")]
    assert f.alone_failure == Signature.of(alone).text()
    assert (f.probe, f.key) == ("env", "ZOO_A")
    # Restoring ZOO_A fails it as alone: no key is proven, and the note says both.
    assert f.proven_keys == [] and not f.hint_proven
    assert f.note == ("no key proven: restoring the polluter's 1 restorable change(s) before "
                      "the victim does not make it pass; "
                      f"alone it fails too, but differently ({f.alone_failure}; in the run: "
                      "AssertionError at tests/test_zoo.py:30): it also relies on state an "
                      "earlier test sets up (brittle)")
    assert labels(runner)[:2] == ["alone", "pair-printed"]


def test_the_brittle_note_follows_the_note_already_there(tmp_path: Path) -> None:
    record = record_of(tmp_path / "r.jsonl", [("test_a", []), ("test_b", [])], "test_victim",
                       failure())
    alone = failure("KeyError", 30)

    def rule(order: list[str], restore: Mapping[str, Any] | None) -> Outcome:
        return failure() if nid("test_a") in order else alone

    f, _ = verify(record, rule)
    assert f.status == VERIFIED and f.polluters == [nid("test_a")] and f.probe is None
    assert f.note == (
        "the polluter(s) recorded no state change: the state the victim relies on is "
        "outside what statesnap's probes see; alone it fails too, but differently (KeyError "
        "at tests/test_zoo.py:30; in the run: AssertionError at tests/test_zoo.py:30): it "
        "also relies on state an earlier test sets up (brittle)")


def test_failing_alone_differently_and_never_as_in_the_run_is_unexplained(
        tmp_path: Path) -> None:
    record = record_of(tmp_path / "r.jsonl", [("test_a", [env_change("ZOO_A", None, "1")])],
                       "test_victim", failure())
    # Every replay fails, but never at the run's line: not the same failure.
    f, runner = verify(record, lambda order, restore: failure("AssertionError", 31))
    assert f.status == UNEXPLAINED
    assert f.polluters == [] and f.repro == "" and f.probe is None
    assert f.note is not None and "it depends on the order" in f.note
    assert "AssertionError at tests/test_zoo.py:31" in f.note
    # The top suspect's pair as printed, then as a replay (statesnap on): neither fails as
    # the run did.
    assert labels(runner) == ["alone", "pair-printed", "pair", "ddmin"]


def test_a_pair_failing_differently_does_not_verify(tmp_path: Path) -> None:
    record = record_of(tmp_path / "r.jsonl", [
        ("test_a", [env_change("ZOO_A", None, "1")]), ("test_b", [env_change("ZOO_B", None, "1")])],
        "test_victim", failure("KeyError", 30))

    def rule(order: list[str], restore: Mapping[str, Any] | None) -> Outcome:
        if nid("test_b") in order:
            return failure("KeyError", 30)
        if nid("test_a") in order:
            return failure("KeyError", 44)  # fails, but elsewhere: not the run's failure
        return None

    f, _ = verify(record, rule)
    assert f.status == VERIFIED and f.polluters == [nid("test_b")]


def test_a_cleaner_is_named_only_when_its_replay_passes(tmp_path: Path) -> None:
    record = record_of(tmp_path / "r.jsonl", [
        ("test_pollutes", [env_change("ZOO", None, "1")]),
        ("test_resets_other", [env_change("OTHER", None, None)]),
        ("test_unsets", [env_change("ZOO", "1", None)]),
        ("test_fake_unsets", [env_change("ZOO", "1", None)]),
        ("test_pollutes_again", [env_change("ZOO", None, "2")])],
        "test_victim", failure())

    def rule(order: list[str], restore: Mapping[str, Any] | None) -> Outcome:
        if restore is not None:
            return None
        polluted = nid("test_pollutes_again") in order and nid("test_unsets") not in order
        return failure() if polluted else None

    f, runner = verify(record, rule)
    assert f.status == VERIFIED and f.polluters == [nid("test_pollutes_again")]
    assert f.cleaners == [nid("test_unsets")]
    order = [nid("test_pollutes_again"), nid("test_unsets"), nid("test_victim")]
    assert f.cleaner_proofs[nid("test_unsets")].endswith(" ".join(order))
    # Only the test the run saw put the key back is tried, unless asked to look everywhere.
    assert [o for label, o in runner.asked if label == "cleaner"] == [order]
    assert f"    cleaned by: {nid('test_unsets')}" in format_finding(f)
    f, runner = verify(record, rule, cleaners=True)
    fake = [nid("test_pollutes_again"), nid("test_fake_unsets"), nid("test_victim")]
    assert [o for label, o in runner.asked if label == "cleaner"] == [order, fake]
    assert f.cleaners == [nid("test_unsets")]  # the other's replay still failed
    assert list(f.cleaner_proofs) == [nid("test_unsets")]


def test_attribution_names_no_cleaner_without_a_replay(tmp_path: Path) -> None:
    record = record_of(tmp_path / "r.jsonl", [
        ("test_pollutes", [env_change("ZOO", None, "1")]),
        ("test_unsets", [env_change("ZOO", "1", None)]),
        ("test_pollutes_again", [env_change("ZOO", None, "2")])],
        "test_victim", failure())
    (f,) = attribute(record)
    assert f.status == SUSPECTED and f.cleaners == []


def test_a_key_restore_mode_put_back_is_nobodys_leak(tmp_path: Path) -> None:
    record = record_of(tmp_path / "r.jsonl", [
        ("test_a", [env_change("ZOO_MODE", None, "fast")]),
        ("test_b", [env_change("ZOO_LEVEL", None, "9")])],
        "test_victim", failure())
    # The same run under restore mode: test_a's key was put back after it.
    restored = record_of(tmp_path / "restored.jsonl", [
        ("test_a", [env_change("ZOO_MODE", None, "fast")]),
        ("test_b", [env_change("ZOO_LEVEL", None, "9")])],
        "test_victim", failure(), extras={"test_a": {"restored": ["env:ZOO_MODE"]}})
    (plain,) = attribute(record)
    (healed,) = attribute(restored)
    assert {c.key for c in plain.candidates} == {"ZOO_MODE", "ZOO_LEVEL"}
    assert [(c.nodeid, c.key) for c in healed.candidates] == [(nid("test_b"), "ZOO_LEVEL")]


def test_no_state_line_for_a_stored_not_order_dependent_finding() -> None:
    # A finding read back with a key (an older writer kept attribution's) shows none.
    f = Finding(victim=nid("test_v"), polluters=[], probe="env", key="ZOO",
                status=NOT_ORDER_DEPENDENT, before=None, after="1")
    assert not any("state:" in ln for ln in format_finding(f))
    f.status = VERIFIED
    assert any(ln.startswith("    state: env:ZOO") for ln in format_finding(f))


def test_a_finding_cut_short_by_the_budget_keeps_no_cleaner(tmp_path: Path) -> None:
    record = record_of(tmp_path / "r.jsonl", [("test_a", [env_change("ZOO", None, "1")])],
                       "test_victim", failure())
    (f,) = attribute(record)
    f.cleaners = [nid("test_stale")]  # e.g. from an earlier verification, read back
    runner = RuleRunner(record, lambda order, restore: None)
    Verifier(record, runner, budget=0).verify(f)
    assert runner.asked == []
    assert (f.note or "").startswith(
        "the verification budget was spent before this finding was proven (")
    assert f.cleaners == []
