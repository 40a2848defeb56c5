"""A resource a test leaves held only by garbage is listed the same way whether or not the
collector happens to run inside that test (issue 29, "Consistency"): statesnap collects before
it charges a resource added, so an unclosed, unreachable event loop, socket pair or
thread-holding object is never listed, and one still reachable always is.

Each suite runs twice: once with the garbage made old (only a full collection frees it, which
plain pytest may or may not run before the test's end is read), once with the test collecting
it itself.  Both runs must list the same tests, with the same resource keys.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from suite_runs import BASE_ARGS, SuiteRun, child_env, run_suite, summary_line, write_suite

FILES = {
    "lockfile": "",
    "conftest.py": """
        import gc
        import os

        import pytest

        COLLECT_INSIDE = os.environ.get("GC_INSIDE") == "1"


        @pytest.fixture
        def garbage():
            '''Hands the test a list to put what it makes in; after the test body the list
            is emptied, leaving what was in it as garbage only a full collection frees
            (it survived a collection while still held, so it sits in the oldest
            generation) -- unless GC_INSIDE=1, where the test collects it itself.'''
            held = []
            yield held
            gc.collect()        # still held: survives, and moves to the oldest generation
            held.clear()        # garbage now (every object below sits in a cycle)
            if COLLECT_INSIDE:
                gc.collect()
        """,
    "test_resources.py": """
        import asyncio
        import fcntl
        import os
        import socket
        import threading

        KEPT = []


        class Pair:
            def __init__(self):
                self.me = self                      # a cycle: only the collector frees it
                self.a, self.b = socket.socketpair()


        class Worker:
            '''Runs a thread until it is finalised; the thread holds only its event.'''

            def __init__(self):
                self.me = self
                self.stop = threading.Event()
                self.thread = threading.Thread(target=self.stop.wait, name="garbage-worker",
                                               daemon=True)
                self.thread.start()

            def __del__(self):
                self.stop.set()
                self.thread.join()


        def test_unreachable_event_loop(garbage):
            garbage.append(asyncio.new_event_loop())


        def test_unreachable_socket_pair(garbage):
            garbage.append(Pair())


        def test_unreachable_thread_holder(garbage):
            garbage.append(Worker())


        def test_reachable_event_loop(garbage):
            KEPT.append(asyncio.new_event_loop())   # a module global: a real leak


        def test_reachable_socket_pair(garbage):
            KEPT.append(Pair())


        def test_locks_the_file(garbage):
            f = open("lockfile", "rb")
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            KEPT.append(f)                          # kept open, and locked, by a global


        def test_needs_the_lock():
            fd = os.open("lockfile", os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)   # fails after the polluter
            finally:
                os.close(fd)
        """,
}

RESOURCES = ("fds", "threads", "children")


def _resource_keys(run_dir: Path, root: Path, inside: bool
                   ) -> tuple[dict[str, list[str]], SuiteRun]:
    """One run of the suite: per test listed above LOW, its resource keys (``fds:5``)."""
    run = run_suite(root, run_dir, "-q", "-W", "ignore::ResourceWarning",
                    env={"GC_INSIDE": "1" if inside else "0"})
    data = run.leak_severities()
    # Which probe each listed key is from: the record's own changes say it.
    probe_of = {(t.nodeid.rsplit("::", 1)[1], c.key): c.probe
                for t in run.record().tests for c in t.changes}
    listed = {test: sorted(f"{probe_of.get((test, key))}:{key}" for key, _ in leaks
                           if probe_of.get((test, key)) in RESOURCES)
              for test, leaks in data.items()}
    return {t: keys for t, keys in listed.items() if keys}, run


def test_garbage_held_resources_list_the_same_whether_or_not_collected_inside(
        tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", FILES)
    old, old_run = _resource_keys(tmp_path / "old", root, inside=False)
    inside, inside_run = _resource_keys(tmp_path / "inside", root, inside=True)
    # Same outcomes both ways: the victim fails after its polluter, everything else passes.
    for run in (old_run, inside_run):
        line = summary_line(run.output) or ""
        assert line.startswith("1 failed, 6 passed"), run.output[-3000:]
    assert old == inside, (old, inside)
    # What garbage held is nobody's leak; what a module global keeps stays listed.
    assert not any(t.startswith("test_unreachable") for t in old), old
    for test in ("test_reachable_event_loop", "test_reachable_socket_pair",
                 "test_locks_the_file"):
        assert any(k.startswith("fds:") for k in old.get(test, [])), (test, old)
    # The reachable polluter of the lock is still proven by replay, both ways.
    for run in (old_run, inside_run):
        finding = run.finding("test_needs_the_lock")
        assert finding["status"] == "verified", (finding, run.output[-3000:])
        assert [p.rsplit("::", 1)[1] for p in finding["polluters"]] == ["test_locks_the_file"]


def test_strict_mode_errors_for_reachable_resources_only(tmp_path: Path) -> None:
    """Strict mode reads the test's changes the same way before its teardown check: garbage
    held resources are no error, run after run; reachable ones are."""
    root = write_suite(tmp_path / "suite", FILES)
    run = run_suite(root, tmp_path / "out", "-q", "-W", "ignore::ResourceWarning",
                    "--statesnap-strict", "--statesnap-verify-budget=0",
                    env={"GC_INSIDE": "0"})
    erred = sorted(set(re.findall(r"ERROR at teardown of (test_\w+)", run.output)))
    assert erred == ["test_locks_the_file", "test_reachable_event_loop",
                     "test_reachable_socket_pair"], run.output[-3000:]


WARNINGS_ARE_ERRORS = {
    "test_unclosed.py": """
        import asyncio
        import gc


        def test_leaves_an_unclosed_loop():
            held = [asyncio.new_event_loop()]
            gc.collect()            # moves it to the oldest generation
            held.clear()            # garbage only a full collection finalises


        def test_after_it():
            pass
        """,
}


def test_what_a_finaliser_raises_in_the_collection_fails_no_test(tmp_path: Path) -> None:
    """Under -W error, the unclosed loop's finaliser raises in statesnap's collection: it is
    reported at the session's end as plain pytest reports it, never as the next test's
    error (same exit code, same summary line)."""
    root = write_suite(tmp_path / "suite", WARNINGS_ARE_ERRORS)
    plain = subprocess.run([sys.executable, "-m", "pytest", *BASE_ARGS, "-q", "-W", "error"],
                           cwd=root, env=child_env(), capture_output=True, text=True,
                           timeout=300, stdin=subprocess.DEVNULL)
    run = run_suite(root, tmp_path / "out", "-q", "-W", "error",
                    "--statesnap-verify-budget=0")
    assert summary_line(plain.stdout) == "2 passed", plain.stdout[-3000:]
    assert summary_line(run.proc.stdout) == "2 passed", run.output[-3000:]
    assert run.proc.returncode == plain.returncode, (plain.returncode, run.output[-3000:])
    assert "unclosed event loop" in plain.stderr + plain.stdout
    assert "unclosed event loop" in run.output
    # The descriptors only garbage held are nobody's leak.
    assert "test_leaves_an_unclosed_loop" not in run.leak_severities(), run.output[-3000:]


FILES_KEPT_OPEN = {
    "conftest.py": """
        import gc
        import json
        import os

        FULL = []


        def _count(phase, info):
            if phase == "stop" and info["generation"] == 2:
                FULL.append(1)


        gc.callbacks.append(_count)


        def pytest_sessionfinish(session):
            with open(os.environ["FULL_OUT"], "w") as f:
                json.dump(len(FULL), f)
        """,
    "test_files.py": """
        import pytest

        KEPT = []


        @pytest.mark.parametrize("n", range(20))
        def test_keeps_a_file_open(n, tmp_path):
            KEPT.append(open(tmp_path / "log.txt", "w"))   # reachable: a real leak
        """,
}


def test_files_kept_open_by_path_cost_no_full_collection(tmp_path: Path) -> None:
    """A file opened by path that a test keeps is listed without a full collection: reference
    counting closes an unreferenced one at once, so the collection would free nothing (and a
    suite keeping files open on purpose would pay one per test)."""
    root = write_suite(tmp_path / "suite", FILES_KEPT_OPEN)
    out = tmp_path / "full.json"
    run = run_suite(root, tmp_path / "out", "-q", "--statesnap-verify-budget=0",
                    env={"FULL_OUT": str(out)})
    assert summary_line(run.output) == "20 passed", run.output[-3000:]
    listed = run.leak_severities()
    assert len([t for t in listed if t.startswith("test_keeps_a_file_open")]) == 20, listed
    # The interpreter's own full collections in a 20-test session: a few at most; one per
    # test (20) when statesnap collects for each kept file.
    assert int(out.read_text()) < 10, out.read_text()


PATCHED_COLLECTOR = {
    "test_patched.py": """
        import gc
        import socket

        CALLS = []
        KEPT = []


        def test_leaves_the_collector_patched():
            gc.collect = lambda *a, **k: CALLS.append(a) or 0   # never put back


        def test_adds_a_socket():
            KEPT.append(socket.socketpair())                      # a resource: a collection


        def test_nobody_called_the_patched_collect():
            assert CALLS == []
        """,
}


def test_the_collection_uses_the_collector_captured_before_the_tests(tmp_path: Path) -> None:
    """A test that leaves ``gc.collect`` replaced does not get statesnap's collection: the
    function captured at import is called, and the patched one never is."""
    root = write_suite(tmp_path / "suite", PATCHED_COLLECTOR)
    run = run_suite(root, tmp_path / "out", "-q", "-W", "ignore::ResourceWarning",
                    "--statesnap-verify-budget=0")
    assert summary_line(run.output) == "3 passed", run.output[-3000:]
    assert "test_adds_a_socket" in run.leak_severities(), run.output[-3000:]
