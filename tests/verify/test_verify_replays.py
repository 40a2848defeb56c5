"""verify's handling of each replay and of key-level proofs, against a rule-answered runner.

Repeats that disagree, replays that time out or cannot run, the budget, what the record keeps
of each replay (outcome, signature, log, restored keys), the crashed victim, the files a
replay could not start from, which keys are proven and how many replays that may take,
fixture notes, cleaners, and :func:`verify_findings`.  Each test pins the verdict and the
replays asked, so that a flipped comparison or a changed limit fails one of them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
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
    NOT_DETERMINISTIC,
    SUSPECTED,
    UNEXPLAINED,
    VERIFIED,
)
from statesnap.analysis.hints import hint_for
from statesnap.proof.verify import (
    ReplayError,
    Verifier,
    verify_findings,
)
from statesnap.record.journal import Record, RecordWriter
from statesnap.record.reader import read_record
from statesnap.replay.filestage import FileStage
from statesnap.replay.repro import repro_command
from statesnap.replay.result import ReplayResult

Restore = Mapping[str, Any] | None
#: verify's limits, as documented (literals: a changed limit must fail these tests).
MAX_SINGLE_SUSPECTS, MAX_KEY_REPLAYS, MAX_SET_KEYS, MAX_CLEANER_REPLAYS = 5, 6, 24, 3


def restored_keys(restore: Restore) -> set[str]:
    return {k for _probe, k in (restore or {}).get("keys", [])}


def one_polluter(tmp_path: Path, *keys: str) -> Record:
    """``test_a`` sets ``keys``, ``test_b`` changes nothing, then the victim fails."""
    return record_of(tmp_path / "r.jsonl", [
        ("test_a", [env_change(k, None, "1") for k in keys]), ("test_b", [])],
        "test_victim", failure())


def needs_a(restore: Restore, order: list[str], key: str = "ZOO_A") -> Outcome:
    """The victim fails after test_a unless ``key`` is put back."""
    return failure() if nid("test_a") in order and key not in restored_keys(restore) else None


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


# -- the victim that crashed the recorded run ----------------------------------------------

def _crashed_record(path: Path) -> Record:
    w = RecordWriter(path)
    w.write({"type": "header", "format": 2, "worker": "main", "rootdir": "/src/zoo",
             "args": ["tests"], "replay": {"cwd": "/src/zoo", "args": []},
             "probes": [{"name": "env", "status": "ok"}]})
    for index, name in enumerate(["test_a", "test_b", "test_c"]):
        w.write_start(index, nid(name))
        w.write({"type": "test", "index": index, "nodeid": nid(name), "worker": "main",
                 "outcome": "passed", "phases": {"setup": "passed", "call": "passed"},
                 "duration": 0.0, "changes": []})
    w.write_start(3, nid("test_victim"))  # the interpreter died in it: no test line
    w.close()
    return read_record(path)


def test_the_test_that_crashed_the_run_is_minimised_over_what_ran_before_it(
        tmp_path: Path) -> None:
    record = _crashed_record(tmp_path / "r.jsonl")
    assert record.running is not None and record.running["index"] == 3

    def rule(order: list[str], restore: Restore) -> Outcome:
        return failure("crash", None) if nid("test_b") in order else None

    f, runner = verify(record, rule)
    assert f.victim == nid("test_victim")
    assert f.status == VERIFIED and f.polluters == [nid("test_b")]
    assert runner.asked[1] == ("ddmin", [nid("test_a"), nid("test_b"), nid("test_c"),
                                         nid("test_victim")])


def test_at_most_five_single_suspects_are_replayed_in_pairs(tmp_path: Path) -> None:
    names = [f"test_{i}" for i in range(MAX_SINGLE_SUSPECTS + 2)]
    record = record_of(tmp_path / "r.jsonl",
                       [(n, [env_change(f"ZOO_{n}", None, "1")]) for n in names],
                       "test_victim", failure())

    def rule(order: list[str], restore: Restore) -> Outcome:
        return failure() if nid("test_0") in order and nid("test_1") in order else None

    f, runner = verify(record, rule)
    assert f.status == VERIFIED and f.polluters == [nid("test_0"), nid("test_1")]
    # The top suspect's pair as printed, the others' replays, then the top suspect's replay.
    assert labels(runner).count("pair-printed") == 1
    assert labels(runner).count("pair") == MAX_SINGLE_SUSPECTS
    assert runner.asked[1][1] == runner.asked[1 + MAX_SINGLE_SUSPECTS][1]
    assert runner.asked[2 + MAX_SINGLE_SUSPECTS] == (
        "ddmin", [*map(nid, names), nid("test_victim")])


def test_a_victim_that_ran_first_has_no_prefix_to_minimise(tmp_path: Path) -> None:
    record = record_of(tmp_path / "r.jsonl", [], "test_victim", failure())
    f, runner = verify(record, lambda order, restore: None)
    assert f.status == UNEXPLAINED and labels(runner) == ["alone"]


def test_only_tests_of_the_victims_worker_are_minimised(tmp_path: Path) -> None:
    gw0 = {"worker": "gw0"}
    record = record_of(tmp_path / "r.jsonl", [("test_a", []), ("test_other", []),
                                              ("test_b", [])], "test_victim", failure(),
                       extras={"test_other": {"worker": "gw1"}, "test_a": gw0, "test_b": gw0,
                               "test_victim": gw0})

    def rule(order: list[str], restore: Restore) -> Outcome:
        return failure() if nid("test_b") in order else None

    f, runner = verify(record, rule)
    assert f.status == VERIFIED and f.polluters == [nid("test_b")]
    assert runner.asked[1] == ("ddmin", [nid("test_a"), nid("test_b"), nid("test_victim")])


def test_tests_after_the_victim_are_never_blamed(tmp_path: Path) -> None:
    w = RecordWriter(tmp_path / "r.jsonl")
    w.write({"type": "header", "format": 2, "worker": "main", "rootdir": "/src/zoo",
             "args": ["tests"], "replay": {"cwd": "/src/zoo", "args": []},
             "probes": [{"name": "env", "status": "ok"}]})
    for index, name in enumerate(["test_a", "test_victim", "test_after"]):
        failed = name == "test_victim"
        line: dict[str, Any] = {
            "type": "test", "index": index, "nodeid": nid(name), "worker": "main",
            "outcome": "failed" if failed else "passed",
            "phases": {"setup": "passed", "call": "failed" if failed else "passed"},
            "duration": 0.0, "changes": []}
        if failed:
            line["failure"] = failure()
        w.write(line)
    w.write({"type": "footer", "exitstatus": 1, "tests": 3})
    w.close()
    record = read_record(tmp_path / "r.jsonl")

    def rule(order: list[str], restore: Restore) -> Outcome:
        return failure() if nid("test_after") in order else None

    f, runner = verify(record, rule)
    assert f.status == UNEXPLAINED
    assert runner.asked[1] == ("ddmin", [nid("test_a"), nid("test_victim")])


@pytest.mark.parametrize(("before", "after", "change"), [
    (None, "1", "added"), ("1", None, "removed"), ("1", "2", "changed")])
def test_the_hint_follows_the_proven_change(tmp_path: Path, before: str | None,
                                            after: str | None, change: str) -> None:
    record = record_of(tmp_path / "r.jsonl", [("test_a", [env_change("ZOO_A", before, after)])],
                       "test_victim", failure())
    f, _ = verify(record, lambda order, restore: needs_a(restore, order))
    assert (f.before, f.after, f.proven_keys) == (before, after, ["env:ZOO_A"])
    assert f.hint == hint_for("env", "ZOO_A", change)


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
