"""A real run's attribute changes, test after test, through one lineage of maps.

The ``attributes`` probe derives each map from the last (:mod:`statesnap.base.deltamap`), and
a diff compares only the keys the lineage touched, less those still holding the very same
object on both sides.  A key touched by an earlier test is in every later diff's candidates:
it must show again exactly when it moves again, never when another test moves something else;
a setup change keeps its fixture, a removal and an addition their kind, and a name set to an
equal value as a new object is no change (nor is it touched: the next real change still shows).
"""

from __future__ import annotations

from pathlib import Path

from suite_runs import run_suite, write_suite

SUITE = {
    "settings.py": '''
        MODE = "a"
        LEVEL = 1
        EXTRA = "x"
        ''',
    "test_settings.py": '''
        import pytest

        import settings


        @pytest.fixture
        def strict():
            settings.LEVEL = 5  # in the setup, and left
            yield


        def test_1_mode_b():
            settings.MODE = "b"

        def test_2_nothing():
            pass

        def test_3_mode_c():
            settings.MODE = "c"

        def test_4_extra_gone():
            del settings.EXTRA

        def test_5_new_name():
            settings.NEW = 1

        def test_6_level_in_setup(strict):
            pass

        def test_7_mode_rebuilt_equal():
            settings.MODE = "".join(["c"])

        def test_8_mode_d():
            settings.MODE = "d"

        def test_9_nothing():
            pass
        ''',
}


def test_each_test_shows_what_it_moved_and_nothing_earlier(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SUITE)
    run = run_suite(root, tmp_path / "out", "--statesnap-probes=attributes")
    assert run.proc.returncode == 0, run.output[-3000:]
    seen = {t.nodeid.rsplit("::", 1)[1]: [(c.key, c.change, c.before, c.after, c.phase,
                                          c.fixture)
                                         for c in t.changes if c.key.startswith("settings:")]
            for t in run.record().tests}
    mode_b, mode_c = seen["test_1_mode_b"][0][3], seen["test_3_mode_c"][0][3]
    level = seen["test_6_level_in_setup"]
    assert seen == {
        "test_1_mode_b": [("settings:MODE", "changed", seen["test_1_mode_b"][0][2], mode_b,
                           "call", None)],
        "test_2_nothing": [],
        "test_3_mode_c": [("settings:MODE", "changed", mode_b, mode_c, "call", None)],
        "test_4_extra_gone": [("settings:EXTRA", "removed", seen["test_4_extra_gone"][0][2],
                               None, "call", None)],
        "test_5_new_name": [("settings:NEW", "added", None, seen["test_5_new_name"][0][3],
                             "call", None)],
        "test_6_level_in_setup": [("settings:LEVEL", "changed", level[0][2], level[0][3],
                                   "setup", "strict")],
        "test_7_mode_rebuilt_equal": [],
        "test_8_mode_d": [("settings:MODE", "changed", mode_c, seen["test_8_mode_d"][0][3],
                           "call", None)],
        "test_9_nothing": [],
    }, run.output[-3000:]
    assert "'b'" in mode_b and "'c'" in mode_c and "5" in level[0][3]
    assert "'d'" in seen["test_8_mode_d"][0][3]
