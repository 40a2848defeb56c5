"""Each test line's gauges in a real run: read again exactly when a gauging probe's map moved.

:class:`statesnap.record.gauges.Gauges` keeps the last reading while the maps of the probes
that define gauges (threads, fds, children) are the same objects, also across snapshots that
are new for another probe's sake (a module attribute set).  A thread and a descriptor left
open by one test, kept through the next, and ended by a third must show in each line.
"""

from __future__ import annotations

import json
from pathlib import Path

from suite_runs import run_suite, write_suite

SUITE = {
    "holder.py": '''
        NAME = "a"
        ''',
    "test_left_open.py": '''
        import os
        import threading

        import holder

        state = {}


        def test_1_starts_a_thread_and_opens_a_file():
            stop = threading.Event()
            worker = threading.Thread(target=stop.wait, args=(60,), name="left-running",
                                      daemon=True)
            worker.start()
            state.update(stop=stop, worker=worker, fd=os.open(os.devnull, os.O_RDONLY))

        def test_2_sets_an_attribute_only():
            holder.NAME = "b"

        def test_3_ends_both():
            state["stop"].set()
            state["worker"].join()
            os.close(state["fd"])

        def test_4_nothing():
            pass
        ''',
}


def test_gauges_follow_the_maps_that_moved(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SUITE)
    run = run_suite(root, tmp_path / "out")
    assert run.proc.returncode == 0, run.output[-3000:]
    lines = [json.loads(line) for line in run.record_path.read_text().splitlines()]
    gauges = {t["nodeid"].rsplit("::", 1)[1]: t.get("gauges", {})
              for t in lines if t["type"] == "test"}
    first, second, third, fourth = (gauges[n] for n in (
        "test_1_starts_a_thread_and_opens_a_file", "test_2_sets_an_attribute_only",
        "test_3_ends_both", "test_4_nothing"))
    assert first["threads"] == third["threads"] + 1, gauges
    assert first["fds"] == third["fds"] + 1, gauges
    assert second == first, gauges  # a new snapshot, the same gauging maps
    assert fourth == third, gauges
