"""A hunt reports only what its printed reproduction shows under plain pytest.

Each suite here has state the probes cannot see (a list held as a function's default
argument), so a run where several tests stand in front of a victim can blame the wrong one.
Every finding's reproduction is then run the way a user would: plain pytest, no statesnap.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hunt_helpers import Suite

from repro_check import run_reproduction
from statesnap.analysis.findings import BRITTLE, LATENT, Finding
from statesnap.hunt.hunt import Hunter
from statesnap.hunt.options import HuntOptions
from statesnap.hunt.result import HuntResult
from statesnap.record.reader import read_record

pytestmark = pytest.mark.slow

#: A registry the probes do not watch: a function's default argument, filled in place.
HELPER = '''
def registry(acc=[]):
    return acc
'''


def _hunt(suite: Suite, record: Path) -> HuntResult:
    return Hunter([read_record(record)], HuntOptions(budget=600),
                  logs_dir=suite.out / "hunt-logs").hunt()


def _plain(words: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *words], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTEST_ADDOPTS": "-p no:randomly"})


def _run_repro(f: Finding, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The printed command as a user runs it: a shell, plain pytest, statesnap not active."""
    words = shlex.split(f.repro or "")
    assert words[:3] == ["python", "-m", "pytest"], f.repro
    assert "statesnap" not in " ".join(words)
    return run_reproduction(f.repro or "", cwd).proc


def _victim_failed(proc: subprocess.CompletedProcess[str], victim: str) -> bool:
    return f"FAILED {victim}" in proc.stdout


def _check_every_latent_finding(result: HuntResult, root: Path) -> None:
    """The exact printed command fails the victim; the victim alone passes."""
    for f in result.findings:
        if f.status != LATENT:
            continue
        proc = _run_repro(f, root)
        assert _victim_failed(proc, f.victim), (f.repro, proc.stdout)
        alone = _plain(["-m", "pytest", "-rf", f.victim], root)
        assert alone.returncode == 0, alone.stdout


def test_a_victim_broken_by_the_test_in_front_of_it_is_not_blamed_on_the_head(
        suite: Suite) -> None:
    # test_first fails after test_polluter and then leaves the registry dirty (its cleanup
    # is not in a finally); test_second fails only because of that.  In the shared proof
    # run [polluter, first, second] both fail, but [polluter, second] passes.
    suite.write({
        "pytest.ini": "[pytest]\n",
        "helper.py": HELPER,
        "test_a_first.py": '''
import os
from helper import registry

def test_first():
    registry().append("first")
    assert os.environ.get("ZOO_SPEED", "slow") == "slow"
    registry().remove("first")
''',
        "test_b_second.py": '''
from helper import registry

def test_second():
    assert registry() == []
''',
        "test_c_polluter.py": '''
import os

def test_polluter():
    os.environ["ZOO_SPEED"] = "fast"
''',
    })
    record = suite.record()
    result = _hunt(suite, record)
    _check_every_latent_finding(result, suite.root)
    by_victim = {f.victim: f for f in result.findings}
    first = by_victim["test_a_first.py::test_first"]
    assert first.status == LATENT
    assert first.polluters == ["test_c_polluter.py::test_polluter"]
    second = by_victim["test_b_second.py::test_second"]
    # Both are needed: the polluter makes test_first fail, test_first leaves the registry.
    assert second.status == LATENT
    assert second.polluters == ["test_c_polluter.py::test_polluter",
                                "test_a_first.py::test_first"]


def test_a_victim_that_fails_alone_is_no_latent_finding(suite: Suite) -> None:
    # test_victim passes in the record and without the leaking test only because
    # test_setter filled the registry first; it fails after the polluter, but alone too.
    suite.write({
        "pytest.ini": "[pytest]\n",
        "helper.py": HELPER,
        "test_a_setter.py": '''
from helper import registry

def test_setter():
    registry().append("ready")
''',
        "test_b_victim.py": '''
import os
from helper import registry

def test_victim():
    assert registry() == ["ready"]
    assert os.environ.get("ZOO_SPEED", "slow") == "slow"
''',
        "test_c_polluter.py": '''
import os

def test_polluter():
    os.environ["ZOO_SPEED"] = "fast"
''',
    })
    record = suite.record()
    result = _hunt(suite, record)
    _check_every_latent_finding(result, suite.root)
    (f,) = result.findings
    assert f.victim == "test_b_victim.py::test_victim"
    # Its reproduction fails it alone, and it passes after the test that sets it up.
    assert f.status == BRITTLE
    assert f.setter == "test_a_setter.py::test_setter"
    proc = _run_repro(f, suite.root)
    assert _victim_failed(proc, f.victim), proc.stdout
    after = _plain(["-m", "pytest", "test_a_setter.py::test_setter", f.victim], suite.root)
    assert after.returncode == 0, after.stdout


def test_the_key_proof_names_the_smallest_set_of_restored_changes(suite: Suite) -> None:
    # The polluter leaves two XDG variables and a class attribute behind; the victim fails
    # while either variable is set, so no single key heals it: both together do, without
    # the attribute.  The second polluter leaves the working directory in a removed folder
    # and sets a variable nobody reads; the victim opens a file relative to the rootdir.
    suite.write({
        "pytest.ini": "[pytest]\n",
        "data.txt": "lions\n",
        "helper.py": "class Settings:\n    theme = 'light'\n",
        "test_a_victims.py": '''
import os

def test_uses_default_dirs():
    assert "XDG_CONFIG_HOME" not in os.environ and "XDG_DATA_HOME" not in os.environ

def test_reads_data():
    with open("data.txt") as f:
        assert f.read() == "lions\\n"
''',
        "test_b_polluters.py": '''
import os, shutil, tempfile
import helper

def test_moves_home():
    helper.Settings.theme = "dark"
    os.environ["XDG_CONFIG_HOME"] = "/srv/zoo/config"
    os.environ["XDG_DATA_HOME"] = "/srv/zoo/data"

def test_works_in_a_scratch_dir():
    os.environ["ZOO_SCRATCH_USED"] = "1"
    scratch = tempfile.mkdtemp()
    os.chdir(scratch)
    shutil.rmtree(scratch)
''',
    })
    record = suite.record()
    result = _hunt(suite, record)
    _check_every_latent_finding(result, suite.root)
    by_victim = {f.victim: f for f in result.findings}
    dirs = by_victim["test_a_victims.py::test_uses_default_dirs"]
    assert dirs.status == LATENT
    assert dirs.polluters == ["test_b_polluters.py::test_moves_home"]
    assert sorted(dirs.proven_keys) == ["env:XDG_CONFIG_HOME", "env:XDG_DATA_HOME"]
    # Neither variable's fix heals it alone: the named one's hint is not called proven, and
    # the note says what is.
    assert dirs.probe == "env" and not dirs.hint_proven
    assert "leaving any one of them out, it fails" in dirs.note, dirs.note
    data = by_victim["test_a_victims.py::test_reads_data"]
    assert data.status == LATENT
    assert data.polluters == ["test_b_polluters.py::test_works_in_a_scratch_dir"]
    assert data.proven_keys == ["cwd:cwd"]
