"""The probes' own pid (statesnap.probes.ownpid): no ``getpid`` per token, and still the
child's own ``/proc`` entries after a fork."""

from __future__ import annotations

import ast
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from statesnap.probes import ownpid
from statesnap.probes.base import Probe, ProbeContext
from statesnap.probes.fds import FdsProbe
from statesnap.probes.files.probe import FilesProbe
from statesnap.probes.process import ProcessProbe
from statesnap.probes.threads import ThreadsProbe

needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs /proc")


@pytest.fixture
def probes(tmp_path: Path) -> Iterator[list[Probe]]:
    ctx = ProbeContext(rootdir=tmp_path, watch_roots=(tmp_path,))
    made: list[Probe] = [ThreadsProbe(), FdsProbe(), ProcessProbe(), FilesProbe()]
    for p in made:
        p.setup(ctx)
    yield made
    for p in made:
        p.close()


@needs_proc
def test_tokens_ask_the_kernel_for_no_pid(probes: list[Probe],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # Every token used to call os.getpid() (a syscall) to notice a fork; the pid is now kept.
    calls: list[int] = []
    real = os.getpid

    def counted() -> int:
        calls.append(1)
        return real()

    monkeypatch.setattr(os, "getpid", counted)
    for p in probes:
        p.token()
        p.light_token()
    assert calls == []
    assert ownpid.pid() == real()


@needs_proc
def test_a_forked_child_reads_its_own_proc_entries(probes: list[Probe]) -> None:
    threads, fds = probes[0], probes[1]
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        parent_threads = threads.token()
        parent_fds = fds.token()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: only plain calls, then _exit
            try:
                os.write(w, repr((os.getpid(), ownpid.pid(), threads.token(),
                                  fds.token())).encode())
            finally:
                os._exit(0)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            child_pid, child_own, child_threads, child_fds = ast.literal_eval(f.read().decode())
        os.waitpid(pid, 0)
    finally:
        stop.set()
        other.join()
    assert child_own == child_pid == pid
    # The kernel's thread count: the parent has two threads at least, the child only the one
    # that forked.  A descriptor kept from the parent (/proc/<parent>/task) counts the parent's.
    assert isinstance(parent_threads, tuple) and isinstance(child_threads, tuple)
    assert parent_threads[-1] >= 2 and child_threads[-1] == 1
    assert isinstance(parent_fds, tuple) and isinstance(child_fds, tuple)
    assert parent_fds[0] == os.getpid() and child_fds[0] == pid
