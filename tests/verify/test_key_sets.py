"""The in-session key-level proof names the smallest set of keys when no single one heals.

A real pytest run with statesnap: the polluter leaves two XDG variables and a working
directory in a removed folder behind; the victim fails while either variable is set.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SUITE = {
    "pytest.ini": "[pytest]\n",
    "test_a_polluter.py": '''
import os, shutil, tempfile

def test_moves_everything():
    os.environ["XDG_CONFIG_HOME"] = "/srv/zoo/config"
    os.environ["XDG_CACHE_HOME"] = "/srv/zoo/cache"
    scratch = tempfile.mkdtemp()
    os.chdir(scratch)
    shutil.rmtree(scratch)
''',
    "test_b_victim.py": '''
import os

def test_default_dirs():
    assert "XDG_CONFIG_HOME" not in os.environ and "XDG_CACHE_HOME" not in os.environ
''',
}


def test_two_leaked_variables_are_named_together_and_nothing_else(tmp_path: Path) -> None:
    root = tmp_path / "suite"
    root.mkdir()
    for name, text in SUITE.items():
        (root / name).write_text(text, encoding="utf-8")
    summary = tmp_path / "summary.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "statesnap", "-p", "no:randomly",
         f"--statesnap-record={tmp_path / 'record.jsonl'}", f"--statesnap-json={summary}"],
        cwd=root, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (f,) = json.loads(summary.read_text(encoding="utf-8"))["findings"]
    assert f["status"] == "verified", f
    assert f["victim"] == "test_b_victim.py::test_default_dirs"
    assert sorted(f["proven_keys"]) == ["env:XDG_CACHE_HOME", "env:XDG_CONFIG_HOME"]
    assert f["probe"] == "env"
    # Neither variable restored alone makes the victim pass: the terminal must not say so.
    assert not f["hint_proven"]
    named, other = f"env:{f['key']}", next(k for k in f["proven_keys"] if k != f"env:{f['key']}")
    assert f"state: {named}: " in proc.stdout, proc.stdout[-3000:]
    assert "(restoring it makes the victim pass)" not in proc.stdout
    assert "restoring also heals it" not in proc.stdout
    assert f"restoring it heals only together with: {other}" in proc.stdout
