"""The ``process`` probe against real process settings, each changed for real and put back."""

from __future__ import annotations

import asyncio
import builtins
import decimal
import gc
import io
import json
import locale
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from statesnap.probes.base import ProbeContext, Severity
from statesnap.probes.process import ProcessProbe
from statesnap.state.diff import diff_maps

LINUX = sys.platform.startswith("linux")


@pytest.fixture
def probe(tmp_path: Path) -> Iterator[ProcessProbe]:
    p = ProcessProbe()
    ctx = ProbeContext(rootdir=tmp_path)
    p.setup(ctx)
    yield p
    p.close()
    assert not ctx.own_fds  # the /proc file it held is closed


def _set_and_restore_umask() -> int:
    old = os.umask(0o022)
    os.umask(old)
    return old


def test_umask_is_read_without_setting_it(tmp_path: Path) -> None:
    probe = ProcessProbe()
    ctx = ProbeContext(rootdir=tmp_path)
    probe.setup(ctx)
    try:
        assert int(probe.read()["umask"], 8) == _set_and_restore_umask()
        if LINUX:  # read from /proc/self/status; only without /proc does a note say otherwise
            assert "process" not in ctx.notes
            assert len(ctx.own_fds) == 2  # /proc/self/status and /proc/self/task
    finally:
        probe.close()


UMASK_SCRIPT = r"""
import json, os, sys, threading
from pathlib import Path
from statesnap.probes.base import ProbeContext
from statesnap.probes.process import ProcessProbe

real = os.umask
calls = []
def counting(mask):
    calls.append(mask)
    return real(mask)

probe = ProcessProbe()
probe.setup(ProbeContext(rootdir=Path(".")))
start = int(open("/proc/self/status").read().split("Umask:")[1].split()[0], 8)
out = {"start": start}
import statesnap.probes.process as process_module
process_module._os_umask = counting  # the probe's own reference (it ignores os.umask patches)
probe.token()                      # alone: set to its last value, so never different
out["alone"] = {"calls": list(calls)}
calls.clear()
real(0o027)                        # a test changes it (not through the probe)
token_umask = probe.read()["umask"]
out["alone_changed"] = {"calls": list(calls), "read": token_umask}
calls.clear()
stop = threading.Event()
helper = threading.Thread(target=stop.wait)
helper.start()
real(0o077)
out["threaded"] = {"read": probe.read()["umask"], "calls": list(calls)}
stop.set()
helper.join()
# A thread threading does not know (a C library's, here one of _thread's own): still /proc.
import _thread, time
gate = _thread.allocate_lock(); gate.acquire()
done = _thread.allocate_lock(); done.acquire()
def native():
    gate.acquire(); done.release()
_thread.start_new_thread(native, ())
time.sleep(0.05)
calls.clear()
real(0o037)
out["native"] = {"python_threads": threading.active_count(), "read": probe.read()["umask"],
                 "calls": list(calls)}
gate.release(); done.acquire(); time.sleep(0.05)
current = real(0o022); real(current)
out["final"] = oct(current)
def boom(mask):
    raise RuntimeError("a test left os.umask patched")
os.umask = boom  # the probe keeps its own reference
probe.token()
out["patched_ok"] = int(probe.read()["umask"], 8) == current
print(json.dumps(out))
"""


@pytest.mark.skipif(not LINUX, reason="the /proc path exists on Linux only")
def test_umask_is_never_changed_alone_and_never_set_beside_other_threads(tmp_path: Path) -> None:
    # A fresh interpreter: the test process has other threads (a plugin's server thread).
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    proc = subprocess.run([sys.executable, "-c", UMASK_SCRIPT], capture_output=True,
                          text=True, cwd=tmp_path, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    # Alone: "set" once, to the value it already had.
    assert out["alone"]["calls"] == [out["start"]]
    # After a change, the guess (the old value) is wrong once, and put back at once.
    assert out["alone_changed"]["read"] == "0027"
    assert out["alone_changed"]["calls"][-1] == 0o027
    # With another thread alive, the umask is read from /proc and never set.
    assert out["threaded"] == {"read": "0077", "calls": []}
    assert out["native"] == {"python_threads": 1, "read": "0037", "calls": []}
    assert out["final"] == oct(0o037)
    assert out["patched_ok"] is True


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    os.umask(old)
    yield
    os.umask(old)


def test_umask_change_moves_the_full_token_and_restores(
    probe: ProcessProbe, umask: None
) -> None:
    before = probe.read()
    saved = probe.save()
    token = probe.token()
    os.umask(0o077)
    assert probe.token() != token
    changes = diff_maps("process", before, probe.read())
    assert [(c.key, c.after) for c in changes] == [("umask", "0077")]
    assert probe.restore(saved, ["umask"]) == ["umask"]
    assert probe.read()["umask"] == before["umask"]


# Each case: (key, change it, put it back by hand, expected "after" or a check).
def _decimal_prec() -> Callable[[], None]:
    ctx = decimal.getcontext()
    old = ctx.prec
    ctx.prec = 5
    return lambda: setattr(ctx, "prec", old)


def _decimal_traps() -> Callable[[], None]:
    ctx = decimal.getcontext()
    old = ctx.traps[decimal.Inexact]
    ctx.traps[decimal.Inexact] = True
    return lambda: ctx.traps.__setitem__(decimal.Inexact, old)


def _recursion() -> Callable[[], None]:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(old + 500)
    return lambda: sys.setrecursionlimit(old)


def _excepthook() -> Callable[[], None]:
    old = sys.excepthook

    def quiet_hook(*args: object) -> None:
        pass

    sys.excepthook = quiet_hook
    return lambda: setattr(sys, "excepthook", old)


def _threading_hook() -> Callable[[], None]:
    old = threading.excepthook
    threading.excepthook = lambda args: None
    return lambda: setattr(threading, "excepthook", old)


def _breakpointhook() -> Callable[[], None]:
    old = sys.breakpointhook
    sys.breakpointhook = lambda *a, **k: None
    return lambda: setattr(sys, "breakpointhook", old)


def _profile() -> Callable[[], None]:
    old = sys.getprofile()
    sys.setprofile(lambda *a: None)
    return lambda: sys.setprofile(old)


def _threading_trace() -> Callable[[], None]:
    old = threading.gettrace()
    threading.settrace(lambda *a: None)
    return lambda: threading.settrace(old)  # type: ignore[arg-type]


def _stderr() -> Callable[[], None]:
    old = sys.stderr
    sys.stderr = io.StringIO()
    return lambda: setattr(sys, "stderr", old)


def _gc_callback() -> Callable[[], None]:
    def on_collect(phase: str, info: dict[str, int]) -> None:
        pass

    gc.callbacks.append(on_collect)
    return lambda: gc.callbacks.remove(on_collect) if on_collect in gc.callbacks else None


def _gc_debug() -> Callable[[], None]:
    old = gc.get_debug()
    gc.set_debug(gc.DEBUG_STATS)
    return lambda: gc.set_debug(old)


def _switchinterval() -> Callable[[], None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(old * 2)
    return lambda: sys.setswitchinterval(old)


def _int_digits() -> Callable[[], None]:
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(old + 1000)
    return lambda: sys.set_int_max_str_digits(old)


def _stdout() -> Callable[[], None]:
    old = sys.stdout
    sys.stdout = io.StringIO()
    return lambda: setattr(sys, "stdout", old)


def _gc_disabled() -> Callable[[], None]:
    was = gc.isenabled()
    gc.disable()
    return gc.enable if was else gc.disable


def _gc_threshold() -> Callable[[], None]:
    old = gc.get_threshold()
    gc.set_threshold(old[0] + 1, *old[1:])
    return lambda: gc.set_threshold(*old)


def _socket_timeout() -> Callable[[], None]:
    old = socket.getdefaulttimeout()
    socket.setdefaulttimeout(3.5)
    return lambda: socket.setdefaulttimeout(old)


def _tempdir() -> Callable[[], None]:
    old = tempfile.tempdir
    tempfile.tempdir = "/nonexistent-statesnap"
    return lambda: setattr(tempfile, "tempdir", old)


def _signal_handler() -> Callable[[], None]:
    old = signal.signal(signal.SIGUSR1, lambda *a: None)
    return lambda: signal.signal(signal.SIGUSR1, old)


def _signal_mask() -> Callable[[], None]:
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
    return lambda: signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _itimer() -> Callable[[], None]:
    # Far in the future: cancelled (in a finally) long before it could fire.
    signal.setitimer(signal.ITIMER_REAL, 300)
    return lambda: signal.setitimer(signal.ITIMER_REAL, 0)


def _builtin_added() -> Callable[[], None]:
    builtins.statesnap_test_helper = 1  # type: ignore[attr-defined]
    return lambda: vars(builtins).pop("statesnap_test_helper", None)


def _builtin_replaced() -> Callable[[], None]:
    old = builtins.open
    builtins.open = lambda *a, **k: None  # type: ignore[assignment]
    return lambda: setattr(builtins, "open", old)


def _closed_event_loop() -> Callable[[], None]:
    loop = asyncio.new_event_loop()
    loop.close()
    policy = asyncio.get_event_loop_policy()
    policy.set_event_loop(loop)
    return lambda: policy.set_event_loop(None)


def _locale() -> Callable[[], None]:
    old = locale.setlocale(locale.LC_ALL, None)
    current = locale.setlocale(locale.LC_CTYPE, None)
    locale.setlocale(locale.LC_CTYPE, "C" if current != "C" else "C.UTF-8")
    return lambda: locale.setlocale(locale.LC_ALL, old)


def _time_zone() -> Callable[[], None]:
    # What monkeypatch.setenv("TZ", ...) plus time.tzset() leaves: TZ is back, the zone not.
    old = os.environ.get("TZ")
    os.environ["TZ"] = "ABC-13:45"  # a POSIX rule: needs no tzdata
    time.tzset()
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    return time.tzset


CASES: list[tuple[str, Callable[[], Callable[[], None]], Any, bool]] = [
    # key, change, expected after (None: just "changed"), seen by the light token
    ("decimal.prec", _decimal_prec, 5, True),
    ("decimal.traps", _decimal_traps, None, False),
    ("recursionlimit", _recursion, None, True),
    ("sys.excepthook", _excepthook, None, True),
    ("threading.excepthook", _threading_hook, None, True),
    ("sys.stdout", _stdout, None, True),
    ("sys.stderr", _stderr, None, True),
    ("sys.breakpointhook", _breakpointhook, None, True),
    ("sys.profile", _profile, None, True),
    ("threading.trace", _threading_trace, None, False),
    ("gc.callbacks", _gc_callback, None, True),
    ("gc.debug", _gc_debug, gc.DEBUG_STATS, True),
    ("sys.switchinterval", _switchinterval, None, False),
    ("sys.int_max_str_digits", _int_digits, None, False),
    ("gc.enabled", _gc_disabled, False, True),
    ("gc.threshold", _gc_threshold, None, True),
    ("socket.timeout", _socket_timeout, 3.5, True),
    ("tempfile.tempdir", _tempdir, "/nonexistent-statesnap", True),
    ("signal.SIGUSR1", _signal_handler, None, False),
    ("signal.blocked", _signal_mask, ["SIGUSR2"], False),
    ("signal.ITIMER_REAL", _itimer, "armed, interval 0s", False),
    ("builtins:statesnap_test_helper", _builtin_added, None, False),
    ("builtins:open", _builtin_replaced, None, False),
    ("asyncio.event_loop", _closed_event_loop, "closed", False),
    ("locale", _locale, None, False),
    ("time.zone", _time_zone, "ABC/ABC (UTC+13:45)", False),
]


@pytest.mark.parametrize(("key", "change", "after", "light"), CASES, ids=[c[0] for c in CASES])
def test_each_setting(
    probe: ProcessProbe, key: str, change: Callable[[], Callable[[], None]], after: Any,
    light: bool,
) -> None:
    before = probe.read()
    token, light_token = probe.token(), probe.light_token()
    undo = change()
    try:
        assert probe.token() != token
        if light:
            assert probe.light_token() != light_token
        changes = {c.key: c for c in diff_maps("process", before, probe.read())}
        assert list(changes) == [key]
        if after is not None:
            assert changes[key].after == after
        assert probe.hint(key, changes[key].change)
    finally:
        undo()
    assert diff_maps("process", before, probe.read()) == []


RESTORABLE = [c for c in CASES if c[0] not in ("asyncio.event_loop",)]


@pytest.mark.parametrize(("key", "change", "after", "light"), RESTORABLE,
                         ids=[c[0] for c in RESTORABLE])
def test_restore_puts_each_setting_back(
    probe: ProcessProbe, key: str, change: Callable[[], Callable[[], None]], after: Any,
    light: bool,
) -> None:
    original = probe.read()
    saved = probe.save()
    undo = change()
    try:
        assert probe.restore(saved, [key]) == [key]
        assert diff_maps("process", original, probe.read()) == []
    finally:
        undo()


def test_pytest_capture_objects_count_as_default(
    probe: ProcessProbe, capsys: pytest.CaptureFixture[str]
) -> None:
    assert type(sys.stdout).__module__ == "_pytest.capture"
    got = probe.read()
    assert got["sys.stdout"] == got["sys.stderr"] == "default"


def test_builtins_rebinding_of_underscore_is_ignored(probe: ProcessProbe) -> None:
    before = probe.read()
    had = "_" in vars(builtins)
    old = vars(builtins).get("_")
    builtins._ = 42  # type: ignore[attr-defined]  # what sys.displayhook does in a doctest
    try:
        assert diff_maps("process", before, probe.read()) == []
    finally:
        if had:
            builtins._ = old  # type: ignore[attr-defined]
        else:
            del builtins._  # type: ignore[attr-defined]


def test_fingerprints_are_json_and_severities_differ(probe: ProcessProbe) -> None:
    json.dumps(probe.read())
    assert probe.severity_of("umask", "0022", "0077") == Severity.HIGH
    assert probe.severity_of("gc.enabled", True, False) == Severity.MEDIUM
    assert probe.severity_of("sys.switchinterval", 0.005, 0.1) == Severity.LOW


SUITE = """
import decimal, os, sys

def test_a_tightens_umask_and_precision():
    os.umask(0o077)
    decimal.getcontext().prec = 6

def test_b_expects_default_precision():
    assert str(decimal.Decimal(1) / decimal.Decimal(7)) == "0." + "142857" * 4 + "1429"

def test_c_uses_capsys(capsys):
    print("hello")
    assert capsys.readouterr().out == "hello\\n"
"""


def test_plugin_names_the_decimal_polluter(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_p=SUITE)
    result = pytester.runpytest_subprocess(
        "-p", "statesnap", "-p", "no:randomly", "--statesnap-json", "out.json",
        "--statesnap-probes", "process",
    )
    result.assert_outcomes(passed=2, failed=1)
    summary = json.loads((pytester.path / "out.json").read_text())
    leaks = {t["nodeid"].split("::")[1]: sorted(x["key"] for x in t["leaks"])
             for t in summary["tests"]}
    assert leaks["test_a_tightens_umask_and_precision"] == ["decimal.prec", "umask"]
    assert leaks["test_b_expects_default_precision"] == []
    assert leaks["test_c_uses_capsys"] == []  # capsys swapped sys.stdout: not a leak
    finding = next(f for f in summary["findings"]
                   if f["victim"].endswith("test_b_expects_default_precision"))
    assert finding["polluters"] == ["test_p.py::test_a_tightens_umask_and_precision"]
    assert finding["probe"] == "process"


def test_pytest_swapping_its_capture_and_the_real_streams_does_not_move_the_token(
        probe: ProcessProbe) -> None:
    # pytest puts the real streams back and its capture objects in again around phases and
    # subtests: the map shows "default" either way, so after one read of each the token
    # stays put; a stream a test put in place moves it.
    captured = sys.stdout, sys.stderr
    try:
        probe.read()
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        assert probe.read()["sys.stdout"] == "default"
        first = probe.token()
        sys.stdout, sys.stderr = captured
        assert probe.token() == first
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        assert probe.token() == first
        sys.stdout, sys.stderr = captured
        sys.stdout = io.StringIO()
        assert probe.token() != first
        assert probe.read()["sys.stdout"].startswith("_io.StringIO")
        assert probe.token() != first
    finally:
        sys.stdout, sys.stderr = captured
