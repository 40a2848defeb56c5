"""The first pair runs as the printed line; it proves what a pair replay proves, no less.

A printed line's failure is read from pytest's console: its exception type, not its frame.  A
top suspect whose pair fails the victim with the same exception type at another line is not
the polluter: the run failed at the first assertion, the pair at the second.  The printed pair
must not be taken for the proof there (the replays go on, and prove the real polluter), as a
pair replay, which compares the frame, would not.

Real sessions; the printed line is run again here under plain pytest.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from repro_check import check_reproductions
from suite_runs import run_suite, write_suite

pytestmark = pytest.mark.slow

TWO_ASSERTS = '''
    import os


    def test_a_sets_first():
        os.environ["ZOO_FIRST"] = "1"


    def test_b_sets_second():
        os.environ["ZOO_SECOND"] = "1"


    def one():
        return os.environ.get("ZOO_FIRST")


    def two():
        return os.environ.get("ZOO_SECOND")


    def test_victim():
        assert one() is None, "leaked 1"
        assert two() is None, "leaked 2"
    '''


def test_a_printed_pair_failing_at_another_line_is_no_proof(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {"test_zoo.py": TWO_ASSERTS})
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_victim")
    assert f["status"] == "verified", run.output[-3000:]
    runs = [(r["label"], r["order"][0], r["outcome"]) for r in f["replays"]]
    # The shape: the top suspect is test_b, whose printed pair fails the victim (with an
    # AssertionError, at the second assertion).
    assert runs[1] == ("pair-printed", "test_zoo.py::test_b_sets_second", "failed"), runs
    # Not taken as the proof: test_a is the polluter, its line confirmed as printed.
    assert f["polluters"] == ["test_zoo.py::test_a_sets_first"], (f["polluters"], runs)
    assert f["proven_keys"] == ["env:ZOO_FIRST"], f
    assert runs[-1][0] == "confirm", runs
    check_reproductions(run.output, root, ["test_victim"], expect="leaked 1")
