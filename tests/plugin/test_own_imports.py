"""statesnap's start-up imports skip pytest's assertion hook, and the tests never see how.

``statesnap._OwnModules`` sits just ahead of pytest's hook from statesnap's import until the
core's first snapshot (issue 13's fixed cost): the real runs below check that pytest's hook
was asked about none of the modules statesnap imported at its start, that each of them was
loaded as the path finder alone would load it, and that the tests run with ``sys.meta_path``
as pytest left it, with no change to it in the record.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: Loaded before statesnap (``-p`` order): notes every name pytest's assertion hook is asked
#: about, and every statesnap module imported, until the first test runs.
SPY = '''
import json
import os
import sys

import pytest

ASKED = []
SEEN = set(sys.modules)


def _spy():
    for finder in sys.meta_path:
        if type(finder).__name__ == "AssertionRewritingHook":
            cls = type(finder)
            original = cls.find_spec

            def find_spec(self, name, path=None, target=None):
                ASKED.append(name)
                return original(self, name, path, target)

            cls.find_spec = find_spec
            return True
    return False


HOOKED = _spy()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    with open(os.environ["OWN_IMPORTS_END"], "w") as f:
        json.dump([getattr(f, "__qualname__", type(f).__qualname__) for f in sys.meta_path], f)
    with open(os.environ["OWN_IMPORTS_END"] + ".modules", "w") as f:
        json.dump(sorted(n for n in sys.modules if n.startswith("statesnap")), f)
'''

TEST = '''
import importlib.machinery
import json
import os
import sys

import own_imports_spy as spy


def test_what_start_up_imported():
    at_start = sorted(n for n in sys.modules if n.startswith("statesnap."))
    with open(os.environ["OWN_IMPORTS_OUT"], "w") as f:
        json.dump({
            "hooked": spy.HOOKED,
            "asked": [n for n in spy.ASKED if n.startswith("statesnap.")],
            "imported": at_start,
            "loaders": sorted({type(sys.modules[n].__spec__.loader).__name__
                               for n in at_start}),
            "origins_ok": all(
                sys.modules[n].__spec__.origin
                == importlib.machinery.PathFinder.find_spec(
                    n, sys.modules[n.rpartition(".")[0]].__path__).origin
                for n in at_start),
            "meta_path": [getattr(f, "__qualname__", type(f).__qualname__)
                          for f in sys.meta_path],
        }, f)
'''


def _run(tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    suite = tmp_path / "suite"
    suite.mkdir(exist_ok=True)
    (suite / "own_imports_spy.py").write_text(SPY)
    (suite / "test_it.py").write_text(TEST)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["OWN_IMPORTS_OUT"] = str(tmp_path / "out.json")
    env["OWN_IMPORTS_END"] = str(tmp_path / "end.json")
    env["PYTHONPATH"] = os.pathsep.join([str(suite), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
         "-p", "own_imports_spy", "-p", "statesnap",
         f"--statesnap-record={tmp_path / 'r.jsonl'}", *extra],
        cwd=suite, env=env, capture_output=True, text=True, check=False)
    return proc, tmp_path


def test_start_up_imports_skip_the_assertion_hook_and_leave_no_finder(tmp_path: Path) -> None:
    proc, out = _run(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = json.loads((out / "out.json").read_text())
    assert seen["hooked"], "pytest's assertion hook not found: nothing checked"
    # The core, the features and the probes were imported at the start...
    assert {"statesnap.plugin.core", "statesnap.contain.strict",
            "statesnap.probes.env"} <= set(seen["imported"])
    # ...none of them through pytest's hook, each from where the path finder finds it, with
    # the plain source loader (not pytest's rewriting one).
    assert seen["asked"] == []
    assert seen["origins_ok"]
    assert seen["loaders"] == ["SourceFileLoader"]
    # The tests see sys.meta_path without statesnap's finder.
    assert "_OwnModules" not in seen["meta_path"]
    assert "AssertionRewritingHook" in seen["meta_path"]
    # And the record shows no change to it.
    lines = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    changes = [c for line in lines for c in line.get("changes", [])]
    assert not [c for c in changes if "meta_path" in json.dumps(c)]
    assert "1 passed" in proc.stdout
    assert "_OwnModules" not in json.loads((out / "end.json").read_text())


def test_a_session_that_ends_before_its_first_snapshot_takes_the_finder_out(
        tmp_path: Path) -> None:
    """A usage error at the session's start (an unknown probe) ends it before the core's
    first snapshot: statesnap's unconfigure takes the finder out."""
    proc, out = _run(tmp_path, "--statesnap-probes=no-such-probe")
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, proc.stdout + proc.stderr
    assert "no-such-probe" in proc.stderr
    end = json.loads((out / "end.json").read_text())
    assert "AssertionRewritingHook" in end
    assert "_OwnModules" not in end


def test_importing_statesnap_under_pytest_adds_no_finder(tmp_path: Path) -> None:
    """A conftest that imports statesnap as a library (no ``-p statesnap``) leaves
    ``sys.meta_path`` alone: only pytest's import of its plugin marks statesnap."""
    (tmp_path / "conftest.py").write_text("import statesnap\n")
    (tmp_path / "test_it.py").write_text(
        "import sys\n\n\ndef test_x():\n"
        "    assert 'statesnap' in sys.modules\n"
        "    assert not [f for f in sys.meta_path if 'statesnap' in repr(f)]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


#: Modules a session without a failure, a report or a mode does not need (each costs about
#: 0.5 M instructions to find, load and tear down): imported where they are used.
NOT_IN_A_PLAIN_SESSION = (
    "statesnap.state.selection",  # strict and restore modes
    "statesnap.record.lanes",  # an xdist controller
    "statesnap.analysis.findings",  # a failure
    "statesnap.output.report",  # --report
    "statesnap.contain.strictcheck",  # strict mode's check (its options are in contain.strict)
    "statesnap.analysis.resets",  # a test that changed something (the leaks listed)
    "statesnap.analysis.quiet",  # the same
    "statesnap.analysis.leaks",  # the same, and restore mode
    "statesnap.contain.isolate.fields",  # an isolated test
    "statesnap.analysis.mtimerace",  # a files change (an mtime race)
    "statesnap.output.delta",  # a change shown in the report
)
#: Of those, what the report of a passing session needs...
IN_A_PASSING_REPORT = ("statesnap.analysis.findings", "statesnap.output.report")
#: ...and what of the report it does not: the replay logs embedded for findings.
NOT_IN_A_PASSING_REPORT = ("statesnap.output.report.logs",)


def test_a_plain_session_imports_no_mode_s_modules(tmp_path: Path) -> None:
    proc, out = _run(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    imported = json.loads((out / "end.json.modules").read_text())
    assert "statesnap.contain.strict" in imported
    assert [m for m in imported if m.startswith(NOT_IN_A_PLAIN_SESSION)] == []


def test_strict_mode_imports_its_selection(tmp_path: Path) -> None:
    proc, out = _run(tmp_path, "--statesnap-strict")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    imported = json.loads((out / "end.json.modules").read_text())
    assert {"statesnap.state.selection", "statesnap.contain.strictcheck"} <= set(imported)


def test_a_passing_session_s_report_imports_no_leak_rules(tmp_path: Path) -> None:
    """The report of a session where no test changed anything and none failed lists no
    leak, no change, no race and no finding: the rules and views of those (leaks, value
    deltas, mtime races, replay logs) and isolation's typed fields are not imported for it."""
    proc, out = _run(tmp_path, f"--report={tmp_path / 'report.html'}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "report.html").is_file()
    imported = json.loads((out / "end.json.modules").read_text())
    assert "statesnap.output.report.views" in imported
    unneeded = (*(m for m in NOT_IN_A_PLAIN_SESSION if m not in IN_A_PASSING_REPORT),
                *NOT_IN_A_PASSING_REPORT)
    assert [m for m in imported if m.startswith(unneeded)] == []


def test_a_session_with_a_leak_imports_the_leak_rules_and_lists_it(tmp_path: Path) -> None:
    """The other side: a test that leaves an environment variable set is listed, with and
    without a report, so the rules are imported where there is a change to list."""
    for extra in ((), (f"--report={tmp_path / 'report.html'}",)):
        case = tmp_path / ("report" if extra else "plain")
        case.mkdir()
        suite = case / "suite"
        suite.mkdir()
        (suite / "test_leak.py").write_text(
            "import os\n\n\ndef test_leaks():\n    os.environ['OWN_IMPORTS_LEAK'] = '1'\n")
        proc, out = _run(case, *extra)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "1 test(s) leaked state:" in proc.stdout
        assert "OWN_IMPORTS_LEAK" in proc.stdout
        imported = json.loads((out / "end.json.modules").read_text())
        assert {"statesnap.analysis.resets", "statesnap.analysis.leaks"} <= set(imported)
        if extra:
            assert "OWN_IMPORTS_LEAK" in (tmp_path / "report.html").read_text()
