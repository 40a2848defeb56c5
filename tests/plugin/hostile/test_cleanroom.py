"""statesnap.plugin.cleanroom in one process: the end sees the globals of before the tests, and the
tests' pollution is back afterwards (pytest and the other plugins finish as without statesnap).
"""

from __future__ import annotations

import builtins
import os
import signal
import subprocess
import sys
import tempfile
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from statesnap.plugin import cleanroom


def _no_open(*args: object, **kwargs: object) -> object:
    raise PermissionError("patched")


@pytest.fixture
def polluted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[cleanroom.Baseline]:
    base = cleanroom.capture()
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setattr(os, "environ", {"PLAIN": "dict"})
    monkeypatch.setattr(builtins, "open", _no_open)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-dir"))
    monkeypatch.setitem(sys.modules, "json", types.ModuleType("json"))
    monkeypatch.setitem(sys.modules, "cleanroom_stub", types.ModuleType("cleanroom_stub"))
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(100)
    try:
        yield base
    finally:
        sys.setrecursionlimit(limit)
        signal.signal(signal.SIGTERM, previous)


def test_the_end_sees_the_globals_of_before_and_the_pollution_comes_back(
        polluted: cleanroom.Baseline, tmp_path: Path) -> None:
    base = polluted
    with cleanroom.shielded(base):
        assert sys.platform == base.platform
        assert os.environ is base.environ and "PATH" in os.environ
        assert open is base.builtins["open"]
        assert sys.modules["json"] is base.modules["json"]
        assert "cleanroom_stub" not in sys.modules  # a stub added by a test is hidden
        assert os.getcwd() == base.cwd
        assert sys.getrecursionlimit() == base.recursion_limit
        assert signal.getsignal(signal.SIGTERM) == base.signals[signal.SIGTERM]
        assert tempfile.gettempdir() == (base.tempdir or tempfile.gettempdir())
        out = tmp_path / "written.txt"
        with open(out, "w", encoding="utf-8") as f:  # the real open
            f.write("ok")
        import json as fresh

        assert fresh.loads('{"a": 1}') == {"a": 1}
    # Afterwards, exactly what the tests left.
    assert sys.platform == "win32"
    assert type(os.environ) is dict and os.environ["PLAIN"] == "dict"
    assert builtins.open is _no_open
    assert not hasattr(sys.modules["json"], "loads")
    assert "cleanroom_stub" in sys.modules
    assert sys.getrecursionlimit() == 100
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
    with pytest.raises(FileNotFoundError):
        os.getcwd()  # back in the deleted directory


def test_the_end_sees_the_functions_of_before_and_the_patches_come_back(tmp_path: Path) -> None:
    """Issue 27: module attributes and class methods a test patched and never put back."""
    import json
    import pathlib
    import select
    import subprocess
    import time
    from unittest import mock

    base = cleanroom.capture()
    originals = {"Popen": subprocess.Popen, "kill": os.kill, "killpg": os.killpg,
                 "waitpid": os.waitpid, "scandir": os.scandir, "listdir": os.listdir,
                 "stat": os.stat, "exists": os.path.exists, "select": select.select,
                 "dumps": json.dumps, "loads": json.loads, "encode": json.JSONEncoder.encode,
                 "time": time.time, "monotonic": time.monotonic, "signal": signal.signal}
    fake_popen = mock.MagicMock()

    def frozen() -> float:
        return 1.0

    def patched(*args: object, **kwargs: object) -> object:
        raise RuntimeError("left patched by a test")

    inside: dict[str, object] = {}
    after: dict[str, object] = {}
    # Observed under the patches, asserted once they are gone (pytest itself needs os.stat).
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(subprocess, "Popen", fake_popen)
        for module, name in ((os, "kill"), (os, "killpg"), (os, "waitpid"), (os, "scandir"),
                             (os, "listdir"), (os, "stat"), (os.path, "exists"),
                             (select, "select"), (json, "dumps"), (json, "loads"),
                             (signal, "signal")):
            mp.setattr(module, name, patched)
        mp.setattr(json.JSONEncoder, "encode", patched)
        mp.setattr(time, "time", frozen)
        mp.setattr(time, "monotonic", frozen)
        # A method a subclass inherited, patched on the subclass: a new entry in its dict.
        mp.setattr(pathlib.PosixPath, "is_file", patched, raising=False)
        try:
            with cleanroom.shielded(base):
                now = {"Popen": subprocess.Popen, "kill": os.kill, "killpg": os.killpg,
                       "waitpid": os.waitpid, "scandir": os.scandir, "listdir": os.listdir,
                       "stat": os.stat, "exists": os.path.exists, "select": select.select,
                       "dumps": json.dumps, "loads": json.loads,
                       "encode": json.JSONEncoder.encode, "time": time.time,
                       "monotonic": time.monotonic, "signal": signal.signal}
                inside["same"] = [k for k, v in now.items() if v is not originals[k]]
                inside["json"] = json.loads(json.dumps({"a": [1]}))
                inside["clock"] = time.monotonic() != 1.0 and time.time() != 1.0
                inside["inherited"] = ("is_file" not in vars(pathlib.PosixPath)
                                       and (tmp_path / "x").is_file() is False)
                # A real process, really waited for.
                inside["run"] = subprocess.run(["true"], check=True).returncode
        except Exception as exc:  # the end under the patches: what it raised, for the assert
            inside["raised"] = repr(exc)
        after["Popen"] = subprocess.Popen is fake_popen
        after["patched"] = (os.kill, os.waitpid, os.path.exists, json.JSONEncoder.encode,
                            signal.signal) == (patched,) * 5
        after["frozen"] = time.monotonic is frozen
        after["inherited"] = vars(pathlib.PosixPath).get("is_file") is patched
    assert inside == {"same": [], "json": {"a": [1]}, "clock": True, "inherited": True,
                      "run": 0}
    # Afterwards, exactly what the tests left.
    assert after == {"Popen": True, "patched": True, "frozen": True, "inherited": True}


_TIMER_LEFT_RUNNING = r'''
import signal, sys, time
from statesnap.plugin import cleanroom

base = cleanroom.capture()                # SIGALRM's default handler: it ends the process
fired = []
signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))  # the test's own
signal.setitimer(signal.ITIMER_REAL, 0.01, 0.01)                           # left running
with cleanroom.shielded(base):
    time.sleep(0.1)                       # ten periods of the timer
    assert signal.getsignal(signal.SIGALRM) == signal.SIG_DFL
held_back = not fired
time.sleep(0.1)
signal.setitimer(signal.ITIMER_REAL, 0.0, 0.0)
print("alive", held_back, bool(fired))
'''


def test_a_timer_left_running_is_held_in_every_shielded_block() -> None:
    """Every block in the clean room holds the tests' timers, not only the end's own (the CI
    outputs, --junitxml's verdicts, run in one too): there SIGALRM's handler is the default,
    which ends the process, so a timer firing inside the block killed pytest before its
    summary line.  The timer runs again, with the test's handler, after the block."""
    proc = subprocess.run([sys.executable, "-c", _TIMER_LEFT_RUNNING], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout.split() == ["alive", "True", "True"], proc.stdout
