"""A polluter that records no change is found by a classmate's pair, not delta debugging.

stowage's shape (corpus case ``stowage-symlink-left``): ``setup_class`` makes a temporary
directory outside the rootdir; one test leaves a symlink in it (no probe sees it, so the test
is no suspect), and a later test of the class lists the directory.  Where no ranked suspect's
pair fails the victim (here there is none), the tests of the victim's class that ran before it
are replayed as pairs next, nearest first, before any delta debugging over everything that ran
before the victim.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from repro_check import check_reproductions
from suite_runs import run_suite, write_suite

pytestmark = pytest.mark.slow

SUITE = {
    "test_walk.py": '''
        import os
        import shutil
        import tempfile


        def test_module_level():
            assert True


        class TestWalk:
            @classmethod
            def setup_class(cls):
                cls.dir = tempfile.mkdtemp(prefix="zoo_walk_")
                open(os.path.join(cls.dir, "_vimrc"), "w").close()

            @classmethod
            def teardown_class(cls):
                shutil.rmtree(cls.dir)

            def test_a_reads(self):
                assert os.path.isdir(self.dir)

            def test_b_links(self):
                os.symlink(__file__, os.path.join(self.dir, ".vimrc"))

            def test_c_reads_again(self):
                assert os.path.exists(os.path.join(self.dir, "_vimrc"))

            def test_d_walks(self):
                assert sorted(os.listdir(self.dir)) == ["_vimrc"], "a link left behind"
        ''',
}


def test_a_polluter_without_a_recorded_change_is_found_by_a_classmate_pair(
        tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SUITE)
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_d_walks")
    assert f["status"] == "verified", run.output[-3000:]
    assert f["polluters"] == ["test_walk.py::TestWalk::test_b_links"], f["polluters"]
    pairs = [(r["label"], r["order"][0].rpartition("::")[2], r["outcome"])
             for r in f["replays"] if r["label"] in ("pair", "ddmin")]
    # No test recorded a change the victim could see (no ranked suspect): the classmates,
    # nearest first, and no delta debugging over the four tests before the victim.
    assert pairs == [("pair", "test_c_reads_again", "passed"),
                     ("pair", "test_b_links", "failed")], f["replays"]
    check_reproductions(run.output, root, ["test_d_walks"], expect="a link left behind")
