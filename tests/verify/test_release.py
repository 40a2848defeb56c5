"""Letting go of what finished tests leaked, in this very process: real sockets, locks, children.

Each test leaks for real (a listening socket, a ``flock``, a child process), describes the leak
in a record as the probes would, and checks that :func:`statesnap.proof.release.release` lets go of
exactly that and of nothing else.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from statesnap.probes.fds import socket_text
from statesnap.proof.release import LEFT_RUNNING, held_leaks, release, release_all, release_lines
from statesnap.record.journal import Record, RecordWriter
from statesnap.record.reader import read_record


def leak_record(path: Path, changes: list[dict[str, Any]], pid: int | None = None) -> Record:
    """A record whose one test added ``changes`` (fds/children) and left them."""
    w = RecordWriter(path)
    w.write({"type": "header", "format": 1, "worker": "main", "rootdir": str(path.parent),
             "pid": os.getpid() if pid is None else pid})
    w.write({"type": "collection", "changes": []})
    w.write({"type": "start", "index": 0, "nodeid": "test_x.py::test_leaks"})
    w.write({"type": "test", "index": 0, "nodeid": "test_x.py::test_leaks", "worker": "main",
             "outcome": "passed", "phases": {"call": "passed"}, "duration": 0.0,
             "changes": changes})
    w.write({"type": "footer", "exitstatus": 0, "tests": 1})
    w.close()
    return read_record(path)


def added(probe: str, key: str, after: Any) -> dict[str, Any]:
    return {"probe": probe, "key": key, "change": "added", "before": None, "after": after}


def can_bind(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def alive(pid: int) -> bool:
    """Running (a zombie waiting for whoever adopted it counts as ended)."""
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def listening() -> tuple[socket.socket, int]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s, int(s.getsockname()[1])


def test_a_leaked_listening_socket_frees_its_port(tmp_path: Path) -> None:
    server, port = listening()
    try:
        fd = server.fileno()
        text = socket_text(fd)
        assert text == f"socket tcp 127.0.0.1:{port} LISTEN"
        record = leak_record(tmp_path / "r.jsonl", [added("fds", str(fd), text)])
        assert not can_bind(port)
        lines = release(record, own_fds=set())
        assert lines == [f"{text} (fd {fd}, left by test_x.py::test_leaks)"]
        assert can_bind(port)
        # The number still holds a socket (a placeholder), never a dangling descriptor.
        placeholder = socket_text(fd)
        assert placeholder is not None and placeholder.endswith(" LISTEN")
        assert placeholder != text
    finally:
        server.close()  # closes the placeholder, harmlessly


def test_what_is_not_the_tests_any_more_is_left_alone(tmp_path: Path) -> None:
    server, port = listening()
    other, other_port = listening()
    try:
        fd = server.fileno()
        text = socket_text(fd)
        # The record says another socket was under that number: not this one.
        stale = leak_record(tmp_path / "a.jsonl",
                            [added("fds", str(fd), f"socket tcp 127.0.0.1:{other_port} LISTEN")])
        assert release(stale, own_fds=set()) == []
        # statesnap's own descriptor, and another process's record: never touched.
        mine = leak_record(tmp_path / "b.jsonl", [added("fds", str(fd), text)])
        assert release(mine, own_fds={fd}) == []
        theirs = leak_record(tmp_path / "c.jsonl", [added("fds", str(fd), text)],
                             pid=os.getpid() + 1)
        assert release(theirs, own_fds=set()) == []
        assert not can_bind(port)
    finally:
        server.close()
        other.close()


def test_a_key_there_before_the_tests_or_closed_again_is_no_leak(tmp_path: Path) -> None:
    record = leak_record(tmp_path / "r.jsonl", [
        {"probe": "fds", "key": "9", "change": "changed", "before": "/a (r)", "after": "/b (r)"},
        added("fds", "10", "/c (r)"),
        {"probe": "fds", "key": "10", "change": "removed", "before": "/c (r)", "after": None},
        added("fds", "11", "/d (w)"), added("env", "X", "1")])
    assert [(h.probe, h.key) for h in held_leaks(record)] == [("fds", "11")]


def test_a_leaked_lock_is_released_and_the_file_stays_open(tmp_path: Path) -> None:
    path = tmp_path / "zoo.lock"
    held = open(path, "w")  # noqa: SIM115 - the leak under test
    try:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        probe = [sys.executable, "-c",
                 "import fcntl, sys; f = open(sys.argv[1]); "
                 "fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)", str(path)]
        assert subprocess.run(probe, capture_output=True).returncode != 0
        record = leak_record(tmp_path / "r.jsonl",
                             [added("fds", str(held.fileno()), f"{path} (w)")])
        assert release(record, own_fds=set())[0] == (
            f"any lock on {path} (fd {held.fileno()}, left by test_x.py::test_leaks; the "
            "file stays open)")
        assert subprocess.run(probe, capture_output=True).returncode == 0
        held.write("still open")
        held.flush()
        assert path.read_text() == "still open"
    finally:
        held.close()


def test_a_leaked_child_is_named_and_never_signalled(tmp_path: Path) -> None:
    """statesnap signals only processes it started: a child a test left, and that child's own
    child, keep running; the line names it (the replays run beside it)."""
    script = ("import subprocess, sys, time\n"
              "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
              "print(g.pid, flush=True); time.sleep(600)\n")
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None
        grandchild = int(child.stdout.readline())
        record = leak_record(tmp_path / "r.jsonl", [added(
            "children", "python -c ...", {"pid": child.pid, "status": "running"})])
        [left] = release_all(record, own_fds=set())
        assert left.kind == LEFT_RUNNING
        assert left.what == (f"child process python -c ... (pid {child.pid}, left by "
                             "test_x.py::test_leaks)")
        assert release_lines([left]) == [
            "replaying beside (statesnap signals only processes it started) " + left.what]
        time.sleep(0.3)
        assert child.poll() is None and alive(grandchild)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        with contextlib.suppress(ProcessLookupError):
            os.kill(grandchild, signal.SIGKILL)
        if child.stdout is not None:
            child.stdout.close()


def test_a_bound_udp_socket_is_let_go_of_but_not_an_unbound_one(tmp_path: Path) -> None:
    bound = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    unbound = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        bound.bind(("127.0.0.1", 0))
        port = int(bound.getsockname()[1])
        texts = {s.fileno(): socket_text(s.fileno()) for s in (bound, unbound)}
        assert texts[bound.fileno()] == f"socket udp 127.0.0.1:{port}"
        record = leak_record(tmp_path / "r.jsonl",
                             [added("fds", str(fd), text) for fd, text in texts.items()])
        assert release(record, own_fds=set()) == [
            f"socket udp 127.0.0.1:{port} (fd {bound.fileno()}, left by test_x.py::test_leaks)"]
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as again:
            again.bind(("127.0.0.1", port))
        assert socket_text(unbound.fileno()) == texts[unbound.fileno()]
    finally:
        bound.close()
        unbound.close()


def test_a_file_left_open_for_writing_is_flushed_not_closed(tmp_path: Path) -> None:
    path = tmp_path / "export.csv"
    out = open(path, "w", buffering=1 << 16)  # noqa: SIM115 - the leak under test
    try:
        out.write("a,b\n")
        assert path.read_text() == ""  # still in the buffer
        record = leak_record(tmp_path / "r.jsonl", [added("fds", str(out.fileno()), f"{path} (w)")])
        lines = release(record, own_fds=set())
        assert lines[1:] == ["the buffered writes of 1 file(s) tests left open (flushed)"]
        assert path.read_text() == "a,b\n"
        out.write("c,d\n")  # still the test's, still open
    finally:
        out.close()
    assert path.read_text() == "a,b\nc,d\n"


class _WarnsWhenAskedItsClass:
    """Like torch.distributed's deprecated ``reduce_op``: asking its class warns."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        import warnings

        warnings.warn("asked for __class__", FutureWarning, stacklevel=2)
        return _WarnsWhenAskedItsClass


def test_flushing_asks_no_object_its_class_under_warnings_as_errors(tmp_path: Path) -> None:
    import warnings

    from statesnap.proof.release import flush_files

    keep = [_WarnsWhenAskedItsClass()]  # alive, so the collector's walk meets it
    path = tmp_path / "out.txt"
    with open(path, "w", encoding="utf-8") as f:
        f.write("kept in the buffer")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # as `pytest -W error` runs a user's suite
            assert flush_files({f.fileno()}) == 1
        assert path.read_text(encoding="utf-8") == "kept in the buffer"
    assert keep
