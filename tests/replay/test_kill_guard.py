"""The kill guard (``statesnap.base.spawned``): a signal goes only to a child statesnap started.

Issue 27: a test left ``subprocess.Popen`` a ``MagicMock``; the replay's ``kill_group`` got the
mock's pid, ``int()`` made it 1, and ``killpg(1, SIGKILL)`` is ``kill(-1, SIGKILL)``.  Here the
guard's own ``kill``/``killpg`` (the references it took at import) are replaced by recorders for
every test, so nothing is ever signalled for real, whatever the code under test (or a mutant of
it, ``make mutation``) gets wrong: each test asserts which calls would have gone out.  The
children are real (``sleep``), so "ours", "not ours" and "reaped" are the kernel's answers.
Each guard is tested on its own (a pid that passes all the others), so that removing any one of
them fails a test.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest

from statesnap.base import internal, spawned
from statesnap.replay import procwait
from statesnap.replay.runner import _kill

Calls = list[tuple[str, int, int]]


@pytest.fixture(autouse=True)
def sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[Calls]:
    """Every signal the guard would send, in order, instead of sending it."""
    calls: Calls = []
    monkeypatch.setattr(spawned, "_KILL", lambda pid, sig: calls.append(("kill", pid, sig)))
    monkeypatch.setattr(spawned, "_KILLPG", lambda pg, sig: calls.append(("killpg", pg, sig)))
    # The registry is process-wide: each test starts from what it held, and leaves it so.
    children, reaped = dict(spawned._children), dict(spawned._reaped)
    yield calls
    spawned._children.clear()
    spawned._children.update(children)
    spawned._reaped.clear()
    spawned._reaped.update(reaped)


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Real children to start; killed and reaped at the end through their real ``Popen``."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.returncode is None:
            proc.kill()
            proc.wait()


def _sleeper(children: list[subprocess.Popen[bytes]], group: bool = True,
             ours: bool = True) -> subprocess.Popen[bytes]:
    start = spawned.popen if ours else subprocess.Popen
    proc = start(["sleep", "60"], start_new_session=group, stdin=subprocess.DEVNULL)
    children.append(proc)
    return proc


def _refusals() -> int:
    return sum(1 for entry, _ in internal.noted() if entry["where"] == "signalling a process")


def _refused_since(before: int) -> list[str]:
    entries = [e["error"] for e, _ in internal.noted() if e["where"] == "signalling a process"]
    return entries[before:]


class _Int(int):
    """An int subclass: not a pid a spawn ever returns."""


NOT_PIDS = [
    pytest.param(mock.MagicMock(), id="magicmock"),  # int(MagicMock()) == 1
    pytest.param(1, id="pid-1"),
    pytest.param(0, id="pid-0"),
    pytest.param(-1, id="minus-1"),
    pytest.param(-5, id="negative"),
    pytest.param(True, id="bool"),
    pytest.param(_Int(4242), id="int-subclass"),
    pytest.param(4242.0, id="float"),
    pytest.param("4242", id="str"),
    pytest.param(None, id="none"),
]


@pytest.mark.parametrize("pid", NOT_PIDS)
def test_what_is_not_a_pid_is_never_signalled(pid: Any, sent: Calls) -> None:
    before = _refusals()
    assert spawned.signal_process(pid, signal.SIGKILL) is False
    assert spawned.signal_group(pid, signal.SIGKILL) is False
    assert procwait.kill_group(pid) is False
    assert sent == []
    assert len(_refused_since(before)) >= 1  # one internal-error line, never silence
    assert not spawned.is_pid(pid)
    assert not spawned.owned(pid)


@pytest.mark.parametrize("pid", [1, 0, -1, True, _Int(4242)], ids=["1", "0", "-1", "bool", "sub"])
def test_a_bad_pid_is_refused_even_if_the_registry_held_it(pid: Any, sent: Calls) -> None:
    # The type-and-range check holds on its own, whatever the registry says.
    spawned._children[pid] = (True, None)
    assert spawned.signal_process(pid, signal.SIGKILL) is False
    assert spawned.signal_group(pid, signal.SIGKILL) is False
    assert sent == []


def test_the_bug_a_mocked_popen_hands_back_is_refused(sent: Calls) -> None:
    """The replay's kill path with a ``Popen`` a test replaced by a ``MagicMock``."""
    with mock.patch("subprocess.Popen") as fake:
        proc = subprocess.Popen(["sleep", "60"])
        assert proc is fake.return_value and int(proc.pid) == 1
        before = _refusals()
        _kill(proc)
        assert procwait.kill_group(proc.pid) is False
    assert sent == []
    refused = _refused_since(before)
    assert refused and all("nothing was signalled" in line for line in refused)


def test_spawned_popen_is_the_real_one_even_when_a_test_patched_it(
        children: list[subprocess.Popen[bytes]], sent: Calls) -> None:
    with mock.patch("subprocess.Popen"):
        proc = _sleeper(children)
    assert type(proc) is spawned._POPEN and spawned.is_pid(proc.pid)
    assert spawned.owned(proc.pid)


def test_a_process_statesnap_did_not_start_is_not_signalled(
        children: list[subprocess.Popen[bytes]], sent: Calls) -> None:
    # A real child of this process (a test's), in a group of its own: not statesnap's.
    theirs = _sleeper(children, ours=False)
    before = _refusals()
    assert spawned.signal_process(theirs.pid, signal.SIGTERM) is False
    assert procwait.kill_group(theirs.pid) is False
    assert sent == []
    assert len(_refused_since(before)) == 2
    assert theirs.poll() is None


@pytest.mark.parametrize("pid", [os.getpid(), os.getppid()], ids=["self", "parent"])
def test_a_registered_pid_that_is_no_child_of_ours_is_not_signalled(pid: int,
                                                                    sent: Calls) -> None:
    # The kernel's answer (waitid: no such child) holds on its own, whatever the registry says.
    spawned._children[pid] = (True, None)
    assert spawned.signal_process(pid, signal.SIGKILL) is False
    assert spawned.signal_group(pid, signal.SIGKILL) is False
    assert sent == []


def test_our_child_is_signalled_and_its_group(children: list[subprocess.Popen[bytes]],
                                              sent: Calls) -> None:
    proc = _sleeper(children)
    assert spawned.signal_process(proc.pid, signal.SIGTERM) is True
    assert procwait.kill_group(proc.pid, signal.SIGKILL) is True
    assert sent == [("kill", proc.pid, signal.SIGTERM), ("killpg", proc.pid, signal.SIGKILL)]


def test_a_child_in_our_own_group_gets_no_group_signal(
        children: list[subprocess.Popen[bytes]], sent: Calls) -> None:
    # Started without a session of its own (an interactive replay): its group is ours.
    proc = _sleeper(children, group=False)
    before = _refusals()
    assert procwait.kill_group(proc.pid) is False
    assert _refused_since(before) == []  # the caller then signals the child alone
    _kill(proc)
    assert sent == [("kill", proc.pid, signal.SIGKILL)]


def test_a_group_the_child_does_not_lead_is_refused(children: list[subprocess.Popen[bytes]],
                                                    sent: Calls) -> None:
    # Noted as leading a group, but it is in ours: the process group check holds on its own.
    proc = _sleeper(children, group=False)
    spawned._children[proc.pid] = (True, proc)
    before = _refusals()
    assert procwait.kill_group(proc.pid) is False
    assert sent == []
    [line] = _refused_since(before)
    assert "leads no group" in line


def test_a_reaped_child_is_never_signalled(children: list[subprocess.Popen[bytes]],
                                           sent: Calls) -> None:
    proc = _sleeper(children)
    proc.kill()  # the real Popen's own kill: the child is ours
    assert spawned.wait(proc) == -signal.SIGKILL
    assert not spawned.owned(proc.pid)
    before = _refusals()
    assert spawned.signal_process(proc.pid, signal.SIGKILL) is False
    assert procwait.kill_group(proc.pid) is False
    _kill(proc)
    assert sent == []
    assert _refused_since(before) == []  # ours, and gone: nothing to say


def test_a_child_its_popen_reaped_is_never_signalled(children: list[subprocess.Popen[bytes]],
                                                     sent: Calls) -> None:
    proc = _sleeper(children)
    proc.kill()
    proc.wait()  # Popen reaped it behind the registry's back: its pid may be reused now
    assert spawned.signal_process(proc.pid, signal.SIGKILL) is False
    assert spawned.signal_group(proc.pid, signal.SIGKILL) is False
    assert sent == []


def test_a_child_reaped_behind_the_registrys_back_is_never_signalled(
        children: list[subprocess.Popen[bytes]], sent: Calls) -> None:
    # Reaped with a plain waitpid, its Popen none the wiser: the kernel's answer decides.
    proc = _sleeper(children)
    proc.kill()
    os.waitpid(proc.pid, 0)
    proc.returncode = -9
    spawned._children[proc.pid] = (True, None)
    assert spawned.signal_process(proc.pid, signal.SIGKILL) is False
    assert spawned.signal_group(proc.pid, signal.SIGKILL) is False
    assert sent == []
    assert not spawned.owned(proc.pid)


def test_an_exited_unreaped_child_is_still_ours(children: list[subprocess.Popen[bytes]],
                                                sent: Calls) -> None:
    # Exited, not reaped: its pid (and group id) cannot be reused, so its group may be killed.
    proc = spawned.popen(["true"], start_new_session=True)
    children.append(proc)
    assert spawned.wait_exited(proc.pid, 30) is not None
    assert spawned.has_exited(proc.pid)
    assert procwait.kill_group(proc.pid) is True
    assert sent == [("killpg", proc.pid, signal.SIGKILL)]
    assert spawned.wait(proc) == 0


def test_wait_child_refuses_a_pid_it_did_not_start(sent: Calls) -> None:
    with pytest.raises(spawned.NotOurs):
        procwait.wait_child(mock.MagicMock())  # type: ignore[arg-type]
    with pytest.raises(spawned.NotOurs):
        procwait.wait_child(1)
    assert sent == []


def test_a_fork_is_noted_in_the_parent_only(sent: Calls) -> None:
    pid = spawned.fork()
    if pid == 0:  # pragma: no cover - the child
        spawned.lead_group(0)
        os._exit(0 if not spawned._children else 1)
    spawned.lead_group(pid)  # as isolation's fork does, whichever runs first
    assert spawned.owned(pid)
    exit_ = procwait.wait_child(pid)
    assert exit_.code == 0  # the child held no pid of ours
    assert not spawned.owned(pid)
    # Its group was signalled once it exited (grandchildren die with it), then it was reaped.
    assert sent == [("killpg", pid, signal.SIGKILL)]


@pytest.mark.needs_pidns
def test_the_real_kill_path_spares_the_bystander_inside_a_pid_namespace() -> None:
    """The real ``kill``/``killpg`` this time, so inside a fresh pid namespace: the replay's
    kill path handed a mocked ``Popen`` (pid 1) kills nothing; a real child of ours dies."""
    import sys

    import pidns

    pidns.require()
    code = (
        "import signal, subprocess\n"
        "from unittest import mock\n"
        "from statesnap.base import spawned\n"
        "from statesnap.replay import procwait\n"
        "from statesnap.replay.runner import _kill\n"
        "with mock.patch('subprocess.Popen'):\n"
        "    fake = subprocess.Popen(['sleep', '60'])\n"
        "    _kill(fake)\n"
        "    assert procwait.kill_group(fake.pid) is False\n"
        "    assert procwait.kill_group(1) is False and procwait.kill_group(-1) is False\n"
        "proc = spawned.popen(['sleep', '60'], start_new_session=True)\n"
        "assert procwait.kill_group(proc.pid) is True\n"
        "assert spawned.wait(proc) == -signal.SIGKILL\n"
        "print('done')\n")
    proc = subprocess.run(pidns.wrap([sys.executable, "-c", code]), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "done", proc.stderr
    assert pidns.bystander_survived(proc.stderr), proc.stderr


def test_a_pipe_numbered_past_1024_is_read(sent: Calls) -> None:
    """``select()`` refuses descriptors numbered 1024 or more; the replay's pump does not."""
    from statesnap.replay.log import _ready

    read_fd, write_fd = os.pipe()
    high = 3000
    os.dup2(read_fd, high)
    os.close(read_fd)
    try:
        assert _ready([high], 0.0) == []
        os.write(write_fd, b"x")
        assert _ready([high], 5.0) == [high]
        os.close(write_fd)
        write_fd = -1
        os.read(high, 1)
        assert _ready([high], 5.0) == [high]  # EOF counts as readable, as select said
    finally:
        os.close(high)
        if write_fd >= 0:
            os.close(write_fd)


def test_a_pid_is_an_int_above_1() -> None:
    assert spawned.is_pid(2) and spawned.is_pid(4_194_304)
    assert not spawned.is_pid(1) and not spawned.is_pid(0) and not spawned.is_pid(-2)


@pytest.mark.parametrize("delta", [1, -1], ids=["above", "below"])
def test_a_group_id_other_than_the_pid_is_refused(
        delta: int, children: list[subprocess.Popen[bytes]], sent: Calls,
        monkeypatch: pytest.MonkeyPatch) -> None:
    proc = _sleeper(children)
    monkeypatch.setattr(spawned, "_GETPGID", lambda pid: pid + delta)
    before = _refusals()
    assert procwait.kill_group(proc.pid) is False
    assert sent == []
    [line] = _refused_since(before)
    assert f"to -{proc.pid}:" in line and "leads no group" in line


def test_a_child_the_kernel_cannot_vouch_for_is_refused(
        children: list[subprocess.Popen[bytes]], sent: Calls,
        monkeypatch: pytest.MonkeyPatch) -> None:
    proc = _sleeper(children)

    def waitid(*args: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(spawned, "_WAITID", waitid)
    before = _refusals()
    assert spawned.signal_process(proc.pid, signal.SIGKILL) is False
    assert procwait.kill_group(proc.pid) is False
    assert sent == []
    refused = _refused_since(before)
    assert len(refused) == 2 and all("cannot tell whether it is ours" in r for r in refused)
    assert spawned.owned(proc.pid)  # not reaped, still ours


@pytest.mark.parametrize("error", [ProcessLookupError, PermissionError])
def test_a_signal_that_does_not_reach_says_so(
        error: type[OSError], children: list[subprocess.Popen[bytes]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    proc = _sleeper(children)

    def fails(*args: object) -> None:
        raise error()

    monkeypatch.setattr(spawned, "_KILL", fails)
    monkeypatch.setattr(spawned, "_KILLPG", fails)
    assert spawned.signal_process(proc.pid, signal.SIGTERM) is False
    assert spawned.signal_group(proc.pid, signal.SIGTERM) is False


def test_a_group_gone_before_its_signal_is_not_signalled(
        children: list[subprocess.Popen[bytes]], sent: Calls,
        monkeypatch: pytest.MonkeyPatch) -> None:
    proc = _sleeper(children)

    def gone(pid: int) -> int:
        raise ProcessLookupError()

    monkeypatch.setattr(spawned, "_GETPGID", gone)
    assert spawned.signal_group(proc.pid, signal.SIGKILL) is False
    assert sent == []


def test_a_spawn_without_a_real_pid_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spawned, "_POPEN", mock.MagicMock())
    before = dict(spawned._children)
    with pytest.raises(spawned.NotOurs):
        spawned.popen(["sleep", "60"])
    assert spawned._children == before


def test_children_their_popen_reaped_are_forgotten_at_the_next_spawn(
        children: list[subprocess.Popen[bytes]], sent: Calls) -> None:
    first = _sleeper(children)
    first.kill()
    first.wait()
    second = _sleeper(children)
    assert first.pid not in spawned._children and first.pid in spawned._reaped
    assert spawned.owned(second.pid)
    assert spawned._children[second.pid] == (True, second)


def test_only_children_of_ours_count_as_reaped(sent: Calls) -> None:
    stranger = 4_000_001  # above the kernel's pid limit: never a process
    spawned.forget(stranger)
    assert stranger not in spawned._reaped
    before = _refusals()
    assert spawned.signal_process(stranger, signal.SIGKILL) is False
    assert len(_refused_since(before)) == 1  # not ours: said, not taken for a reaped child
    assert sent == []


def test_the_reaped_list_keeps_the_latest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spawned, "_REAPED_KEPT", 2)
    spawned._reaped.clear()
    for pid in (101, 102, 103):
        spawned._children[pid] = (True, None)
        spawned.forget(pid)
    assert list(spawned._reaped) == [102, 103]


def test_a_registered_child_reaped_by_the_kernel_is_forgotten(
        children: list[subprocess.Popen[bytes]], sent: Calls) -> None:
    proc = _sleeper(children)
    proc.kill()
    os.waitpid(proc.pid, 0)  # as a SIGCHLD set to SIG_IGN would have it
    proc.returncode = None
    spawned._children[proc.pid] = (True, None)
    assert spawned.signal_group(proc.pid, signal.SIGKILL) is False
    assert proc.pid not in spawned._children and proc.pid in spawned._reaped
    proc.returncode = -9
    assert sent == []


def test_lead_group_of_a_process_gone_is_quiet() -> None:
    spawned.lead_group(4_000_001)  # no such process: nothing raised


def test_an_earlier_child_stays_ours_after_the_next_spawn(
        children: list[subprocess.Popen[bytes]], sent: Calls) -> None:
    first = _sleeper(children)
    forked = 4_000_002  # a fork's entry (no Popen) among them must not trip the next spawn
    spawned._children[forked] = (True, None)
    second = _sleeper(children)
    assert spawned.signal_process(first.pid, signal.SIGTERM) is True
    assert spawned.signal_process(second.pid, signal.SIGTERM) is True
    assert forked in spawned._children
    assert sent == [("kill", first.pid, signal.SIGTERM), ("kill", second.pid, signal.SIGTERM)]


def test_the_group_check_compares_values_not_objects(sent: Calls,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # A pid past the small ints CPython caches, and a group id that is an equal, distinct int
    # object (getpgid's answer never is the caller's object); the kernel's checks faked.
    pid = 4_000_003
    spawned._children[pid] = (True, None)
    monkeypatch.setattr(spawned, "_WAITID", lambda *args: None)
    monkeypatch.setattr(spawned, "_GETPGID", lambda p: int(str(p)))
    assert spawned.signal_group(pid, signal.SIGKILL) is True
    assert sent == [("killpg", pid, signal.SIGKILL)]


def _slow_child(children: list[subprocess.Popen[bytes]], group: bool) -> int:
    """Ours, and ends by itself after a second (the recorded signals never reach it)."""
    proc = spawned.popen(["sleep", "1"], start_new_session=group)
    children.append(proc)
    return proc.pid


@pytest.mark.parametrize("group", [True, False], ids=["own-group", "no-group"])
def test_a_child_past_its_timeout_gets_sigabrt_then_sigkill(
        group: bool, children: list[subprocess.Popen[bytes]], sent: Calls,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(procwait, "ABORT_GRACE", 0.05)
    pid = _slow_child(children, group)
    exit_ = procwait.wait_child(pid, timeout=0.05)
    assert exit_.timed_out and exit_.code == 0  # it slept its second out: nothing was sent
    kill = ("killpg", pid, signal.SIGKILL) if group else ("kill", pid, signal.SIGKILL)
    assert sent == [("kill", pid, signal.SIGABRT), kill]
    children[-1].returncode = 0  # reaped by wait_child


@pytest.mark.parametrize("group", [True, False], ids=["own-group", "no-group"])
def test_a_child_that_ends_in_time_gets_only_its_group_killed(
        group: bool, children: list[subprocess.Popen[bytes]], sent: Calls) -> None:
    pid = _slow_child(children, group)
    exit_ = procwait.wait_child(pid, timeout=60)
    assert not exit_.timed_out and exit_.code == 0
    assert sent == ([("killpg", pid, signal.SIGKILL)] if group else [])
    children[-1].returncode = 0
