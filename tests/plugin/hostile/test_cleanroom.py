"""statesnap.plugin.cleanroom in one process: the end sees the globals of before the tests, and the
tests' pollution is back afterwards (pytest and the other plugins finish as without statesnap).
"""

from __future__ import annotations

import builtins
import os
import signal
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
