"""The ``children`` probe against real child processes, without reaping them."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from statesnap.probes.base import ProbeContext, Severity
from statesnap.probes.children import RUNNING, ZOMBIE, ChildrenProbe
from statesnap.state.diff import diff_maps

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes")


@pytest.fixture
def probe(tmp_path: Path) -> Iterator[ChildrenProbe]:
    p = ChildrenProbe()
    p.setup(ProbeContext(rootdir=tmp_path))
    yield p
    p.close()


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "30"])
    yield proc
    if proc.returncode is None:
        proc.kill()
        proc.wait()


def _wait_for(predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.005)


def _reap(proc: subprocess.Popen[bytes]) -> int:
    """Reap with waitpid ourselves: proof the probe left the status to collect."""
    pid, status = os.waitpid(proc.pid, 0)
    assert pid == proc.pid
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode


def test_running_child_appears_with_pid_and_command_line(probe: ChildrenProbe) -> None:
    token, before = probe.token(), probe.read()
    proc = subprocess.Popen(["sleep", "30"])
    try:
        assert probe.token() != token
        changes = diff_maps("children", before, probe.read())
        assert [(c.key, c.change, c.after) for c in changes] == [
            ("sleep 30", "added", {"pid": proc.pid, "status": RUNNING})
        ]
        assert probe.severity_of("sleep 30", None, changes[0].after) is Severity.HIGH
        assert "terminate" in (probe.hint("sleep 30", "added") or "")
        # Not reaped: the child is still ours to wait for.
        assert os.waitpid(proc.pid, os.WNOHANG) == (0, 0)
    finally:
        proc.kill()
    # The probe reads the killed child as a zombie and still does not reap it.
    _wait_for(lambda: probe.read().get("sleep 30", {}).get("status") == ZOMBIE, "a zombie")
    assert _reap(proc) == -9
    assert "sleep 30" not in probe.read()
    assert probe.token() == token


def test_exited_child_turns_zombie_under_the_same_key(probe: ChildrenProbe) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE)
    assert proc.stdin is not None
    try:
        alive_token, alive = probe.token(), probe.read()
        (key,) = alive
        assert alive[key]["status"] == RUNNING
        assert "sys.stdin.read()" in key
        proc.stdin.close()  # the child exits; nobody waits for it yet
        _wait_for(lambda: probe.token() != alive_token, "the token to see the exit")
        after = probe.read()
        changes = diff_maps("children", alive, after)
        assert [(c.key, c.change) for c in changes] == [(key, "changed")]
        assert after[key] == {"pid": proc.pid, "status": ZOMBIE}
        assert probe.severity_of(key, alive[key], after[key]) is Severity.LOW
        assert "wait" in (probe.hint(key, "changed") or "")
    finally:
        if not proc.stdin.closed:
            proc.stdin.close()
    assert _reap(proc) == 0


def test_two_children_with_one_command_line(
    probe: ChildrenProbe, sleeper: subprocess.Popen[bytes]
) -> None:
    other = subprocess.Popen(["sleep", "30"])
    try:
        found = probe.read()
        assert {"sleep 30", "sleep 30 #2"} <= set(found)
        assert sorted(v["pid"] for v in found.values()) == sorted([sleeper.pid, other.pid])
    finally:
        other.kill()
        _reap(other)


def test_child_of_another_python_thread_is_seen(probe: ChildrenProbe) -> None:
    before = probe.read()
    started: list[subprocess.Popen[bytes]] = []
    stop = threading.Event()

    def spawn_and_stay() -> None:
        started.append(subprocess.Popen(["sleep", "31"]))
        stop.wait()  # a child is listed under the thread that forked it, while it lives

    thread = threading.Thread(target=spawn_and_stay, daemon=True)
    thread.start()
    try:
        _wait_for(lambda: bool(started), "the thread to start its child")
        changes = diff_maps("children", before, probe.read())
        assert [(c.key, c.after["pid"]) for c in changes] == [("sleep 31", started[0].pid)]
    finally:
        stop.set()
        thread.join()
        for proc in started:
            proc.kill()
            _reap(proc)


def test_token_is_stable_with_a_child_running(
    probe: ChildrenProbe, sleeper: subprocess.Popen[bytes]
) -> None:
    assert probe.token() == probe.token()
    assert probe.read()["sleep 30"]["pid"] == sleeper.pid


def test_mode_and_no_children(probe: ChildrenProbe) -> None:
    assert probe.mode in ("proc", "psutil")
    if probe.mode == "proc":
        assert probe.token() == b""
    assert probe.read() == {}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="waitid with __WALL")
def test_no_child_is_answered_by_waitid_alone(
        probe: ChildrenProbe, monkeypatch: pytest.MonkeyPatch) -> None:
    # With no child at all, the token never lists /proc: the listing is made to fail, and
    # the answer is still the empty listing's.
    assert probe.mode == "proc"

    def listing_not_wanted() -> bytes:
        raise AssertionError("listed /proc with no child")

    monkeypatch.setattr(probe, "_listed", listing_not_wanted)
    assert probe.token() == b""
    monkeypatch.undo()
    proc = subprocess.Popen(["sleep", "30"])
    try:
        assert probe.token() != b""  # a running child: the listing is back
    finally:
        proc.kill()
        _reap(proc)
    assert probe.token() == b""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="waitid with __WALL")
def test_waitid_question_leaves_a_zombie_to_its_parent(probe: ChildrenProbe) -> None:
    proc = subprocess.Popen(["true"])
    _wait_for(lambda: [v["status"] for v in probe.read().values()] == [ZOMBIE], "the zombie")
    for _ in range(3):
        assert probe.token() != b""  # a zombie is still a child: asked without reaping it
    assert _reap(proc) == 0  # the exit status was left for the parent to collect
    assert probe.token() == b""
