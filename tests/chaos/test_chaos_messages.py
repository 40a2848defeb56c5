"""Messages about many like things are one line with a count and a few examples.

A test that leaves hundreds of descriptors open used to get one ``before replaying, let go
of any lock on ...`` line per descriptor before the session's replays; the record's
``released`` line keeps each one, the terminal gets one line.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pair_runs import run_case

pytestmark = [pytest.mark.needs_pidns, pytest.mark.slow]

OPEN = 300


def test_many_descriptors_let_go_of_are_one_line(tmp_path: Path) -> None:
    run = run_case(tmp_path, {"test_fds.py": f"""
        import os

        HELD = []

        def test_0_leaves_descriptors_open():
            HELD.extend(open(os.devnull) for _ in range({OPEN}))

        def test_1_polluter():
            os.environ["CHAOS_FLAG"] = "1"

        def test_2_victim():
            assert "CHAOS_FLAG" not in os.environ
        """})
    assert run.finding("test_2_victim")["status"] == "verified", run.output[-5000:]
    lines = [line for line in run.output.splitlines() if "let go of" in line]
    locks = [line for line in lines if "lock on" in line]
    assert len(locks) == 1, lines[:10]
    assert f"let go of {OPEN} file locks" in locks[0], locks[0]
    assert locks[0].count(os.devnull) == 3, locks[0]  # three examples
    released = [a for line in run.record_lines() if line["type"] == "released"
                for a in line["actions"]]
    assert sum("lock on" in a["what"] for a in released) == OPEN

