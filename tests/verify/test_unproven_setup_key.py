"""A class set-up's key that no replay proved comes with no fix worded as the fix.

The shape of stowage (the corpus case ``stowage-symlink-left``): ``setup_class`` makes a
fresh temporary directory outside the rootdir and keeps its path on the class; one test
leaves a symlink in it, a later test of the class lists the directory.  The polluter is
proven by its pair; the state is the symlink, which no probe of the session watches, and
putting back ``dir`` (the same path in that process) does not heal the victim.  The finding
names the ranked key, and must not tell the user "undo it in teardown_class" as the fix,
nor drop the note that no key was proven.
"""

from __future__ import annotations

import json
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


        class TestWalk:
            @classmethod
            def setup_class(cls):
                cls.dir = tempfile.mkdtemp(prefix="zoo_walk_")
                open(os.path.join(cls.dir, "_vimrc"), "w").close()

            @classmethod
            def teardown_class(cls):
                shutil.rmtree(cls.dir)

            def test_a_links(self):
                os.symlink(__file__, os.path.join(self.dir, ".vimrc"))

            def test_b_walks(self):
                assert sorted(os.listdir(self.dir)) == ["_vimrc"], "a link left behind"
        ''',
}


def test_an_unproven_setup_key_gets_no_fix_worded_as_the_fix(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SUITE)
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_b_walks")
    assert f["status"] == "verified", run.output[-3000:]
    assert f["polluters"] == ["test_walk.py::TestWalk::test_a_links"], f["polluters"]
    assert f["proven_keys"] == [] and not f["hint_proven"], f
    assert (f["probe"], f["key"]) == ("attributes", "test_walk:TestWalk.dir"), f
    # The terminal: the state line says the key is ranked, the fix line says it rests on it.
    block = run.output[run.output.index("[VERIFIED] test_walk.py::TestWalk::test_b_walks"):]
    assert "(ranked first from the record; no replay proved the key)" in block, block
    assert "    fix, if that key is the cause (not proven): " in block, block
    assert "\n    fix: " not in block, block
    # The note keeps what the key replays found, and words no fix of its own.
    assert "no key proven: restoring the polluter's" in f["note"], f["note"]
    assert "undo it" not in f["note"], f["note"]
    # The summary JSON: the hint is kept, marked unproven by hint_proven and proven_keys.
    data = json.loads(run.json_path.read_text(encoding="utf-8"))
    (stored,) = [x for x in data["findings"] if x["victim"].endswith("test_b_walks")]
    assert stored["hint"] and stored["hint_proven"] is False and stored["proven_keys"] == []
    check_reproductions(run.output, root, ["test_b_walks"], expect="a link left behind")
