"""``statesnap hunt --replay-workers 2``: the proofs of different suspects run side by side
(issue 28 §3), with the same verdicts and printed reproductions as one at a time.

A real recorded suite whose victims each have a polluter of their own (a variable, a module
attribute, a file written in the project: the workers then replay in scratch copies) and a
brittle test.  Each test of the suite logs when its process ran it: the side-by-side hunt must
have had two replays running at once, the one-at-a-time hunt never.  Every printed
``reproduce:`` line of the side-by-side hunt is run under plain pytest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hunt_helpers import Suite

from repro_check import check_reproductions

pytestmark = pytest.mark.slow

#: Every test appends ``pid start end`` to $SBS_LOG (outside the project: not a file the
#: suite leaves in it) around a short sleep, so that runs side by side overlap.
CONFTEST = '''
import os, time
import pytest

@pytest.fixture(autouse=True)
def _log_interval():
    start = time.time()
    time.sleep(0.3)
    yield
    path = os.environ.get("SBS_LOG")
    if path:
        with open(path, "a") as log:
            log.write(f"{os.getpid()} {start} {time.time()}\\n")
'''

SUITE = {
    "conftest.py": CONFTEST,
    "zoo.py": "LIMIT = 10\nREADY = False\n",
    # The victims run first in the record: their polluters come after them.
    "test_1_victims.py": '''
import os
import zoo

def test_mode_is_day():
    assert os.environ.get("SBS_MODE", "day") == "day"

def test_limit_is_ten():
    assert zoo.LIMIT == 10

def test_no_flag_file():
    assert not os.path.exists("flag.txt")
''',
    "test_2_polluters.py": '''
import os
import zoo

def test_sets_night():
    os.environ["SBS_MODE"] = "night"

def test_lowers_the_limit():
    zoo.LIMIT = 0

def test_leaves_a_flag_file():
    with open("flag.txt", "w") as f:
        f.write("left\\n")

def test_gets_ready():
    zoo.READY = True
''',
    # Passes in the record only because test_gets_ready ran before it.
    "test_3_brittle.py": '''
import zoo

def test_needs_ready():
    assert zoo.READY
''',
}

VICTIMS = ["test_mode_is_day", "test_limit_is_ten", "test_no_flag_file", "test_needs_ready"]


def _hunt(suite: Suite, record: Path, workers: int, log: Path) -> tuple[str, dict[str, Any]]:
    out = suite.out / f"hunt-{workers}.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("STATESNAP")}
    proc = subprocess.run([sys.executable, "-m", "statesnap", "hunt", str(record), "-q",
                           "--budget", "600", "--replay-workers", str(workers),
                           "--json", str(out)],
                          cwd=suite.root, capture_output=True, text=True, timeout=900,
                          env={**env, "SBS_LOG": str(log)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return proc.stdout, json.loads(out.read_text(encoding="utf-8"))


def _verdicts(summary: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(f["victim"], f["status"], f.get("polluters"), f.get("setter"), f.get("probe"),
             f.get("key"), f.get("repro")) for f in summary["findings"]]


def _overlapped(log: Path) -> bool:
    """Whether two processes ran tests at the same time."""
    spans = [line.split() for line in log.read_text().splitlines()]
    for i, (pid, start, end) in enumerate(spans):
        for other, start2, end2 in spans[i + 1:]:
            if pid != other and float(start) < float(end2) and float(start2) < float(end):
                return True
    return False


def test_two_workers_prove_what_one_proves_with_the_same_printed_lines(suite: Suite) -> None:
    suite.write(SUITE)
    record = suite.record()
    (suite.root / "flag.txt").unlink()  # the record's run left it; the checkout is clean
    one_log, two_log = suite.out / "one.log", suite.out / "two.log"
    one_out, one = _hunt(suite, record, 1, one_log)
    two_out, two = _hunt(suite, record, 2, two_log)
    # The same findings, in the same order (the suite's), with the same reproductions.
    assert _verdicts(two) == _verdicts(one), (one_out, two_out)
    found = {f["victim"].split("::")[-1]: f for f in two["findings"]}
    assert sorted(found) == sorted(VICTIMS), two_out
    assert found["test_mode_is_day"]["polluters"][0].endswith("::test_sets_night")
    assert found["test_limit_is_ten"]["polluters"][0].endswith("::test_lowers_the_limit")
    assert found["test_no_flag_file"]["polluters"][0].endswith("::test_leaves_a_flag_file")
    assert found["test_needs_ready"]["status"] == "brittle", two_out
    assert found["test_needs_ready"]["setter"].endswith("::test_gets_ready"), two_out
    # Side by side for real: two replays ran at once with two workers, never with one.
    assert _overlapped(two_log), two_log.read_text()
    assert not _overlapped(one_log), one_log.read_text()
    # The printed output lists the same verdict lines in the same order.
    def verdict_lines(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.startswith("  [")]
    assert verdict_lines(two_out) == verdict_lines(one_out), (one_out, two_out)
    # The checkout is as the hunts found it (the file polluter's replays ran in copies or
    # had what they wrote taken away again).
    assert not (suite.root / "flag.txt").exists()
    check_reproductions(two_out, suite.root, VICTIMS)


#: Two victims that bind one fixed port ($SBS_PORT).  In a run of exactly two tests (a proof
#: pair) each holds it until the other one has tried too, so the two pairs proven side by side
#: are sure to meet on it: the one that finds it taken fails with EADDRINUSE, which is no answer.
PORT_SUITE = {
    "test_1_port_victims.py": '''
import os, socket, time
import pytest

N = {}

def pytest_hold(name):
    marks = os.environ["SBS_MARKS"]
    s = socket.socket()
    start = time.time()
    try:
        s.bind(("127.0.0.1", int(os.environ["SBS_PORT"])))
        s.listen()
    finally:
        open(os.path.join(marks, f"{name}-{os.getpid()}"), "w").close()
    try:
        if os.environ.get("SBS_COLLECTED") == "2":
            other = "b" if name == "a" else "a"
            while time.time() - start < 10:
                if any(m.startswith(other + "-") and
                       os.path.getmtime(os.path.join(marks, m)) >= start - 1
                       for m in os.listdir(marks)):
                    break
                time.sleep(0.05)
            time.sleep(0.3)
    finally:
        s.close()

def test_port_victim_a():
    pytest_hold("a")
    assert "SBS_A" not in os.environ

def test_port_victim_b():
    pytest_hold("b")
    assert "SBS_B" not in os.environ
''',
    "conftest.py": '''
import os

def pytest_collection_finish(session):
    os.environ["SBS_COLLECTED"] = str(len(session.items))
''',
    "test_2_port_polluters.py": '''
import os

def test_sets_a():
    os.environ["SBS_A"] = "1"

def test_sets_b():
    os.environ["SBS_B"] = "1"
''',
}


def test_a_port_taken_beside_another_replay_is_no_answer(suite: Suite, tmp_path: Path) -> None:
    import socket

    suite.write(PORT_SUITE)
    marks = tmp_path / "marks"
    marks.mkdir()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    extra = {"SBS_MARKS": str(marks), "SBS_PORT": str(port)}
    os.environ.update(extra)  # the recorded run and the hunt's replays
    try:
        record = suite.record()
        out = suite.out / "hunt.json"
        proc = subprocess.run([sys.executable, "-m", "statesnap", "hunt", str(record),
                               "--budget", "600", "--replay-workers", "2", "--json", str(out)],
                              cwd=suite.root, capture_output=True, text=True, timeout=900)
    finally:
        for name in extra:
            os.environ.pop(name, None)
    context = proc.stdout + proc.stderr[-4000:]
    assert proc.returncode == 1, context
    # The two pairs met on the port; the one that found it taken ran again alone.
    assert "a port was taken beside another replay" in proc.stderr, context
    found = {f["victim"].split("::")[-1]: f for f in json.loads(out.read_text())["findings"]}
    assert found["test_port_victim_a"]["status"] == "latent", context
    assert found["test_port_victim_a"]["polluters"][0].endswith("::test_sets_a"), context
    assert found["test_port_victim_b"]["status"] == "latent", context
    assert found["test_port_victim_b"]["polluters"][0].endswith("::test_sets_b"), context
    assert found["test_port_victim_a"]["key"] == "SBS_A", context
    assert found["test_port_victim_b"]["key"] == "SBS_B", context
