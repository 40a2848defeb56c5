"""Ctrl-C during ``statesnap hunt --replay-workers 2`` while proofs run side by side (issue 28
§3): every replay in flight is killed with its process group, the scratch copies removed,
and what was proven by then is printed (its reproduction runs under plain pytest); the rest
says it was interrupted.

Two latent victims of two polluters.  Each victim logs itself; the slow one (first in the
suite, so one at a time its proof would come first) sleeps for minutes, but only in a run of
at most two tests (a proof: the orders run more), so its proof hangs while the fast one's
proofs run on the other worker.  A driver in a fresh pid
namespace (``tests/pidns.py``) sends SIGINT once the fast victim ran alone (its last proving
run) and the slow one is hanging in its pair.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from chaos_drivers import PROCESS_LISTING
from chaos_runs import PYTEST, TRACEBACKS, env

import pidns
from repro_check import check_reproductions

pytestmark = [pytest.mark.needs_pidns, pytest.mark.slow]

CONFTEST = '''
import os

def pytest_collection_finish(session):
    # After every plugin's selection: the tests this process runs.
    os.environ["SBS_COLLECTED"] = str(len(session.items))
'''

SUITE = '''
import os, time

def _mark(name):
    with open(os.path.join(os.environ["SBS_MARKS"], name), "a") as f:
        f.write(os.environ["SBS_COLLECTED"] + "\\n")

def test_a_slow_victim():
    if int(os.environ["SBS_COLLECTED"]) <= 2:
        _mark("slow-hanging")
        time.sleep(float(os.environ.get("SBS_HANG", "0")))
    assert "SBS_SLOW" not in os.environ

def test_b_fast_victim():
    _mark("fast-" + os.environ["SBS_COLLECTED"])
    assert "SBS_FAST" not in os.environ

def test_c_one():
    pass

def test_d_two():
    pass

def test_e_fast_polluter():
    os.environ["SBS_FAST"] = "1"

def test_f_slow_polluter():
    os.environ["SBS_SLOW"] = "1"
'''

#: In the namespace: the hunt started; SIGINT once the slow victim hangs in a proof and the
#: fast one ran alone (then 3 s for its verdict to be settled), then the replays left listed.
DRIVER = PROCESS_LISTING + r'''
argv, out_path, err_path, marks = json.loads(sys.argv[1])
with open(out_path, "w") as out, open(err_path, "w") as err:
    proc = subprocess.Popen(argv, stdout=out, stderr=err)
    deadline = time.monotonic() + 150
    want = [os.path.join(marks, "slow-hanging"), os.path.join(marks, "fast-1")]
    while not all(os.path.exists(p) for p in want):
        if proc.poll() is not None or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    time.sleep(3)
    in_flight = len(replays())
    proc.send_signal(signal.SIGINT)
    rc = proc.wait(timeout=120)
time.sleep(0.2)
print(json.dumps({"rc": rc, "left": replays(), "strays": strays(), "in_flight": in_flight}))
'''


def test_ctrl_c_in_a_side_by_side_hunt_kills_replays_and_keeps_what_was_proven(
        tmp_path: Path) -> None:
    pidns.require()
    project = tmp_path / "project"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "conftest.py").write_text(CONFTEST)
    (project / "test_two_victims.py").write_text(SUITE)
    marks = tmp_path / "marks"
    marks.mkdir()
    scratch = tmp_path / "tmp"
    record = tmp_path / "out" / "run.jsonl"
    record.parent.mkdir()
    base = env(scratch, SBS_MARKS=str(marks))
    rec = subprocess.run([*PYTEST, "-q", "-p", "statesnap", f"--statesnap-record={record}"],
                         cwd=project, env=base, capture_output=True, text=True, timeout=300)
    assert rec.returncode == 0, rec.stdout + rec.stderr
    for mark in marks.iterdir():
        mark.unlink()
    out, err = tmp_path / "hunt.out", tmp_path / "hunt.err"
    argv = [sys.executable, "-m", "statesnap", "hunt", str(record), "--budget", "600",
            "--replay-workers", "2"]
    proc = subprocess.run(pidns.wrap([sys.executable, "-c", DRIVER,
                                      json.dumps([argv, str(out), str(err), str(marks)])]),
                          cwd=project, env={**base, "SBS_HANG": "600"},
                          capture_output=True, text=True, timeout=500)
    assert pidns.bystander_survived(proc.stderr), proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    stdout, stderr = out.read_text(), err.read_text()
    context = f"{report}\n{stdout[-4000:]}\n{stderr[-3000:]}"
    assert (marks / "slow-hanging").exists(), context  # the SIGINT came during its proof
    assert report["in_flight"] >= 1, context
    assert report["rc"] == 130, context
    assert report["left"] == [], context  # every replay's process group was killed
    assert report["strays"] == [], context  # nor a warm parent or its forks
    for text in (*TRACEBACKS, "KeyboardInterrupt"):
        assert text not in stdout + stderr, context
    assert "interrupted (Ctrl-C)" in stderr, context
    # The slow victim's pair was killed, not answered: no proof went on from it (its
    # confirmation alone would be next).
    assert "test_a_slow_victim alone" not in stderr, context
    assert not list(scratch.glob("statesnap-replay-*")), list(scratch.iterdir())
    # What was proven is printed, and reproduces; the rest says it was interrupted.
    blocks = _finding_blocks(stdout)
    fast, slow = blocks.get("test_b_fast_victim", ""), blocks.get("test_a_slow_victim", "")
    assert fast.startswith("  [LATENT]"), context
    assert slow.startswith("  [suspected]"), context
    assert "interrupted (Ctrl-C)" in slow, context
    runs = check_reproductions(fast, project, ["test_b_fast_victim"])
    assert all("test_e_fast_polluter" in r.command for r in runs), context


def _finding_blocks(output: str) -> dict[str, str]:
    """``{test name: its finding's lines}`` from the hunt's terminal output (a finding
    starts with ``  [STATUS] victim``, its lines after it are indented further)."""
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in output.splitlines():
        if line.startswith("  [") and "] " in line:
            name = line.split("] ", 1)[1].split()[0].rsplit("::", 1)[-1]
            current = blocks.setdefault(name, [])
        elif not line.startswith("    "):
            current = None
        if current is not None:
            current.append(line)
    return {name: "\n".join(lines) for name, lines in blocks.items()}
