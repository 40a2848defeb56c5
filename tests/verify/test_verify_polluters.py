"""Which earlier tests verify replays with the victim, and which it may blame.

Against a rule-answered runner: the test that crashed the recorded run minimised over what ran
before it, at most five single suspects tried in pairs, only the victim's worker's earlier
tests, never a test that ran after the victim, and the hint of the change proven.  Each test
pins the verdict and the replays asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rule_world import (
    MAX_SINGLE_SUSPECTS,
    Outcome,
    Restore,
    env_change,
    failure,
    labels,
    needs_a,
    nid,
    record_of,
    verify,
)

from statesnap.analysis.findings import (
    UNEXPLAINED,
    VERIFIED,
)
from statesnap.analysis.hints import hint_for
from statesnap.record.journal import Record, RecordWriter
from statesnap.record.reader import read_record

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
