"""Hunts on real suites: a recorded pytest run, then the hunt's own fresh pytest processes."""

from __future__ import annotations

import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from hunt_helpers import Suite

from repro_check import run_reproduction, statesnap_words
from statesnap.analysis.findings import BRITTLE, LATENT, SUSPECTED, Finding
from statesnap.hunt.hunt import Hunter
from statesnap.hunt.options import HuntOptions
from statesnap.hunt.result import HuntResult
from statesnap.hunt.runs import (
    CLEANERS_AFTER,
    CONFIRM,
    LEAKERS_FIRST,
    RANDOM,
    REVERSED,
    WITHOUT_LEAKERS,
)
from statesnap.record.reader import read_record

pytestmark = pytest.mark.slow

#: A suite whose default order passes: the victim runs before its polluter, the brittle test
#: after its state-setter, and harmless leaks on every side.
MIXED = {
    "test_a_victims.py": '''
import os

def test_reads_mode():
    assert os.environ.get("ZOO_MODE", "normal") == "normal"

def test_plain():
    assert 1 + 1 == 2
''',
    "test_b_noise.py": '''
import os, random

def test_harmless_env():
    os.environ["STATESNAP_TEST_SEEN_B"] = "1"

def test_imports_and_random():
    import colorsys  # a plain import: LOW severity
    random.random()
''',
    "test_c_setter.py": '''
import os

def test_sets_home():
    os.environ["ZOO_HOME"] = "/srv/zoo"

def test_uses_home():
    assert os.environ["ZOO_HOME"].startswith("/srv")
''',
    "test_d_polluter.py": '''
import os

def test_sets_mode():
    os.environ["ZOO_MODE"] = "fast"

def test_harmless_env_too():
    os.environ["STATESNAP_TEST_SEEN_D"] = "1"
''',
}


@dataclass
class Hunted:
    suite: Suite
    record: Path
    result: HuntResult

    def finding(self, victim: str) -> Finding:
        found = [f for f in self.result.findings if f.victim == victim]
        assert len(found) == 1, [f.victim for f in self.result.findings]
        return found[0]


def _hunt(suite: Suite, record: Path, **options: object) -> HuntResult:
    hunter = Hunter([read_record(record)], HuntOptions(**options),  # type: ignore[arg-type]
                    logs_dir=suite.out / "hunt-logs")
    return hunter.hunt()


def _run_repro(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The printed command as a user runs it: a shell, plain pytest, statesnap not active."""
    assert shlex.split(command)[:3] == ["python", "-m", "pytest"], command
    assert not statesnap_words(command), command
    return run_reproduction(command, cwd).proc


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Hunted:
    base = tmp_path_factory.mktemp("mixed")
    suite = Suite(base / "suite", base / "out")
    suite.root.mkdir()
    suite.out.mkdir()
    suite.write({"pytest.ini": "[pytest]\n", **MIXED})
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTEST_ADDOPTS", "-p no:randomly")
        record = suite.record()
        assert all(t.outcome == "passed" for t in read_record(record).tests)
        result = _hunt(suite, record, budget=600)
    return Hunted(suite, record, result)


def test_a_victim_that_ran_before_its_polluter_is_found_latent(mixed: Hunted) -> None:
    f = mixed.finding("test_a_victims.py::test_reads_mode")
    assert f.status == LATENT
    assert f.polluters == ["test_d_polluter.py::test_sets_mode"]
    assert (f.probe, f.key, f.after) == ("env", "ZOO_MODE", "fast")
    assert f.exc_type == "AssertionError"
    assert "ran after it in the record" in (f.note or "")
    # The reproduction really fails the victim, and without statesnap.
    proc = _run_repro(f.repro, mixed.suite.root)
    assert proc.returncode == 1, proc.stdout
    assert "test_reads_mode FAILED" in proc.stdout or "1 failed, 1 passed" in proc.stdout


def test_a_brittle_test_is_found_with_its_state_setter(mixed: Hunted) -> None:
    f = mixed.finding("test_c_setter.py::test_uses_home")
    assert f.status == BRITTLE
    assert f.setter == "test_c_setter.py::test_sets_home"
    assert f.polluters == []
    assert (f.probe, f.key) == ("env", "ZOO_HOME")
    assert f.exc_type == "KeyError"
    proc = _run_repro(f.repro, mixed.suite.root)  # it fails without its setter
    assert proc.returncode == 1, proc.stdout


def test_harmless_leakers_are_not_findings_and_every_run_is_logged(mixed: Hunted) -> None:
    assert len(mixed.result.findings) == 2
    kinds = [r.kind for r in mixed.result.runs]
    assert kinds[:2] == [LEAKERS_FIRST, WITHOUT_LEAKERS]
    # colorsys and the random state are LOW-severity leaks: left out of the leakers.
    assert mixed.result.ignored_low >= 1
    assert mixed.result.leakers == 4
    for run in mixed.result.runs:
        assert run.log is not None and Path(run.log).is_file()
        if run.kind == CONFIRM:  # a finding's printed line: the log begins with it
            assert Path(run.log).read_text(encoding="utf-8").startswith("$ python -m pytest ")
            continue
        assert run.order_file is not None and Path(run.order_file).is_file()
    assert sum(r.kind == CONFIRM for r in mixed.result.runs) == 2  # one per finding
    first = mixed.result.runs[0]
    assert first.new_failures == ["test_a_victims.py::test_reads_mode"]
    assert mixed.result.runs[1].new_failures == ["test_c_setter.py::test_uses_home"]


def test_a_suite_without_order_dependence_reports_nothing_within_its_runs(suite: Suite) -> None:
    suite.write({
        "test_quiet.py": '''
import os, random

def test_one():
    os.environ["STATESNAP_TEST_UNIQUE_1"] = "1"

def test_two():
    assert os.environ.get("STATESNAP_TEST_UNIQUE_3") in (None, "3")

def test_three():
    os.environ["STATESNAP_TEST_UNIQUE_3"] = "3"
    random.random()

def test_four():
    assert True
''',
    })
    record = suite.record()
    result = _hunt(suite, record, budget=600, random_orders=2, seed=11)
    assert result.findings == []
    # One group of leakers, the run without them, the same leakers before the rest reversed,
    # the whole order reversed, and the two random orders: nothing else.
    assert [r.kind for r in result.runs] == [LEAKERS_FIRST, WITHOUT_LEAKERS, CLEANERS_AFTER,
                                             REVERSED, RANDOM, RANDOM]
    assert result.seeds == [11, 12]
    assert [r.seed for r in result.runs if r.kind == RANDOM] == [11, 12]
    assert all(r.new_failures == [] for r in result.runs)


def test_a_leaking_victim_after_a_leaking_polluter_is_reached_by_reversing(
        suite: Suite) -> None:
    suite.write({
        "test_both_leak.py": '''
import os

def test_victim_that_leaks():
    os.environ["STATESNAP_TEST_VICTIM_WAS_HERE"] = "1"
    assert "STATESNAP_TEST_FLAG" not in os.environ

def test_polluter():
    os.environ["STATESNAP_TEST_FLAG"] = "on"
''',
    })
    record = suite.record()
    result = _hunt(suite, record, budget=600)
    (f,) = result.findings
    assert f.status == LATENT
    assert f.victim == "test_both_leak.py::test_victim_that_leaks"
    assert f.polluters == ["test_both_leak.py::test_polluter"]
    assert f.key == "STATESNAP_TEST_FLAG"


def test_a_victim_of_two_polluters_together_is_minimised_to_both(suite: Suite) -> None:
    suite.write({
        "test_pair.py": '''
import os

def test_victim():
    # Fails only when both are set: no single polluter reproduces it.
    assert not (os.environ.get("STATESNAP_TEST_LEFT") and os.environ.get("STATESNAP_TEST_RIGHT"))

def test_left():
    os.environ["STATESNAP_TEST_LEFT"] = "1"

def test_noise():
    os.environ["STATESNAP_TEST_NOISE"] = "1"

def test_right():
    os.environ["STATESNAP_TEST_RIGHT"] = "1"
''',
    })
    record = suite.record()
    result = _hunt(suite, record, budget=600)
    (f,) = result.findings
    assert f.status == LATENT
    assert sorted(f.polluters) == ["test_pair.py::test_left", "test_pair.py::test_right"]
    proc = _run_repro(f.repro, suite.root)
    assert proc.returncode == 1, proc.stdout


def test_no_time_left_runs_nothing_and_says_so(suite: Suite) -> None:
    suite.write({"test_t.py": "import os\n\ndef test_x():\n"
                 "    os.environ['STATESNAP_TEST_Z'] = '1'\n"})
    record = suite.record()
    result = _hunt(suite, record, budget=1e-9)
    assert result.runs == []
    assert result.findings == []
    assert result.skipped and result.skipped[0].startswith("leakers-first-1")


IMPORT_SUITE = {
    "test_imports.py": '''
import sys

def test_expects_no_colorsys():
    assert "colorsys" not in sys.modules

def test_imports_colorsys():
    import colorsys  # noqa: F401  (a plain import: a LOW-severity leak)
''',
}


def test_all_leaks_puts_low_severity_leakers_into_the_groups(suite: Suite) -> None:
    suite.write(IMPORT_SUITE)
    record = suite.record()
    loud = _hunt(suite, record, budget=600, all_leaks=True)
    assert loud.ignored_low == 0
    assert loud.orders[0].kind == LEAKERS_FIRST
    (f,) = loud.findings
    assert f.status == LATENT
    assert f.polluters == ["test_imports.py::test_imports_colorsys"]
    assert (f.probe, f.key) == ("modules", "colorsys")


def test_a_seeded_random_order_reaches_what_leak_guided_orders_skip(suite: Suite) -> None:
    suite.write(IMPORT_SUITE)
    record = suite.record()
    from statesnap.hunt.plan import build_suite, random_order

    planned = build_suite([read_record(record)])
    victim, importer = "test_imports.py::test_expects_no_colorsys", \
        "test_imports.py::test_imports_colorsys"
    seed = next(s for s in range(100)
                if random_order(planned, s).index(importer) < random_order(planned, s)
                .index(victim))
    hunter = Hunter([read_record(record)], HuntOptions(budget=600, random_orders=1, seed=seed),
                    logs_dir=suite.out / "hunt-logs")
    hunter.suite.low_leakers = []  # as if the import were not seen: only the shuffle is left
    result = hunter.hunt()
    # The recorded order backwards runs whatever leaked (here, seemingly nothing).
    assert [r.label for r in result.orders] == ["reversed", f"random-{seed}"]
    assert result.orders[1].new_failures == [victim]
    (f,) = result.findings
    assert f.status == LATENT and f.polluters == [importer]
    assert f"random-{seed}" in (f.note or "")


def test_what_the_budget_leaves_unproven_is_suspected(suite: Suite) -> None:
    suite.write({k: v for k, v in MIXED.items() if k in ("test_a_victims.py",
                                                          "test_d_polluter.py")})
    suite.write({"test_e_many.py": "".join(f"def test_{i}():\n    pass\n" for i in range(8))})
    record = suite.record()
    hunter = Hunter([read_record(record)], HuntOptions(budget=600),
                    logs_dir=suite.out / "hunt-logs")
    hunter.explore()
    hunter.replays.deadline = time.monotonic()  # spent, right after the orders ran
    result = hunter.conclude()
    (f,) = result.findings
    assert f.status == SUSPECTED
    assert f.victim == "test_a_victims.py::test_reads_mode"
    assert f.polluters == ["test_d_polluter.py::test_sets_mode"]
    assert "budget" in (f.note or "")
    # The reproduction runs the order it failed in, cut after the victim (the eight tests
    # after it cannot have made it fail), under plain pytest.
    assert shlex.split(f.repro)[-3:] == ["test_d_polluter.py::test_harmless_env_too",
                                         "test_d_polluter.py::test_sets_mode", f.victim]
    proc = _run_repro(f.repro, suite.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 failed" in proc.stdout
    assert [r.kind for r in result.runs] == [LEAKERS_FIRST, WITHOUT_LEAKERS, CLEANERS_AFTER,
                                             REVERSED]
