"""Hunt orders that reach what leakers-first misses: cleaners, LOW leaks, leaking victims.

Each suite passes in its recorded order; the old two orders (the leakers first, every other
test without them) do not fail the victim.  Each finding's printed reproduction is then run
under plain pytest and must fail the victim, which must pass alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hunt_helpers import Suite

from repro_check import check_reproductions
from statesnap.analysis.findings import LATENT, Finding
from statesnap.hunt.hunt import Hunter
from statesnap.hunt.options import HuntOptions
from statesnap.hunt.result import HuntResult
from statesnap.hunt.runs import CLEANERS_AFTER, LOW_FIRST, REVERSED
from statesnap.record.reader import read_record

pytestmark = pytest.mark.slow


def _hunt(suite: Suite, record: Path, **options: object) -> HuntResult:
    return Hunter([read_record(record)], HuntOptions(budget=600, **options),  # type: ignore[arg-type]
                  logs_dir=suite.out / "hunt-logs").hunt()


def _plain(words: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *words], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTEST_ADDOPTS": "-p no:randomly"})


def _proven(f: Finding, root: Path) -> None:
    """The printed command, pasted into a shell (statesnap not active), fails the victim."""
    check_reproductions(f"reproduce: {f.repro}", root, [f.victim])
    alone = _plain(["-m", "pytest", f.victim], root)
    assert alone.returncode == 0, alone.stdout


def test_a_cleaner_between_the_leakers_and_the_victim_is_moved_out_of_the_way(
        suite: Suite) -> None:
    # In leakers-first order the cleaner runs between the polluter and the victim and
    # removes the variable again; with the rest reversed the victim runs right after it.
    suite.write({
        "test_a_cleaner.py": '''
import os

def test_resets_lights():
    os.environ.pop("ZOO_LIGHTS", None)
''',
        "test_b_victim.py": '''
import os

def test_lights_are_off():
    assert os.environ.get("ZOO_LIGHTS", "off") == "off"
''',
        "test_c_polluter.py": '''
import os

def test_turns_lights_on():
    os.environ["ZOO_LIGHTS"] = "on"
''',
    })
    record = suite.record()
    result = _hunt(suite, record)
    (f,) = result.findings
    assert f.status == LATENT
    assert f.victim == "test_b_victim.py::test_lights_are_off"
    assert f.polluters == ["test_c_polluter.py::test_turns_lights_on"]
    assert (f.probe, f.key) == ("env", "ZOO_LIGHTS")
    found_in = {r.kind for r in result.orders if f.victim in r.new_failures}
    assert CLEANERS_AFTER in found_in
    _proven(f, suite.root)


def test_a_low_severity_polluter_is_reached_without_all_leaks(suite: Suite) -> None:
    suite.write({
        "test_imports.py": '''
import sys

def test_expects_no_colorsys():
    assert "colorsys" not in sys.modules

def test_imports_colorsys():
    import colorsys  # noqa: F401  (a plain import: a LOW-severity leak)
''',
    })
    record = suite.record()
    result = _hunt(suite, record)
    assert result.ignored_low >= 1
    (f,) = result.findings
    assert f.status == LATENT
    assert f.polluters == ["test_imports.py::test_imports_colorsys"]
    assert (f.probe, f.key) == ("modules", "colorsys")
    assert result.orders[0].kind == LOW_FIRST
    _proven(f, suite.root)


def test_a_victim_that_leaks_itself_runs_after_its_polluter_in_the_reversed_order(
        suite: Suite) -> None:
    # The victim leaks (so every leakers-first order puts it in front); its polluter leaves
    # a list the probes do not see (a function's default argument) and leaks nothing seen.
    suite.write({
        "helper.py": "def seen(acc=[]):\n    return acc\n",
        "test_a_victim.py": '''
import os
from helper import seen

def test_counts_and_marks():
    os.environ["ZOO_VISITED"] = "1"
    assert seen() == []
''',
        "test_b_polluter.py": '''
from helper import seen

def test_fills():
    seen().append("lion")
''',
    })
    record = suite.record()
    result = _hunt(suite, record)
    (f,) = result.findings
    assert f.status == LATENT
    assert f.victim == "test_a_victim.py::test_counts_and_marks"
    assert f.polluters == ["test_b_polluter.py::test_fills"]
    assert REVERSED in {r.kind for r in result.orders if f.victim in r.new_failures}
    _proven(f, suite.root)
