"""verify and the files an earlier run left, against a world given as a rule.

A victim that fails alone because an earlier run's test left a file: the file found in the
records of the runs folder and its writer proven the polluter across runs (or the victim
unexplained, or not order-dependent, where the replays say so).  The same rule-answered runner
as ``test_verify_verdicts.py``; which files are found: ``test_leftovers.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rule_world import (
    Outcome,
    RuleRunner,
    failure,
    labels,
    nid,
    record_of,
)

from statesnap.analysis.attribution import attribute
from statesnap.analysis.findings import (
    NOT_ORDER_DEPENDENT,
    UNEXPLAINED,
    VERIFIED,
)
from statesnap.analysis.hints import hint_for
from statesnap.proof.verify import Verifier
from statesnap.record.journal import Record, RecordWriter


def _leftover_world(tmp_path: Path) -> tuple[Record, Path]:
    """A project with two files an earlier run's tests left, and a record of the run now."""
    root = tmp_path / "project"
    runs = root / ".pytest_cache" / "statesnap" / "runs"
    runs.mkdir(parents=True)
    for name in ("cache.db", "notes.txt"):
        (root / name).write_text("old")
    fp = {"size": 3, "mtime_ns": 1}
    w = RecordWriter(runs / "earlier.jsonl")
    w.write({"type": "header", "format": 1, "worker": "main", "rootdir": str(root),
             "started": 1.0})
    for i, (name, key) in enumerate([("test_writes_cache", "cache.db"),
                                     ("test_writes_notes", "notes.txt")]):
        w.write({"type": "test", "index": i, "nodeid": nid(name), "worker": "main",
                 "outcome": "passed", "phases": {"call": "passed"}, "duration": 0.0,
                 "changes": [{"probe": "files", "key": key, "change": "added",
                              "before": None, "after": fp}]})
    w.write({"type": "footer", "exitstatus": 0, "tests": 2})
    w.close()
    record = record_of(runs / "now.jsonl", [("test_other", [])], "test_victim", failure())
    record.header.update({"rootdir": str(root), "started": 2.0})
    return record, root


def test_a_file_an_earlier_run_left_is_found_and_proven_against_its_writer(
        tmp_path: Path) -> None:
    record, root = _leftover_world(tmp_path)
    seen: list[set[str]] = []

    def rule(order: list[str], restore: Mapping[str, Any] | None) -> Outcome:
        aside = {p.name for p in runner.aside.created} if runner.aside else set()
        seen.append(aside)
        present = "cache.db" not in aside or nid("test_writes_cache") in order
        return failure() if present else None

    (f,) = attribute(record)
    runner = RuleRunner(record, rule)
    Verifier(record, runner, budget=60).verify(f)
    assert f.status == VERIFIED
    assert f.polluters == [nid("test_writes_cache")]
    assert [lo["path"] for lo in f.leftovers] == ["cache.db"]
    assert (f.probe, f.key, f.proven_keys) == ("files", "cache.db", ["files:cache.db"])
    assert (f.before, f.after, f.hint_proven) == (None, {"size": 3, "mtime_ns": 1}, True)
    assert f.hint == hint_for("files", "cache.db", "added")
    assert (f.note or "").startswith("an earlier run left cache.db on disk (cache.db by "
                                     f"{nid('test_writes_cache')} (record earlier.jsonl))")
    assert f.repro.endswith(f"{nid('test_writes_cache')} {nid('test_victim')}")
    order = [nid("test_writes_cache"), nid("test_victim")]
    assert runner.asked[-2:] == [("leftover-pair", order), ("confirm", order)]
    assert runner.printed == [f.repro]
    # Alone as recorded; alone with every leftover aside (it passes); ddmin's first half
    # (cache.db kept: it fails, so no more is tried); the proof, every leftover aside; the
    # printed line, every leftover aside too.
    assert seen == [set(), {"cache.db", "notes.txt"}, {"notes.txt"}, {"cache.db", "notes.txt"},
                    {"cache.db", "notes.txt"}]
    assert labels(runner) == ["alone", "leftover", "leftover", "leftover-pair", "confirm"]
    assert runner.aside is None  # nothing stays set aside after the finding
    assert (root / "cache.db").read_text() == "old"


def test_a_leftover_whose_writer_does_not_break_it_again_is_unexplained(
        tmp_path: Path) -> None:
    record, _ = _leftover_world(tmp_path)

    def rule(order: list[str], restore: Mapping[str, Any] | None) -> Outcome:
        aside = {p.name for p in runner.aside.created} if runner.aside else set()
        return None if "notes.txt" in aside else failure()

    (f,) = attribute(record)
    runner = RuleRunner(record, rule)
    Verifier(record, runner, budget=60).verify(f)
    assert f.status == UNEXPLAINED
    assert (f.polluters, f.repro, f.probe) == ([], "", None)
    assert [lo["writer"] for lo in f.leftovers] == [nid("test_writes_notes")]
    assert "did not break it again" in (f.note or "")


def test_a_victim_failing_without_the_leftovers_too_is_not_order_dependent(
        tmp_path: Path) -> None:
    record, _ = _leftover_world(tmp_path)
    (f,) = attribute(record)
    runner = RuleRunner(record, lambda order, restore: failure())
    Verifier(record, runner, budget=60).verify(f)
    assert f.status == NOT_ORDER_DEPENDENT and f.leftovers == []
    assert labels(runner) == ["alone", "leftover"]


def test_two_files_left_by_two_earlier_tests_are_both_proven_the_first_named(
        tmp_path: Path) -> None:
    record, _ = _leftover_world(tmp_path)
    writers = {"cache.db": nid("test_writes_cache"), "notes.txt": nid("test_writes_notes")}

    def rule(order: list[str], restore: Mapping[str, Any] | None) -> Outcome:
        aside = {p.name for p in runner.aside.created} if runner.aside else set()
        present = [name for name, w in writers.items() if name not in aside or w in order]
        return failure() if len(present) == 2 else None  # it needs both files

    (f,) = attribute(record)
    runner = RuleRunner(record, rule)
    progress: list[str] = []
    Verifier(record, runner, budget=60, progress=progress.append).verify(f)
    assert f.status == VERIFIED
    assert f.polluters == [nid("test_writes_cache"), nid("test_writes_notes")]
    assert [lo["path"] for lo in f.leftovers] == ["cache.db", "notes.txt"]
    assert (f.probe, f.key, f.after) == ("files", "cache.db", {"size": 3, "mtime_ns": 1})
    assert f.proven_keys == ["files:cache.db", "files:notes.txt"] and f.hint_proven
    assert f.repro.endswith(f"{nid('test_writes_cache')} {nid('test_writes_notes')} "
                            f"{nid('test_victim')}")
    assert (f.note or "").startswith("an earlier run left cache.db, notes.txt on disk")
    # alone, all aside, each file alone (neither fails it), then the proof.
    assert labels(runner) == ["alone", "leftover", "leftover", "leftover", "leftover-pair",
                              "confirm"]
    assert progress[-2] == (f"statesnap: replaying {nid('test_writes_cache')} + "
                            f"{nid('test_writes_notes')} → {nid('test_victim')}")
