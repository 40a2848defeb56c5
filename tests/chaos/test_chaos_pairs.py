"""Ctrl-C while one victim's candidate pairs run side by side (issue 28 §3): every replay in flight
is killed with its process group, what was proven stays proven (and its printed reproduction
still fails its victim), the victim cut short says it was interrupted.

A real pytest process in a fresh pid namespace beside a bystander (``tests/pidns.py``).  Two
victims, two workers: the quick one is proven first, its worker then runs the slow victim's
pairs beside the slow victim's own worker; the driver waits until two pair replays are in
flight at once, then sends SIGINT.  The slow victim needs both slow polluters, so no pair
fails it: the top suspect's pair, run as printed (no order file: not counted), passes, and
the other suspects' pair replays then run two at a time (the victim is slow only where
statesnap is loaded, so the printed pair ends at once and two replays are mid-run together).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chaos_drivers import interrupt_two_in_flight
from chaos_runs import PYTEST, summary_line

import pidns
from statesnap.record.reader import read_record
from suite_runs import run_shell

pytestmark = [pytest.mark.needs_pidns, pytest.mark.slow]

SUITE = '''
import os, time

def test_a_quick_polluter():
    os.environ["CHAOS_QUICK"] = "1"

def test_b_slow_polluter():
    os.environ["CHAOS_P1"] = "1"

def test_c_slow_polluter():
    os.environ["CHAOS_P2"] = "1"

def test_d_quick_victim():
    assert "CHAOS_QUICK" not in os.environ

def test_e_slow_victim(request):
    # Slow with statesnap loaded only: the printed pair (plain pytest) ends at once, and the
    # pair replays after it are the ones in flight together.
    if request.config.pluginmanager.has_plugin("statesnap"):
        time.sleep(float(os.environ.get("CHAOS_SLEEP", "0")))
    assert not ("CHAOS_P1" in os.environ and "CHAOS_P2" in os.environ)
'''

def test_ctrl_c_while_one_victims_pairs_run_side_by_side(tmp_path: Path) -> None:
    pidns.require()
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_pairs_chaos.py").write_text(SUITE)
    out = tmp_path / "out"
    out.mkdir()
    argv = [*PYTEST, "-v", "-p", "statesnap", "--statesnap-replay-workers=2",
            "--statesnap-replay-warm=off", "--statesnap-verify-budget=300",
            "--statesnap-json", str(out / "summary.json"),
            "--statesnap-record", str(out / "run.jsonl")]
    scratch = tmp_path / "tmp"
    # Replays run cold (--statesnap-replay-warm=off), so each pair is a process with its
    # order file named: SIGINT once two pairs of one victim have run together for 1 s.
    output = interrupt_two_in_flight(project, argv, tmp_path, "pair", 1.0, "8", 500)
    context = output[-5000:]
    assert summary_line(output) == "2 failed, 3 passed", context
    assert sum(line.startswith("statesnap: interrupted (Ctrl-C)")
               for line in output.splitlines()) == 1, context
    assert not list(scratch.glob("statesnap-replay-*")), list(scratch.iterdir())
    findings = {f["victim"].split("::")[-1]: f
                for f in json.loads((out / "summary.json").read_text())["findings"]}
    quick, slow = findings["test_d_quick_victim"], findings["test_e_slow_victim"]
    # What was proven before the Ctrl-C stays proven, and its line still fails the victim.
    assert quick["status"] == "verified", quick
    assert quick["polluters"] == ["test_pairs_chaos.py::test_a_quick_polluter"]
    ran = run_shell(quick["repro"], cwd=project)
    assert summary_line(ran.stdout) == "1 failed, 1 passed", ran.stdout[-2000:]
    # The victim whose pairs were cut short is not proven and says why; only the pairs whose
    # answers were read (in rank order, each a no) are listed.
    assert slow["status"] == "suspected", slow
    assert "interrupted (Ctrl-C)" in slow["note"], slow
    ran = [(r["label"], r["outcome"]) for r in slow["replays"]]
    assert ran[:2] == [("alone", "passed"), ("pair-printed", "passed")], ran
    assert all(r == ("pair", "passed") for r in ran[2:]), ran
    # The pairs in flight were killed, not waited for: their output ends before pytest's
    # summary line.
    logs = sorted((out / "run.logs").glob("*-pair.log"))
    killed = [p.name for p in logs if summary_line(p.read_text()) is None]
    assert len(killed) >= 2, [(p.name, p.read_text()[-300:]) for p in logs]
    record = read_record(out / "run.jsonl")
    assert record.footer is not None
