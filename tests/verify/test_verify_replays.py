"""verify's handling of each replay, against a rule-answered runner.

Repeats that disagree, replays that time out or cannot run (the printed line included), the
budget, what the record keeps of each replay (outcome, signature, log, restored keys), and the
files a replay could not start from.  Each test pins the verdict and the replays asked, so
that a flipped comparison or a changed limit fails one of them.  Which tests are blamed:
test_verify_polluters.py; keys: test_verify_keys.py; cleaners: test_verify_cleaners.py.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from rule_world import (
    ABSENT,
    Outcome,
    Restore,
    RuleRunner,
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
    NOT_DETERMINISTIC,
    SUSPECTED,
    UNEXPLAINED,
    VERIFIED,
)
from statesnap.proof.verify import (
    ReplayError,
    Verifier,
)
from statesnap.replay.filestage import FileStage
from statesnap.replay.repro import repro_command
from statesnap.replay.result import ReplayResult

# -- repeats ------------------------------------------------------------------------------

def test_repeats_that_disagree_make_the_finding_not_deterministic(tmp_path: Path) -> None:
    record = one_polluter(tmp_path, "ZOO_A")
    calls: list[int] = []

    def rule(order: list[str], restore: Restore) -> Outcome:
        calls.append(1)
        if len(order) == 1:
            return None
        return failure() if len(calls) % 2 else None  # the pair fails once in two

    f, runner = verify(record, rule, repeat=2)
    assert f.status == NOT_DETERMINISTIC and f.polluters == []
    assert f.note == (f"the failure is not deterministic: [{nid('test_a')}, "
                      f"{nid('test_victim')}]: the victim failed in 1 of 2 repeats")
    assert labels(runner) == ["alone", "alone", "pair-printed", "pair-printed"]
    assert [r.outcome for r in f.replays] == ["passed", "passed", "failed", "passed"]


def test_repeats_that_agree_prove_it_with_each_replay_repeated(tmp_path: Path) -> None:
    record = one_polluter(tmp_path, "ZOO_A")
    f, runner = verify(record, lambda order, restore: needs_a(restore, order), repeat=3)
    assert f.status == VERIFIED and f.polluters == [nid("test_a")]
    assert f.proven_keys == ["env:ZOO_A"]
    # The pair is the printed line, run as printed: repeated like every replay (and not
    # confirmed again: it is the line printed).
    assert labels(runner) == ["alone"] * 3 + ["pair-printed"] * 3 + ["key"] * 3
    assert len(f.replays) == 9
    # No repeat at all is one run of each replay.
    f, runner = verify(record, lambda order, restore: needs_a(restore, order), repeat=0)
    assert f.status == VERIFIED and labels(runner) == ["alone", "pair-printed", "key"]


@pytest.mark.parametrize(("second", "status"), [(31, VERIFIED), (30, VERIFIED)])
def test_repeats_failing_at_different_lines_count_as_the_same_failure(
        tmp_path: Path, second: int, status: str) -> None:
    record = one_polluter(tmp_path, "ZOO_A")
    lines = iter([30, second] * 10)

    def rule(order: list[str], restore: Restore) -> Outcome:
        if nid("test_a") not in order or restored_keys(restore):
            return None
        return failure(line=next(lines))

    f, _ = verify(record, rule, repeat=2)
    assert f.status == status and f.polluters == [nid("test_a")]


def test_repeats_failing_elsewhere_every_time_do_not_prove_it(tmp_path: Path) -> None:
    record = one_polluter(tmp_path, "ZOO_A")

    def rule(order: list[str], restore: Restore) -> Outcome:
        return failure(line=31) if nid("test_a") in order else None

    f, _ = verify(record, rule, repeat=2)
    assert f.status == UNEXPLAINED


def test_a_victim_missing_from_one_repeat_alone_did_not_run(tmp_path: Path) -> None:
    record = one_polluter(tmp_path, "ZOO_A")
    answers = iter([ABSENT, None])

    def rule(order: list[str], restore: Restore) -> Outcome:
        return next(answers) if len(order) == 1 else failure()

    f, runner = verify(record, rule, repeat=2)
    assert f.status == SUSPECTED
    assert f.note == (f"a replay could not run: {nid('test_victim')} did not run when "
                      "replayed alone")
    assert labels(runner) == ["alone", "alone"]
    assert [r.outcome for r in f.replays] == ["not run", "passed"]


def test_a_victim_missing_from_its_replay_alone_names_the_last_log(tmp_path: Path) -> None:
    record = one_polluter(tmp_path, "ZOO_A")
    made: list[Path] = []

    def rule(order: list[str], restore: Restore) -> ReplayResult:
        made.append(tmp_path / "r.logs" / f"alone-{len(made) + 1}.log")
        return ReplayResult(order=order, log=made[-1])  # it ran, but the victim is not in it

    with pytest.raises(ReplayError, match="did not run when replayed alone") as info:
        verify(record, rule, raise_errors=True, repeat=3)
    assert info.value.log == tmp_path / "r.logs" / "alone-3.log"
    made.clear()
    f, _ = verify(record, rule, repeat=3)
    assert f.status == SUSPECTED
    assert f.logs == ["r.logs/alone-1.log", "r.logs/alone-2.log", "r.logs/alone-3.log"]


@pytest.mark.parametrize(("tests", "words"), [
    # Two suspects together: three words in the order, all shown.
    ([("test_a", [env_change("ZOO_A", None, "1")]), ("test_c", [env_change("ZOO_C", None, "1")])],
     "[{a}, {c}, {v}]"),
    # The whole prefix of three: four words, the middle ones counted.
    ([("test_a", []), ("test_b", []), ("test_c", [])], "[{a}, … 2 more …, {v}]"),
    ([("test_a", []), ("test_b", []), ("test_c", []), ("test_d", [])],
     "[{a}, … 3 more …, {v}]"),
])
def test_a_long_order_is_shortened_in_the_note(tmp_path: Path,
                                               tests: list[tuple[str, list[Any]]],
                                               words: str) -> None:
    record = record_of(tmp_path / "r.jsonl", tests, "test_victim", failure())
    calls: list[int] = []

    def rule(order: list[str], restore: Restore) -> Outcome:
        if len(order) <= 2:
            return None
        calls.append(1)
        return failure() if len(calls) % 2 else None

    f, _ = verify(record, rule, repeat=2)
    assert f.status == NOT_DETERMINISTIC
    order = words.format(a=nid("test_a"), c=nid("test_c"), v=nid("test_victim"))
    assert f.note == (f"the failure is not deterministic: {order}: the victim failed in 1 of "
                      "2 repeats")


def test_each_replay_gets_what_is_left_of_the_budget_as_its_timeout(tmp_path: Path) -> None:
    record = one_polluter(tmp_path, "ZOO_A")
    timeouts: list[float | None] = []

    class TimedRunner(RuleRunner):
        def run(self, order: Sequence[str], restore: Restore = None, label: str = "replay",
                timeout: float | None = None) -> ReplayResult:
            timeouts.append(timeout)
            return super().run(order, restore, label, timeout)

    (f,) = attribute(record)
    Verifier(record, TimedRunner(record, lambda order, restore: needs_a(restore, order)),
             budget=50).verify(f)
    assert f.status == VERIFIED and len(timeouts) == 3  # alone, the printed pair, key
    assert all(t is not None and 40 < t <= 50 for t in timeouts)
    assert timeouts == sorted(timeouts, reverse=True)


# -- replays that time out or cannot run ----------------------------------------------------

def test_a_replay_that_could_not_run_is_the_findings_note_or_an_error(tmp_path: Path) -> None:
    record = one_polluter(tmp_path, "ZOO_A")
    log = tmp_path / "r.logs" / "alone-1.log"

    def rule(order: list[str], restore: Restore) -> ReplayResult:
        return ReplayResult(order=order, error="ERROR: file or directory not found", log=log)

    f, runner = verify(record, rule)
    assert f.status == SUSPECTED
    assert f.note == "a replay could not run: ERROR: file or directory not found"
    assert labels(runner) == ["alone"]
    assert f.logs == ["r.logs/alone-1.log"]  # relative to the record's folder
    (run,) = f.replays
    assert (run.outcome, run.signature, run.log) == ("could not run", None, "r.logs/alone-1.log")
    with pytest.raises(ReplayError, match="file or directory not found") as info:
        verify(record, rule, raise_errors=True)
    assert info.value.log == log


def test_a_verifier_built_without_raise_errors_notes_a_replay_that_could_not_run(
        tmp_path: Path) -> None:
    # backfill builds its Verifier without raise_errors: the finding says why, nothing raises.
    record = one_polluter(tmp_path, "ZOO_A")
    (f,) = attribute(record)
    runner = RuleRunner(record, lambda order, restore: ReplayResult(
        order=order, error="no interpreter"))
    Verifier(record, runner, budget=60).verify(f)
    assert f.status == SUSPECTED
    assert f.note == "a replay could not run: no interpreter"
    assert labels(runner) == ["alone"]


def test_an_error_with_outcomes_is_a_replay_that_ran(tmp_path: Path) -> None:
    record = one_polluter(tmp_path, "ZOO_A")

    def rule(order: list[str], restore: Restore) -> ReplayResult:
        result = ReplayResult(order=order, error="a warning on stderr")
        result.outcomes = {n: "passed" for n in order}
        if nid("test_a") in order and not restored_keys(restore):
            result.outcomes[nid("test_victim")] = "failed"
            result.failures[nid("test_victim")] = failure()
        return result

    f, _ = verify(record, rule, raise_errors=True)
    assert f.status == VERIFIED and f.proven_keys == ["env:ZOO_A"]


def test_a_replay_that_timed_out_leaves_the_finding_suspected(tmp_path: Path) -> None:
    record = one_polluter(tmp_path, "ZOO_A")
    log = tmp_path.parent / "elsewhere.log"  # outside the record's folder: kept absolute

    def rule(order: list[str], restore: Restore) -> ReplayResult | Outcome:
        if len(order) == 1:
            return None
        return ReplayResult(order=order, timed_out=True, timeout=7.4, log=log)

    f, runner = verify(record, rule)
    assert f.status == SUSPECTED
    assert f.note == (f"a replay of 2 test(s) timed out after 7s and was killed (log: {log})")
    assert labels(runner) == ["alone", "pair-printed"]
    assert [r.outcome for r in f.replays] == ["passed", "timed out"]
    assert f.replays[1].log == str(log) and f.logs == [str(log)]


def test_a_replay_that_timed_out_past_the_budget_spent_it(tmp_path: Path) -> None:
    record = one_polluter(tmp_path, "ZOO_A")

    def rule(order: list[str], restore: Restore) -> ReplayResult:
        time.sleep(0.3)  # past the budget below: the runner's timeout was what was left
        return ReplayResult(order=order, timed_out=True, timeout=0.2)

    (f,) = attribute(record)
    runner = RuleRunner(record, rule)
    Verifier(record, runner, budget=0.2).verify(f)
    assert (f.note or "").startswith(
        "the verification budget was spent before this finding was proven (")
    assert labels(runner) == ["alone"]


def test_the_budget_is_checked_before_each_repeat(tmp_path: Path) -> None:
    record = one_polluter(tmp_path, "ZOO_A")

    def rule(order: list[str], restore: Restore) -> Outcome:
        time.sleep(0.3)
        return None

    (f,) = attribute(record)
    runner = RuleRunner(record, rule)
    Verifier(record, runner, budget=0.2, repeat=3).verify(f)
    assert (f.note or "").startswith(
        "the verification budget was spent before this finding was proven (")
    assert labels(runner) == ["alone"]


# -- what the record keeps of each replay -------------------------------------------------

def test_each_replay_is_kept_with_its_command_outcome_signature_and_restored_keys(
        tmp_path: Path) -> None:
    record = one_polluter(tmp_path, "ZOO_A")
    f, runner = verify(record, lambda order, restore: needs_a(restore, order))
    assert f.status == VERIFIED
    alone, pair, key = f.replays
    # The pair was the printed line, run as printed: it is the confirmation too.
    assert (pair.command, pair.outcome) == (f.repro, "failed")
    assert runner.printed == [f.repro]
    assert (alone.label, alone.outcome, alone.signature, alone.restored) == (
        "alone", "passed", None, [])
    assert (pair.label, pair.outcome, pair.signature, pair.restored) == (
        "pair-printed", "failed", "AssertionError at tests/test_zoo.py:30", [])
    assert (key.label, key.outcome, key.restored) == ("key", "passed", ["env:ZOO_A"])
    assert pair.order == [nid("test_a"), nid("test_victim")]
    assert pair.command == repro_command(record.header, pair.order)
    assert alone.log is None and f.logs == []
    assert runner.restores[2] == {"before": nid("test_victim"), "keys": [["env", "ZOO_A"]]}


def test_a_victim_that_crashed_in_the_replay_is_kept_as_crashed(tmp_path: Path) -> None:
    record = one_polluter(tmp_path, "ZOO_A")

    def rule(order: list[str], restore: Restore) -> ReplayResult:
        result = ReplayResult(order=order, outcomes={n: "passed" for n in order})
        if nid("test_a") in order:
            result.outcomes[nid("test_victim")] = "crashed"
        return result

    f, _ = verify(record, rule)
    # A crash matches any failure of the run (the replay's signature is unknown).
    assert f.status == VERIFIED and f.polluters == [nid("test_a")]
    assert [(r.outcome, r.signature) for r in f.replays[:2]] == [
        ("passed", None), ("crashed", "crash")]


# -- files the replays could not start from ------------------------------------------------

@pytest.mark.parametrize(("count", "shown"), [
    (1, "/z/f0"), (3, "/z/f0, /z/f1, /z/f2"), (4, "/z/f0, /z/f1, /z/f2 and 1 more"),
    (7, "/z/f0, /z/f1, /z/f2 and 4 more")])
def test_files_a_replay_could_not_restore_are_named_on_an_unproven_finding(
        tmp_path: Path, count: int, shown: str) -> None:
    record = one_polluter(tmp_path, "ZOO_A")
    (f,) = attribute(record)
    runner = RuleRunner(record, lambda order, restore: None)
    runner.stage = FileStage(unrestorable={Path(f"/z/f{i}"): "deleted by the recorded run"
                                           for i in reversed(range(count))})
    Verifier(record, runner, budget=60).verify(f)
    assert f.status == UNEXPLAINED
    assert (f.note or "").endswith(
        "outside the suite's order; replays could not start from the files the recorded "
        f"run started from ({shown}: deleted or rewritten by the run)")


def test_files_a_replay_could_not_restore_do_not_matter_to_a_proven_finding(
        tmp_path: Path) -> None:
    record = one_polluter(tmp_path, "ZOO_A")
    (f,) = attribute(record)
    runner = RuleRunner(record, lambda order, restore: needs_a(restore, order))
    runner.stage = FileStage(unrestorable={Path("/z/f0"): "deleted by the recorded run"})
    Verifier(record, runner, budget=60).verify(f)
    assert f.status == VERIFIED and f.note is None


def test_an_empty_stage_adds_nothing(tmp_path: Path) -> None:
    record = one_polluter(tmp_path, "ZOO_A")
    (f,) = attribute(record)
    runner = RuleRunner(record, lambda order, restore: None)
    runner.stage = FileStage()
    Verifier(record, runner, budget=60).verify(f)
    assert f.status == UNEXPLAINED and "could not start" not in (f.note or "")


def test_a_printed_line_cut_short_leaves_the_finding_unverified(tmp_path: Path) -> None:
    # The printed line (the top suspect's pair, run as printed) timed out: it never failed
    # the victim, so the finding is not verified (the note says what stopped it).
    record = one_polluter(tmp_path, "ZOO_A")

    class Hangs(RuleRunner):
        def run_printed(self, command: str, order: Sequence[str], label: str = "confirm",
                        timeout: float | None = None,
                        python: str | None = None) -> ReplayResult:
            self.asked.append((label, list(order)))
            return ReplayResult(order=list(order), timed_out=True, timeout=5.0)

    (f,) = attribute(record)
    runner = Hangs(record, lambda order, restore: needs_a(restore, order))
    Verifier(record, runner, budget=60).verify(f)
    assert labels(runner) == ["alone", "pair-printed"]
    assert f.status != VERIFIED and not f.repro_proven, f
    assert "timed out" in (f.note or ""), f.note
