"""A polluter that sets state to the value an earlier test already set still has its key proven.

The shape of pysllo's forced level (the corpus): ``test_a`` sets a class attribute 0 → 10,
``test_b`` sets it to 10 again (the session's record holds no change of it for ``test_b``) and
changes something harmless of its own.  The victim expects 0.  When the replays prove ``test_b``
the polluter (its printed pair), its own recorded change does not heal the victim; the key it
relies on is one ``test_b`` changes in a fresh process, as the first key replay's own record
shows.  The key replays try it after the polluter's own changes, and the finding names it,
proven.

Real sessions; the printed line is run again here under plain pytest.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from repro_check import check_reproductions
from suite_runs import run_suite, write_suite

pytestmark = pytest.mark.slow

ZOO = '''
    class Levels:
        chosen = 0
        extra = 0


    def current():
        return Levels.chosen
    '''

TESTS = '''
    import zoo


    def test_a_forces_by_value():
        zoo.Levels.chosen = 10


    def test_b_forces_by_name():
        zoo.Levels.extra = 1
        zoo.Levels.chosen = 10


    def test_victim_sees_the_default():
        assert zoo.current() == 0, "not the default"
    '''


def test_a_key_set_again_to_the_same_value_is_proven(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {"zoo.py": ZOO, "test_levels.py": TESTS})
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_victim_sees_the_default")
    assert f["status"] == "verified", run.output[-3000:]
    # The ranking's first suspect is the latest writer: test_b, which the record shows
    # changing ``extra`` only.
    assert f["polluters"] == ["test_levels.py::test_b_forces_by_name"], f
    assert f["proven_keys"] == ["attributes:zoo:Levels.chosen"], (f["proven_keys"], f["note"])
    assert f["hint_proven"], f
    restored = [r["restored"] for r in f["replays"] if r["label"] == "key"]
    assert restored[-1] == ["attributes:zoo:Levels.chosen"], f["replays"]
    assert ["attributes:zoo:Levels.extra"] in restored, f["replays"]  # its own change first
    check_reproductions(run.output, root, ["test_victim_sees_the_default"],
                        expect="not the default")
