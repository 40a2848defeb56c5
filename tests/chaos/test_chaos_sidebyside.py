"""Ctrl-C while several replays run side by side (issue 28 §3): every replay in flight is
killed with its process group, the staged files are put back, the scratch copies removed, and
the outputs say what was proven.

A real pytest process in a fresh pid namespace beside a bystander (``tests/pidns.py``); a
driver there waits until two replays are in flight at once, then sends SIGINT.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chaos_drivers import interrupt_two_in_flight
from chaos_runs import PYTEST, summary_line

import pidns
from statesnap.record.reader import read_record

pytestmark = [pytest.mark.needs_pidns, pytest.mark.slow]

#: Two victims, each slow enough to be interrupted in its replay; one polluter leaves a file
#: (the replays run in scratch copies and stage it away), the other a variable.
SUITE = '''
import os, time

def test_a_file_polluter():
    with open("flag.txt", "w") as f:
        f.write("left by the polluter\\n")

def test_b_env_polluter():
    os.environ["CHAOS_SBS"] = "1"

def test_c_file_victim():
    time.sleep(float(os.environ.get("CHAOS_SLEEP", "0")))
    assert not os.path.exists("flag.txt")

def test_d_env_victim():
    time.sleep(float(os.environ.get("CHAOS_SLEEP", "0")))
    assert "CHAOS_SBS" not in os.environ
'''

def test_ctrl_c_with_replays_side_by_side_kills_them_all(tmp_path: Path) -> None:
    pidns.require()
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_two_slow_victims.py").write_text(SUITE)
    out = tmp_path / "out"
    out.mkdir()
    argv = [*PYTEST, "-v", "-p", "statesnap", "--statesnap-replay-workers=2",
            "--statesnap-json", str(out / "summary.json"),
            "--statesnap-record", str(out / "run.jsonl")]
    scratch = tmp_path / "tmp"
    # SIGINT once two replays have run together for 1.5 s.
    output = interrupt_two_in_flight(project, argv, tmp_path, "", 1.5, "6", 400)
    context = output[-5000:]
    assert summary_line(output) == "2 failed, 2 passed", context
    assert sum(line.startswith("statesnap: interrupted (Ctrl-C)")
               for line in output.splitlines()) == 1, context
    # The checkout as the run left it; no scratch copy left behind.
    assert (project / "flag.txt").read_text() == "left by the polluter\n"
    assert not list(scratch.glob("statesnap-replay-*")), list(scratch.iterdir())
    findings = json.loads((out / "summary.json").read_text())["findings"]
    assert len(findings) == 2
    for finding in findings:
        assert finding["status"] == "suspected", finding
        assert "interrupted (Ctrl-C)" in finding["note"], finding
    # The two replays in flight were killed, not waited for: their output ends before
    # pytest's summary line.
    logs = sorted((out / "run.logs").glob("*.log"))
    killed = [p.name for p in logs if summary_line(p.read_text()) is None]
    assert len(killed) >= 2, [(p.name, p.read_text()[-300:]) for p in logs]
    record = read_record(out / "run.jsonl")
    assert record.footer is not None
    assert all("interrupted (Ctrl-C)" in v["note"] for v in record.verdicts)
