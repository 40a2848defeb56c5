"""Signals and timers (issue 27, section 3): Ctrl-C during the session end, and a timer a
test left running.

Each case is a real pytest process, run inside a fresh pid namespace beside a bystander
(``tests/pidns.py``): these runs signal processes.  A driver in the namespace starts pytest,
waits until statesnap replays, sends SIGINT, and reports what was left running.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from chaos_drivers import PROCESS_LISTING
from chaos_runs import PYTEST, TRACEBACKS, check_same_run, env, outcomes, summary_line

import pidns
from statesnap.record.reader import read_record

pytestmark = [pytest.mark.needs_pidns, pytest.mark.slow]

#: The polluter leaves a file; the victim fails on it, slowly enough to be interrupted in
#: its replay (which stages the file away: the run started without it).
SUITE = '''
import os, time

def test_polluter():
    with open("flag.txt", "w") as f:
        f.write("left by the polluter\\n")

def test_victim():
    time.sleep(float(os.environ.get("CHAOS_SLEEP", "0")))
    assert not os.path.exists("flag.txt")
'''

#: In the namespace: pytest started, SIGINT sent once its first replay has run for 0.7 s
#: (and again after ``again`` seconds), then the replay children still alive listed.
DRIVER = PROCESS_LISTING + r'''
argv, out_path, again = json.loads(sys.argv[1])
with open(out_path, "w") as out:
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    # The first replay is running once a replay child exists (what statesnap prints while it
    # replays depends on the terminal: one line per victim in a log).
    while not replays():
        if proc.poll() is not None or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    time.sleep(0.7)
    proc.send_signal(signal.SIGINT)
    if again is not None:
        time.sleep(again)
        proc.send_signal(signal.SIGINT)
    rc = proc.wait(timeout=120)
time.sleep(0.2)
print(json.dumps({"rc": rc, "left": replays(), "strays": strays()}))
'''


def _interrupted(tmp_path: Path, again: float | None
                 ) -> tuple[subprocess.CompletedProcess[str], dict[str, object], str, Path]:
    pidns.require()
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_slow_victim.py").write_text(SUITE)
    out = tmp_path / "out"
    out.mkdir()
    argv = [*PYTEST, "-v", "-p", "statesnap", "--statesnap-json", str(out / "summary.json"),
            "--report", str(out / "report.html"), "--statesnap-record", str(out / "run.jsonl")]
    log = tmp_path / "pytest.out"
    environ = env(tmp_path / "tmp", CHAOS_SLEEP="6")
    proc = subprocess.run(pidns.wrap([sys.executable, "-c", DRIVER,
                                      json.dumps([argv, str(log), again])]),
                          cwd=project, env=environ, capture_output=True, text=True,
                          timeout=300)
    assert pidns.bystander_survived(proc.stderr), proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    plain = subprocess.run([*PYTEST, "-v"], cwd=project, env=env(tmp_path / "tmp"),
                           capture_output=True, text=True, timeout=120)
    (project / "flag.txt").write_text("left by the polluter\n")  # as the statesnap run left it
    return plain, report, log.read_text(), out


def test_ctrl_c_during_a_replay_writes_what_was_proven_and_exits_2(tmp_path: Path) -> None:
    plain, report, output, out = _interrupted(tmp_path, again=None)
    context = output[-5000:]
    assert report["rc"] == pytest.ExitCode.INTERRUPTED, context
    assert report["left"] == [], context  # the replay's process group was killed
    assert report["strays"] == [], context  # nor a warm parent or its forks
    for text in TRACEBACKS:
        assert text not in output, context
    assert "KeyboardInterrupt" not in output, context
    # pytest's own summary and outcomes, as the plain run's.
    assert summary_line(output) == summary_line(plain.stdout) == "1 failed, 1 passed", context
    assert outcomes(output) == outcomes(plain.stdout)
    lines = [line for line in output.splitlines() if line.startswith("statesnap: interrupted")]
    assert lines == ["statesnap: interrupted (Ctrl-C): the replays were stopped and the files "
                     "they staged put back; the record, summary and report hold what was "
                     "proven so far"], context
    # The file the replay had staged away is back, as the run left it.
    flag = tmp_path / "project" / "flag.txt"
    assert flag.read_text() == "left by the polluter\n"
    # What was proven so far: nothing; the finding says why, in every output.
    [finding] = json.loads((out / "summary.json").read_text())["findings"]
    assert finding["victim"].endswith("::test_victim")
    assert finding["status"] == "suspected"
    assert "interrupted (Ctrl-C)" in finding["note"], finding
    assert (out / "report.html").read_text().rstrip().endswith("</html>")
    assert "interrupted (Ctrl-C)" in (out / "report.html").read_text()
    record = read_record(out / "run.jsonl")
    assert record.footer is not None
    [stored] = record.verdicts
    assert "interrupted (Ctrl-C)" in stored["note"]


def test_a_second_ctrl_c_still_puts_the_staged_files_back(tmp_path: Path) -> None:
    plain, report, output, out = _interrupted(tmp_path, again=0.05)
    context = output[-5000:]
    assert report["rc"] == pytest.ExitCode.INTERRUPTED, context
    assert report["left"] == [], context
    assert report["strays"] == [], context  # nor a warm parent or its forks
    for text in (*TRACEBACKS, "KeyboardInterrupt"):
        assert text not in output, context
    assert summary_line(output) == summary_line(plain.stdout), context
    assert (tmp_path / "project" / "flag.txt").read_text() == "left by the polluter\n"
    assert sum("statesnap: interrupted (Ctrl-C)" in line for line in output.splitlines()) == 1
    assert read_record(out / "run.jsonl").footer is not None
    # What the second Ctrl-C stopped is whole or absent (no partial file), and said.
    for name, option in (("summary.json", "--statesnap-json"), ("report.html", "--report")):
        path = out / name
        if path.exists():
            assert path.read_text().rstrip().endswith(("}", "</html>"))
        else:
            assert f"statesnap: {option} {path} was not written" in output, context
    assert not [p.name for p in out.iterdir() if ".tmp-" in p.name]


#: A test leaves a timer firing every 2 ms (or an alarm) with a SIGALRM handler of its own.
TIMER_SUITE = '''
import os, signal

def test_leaves_a_timer():
    signal.signal(signal.SIGALRM, lambda signum, frame: None)
    if os.environ["CHAOS_TIMER"] == "itimer":
        signal.setitimer(signal.ITIMER_REAL, 0.002, 0.002)
    else:
        signal.alarm(1)

def test_polluter():
    os.environ["CHAOS_TIMER_FLAG"] = "1"

def test_victim():
    assert "CHAOS_TIMER_FLAG" not in os.environ
'''


@pytest.mark.parametrize("timer", ["itimer", "alarm"])
def test_a_timer_left_by_a_test_never_hides_pytests_report(tmp_path: Path, timer: str) -> None:
    pidns.require()
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_timer.py").write_text(TIMER_SUITE)
    summary, report = tmp_path / "summary.json", tmp_path / "report.html"
    environ = env(tmp_path / "tmp", CHAOS_TIMER=timer)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(pidns.wrap([*PYTEST, "-v", *args]), cwd=project, env=environ,
                              capture_output=True, text=True, timeout=300)
        assert pidns.bystander_survived(proc.stderr), proc.stderr[-2000:]
        return proc

    plain = run()
    snap = run("-p", "statesnap", "--statesnap-json", str(summary), "--report", str(report))
    # Whatever the timer does to the process at its exit, it does it to both alike, and
    # only after pytest's failures and summary line.
    check_same_run(plain, snap)
    for proc in (plain, snap):
        assert "= FAILURES =" in proc.stdout and "1 failed, 2 passed" in proc.stdout
    [finding] = json.loads(summary.read_text())["findings"]
    assert finding["status"] == "verified", snap.stdout[-3000:]
    assert report.read_text().rstrip().endswith("</html>")
