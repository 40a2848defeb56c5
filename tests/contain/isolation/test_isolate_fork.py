"""Fork isolation end to end: crashes, captured output, outcomes, leftovers, fixtures."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Run = Callable[..., Any]

SUITE = '''
import logging, os, sys, pytest

def test_fails_with_output():
    print("printed by the test")
    logging.getLogger("zoo").warning("logged by the test")
    sys.stderr.write("to stderr\\n")
    value = {"a": 1}
    assert value == {"a": 2}

@pytest.mark.skip(reason="not today")
def test_skipped():
    pass

@pytest.mark.xfail(reason="known bug")
def test_xfail():
    assert False

@pytest.mark.xfail(reason="fixed?")
def test_xpass():
    pass

def test_passes():
    os.environ["ISO_LEAK"] = "1"

def test_sees_no_leak():
    assert "ISO_LEAK" not in os.environ
'''


def test_reports_are_those_of_an_in_process_run(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(test_suite=SUITE.replace('assert "ISO_LEAK" not in os.environ', "pass"))
    plain = run("-rA", statesnap=False)
    isolated = run("-rA", "--statesnap-isolate")
    assert isolated.phases() == plain.phases()
    outcomes = isolated.result.parseoutcomes()
    assert outcomes == {"failed": 1, "passed": 2, "skipped": 1, "xfailed": 1, "xpassed": 1}
    failed = [r for r in isolated.reports() if r["outcome"] == "failed"]
    assert len(failed) == 1
    # Assertion introspection and the captured output survive the trip from the child.
    assert "assert {'a': 1} == {'a': 2}" in failed[0]["text"]
    assert failed[0]["sections"] == ["Captured stdout call", "Captured stderr call",
                                     "Captured log call"]
    assert "printed by the test" in failed[0]["content"]
    assert "logged by the test" in failed[0]["content"]
    assert "to stderr" in failed[0]["content"]
    isolated.result.stdout.fnmatch_lines(["*SKIPPED*not today*",
                                          "*XFAIL*test_xfail*known bug*",
                                          "*XPASS*test_xpass*fixed?*"])


def test_leaks_die_with_the_child_and_are_recorded_as_contained(
        pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(test_suite=SUITE)
    inner = run("--statesnap-isolate=fork", "-k", "passes or leak")
    inner.result.assert_outcomes(passed=2)
    line = inner.lines()["test_suite.py::test_passes"]
    assert line["contained"] is True
    assert line["isolation"]["mode"] == "fork"
    assert line["isolation"]["exit"] == {"code": 0}
    assert line["changes"] == []  # nothing escaped the child: no leak
    refs = {(c["probe"], c["key"], c["after"]) for c in line["contained_changes"]}
    assert ("env", "ISO_LEAK", "1") in refs
    inner.result.stdout.fnmatch_lines(["*isolated 2 test(s) in child processes (fork 2)*"])


def test_dash_s_output_reaches_the_terminal(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(test_out='''
def test_prints():
    print("straight to the terminal")
''')
    inner = run("-s", "--statesnap-isolate")
    inner.result.assert_outcomes(passed=1)
    inner.result.stdout.fnmatch_lines(["*straight to the terminal*"])


CRASHES = '''
import ctypes, os, signal

def test_segfault():
    print("said before dying")
    ctypes.string_at(0)

def test_abort():
    os.abort()

def test_exit_status():
    os._exit(3)

def test_killed():
    os.kill(os.getpid(), signal.SIGKILL)

def test_still_runs():
    pass
'''


def test_crashes_fail_their_test_and_the_session_goes_on(
        pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(test_crash=CRASHES)
    inner = run("--statesnap-isolate")
    inner.result.assert_outcomes(failed=4, passed=1)
    texts = {r["nodeid"].split("::")[1]: r for r in inner.reports() if r["outcome"] == "failed"}
    assert "killed by SIGSEGV (signal 11) during call" in texts["test_segfault"]["text"]
    # faulthandler's traceback names the test's own line; pytest's frames are trimmed.
    assert "in test_segfault" in texts["test_segfault"]["text"]
    # What the test printed before dying was in pytest's capture file: it is shown.
    assert "said before dying" in texts["test_segfault"]["content"]
    assert "killed by SIGABRT" in texts["test_abort"]["text"]
    assert "exited with status 3 during call" in texts["test_exit_status"]["text"]
    assert "killed by SIGKILL" in texts["test_killed"]["text"]
    lines = inner.lines()
    assert lines["test_crash.py::test_segfault"]["isolation"]["exit"] == {"signal": "SIGSEGV"}
    assert lines["test_crash.py::test_segfault"]["isolation"]["crashed"] is True
    assert lines["test_crash.py::test_segfault"]["failure"]["exc_type"] == "ProcessCrashed"
    assert lines["test_crash.py::test_exit_status"]["isolation"]["exit"] == {"code": 3}
    assert lines["test_crash.py::test_still_runs"]["outcome"] == "passed"
    # Every crashed test still has its setup and teardown reports, like any test.
    whens = [(r["nodeid"].split("::")[1], r["when"]) for r in inner.reports()]
    assert whens.count(("test_segfault", "teardown")) == 1


def test_a_crash_in_setup_is_a_setup_error(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(test_setup_crash='''
import os, pytest

@pytest.fixture
def dies():
    os._exit(9)

def test_uses_it(dies):
    pass
''')
    inner = run("--statesnap-isolate")
    inner.result.assert_outcomes(errors=1)
    assert ("test_setup_crash.py::test_uses_it", "setup", "failed", None) in inner.phases()
    assert inner.lines()["test_setup_crash.py::test_uses_it"]["outcome"] == "error"


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_grandchildren_die_with_the_childs_process_group(
        pytester: pytest.Pytester, run: Run, tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    pytester.makepyfile(test_leftover=f'''
import subprocess, sys

def test_leaves_a_process():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    open({str(pidfile)!r}, "w").write(str(proc.pid))
''')
    inner = run("--statesnap-isolate")
    inner.result.assert_outcomes(passed=1)
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)
    line = inner.lines()["test_leftover.py::test_leaves_a_process"]
    children = [c for c in line["contained_changes"] if c["probe"] == "children"]
    assert children and "time.sleep(300)" in children[0]["key"]
    assert not [c for c in line["changes"] if c["probe"] == "children"]


def test_timeout_kills_the_test_and_shows_where_it_hung(
        pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(test_hang='''
import time

def test_hangs():
    time.sleep(120)

def test_after():
    pass
''')
    inner = run("--statesnap-isolate", "--statesnap-isolate-timeout=1")
    inner.result.assert_outcomes(failed=1, passed=1)
    text = next(r["text"] for r in inner.reports() if r["outcome"] == "failed")
    assert "timed out after 1s in call" in text
    assert "in test_hangs" in text  # faulthandler's dump on SIGABRT
    exit_ = inner.lines()["test_hang.py::test_hangs"]["isolation"]["exit"]
    assert exit_["timed_out"] is True


def test_marker_isolates_only_the_marked_test(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(test_marked='''
import os, pytest

@pytest.mark.statesnap_isolate
def test_contained_polluter():
    os.environ["MARKED_LEAK"] = "1"

def test_clean_here():
    assert "MARKED_LEAK" not in os.environ

def test_free_polluter():
    os.environ["FREE_LEAK"] = "1"

def test_polluted_here():
    assert "FREE_LEAK" not in os.environ
''')
    inner = run()
    inner.result.assert_outcomes(passed=3, failed=1)
    lines = inner.lines()
    assert lines["test_marked.py::test_contained_polluter"]["contained"] is True
    assert "contained" not in lines["test_marked.py::test_free_polluter"]
    assert lines["test_marked.py::test_polluted_here"]["outcome"] == "failed"


def test_fixtures_held_by_the_parent_are_finalised_once(
        pytester: pytest.Pytester, run: Run, tmp_path: Path, report_logger: str) -> None:
    log = tmp_path / "fixture.log"
    pytester.makeconftest(report_logger + f'''
import pytest

@pytest.fixture(scope="module")
def shared():
    with open({str(log)!r}, "a") as f:
        f.write("setup\\n")
    yield "resource"
    with open({str(log)!r}, "a") as f:
        f.write("teardown\\n")
''')
    pytester.makepyfile(test_mixed='''
import pytest

def test_first(shared):
    assert shared == "resource"

@pytest.mark.statesnap_isolate
def test_isolated(shared):
    assert shared == "resource"

def test_last(shared):
    assert shared == "resource"
''', test_other='''
def test_elsewhere():
    pass
''')
    inner = run("test_mixed.py", "test_other.py")
    inner.result.assert_outcomes(passed=4)
    # Set up once by the parent, used by the isolated child, finalised once by the parent.
    assert log.read_text().splitlines() == ["setup", "teardown"]


def test_pytest_exit_in_an_isolated_test_stops_the_session(
        pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(test_stop='''
import pytest

def test_stops():
    pytest.exit("enough for today", returncode=7)

def test_never():
    pass
''')
    inner = run("--statesnap-isolate")
    assert inner.result.ret == 7
    assert "enough for today" in inner.out
    assert "test_stop.py::test_never" not in inner.lines()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork isolation needs os.fork")
def test_isolated_strict_test_errors_only_for_what_escaped(
        pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(test_escape='''
import os

def test_env_only():
    os.environ["DIES_WITH_CHILD"] = "1"

def test_writes_file():
    with open("escaped.txt", "w") as f:
        f.write("x")
''')
    inner = run("--statesnap-isolate", "--statesnap-strict")
    inner.result.assert_outcomes(passed=2, errors=1)
    teardown = [r for r in inner.reports() if r["when"] == "teardown" and r["outcome"] == "failed"]
    assert [r["nodeid"] for r in teardown] == ["test_escape.py::test_writes_file"]
    assert "files:escaped.txt" in teardown[0]["text"]


@pytest.mark.parametrize("mode", ["fork", "spawn"])
def test_warnings_reach_the_summary(pytester: pytest.Pytester, run: Run, mode: str) -> None:
    pytester.makepyfile(test_warns='''
import warnings

class ZooWarning(UserWarning):
    pass

def test_warns():
    warnings.warn("the zoo is closing", ZooWarning)
''')
    inner = run(f"--statesnap-isolate={mode}")
    inner.result.assert_outcomes(passed=1, warnings=1)
    inner.result.stdout.fnmatch_lines(["*warnings summary*", "test_warns.py::test_warns",
                                       "*ZooWarning: the zoo is closing*"])
