"""The replay runner: exact orders, timeouts that kill the whole group, logs, environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from statesnap.record.journal import RecordWriter
from statesnap.record.reader import read_record
from statesnap.replay.child import replay_env
from statesnap.replay.inherited import Inherited
from statesnap.replay.result import error_line
from statesnap.replay.runner import Runner
from suite_runs import child_env, run_suite, statesnap_cli, write_suite

HANGS_IN_REPLAY = {"test_hang.py": '''
    import os, subprocess, sys, time

    def test_a_pollutes():
        os.environ["ZOO_MODE"] = "fast"

    def test_b_victim():
        if os.environ.get("STATESNAP_REPLAY"):
            # In a replay: start a grandchild, note its pid, and hang.
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
            open(os.environ["ZOO_PIDFILE"], "w").write(str(child.pid))
            time.sleep(300)
        assert "ZOO_MODE" not in os.environ
    '''}


def _gone(pid: int, within: float = 15.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


def test_a_replay_past_its_timeout_is_killed_with_its_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    root = write_suite(tmp_path / "suite", HANGS_IN_REPLAY)
    env = {"ZOO_PIDFILE": str(pidfile)}
    run = run_suite(root, tmp_path / "out", budget=0, env=env)
    record = run.record()
    runner = Runner(record, timeout=4, env=child_env(env))
    result = runner.run(["test_hang.py::test_b_victim"], label="alone")
    assert result.timed_out
    assert result.outcomes.get("test_hang.py::test_b_victim") != "crashed"
    assert not result.failed("test_hang.py::test_b_victim")
    assert result.log is not None
    assert "replay timed out after 4s; its process group was killed" in result.log.read_text()
    assert _gone(int(pidfile.read_text()))
    runner.close()


def test_a_timed_out_replay_becomes_a_clear_note(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    root = write_suite(tmp_path / "suite", HANGS_IN_REPLAY)
    env = {"ZOO_PIDFILE": str(pidfile)}
    run = run_suite(root, tmp_path / "out", budget=0, env=env)
    cli = statesnap_cli("explain", str(run.record_path), "--verify", "--timeout", "4",
                        "--json", cwd=root, env=env)
    assert cli.returncode == 0, cli.stderr
    (f,) = json.loads(cli.stdout)
    assert f["status"] == "suspected"  # nothing proven, nothing claimed
    assert "timed out after 4s and was killed" in f["note"]
    assert _gone(int(pidfile.read_text()))


def test_logs_are_numbered_across_runners_and_never_overwritten(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {"test_two.py": '''
        def test_one():
            pass
        '''})
    run = run_suite(root, tmp_path / "out", budget=0)
    record = run.record()
    first = Runner(record).run(["test_two.py::test_one"], label="alone")
    second = Runner(record).run(["test_two.py::test_one"], label="alone")
    assert first.log is not None and second.log is not None
    assert (first.log.name, second.log.name) == ("001-alone.log", "002-alone.log")
    assert first.log.parent == run.record_path.with_suffix(".logs")
    assert first.passed("test_two.py::test_one") and second.passed("test_two.py::test_one")
    assert json.loads((first.log.parent / "001-alone.order.json").read_text()) == [
        "test_two.py::test_one"]


def test_a_node_id_that_no_longer_exists_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {"test_ids.py": '''
        def test_still_here():
            pass
        '''})
    order = tmp_path / "order.json"
    order.write_text(json.dumps(["test_ids.py::test_still_here", "test_ids.py::test_gone[1]"]))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "statesnap", "-p", "no:randomly",
         f"--statesnap-order={order}", f"--statesnap-record={tmp_path / 'r.jsonl'}",
         "test_ids.py"], cwd=root, env=child_env(), capture_output=True, text=True)
    assert proc.returncode == 4
    assert "1 node id(s) no longer exist: test_ids.py::test_gone[1]" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_order_file_runs_exactly_that_order(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {
        "test_p.py": "def test_p1(): pass\ndef test_p2(): pass\n",
        "test_q.py": "def test_q1(): pass\n",
    })
    run = run_suite(root, tmp_path / "out", budget=0)
    order = ["test_q.py::test_q1", "test_p.py::test_p2", "test_p.py::test_p1"]
    result = Runner(run.record()).run(order)
    assert result.record is not None
    assert [t.nodeid for t in read_record(result.record).tests] == order


def test_replay_env_passes_on_recorded_variables_but_no_secrets() -> None:
    header = {"env": {"PYTEST_ADDOPTS": "-p no:cacheprovider", "PYTHONHASHSEED": "7",
                      "CI_TOKEN": "<redacted:0123456789ab>", "HOME": "/recorded/home",
                      "PYTEST_CURRENT_TEST": "x (call)", "PYTEST_XDIST_WORKER": "gw3"}}
    env = replay_env(header, {"HOME": "/mine", "CI_TOKEN": "real-secret"})
    assert env["PYTEST_ADDOPTS"] == "-p no:cacheprovider"
    assert env["PYTHONHASHSEED"] == "7"
    assert env["CI_TOKEN"] == "real-secret"  # the digest is never passed on
    assert env["HOME"] == "/mine"  # not a variable that changes how tests behave
    assert "PYTEST_CURRENT_TEST" not in env and "PYTEST_XDIST_WORKER" not in env


def test_inherited_state_comes_from_the_record(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    w = RecordWriter(path)
    w.write({"type": "header", "format": 1, "rootdir": str(tmp_path)})
    changes = [
        {"probe": "process", "key": "umask", "change": "changed", "before": "0022",
         "after": "0077"},
        {"probe": "process", "key": "signal.blocked", "change": "changed", "before": [],
         "after": ["SIGUSR1"]},
        {"probe": "process", "key": "signal.SIGHUP", "change": "changed",
         "before": "default", "after": "ignore"},
        {"probe": "process", "key": "signal.ITIMER_REAL", "change": "changed",
         "before": "off", "after": "armed, interval 0s"},
    ]
    w.write({"type": "test", "index": 0, "nodeid": "t::a", "outcome": "passed",
             "phases": {"call": "passed"}, "changes": changes})
    w.close()
    inherited = Inherited.from_record(read_record(path))
    assert inherited.umask == 0o022
    assert inherited.trampoline() == {"blocked": [], "cancel_timer": True,
                                      "default": ["SIGHUP"]}


def test_a_replay_starts_from_the_recorded_umask_and_signal_mask(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", {"test_inherit.py": '''
        import os, signal

        def test_a_changes_process_state():
            os.umask(0o077)
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])

        def test_b_victim():
            old = os.umask(0o022)
            os.umask(old)
            assert old == 0o022
            assert signal.SIGUSR1 not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        '''})
    old = os.umask(0o022)
    try:
        run = run_suite(root, tmp_path / "out")
    finally:
        os.umask(old)
    f = run.finding("test_b_victim")
    assert f["status"] == "verified", run.output[-3000:]
    assert f["polluters"] == ["test_inherit.py::test_a_changes_process_state"]


@pytest.mark.parametrize(("text", "line"), [
    ("$ cmd\n# cwd: /x\n\nERROR: usage: pytest [options]\npytest: error: argument -k: "
     "expected one argument\n", "pytest: error: argument -k: expected one argument"),
    ("$ cmd\nERROR: file or directory not found: gone.py\n\n",
     "ERROR: file or directory not found: gone.py"),
    ("$ cmd\nINTERNALERROR> Traceback\nINTERNALERROR> KeyError: 'x'\n",
     "INTERNALERROR> KeyError: 'x'"),
    ("$ cmd\n", "no output"),
])
def test_error_line_picks_what_says_why(tmp_path: Path, text: str, line: str) -> None:
    log = tmp_path / "x.log"
    log.write_text(text)
    assert error_line(log) == line
