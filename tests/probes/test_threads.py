"""The ``threads`` probe against real threads, Python and native."""

from __future__ import annotations

import _thread
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from statesnap.probes.base import ProbeContext, Severity
from statesnap.probes.threads import NATIVE_KEY, ThreadsProbe
from statesnap.state.diff import diff_maps

LINUX_PROC = os.path.isdir("/proc/self/task")


@pytest.fixture
def probe(tmp_path: Path) -> Iterator[ThreadsProbe]:
    p = ThreadsProbe()
    p.setup(ProbeContext(rootdir=tmp_path))
    yield p
    p.close()


def _started(name: str, daemon: bool) -> tuple[threading.Thread, threading.Event]:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, name=name, daemon=daemon)
    thread.start()
    return thread, stop


def _wait_for(predicate: object, what: str) -> None:
    # Kernel bookkeeping trails join() by microseconds; poll rather than assume.
    deadline = time.monotonic() + 10
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.001)


def test_a_thread_left_running_is_added_and_high(probe: ThreadsProbe) -> None:
    before_token, before = probe.token(), probe.read()
    thread, stop = _started("leaky-worker", daemon=False)
    try:
        assert probe.token() != before_token
        after = probe.read()
        changes = diff_maps("threads", before, after)
        assert [(c.key, c.change) for c in changes] == [("leaky-worker", "added")]
        fp = after["leaky-worker"]
        assert fp["daemon"] is False
        assert fp["ident"] == thread.ident
        assert fp["class"] == "threading.Thread"
        assert probe.severity_of("leaky-worker", None, fp) is Severity.HIGH
        assert "join" in (probe.hint("leaky-worker", "added") or "")
    finally:
        stop.set()
        thread.join()
    assert "leaky-worker" not in probe.read()


def test_daemon_thread_is_medium(probe: ThreadsProbe) -> None:
    thread, stop = _started("daemon-worker", daemon=True)
    try:
        fp = probe.read()["daemon-worker"]
        assert fp["daemon"] is True
        assert probe.severity_of("daemon-worker", None, fp) is Severity.MEDIUM
    finally:
        stop.set()
        thread.join()


def test_token_is_stable_when_nothing_changes_and_moves_with_a_thread(
        probe: ThreadsProbe) -> None:
    start = probe.token()
    assert probe.token() == start
    thread, stop = _started("token-worker", daemon=True)
    try:
        running = probe.token()
        assert running != start
        assert probe.token() == running
    finally:
        stop.set()
        thread.join()
    # The thread is gone: the reading comes back (the kernel's count trails join()).
    _wait_for(lambda: probe.token() == start, "the token to come back")


def test_same_names_get_distinct_keys(probe: ThreadsProbe) -> None:
    pairs = [_started("twin", daemon=True) for _ in range(2)]
    try:
        found = probe.read()
        assert {"twin", "twin #2"} <= set(found)
        assert found["twin"]["ident"] != found["twin #2"]["ident"]
    finally:
        for thread, stop in pairs:
            stop.set()
            thread.join()


def test_restarted_thread_with_the_same_name_reads_as_changed(probe: ThreadsProbe) -> None:
    first, stop1 = _started("restartable", daemon=True)
    before = probe.read()
    # Keep the first Thread object alive so its ident cannot be handed to the second one.
    second, stop2 = _started("restartable", daemon=True)
    stop1.set()
    first.join()
    try:
        after = probe.read()
        changes = diff_maps("threads", before, after)
        # The native count may move by one while the first thread leaves the kernel.
        found = [(c.key, c.change) for c in changes if c.key != NATIVE_KEY]
        assert found == [("restartable", "changed")]
    finally:
        stop2.set()
        second.join()


@pytest.mark.skipif(not LINUX_PROC, reason="native thread count needs /proc/self/task")
def _settled(probe: ThreadsProbe) -> dict[str, object]:
    """A reading taken once threads that earlier tests joined have left the kernel."""
    last = probe.read()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = probe.read()
        if now == last:
            return now
        last = now
    return last


def test_native_thread_counts_apart_from_python_threads(probe: ThreadsProbe) -> None:
    baseline = _settled(probe)
    assert isinstance(baseline[NATIVE_KEY], int)
    # A Python thread changes its own key only, not the native count.
    thread, stop = _started("py", daemon=True)
    try:
        assert probe.read()[NATIVE_KEY] == baseline[NATIVE_KEY]
    finally:
        stop.set()
        thread.join()
    _wait_for(lambda: probe.read()[NATIVE_KEY] == baseline[NATIVE_KEY], "the thread to end")
    # _thread.start_new_thread makes a kernel thread that threading does not know of.
    release = _thread.allocate_lock()
    release.acquire()
    token = probe.token()
    _thread.start_new_thread(release.acquire, ())
    try:
        _wait_for(lambda: probe.token() != token, "the native thread to show")
        after = probe.read()
        assert after[NATIVE_KEY] == baseline[NATIVE_KEY] + 1
        change = diff_maps("threads", baseline, after)
        assert [(c.key, c.change) for c in change] == [(NATIVE_KEY, "changed")]
        assert probe.severity_of(NATIVE_KEY, 1, 2) is Severity.LOW
    finally:
        release.release()
    _wait_for(lambda: probe.read()[NATIVE_KEY] == baseline[NATIVE_KEY], "the native thread to end")


def test_probe_starts_no_thread(tmp_path: Path) -> None:
    count = threading.active_count()
    p = ThreadsProbe()
    p.setup(ProbeContext(rootdir=tmp_path))
    p.token()
    p.read()
    p.close()
    assert threading.active_count() == count


@pytest.mark.skipif(not LINUX_PROC, reason="needs /proc")
def test_own_descriptor_is_registered_and_released(tmp_path: Path) -> None:
    ctx = ProbeContext(rootdir=tmp_path)
    p = ThreadsProbe()
    p.setup(ctx)
    assert len(ctx.own_fds) == 1
    fd = next(iter(ctx.own_fds))
    assert os.readlink(f"/proc/self/fd/{fd}").endswith("/task")
    p.close()
    assert ctx.own_fds == set()
