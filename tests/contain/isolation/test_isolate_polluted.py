"""Isolation after a test left the process functions patched (issue 27, section 1).

Isolated tests run between the other tests, outside the session end's clean room: the parent
forks or spawns, waits, kills a child past its timeout and reads what it sent back.  A test
before them left ``subprocess.Popen`` a ``MagicMock`` and ``os.kill``, ``os.killpg``,
``os.waitpid``, ``select.select``, ``json.dumps``, ``json.loads`` and ``time.monotonic``
patched (not ``os.stat``: pytest itself stops without it); the isolated tests still run,
report and time out as usual, and nothing but statesnap's own children is signalled: the run
goes inside a fresh pid namespace beside a bystander that must survive.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import pidns

pytestmark = [pytest.mark.needs_pidns, pytest.mark.slow]

SUITE = '''
import json, os, select, subprocess, time
from unittest import mock

import pytest


def _refuse(*args, **kwargs):
    raise RuntimeError("left patched by a test")


def test_a_pollutes():
    mock.patch("subprocess.Popen").start()
    for module, name in ((os, "kill"), (os, "killpg"), (os, "waitpid"), (select, "select"),
                         (json, "dumps"), (json, "loads")):
        setattr(module, name, _refuse)
    time.monotonic = lambda: 1000.0


@pytest.mark.statesnap_isolate("fork")
def test_b_forked_passes():
    assert 1 + 1 == 2


@pytest.mark.statesnap_isolate("fork")
def test_c_forked_fails():
    assert [1] == [2]


@pytest.mark.statesnap_isolate("fork")
def test_d_forked_hangs():
    import time as real
    real.sleep(120)


@pytest.mark.statesnap_isolate("spawn")
def test_e_spawned_passes():
    assert 2 * 2 == 4
'''


def test_isolation_after_a_test_patched_what_it_runs_on(tmp_path: Path) -> None:
    pidns.require()
    (tmp_path / "test_polluted.py").write_text(SUITE, encoding="utf-8")
    record = tmp_path / "out" / "run.jsonl"
    argv = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
            "-p", "statesnap", f"--statesnap-record={record}",
            "--statesnap-isolate-timeout=20", "--statesnap-verify-budget=0", "-q"]
    proc = subprocess.run(pidns.wrap(argv), cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    out = proc.stdout + proc.stderr
    assert pidns.bystander_survived(proc.stderr), out[-4000:]
    assert "INTERNALERROR" not in out and "Traceback" not in out, out[-4000:]
    assert "left patched by a test" not in out, out[-4000:]
    assert proc.returncode == 1, out[-4000:]
    assert "2 failed, 3 passed" in out, out[-4000:]
    lines = {}
    for text in record.read_text(encoding="utf-8").splitlines():
        entry = json.loads(text)
        if entry.get("type") == "test":
            lines[entry["nodeid"].split("::")[1]] = entry
    assert lines["test_b_forked_passes"]["outcome"] == "passed"
    assert lines["test_e_spawned_passes"]["outcome"] == "passed"
    assert lines["test_e_spawned_passes"]["isolation"]["mode"] == "spawn"
    hung = lines["test_d_forked_hangs"]
    assert hung["outcome"] == "failed" and hung["isolation"]["exit"]["timed_out"] is True
