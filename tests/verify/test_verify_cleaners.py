"""Cleaners (tests that put the victim's key back) and :func:`verify_findings`, against a
rule-answered runner.

The cleaner replays' limit, what ends the search, who can never be a cleaner, a cleaner
anywhere in the run, and verify_findings verifying each finding, passing its options on and
closing its runner.  Each test pins the verdict and the replays asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rule_world import (
    ABSENT,
    MAX_CLEANER_REPLAYS,
    Outcome,
    Restore,
    RuleRunner,
    env_change,
    failure,
    labels,
    nid,
    record_of,
    restored_keys,
    verify,
)

from statesnap.analysis.attribution import attribute
from statesnap.analysis.findings import (
    NOT_DETERMINISTIC,
    UNEXPLAINED,
    VERIFIED,
)
from statesnap.proof.verify import (
    ReplayError,
    Verifier,
    verify_findings,
)
from statesnap.record.journal import Record
from statesnap.replay.result import ReplayResult

# -- cleaners -------------------------------------------------------------------------------

def _cleaner_world(tmp_path: Path, cleaners: int) -> Record:
    tests: list[tuple[str, list[Any]]] = [("test_pollutes", [env_change("ZOO", None, "1")])]
    tests += [(f"test_unsets_{i}", [env_change("ZOO", "1", None)]) for i in range(cleaners)]
    tests += [("test_pollutes_again", [env_change("ZOO", None, "2")])]
    return record_of(tmp_path / "r.jsonl", tests, "test_victim", failure())


def _pollutes_again(order: list[str], restore: Restore) -> Outcome:
    return None if restore else failure() if nid("test_pollutes_again") in order else None


def test_cleaner_replays_stop_at_the_limit(tmp_path: Path) -> None:
    record = _cleaner_world(tmp_path, MAX_CLEANER_REPLAYS + 2)
    f, runner = verify(record, _pollutes_again, cleaners=True)
    assert f.status == VERIFIED and f.polluters == [nid("test_pollutes_again")]
    assert labels(runner).count("cleaner") == MAX_CLEANER_REPLAYS
    assert f.cleaners == [] and f.cleaner_proofs == {}


def test_a_cleaner_replay_that_times_out_ends_the_search(tmp_path: Path) -> None:
    record = _cleaner_world(tmp_path, 2)

    def rule(order: list[str], restore: Restore) -> ReplayResult | Outcome:
        if len(order) == 3:
            return ReplayResult(order=order, timed_out=True, timeout=5)
        return _pollutes_again(order, restore)

    f, runner = verify(record, rule, cleaners=True)
    assert f.status == VERIFIED and f.cleaners == []
    assert labels(runner).count("cleaner") == 1
    assert f.note is None


def test_a_cleaner_replay_that_could_not_run_ends_the_search(tmp_path: Path) -> None:
    record = _cleaner_world(tmp_path, 2)

    def rule(order: list[str], restore: Restore) -> ReplayResult | Outcome:
        if len(order) == 3:
            return ReplayResult(order=order, error="no interpreter")
        return _pollutes_again(order, restore)

    f, runner = verify(record, rule, cleaners=True, raise_errors=True)
    assert f.status == VERIFIED and f.cleaners == [] and f.note is None
    assert labels(runner).count("cleaner") == 1


def test_a_cleaner_whose_victim_did_not_run_is_no_cleaner(tmp_path: Path) -> None:
    record = _cleaner_world(tmp_path, 1)

    def rule(order: list[str], restore: Restore) -> Outcome:
        return ABSENT if len(order) == 3 else _pollutes_again(order, restore)

    f, runner = verify(record, rule, cleaners=True)
    assert f.status == VERIFIED and f.cleaners == []
    assert labels(runner).count("cleaner") == 1


def test_no_cleaner_is_looked_for_without_a_proven_key(tmp_path: Path) -> None:
    # Verified, but no recorded change explains it: no key to clean.
    record = record_of(tmp_path / "r.jsonl", [("test_a", []), ("test_b", [])], "test_victim",
                       failure())
    f, runner = verify(record, lambda order, restore: (
        failure() if nid("test_a") in order else None), cleaners=True)
    assert f.status == VERIFIED and f.probe is None
    assert f.hint is None and f.hint_proven is False and f.proven_keys == []
    assert "cleaner" not in labels(runner)
    # Not verified: nothing to clean either.
    f, runner = verify(record, lambda order, restore: None, cleaners=True)
    assert f.status == UNEXPLAINED and "cleaner" not in labels(runner)


def test_the_polluter_and_the_victim_are_never_their_own_cleaners(tmp_path: Path) -> None:
    # The polluter also set the key back to its baseline once; the victim is not a candidate.
    record = record_of(tmp_path / "r.jsonl", [
        ("test_a", [env_change("ZOO", None, "1")]),
        ("test_b", [env_change("ZOO", "1", None)]),
        ("test_a2", [env_change("ZOO", None, "1")])], "test_victim", failure())
    f, runner = verify(record, lambda order, restore: (
        None if restore or nid("test_b") in order else
        failure() if nid("test_a2") in order or nid("test_a") in order else None),
        cleaners=True)
    assert f.polluters == [nid("test_a2")]
    cleaner_orders = [o for label, o in runner.asked if label == "cleaner"]
    assert cleaner_orders == [[nid("test_a2"), nid("test_b"), nid("test_victim")]]
    assert f.cleaners == [nid("test_b")]


def test_the_victim_is_never_its_own_cleaner_and_names_sort_any_way(tmp_path: Path) -> None:
    # The victim itself put the key back (say in its teardown); a cleaner sorts after it.
    record = record_of(tmp_path / "r.jsonl", [
        ("test_a", [env_change("ZOO", None, "1")]),
        ("test_zz_unsets", [env_change("ZOO", "1", None)]),
        ("test_a2", [env_change("ZOO", None, "1")])], "test_victim", failure(),
        extras={"test_victim": {"changes": [env_change("ZOO", "1", None)]}})
    f, runner = verify(record, lambda order, restore: (
        None if restore or nid("test_zz_unsets") in order else
        failure() if nid("test_a2") in order or nid("test_a") in order else None),
        cleaners=True)
    assert f.polluters == [nid("test_a2")]
    assert [o for label, o in runner.asked if label == "cleaner"] == [
        [nid("test_a2"), nid("test_zz_unsets"), nid("test_victim")]]
    assert f.cleaners == [nid("test_zz_unsets")]


def test_a_cleaner_anywhere_is_a_change_of_the_same_key_only(tmp_path: Path) -> None:
    # test_zzz sets another key (one whose name sorts after) back to the victim's value.
    record = record_of(tmp_path / "r.jsonl", [
        ("test_pollutes", [env_change("ZOO", None, "1")]),
        ("test_unsets", [env_change("ZOO", "1", None)]),
        ("test_zzz", [env_change("ZZZ", "1", None)]),
        ("test_pollutes_again", [env_change("ZOO", None, "2")])],
        "test_victim", failure())

    def rule(order: list[str], restore: Restore) -> Outcome:
        cleaned = nid("test_unsets") in order or nid("test_zzz") in order
        return None if cleaned else _pollutes_again(order, restore)

    f, runner = verify(record, rule, cleaners=True)
    assert f.status == VERIFIED and (f.key, f.before) == ("ZOO", None)
    assert [o for label, o in runner.asked if label == "cleaner"] == [
        [nid("test_pollutes_again"), nid("test_unsets"), nid("test_victim")]]
    assert f.cleaners == [nid("test_unsets")]


def test_a_cleaner_replay_is_announced_after_the_first_polluter(tmp_path: Path) -> None:
    # Two polluters together; test_x put the proven key back once, before they ran.
    record = record_of(tmp_path / "r.jsonl", [
        ("test_q", [env_change("ZOO_Q", None, "1")]),
        ("test_x", [env_change("ZOO_Q", "1", None)]),
        ("test_p1", [env_change("ZOO_P", None, "1")]),
        ("test_p2", [env_change("ZOO_Q", None, "1")])], "test_victim", failure())
    p1, p2, x, v = nid("test_p1"), nid("test_p2"), nid("test_x"), nid("test_victim")

    def rule(order: list[str], restore: Restore) -> Outcome:
        both = p1 in order and p2 in order and x not in order
        return failure() if both and not restored_keys(restore) else None

    progress: list[str] = []
    # The verifier's own lines (verify_findings shows one line per victim instead).
    verifier = Verifier(record, RuleRunner(record, rule), 120, progress=progress.append)
    (f,) = attribute(record)
    verifier.verify(f)
    verifier.find_cleaners(f, everywhere=True)
    assert f.status == VERIFIED and f.polluters == [p1, p2]
    assert f.key == "ZOO_Q" and f.cleaners == [x]
    assert f.cleaner_proofs[x].endswith(f"{p1} {p2} {x} {v}")
    assert progress[-1] == f"statesnap: does {x} clean up after {p1}?"


def test_a_finding_that_is_not_deterministic_looks_for_no_cleaner(tmp_path: Path) -> None:
    record = _cleaner_world(tmp_path, 1)
    flips: list[int] = []

    def rule(order: list[str], restore: Restore) -> Outcome:
        if len(order) == 1:
            return None
        flips.append(1)
        return failure() if len(flips) % 2 else None

    f, runner = verify(record, rule, cleaners=True, repeat=2)
    assert f.status == NOT_DETERMINISTIC and (f.probe, f.key) == ("env", "ZOO")
    assert "cleaner" not in labels(runner) and f.cleaners == []


# -- verify_findings ------------------------------------------------------------------------

class ClosingRuleRunner(RuleRunner):
    closed = 0

    def close(self) -> None:
        self.closed += 1
        super().close()


def test_verify_findings_verifies_each_finding_and_closes_the_runner(tmp_path: Path) -> None:
    record = _cleaner_world(tmp_path, 1)
    findings = attribute(record)

    def rule(order: list[str], restore: Restore) -> Outcome:
        return None if nid("test_unsets_0") in order else _pollutes_again(order, restore)

    runner = ClosingRuleRunner(record, rule)
    progress: list[str] = []
    out = verify_findings(record, findings, runner=runner, find_cleaners=True, repeat=2,
                          progress=progress.append)
    assert out is findings
    (f,) = out
    assert f.status == VERIFIED and f.cleaners == [nid("test_unsets_0")]
    assert runner.closed == 1
    assert labels(runner)[:2] == ["alone", "alone"]  # the repeats were passed on
    # Not a live line: one line once the victim's verdict is settled, none per replay.
    (line,) = progress
    assert line.startswith(f"statesnap: [1/1] verified {nid('test_victim')} (")


def test_verify_findings_within_its_budget_and_raising_errors(tmp_path: Path) -> None:
    record = _cleaner_world(tmp_path, 1)
    runner = ClosingRuleRunner(record, _pollutes_again)
    (f,) = verify_findings(record, attribute(record), runner=runner, budget=0)
    assert (f.note or "").startswith(
        "the verification budget was spent before this finding was proven (")
    assert runner.closed == 1
    broken = ClosingRuleRunner(record, lambda order, restore: ReplayResult(
        order=order, error="no interpreter"))
    with pytest.raises(ReplayError, match="no interpreter"):
        verify_findings(record, attribute(record), runner=broken, raise_errors=True)
    assert broken.closed == 1
    (f,) = verify_findings(record, attribute(record), runner=ClosingRuleRunner(
        record, lambda order, restore: ReplayResult(order=order, error="no interpreter")))
    assert f.note == "a replay could not run: no interpreter"


def test_verify_findings_tries_only_the_cleaners_the_run_saw_unless_asked(
        tmp_path: Path) -> None:
    record = record_of(tmp_path / "r.jsonl", [
        ("test_pollutes", [env_change("ZOO", None, "1")]),
        ("test_unsets", [env_change("ZOO", "1", None)]),
        ("test_fake_unsets", [env_change("ZOO", "1", None)]),
        ("test_pollutes_again", [env_change("ZOO", None, "2")])],
        "test_victim", failure())

    def rule(order: list[str], restore: Restore) -> Outcome:
        return None if restore or nid("test_unsets") in order else _pollutes_again(order, restore)

    runner = ClosingRuleRunner(record, rule)
    (f,) = verify_findings(record, attribute(record), runner=runner)
    assert f.cleaners == [nid("test_unsets")]
    assert [o[1] for label, o in runner.asked if label == "cleaner"] == [nid("test_unsets")]
    assert labels(runner).count("alone") == 1  # one run of each replay unless asked


def test_a_cleaner_anywhere_sets_the_key_back_to_its_value_before(tmp_path: Path) -> None:
    record = record_of(tmp_path / "r.jsonl", [
        ("test_pollutes", [env_change("ZOO", "off", "on")]),
        ("test_unsets", [env_change("ZOO", "on", "off")]),
        ("test_fake_unsets", [env_change("ZOO", "on", "off")]),
        ("test_other", [env_change("ZOO", "on", "half")]),
        ("test_pollutes_again", [env_change("ZOO", "off", "max")])],
        "test_victim", failure())
    f, runner = verify(record, _pollutes_again, cleaners=True)
    assert f.before == "off"
    assert [o[1] for label, o in runner.asked if label == "cleaner"] == [
        nid("test_unsets"), nid("test_fake_unsets")]
