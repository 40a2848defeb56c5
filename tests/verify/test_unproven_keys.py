"""A verified finding whose key no replay proved says so on its state line.

The polluter is proven by ``[polluter, victim]``; the key is proven only by a key replay that
heals the victim.  A thread left running cannot be put back, so no key replay runs: the state
line must not read like the proven ones (``restoring it makes the victim pass``), and a
reader must not take a ranked key for a proven one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from repro_check import check_reproductions
from suite_runs import run_suite, write_suite

pytestmark = pytest.mark.slow


def test_a_key_no_replay_proved_is_said_to_be_ranked(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {"test_threads.py": '''
        import threading

        STOP = threading.Event()


        def test_a_starts_a_worker():
            threading.Thread(target=STOP.wait, name="zoo-worker", daemon=True).start()


        def test_b_no_stray_threads():
            names = [t.name for t in threading.enumerate()]
            assert "zoo-worker" not in names, f"stray threads: {names}"
        '''})
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_b_no_stray_threads")
    assert f["status"] == "verified", run.output[-3000:]
    assert (f["probe"], f["key"]) == ("threads", "zoo-worker")
    assert f["proven_keys"] == [] and not f["hint_proven"]
    state = next(ln for ln in run.output.splitlines() if "state: threads:zoo-worker" in ln)
    assert state.endswith("(ranked first from the record; no replay proved the key)"), state
    assert "makes the victim pass" not in run.output
    assert f["note"] == ("no key proven: no replay can put back what the polluter changed "
                         "(threads:zoo-worker)"), f["note"]
    check_reproductions(run.output, root, ["test_b_no_stray_threads"], expect="stray threads")



def test_keys_whose_restoration_does_not_heal_are_not_claimed(tmp_path: Path) -> None:
    # The polluter leaves a variable set (restorable, proven harmless by its key replay) and
    # an entry in a function's mutable default (no probe sees it).
    root = write_suite(tmp_path / "suite", {"test_defaults.py": '''
        import os


        def register(name, seen=[]):
            seen.append(name)
            return seen


        def test_a_registers_and_sets_a_flag():
            os.environ["ZOO_FLAG"] = "1"
            register("a")


        def test_b_registers_fresh():
            assert register("b") == ["b"], "registry not fresh"
        '''})
    run = run_suite(root, tmp_path / "out")
    f = run.finding("test_b_registers_fresh")
    assert f["status"] == "verified", run.output[-3000:]
    assert f["proven_keys"] == [] and not f["hint_proven"]
    restored = [r["restored"] for r in f["replays"] if r["label"] == "key"]
    assert restored == [["env:ZOO_FLAG"]], f["replays"]
    assert ("no key proven: restoring the polluter's 1 restorable change(s) before the victim "
            "does not make it pass") in f["note"], f["note"]
    state = next(ln for ln in run.output.splitlines() if "state: " in ln)
    assert state.endswith("(ranked first from the record; no replay proved the key)"), state
    check_reproductions(run.output, root, ["test_b_registers_fresh"], expect="not fresh")
