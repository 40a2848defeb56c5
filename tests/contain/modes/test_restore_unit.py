"""Restore mode's choices on their own: which leaked keys it puts back, and what it records.

Real probes on real process state (env, cwd); the plugin around them is a plain stand-in
holding what :class:`RestoreMode` reads (probes, the restore setting, the tracker).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from statesnap.contain.restore import RestoreMode
from statesnap.probes.base import Probe, ProbeContext
from statesnap.probes.cwd import CwdProbe
from statesnap.probes.env import EnvProbe
from statesnap.state.diff import Change


@dataclass
class _Snapshotter:
    probes: list[Probe]


class _Tracker:
    def __init__(self) -> None:
        self.baselines = 0

    def baseline(self) -> None:
        self.baselines += 1


@dataclass
class _Plugin:
    snapshotter: _Snapshotter
    unavailable: tuple[str, ...] = ()
    child: bool = False
    tracker: _Tracker = field(default_factory=_Tracker)


@dataclass
class _Item:
    nodeid: str = "t.py::test_x"


class _RestoreFails(Probe):
    name = "restore_fails"
    restorable = True

    def save(self) -> object:
        return {}

    def restore(self, saved: object, keys: Any) -> list[str]:
        raise OSError("read-only")


class _Broken(Probe):
    name = "broken"
    restorable = True

    def save(self) -> object:
        raise RuntimeError("cannot save")


def _mode(tmp_path: Path, spec: str | None = None, *extra: Probe) -> tuple[RestoreMode, _Plugin]:
    env = EnvProbe()
    env.setup(ProbeContext(rootdir=tmp_path))
    plugin = _Plugin(_Snapshotter([env, CwdProbe(), *extra]))
    mode = RestoreMode(plugin, spec or "all")  # type: ignore[arg-type]
    mode.pytest_sessionstart(None)  # type: ignore[arg-type]
    return mode, plugin


def _env(key: str, phase: str = "call", scope: str | None = None, severity: int = 3,
         change: str = "added") -> Change:
    return Change("env", key, change, None, "x", phase=phase, scope=scope,
                  fixture="fx" if scope else None, severity=severity)


def test_leaked_keys_are_put_back_and_listed(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RU_CHANGED", "old")
    monkeypatch.delenv("RU_ADDED", raising=False)
    monkeypatch.chdir(tmp_path)
    mode, plugin = _mode(tmp_path)
    assert mode.selection is not None and mode.selection.names == {"env", "cwd"}
    item = _Item()
    mode.before_test(item)  # type: ignore[arg-type]
    os.environ["RU_CHANGED"] = "new"
    os.environ["RU_ADDED"] = "1"
    sub = tmp_path / "sub"
    sub.mkdir()
    os.chdir(sub)
    changes = [_env("RU_CHANGED", change="changed"), _env("RU_ADDED"),
               Change("cwd", "cwd", "changed", str(tmp_path), str(sub), phase="call",
                      severity=3)]
    done = mode.after_test(item, 0, changes)  # type: ignore[arg-type]
    assert done == ["env:RU_CHANGED", "env:RU_ADDED", "cwd:cwd"]
    assert os.environ["RU_CHANGED"] == "old" and "RU_ADDED" not in os.environ
    assert os.getcwd() == str(tmp_path)
    assert plugin.tracker.baselines == 1  # the probes are re-read after putting back
    assert mode.failures == []


def test_wide_fixture_changes_and_low_severity_are_left(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    monkeypatch.delenv("RU_WIDE", raising=False)
    monkeypatch.delenv("RU_FIN", raising=False)
    monkeypatch.delenv("RU_LOW", raising=False)
    monkeypatch.delenv("RU_FN", raising=False)
    mode, plugin = _mode(tmp_path)
    item = _Item()
    mode.before_test(item)  # type: ignore[arg-type]
    for key in ("RU_WIDE", "RU_FIN", "RU_LOW", "RU_FN"):
        monkeypatch.setenv(key, "1")
    changes = [_env("RU_WIDE", "setup", "module"), _env("RU_FIN", "teardown", "session"),
               _env("RU_LOW", severity=1), _env("RU_FN", "setup", "function")]
    assert mode.after_test(item, 0, changes) == ["env:RU_FN"]  # type: ignore[arg-type]
    assert os.environ["RU_WIDE"] == os.environ["RU_FIN"] == os.environ["RU_LOW"] == "1"
    assert "RU_FN" not in os.environ
    assert plugin.tracker.baselines == 1


def test_nothing_to_put_back_records_nothing(tmp_path: Path) -> None:
    mode, plugin = _mode(tmp_path)
    item = _Item()
    mode.before_test(item)  # type: ignore[arg-type]
    assert mode.after_test(item, 0, []) == []  # type: ignore[arg-type]
    assert plugin.tracker.baselines == 0
    unknown = Change("threads", "t", "added", None, "x", phase="call", severity=3)
    assert mode.after_test(item, 1, [unknown]) == []  # type: ignore[arg-type]


def test_only_the_selected_probes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RU_SEL", raising=False)
    monkeypatch.chdir(tmp_path)
    mode, _ = _mode(tmp_path, "cwd")
    assert [p.name for p in mode.probes] == ["cwd"]
    item = _Item()
    mode.before_test(item)  # type: ignore[arg-type]
    monkeypatch.setenv("RU_SEL", "1")
    assert mode.after_test(item, 0, [_env("RU_SEL")]) == []  # type: ignore[arg-type]
    assert os.environ["RU_SEL"] == "1"


def test_an_isolated_child_never_restores(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RU_CHILD", raising=False)
    mode, plugin = _mode(tmp_path)
    plugin.child = True
    item = _Item()
    mode.before_test(item)  # type: ignore[arg-type]
    monkeypatch.setenv("RU_CHILD", "1")
    assert mode.after_test(item, 0, [_env("RU_CHILD")]) == []  # type: ignore[arg-type]
    assert os.environ["RU_CHILD"] == "1"


def test_a_probe_that_cannot_save_or_restore_is_a_failure_not_a_crash(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RU_OK", raising=False)
    mode, _ = _mode(tmp_path, None, _Broken())
    item = _Item()
    mode.before_test(item)  # type: ignore[arg-type]
    assert mode.failures == [(item.nodeid, "broken", "save: RuntimeError('cannot save')")]
    mode.failures.clear()
    monkeypatch.setenv("RU_OK", "1")
    broken = Change("broken", "k", "added", None, 1, phase="call", severity=3)
    assert mode.after_test(item, 0, [broken, _env("RU_OK")]) == [  # type: ignore[arg-type]
        "env:RU_OK"]
    assert mode.failures == []  # nothing saved for it: nothing to put back, no second error
    failing = _mode(tmp_path, None, _RestoreFails())[0]
    failing.before_test(item)  # type: ignore[arg-type]
    bad = Change("restore_fails", "k", "added", None, 1, phase="call", severity=3)
    assert failing.after_test(item, 1, [bad]) == []  # type: ignore[arg-type]
    assert failing.failures == [(item.nodeid, "restore_fails",
                                 "restore: OSError('read-only')")]


def test_probes_that_cannot_put_state_back_are_left_out(tmp_path: Path) -> None:
    from statesnap.probes.threads import ThreadsProbe

    mode, _ = _mode(tmp_path, None, ThreadsProbe())
    assert [p.name for p in mode.probes] == ["env", "cwd"]
    assert mode.selection is not None and "threads" not in mode.selection.names
    with pytest.raises(pytest.UsageError, match="threads cannot put state back"):
        _mode(tmp_path, "threads", ThreadsProbe())
