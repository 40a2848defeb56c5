"""``statesnap replay``, ``diff`` and ``hunt`` show the verdicts the session stored in the record.

One suite recorded twice: A without the polluter (everything passes), B with it, verified in
the session.  The readers must show B's proven verdict, not one re-ranked from the record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from statesnap.record.journal import FORMAT
from statesnap.record.reader import read_record
from suite_runs import SuiteRun, run_suite, statesnap_cli, write_suite

SUITE = {
    "test_zoo.py": '''
        import os

        def test_a_sets_mode():
            os.environ["ZOO_MODE"] = "fast"

        def test_b_victim():
            assert os.environ.get("ZOO_MODE") is None

        def test_c_neutral():
            pass
        ''',
}
VICTIM, POLLUTER = "test_zoo.py::test_b_victim", "test_zoo.py::test_a_sets_mode"


@dataclass
class Runs:
    root: Path
    a: SuiteRun
    b: SuiteRun


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    base = tmp_path_factory.mktemp("stored")
    root = write_suite(base / "suite", SUITE)
    a = run_suite(root, base / "out", "test_zoo.py", "-k", "not test_a", budget=0, name="a")
    assert a.proc.returncode == 0, a.output[-3000:]
    b = run_suite(root, base / "out", "test_zoo.py", budget=300, name="b")
    assert b.proc.returncode == 1, b.output[-3000:]
    return Runs(root, a, b)


def test_the_record_keeps_the_proven_verdict_and_its_replays(runs: Runs) -> None:
    record = read_record(runs.b.record_path)
    assert record.header["format"] == FORMAT  # 2 and later keep verdicts
    (line,) = record.verdicts
    assert (line["victim"], line["status"], line["polluters"]) == (VICTIM, "verified",
                                                                   [POLLUTER])
    assert line["proven_keys"] == ["env:ZOO_MODE"]
    labels = [(r["label"], r["outcome"]) for r in line["replays"]]
    # The first pair is the printed line, run as printed (it confirms it too).
    assert labels[:2] == [("alone", "passed"), ("pair-printed", "failed")]
    # Read from the printed line's console output: the exception type (its frame was
    # checked in that output, not stored).
    assert line["replays"][1]["signature"] == "AssertionError"
    # The summary JSON the session wrote holds the same verdict.
    summary = json.loads(runs.b.json_path.read_text(encoding="utf-8"))
    assert summary["findings"][0]["status"] == "verified"


def test_replay_shows_the_stored_verdict(runs: Runs) -> None:
    cli = statesnap_cli("replay", str(runs.b.record_path), cwd=runs.root)
    assert cli.returncode == 1, cli.stderr
    section = cli.stdout.split(" statesnap ", 1)[1]
    assert f"[VERIFIED] {VICTIM}" in section
    assert f"polluted by: {POLLUTER}" in section
    assert f"the verdict the recorded run stored ({runs.b.record_path.resolve()})" in section
    assert "not replayed" not in section


def test_diff_shows_the_verdict_of_the_new_failure(runs: Runs) -> None:
    cli = statesnap_cli("diff", str(runs.a.record_path), str(runs.b.record_path), cwd=runs.root)
    assert cli.returncode == 0, cli.stderr
    assert "verdicts stored for the failures only in B:" in cli.stdout
    assert f"  [VERIFIED] {VICTIM} ← {POLLUTER} (env:ZOO_MODE)" in cli.stdout


def test_hunt_lists_the_recorded_runs_own_verdicts(runs: Runs) -> None:
    cli = statesnap_cli("hunt", str(runs.b.record_path), "--budget", "120", "-q",
                        cwd=runs.root)
    assert cli.returncode in (0, 1), cli.stderr
    assert "the recorded run's own failures, as its session proved them:" in cli.stdout
    assert f"  [VERIFIED] {VICTIM} ← {POLLUTER} (env:ZOO_MODE)" in cli.stdout
