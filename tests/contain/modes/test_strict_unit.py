"""Strict mode's rules, each in a real inner pytest run in this process (fast enough to run for
every mutant of ``strict.py``): which test errors, with which text, and what is let through.

The end-to-end runs in subprocesses are in ``test_strict.py``; these check the same rules and
the details around them (labels, severities, allowances, the text of the teardown error) where
a slip would blame the wrong test or show statesnap's own code.  Held keys of wide fixtures:
``test_strict_held.py`` and ``test_strict_scope_end.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from strict_runs import ALLOW_LINE


def test_a_leak_errors_at_teardown_with_exactly_the_diff_and_no_traceback(
        pytester: pytest.Pytester, strict: Any) -> None:
    pytester.makepyfile(test_leak='''
import os

def test_sets():
    os.environ["ZOO_MODE"] = "fast"

def test_after():
    pass
''')
    run = strict("--statesnap-strict")
    assert run.outcomes() == {"test_sets": "passed", "test_after": "passed"}
    # pytrace=False: the text is the message alone, none of statesnap's hook source.
    assert run.errors() == {"test_sets": "\n".join([
        "statesnap --statesnap-strict: test_leak.py::test_sets leaked state that later tests "
        "would see (1 change(s)):",
        "  env:ZOO_MODE: added ∅ → fast [call]",
        "  fix: set ZOO_MODE with monkeypatch.setenv('ZOO_MODE', ...) so it is removed after "
        "the test",
        ALLOW_LINE.format(refs="'env:ZOO_MODE'"),
    ])}
    report = next(r for r in run.reports() if r.when == "teardown" and r.failed)
    assert "strict.py" not in str(report.longrepr)
    assert "strict.py" not in run.result.stdout.str()
    assert run.lines()["test_sets"]["strict"] == ["env:ZOO_MODE"]
    assert "strict" not in run.lines()["test_after"]
    run.result.stdout.fnmatch_lines([
        "*strict mode: 1 test(s) errored for leaking state:*",
        "*test_leak.py::test_sets: env:ZOO_MODE*",
    ])
    assert run.result.ret == pytest.ExitCode.TESTS_FAILED


def test_a_teardown_leak_is_labelled_teardown(pytester: pytest.Pytester, strict: Any) -> None:
    # A function fixture's teardown runs the user's code: the call gets its own checkpoint,
    # and what the teardown changes is labelled with it.
    pytester.makepyfile(test_tear='''
import os, pytest

@pytest.fixture
def sloppy():
    yield
    os.environ["TORN"] = "down"

def test_uses(sloppy):
    os.environ["CALLED"] = "1"
''')
    text = strict("--statesnap-strict").errors()["test_uses"]
    assert "  env:CALLED: added ∅ → 1 [call]\n" in text
    assert "  env:TORN: added ∅ → down [teardown]\n" in text
    assert "(2 change(s))" in text
    assert ALLOW_LINE.format(refs="'env:CALLED', 'env:TORN'") in text


def test_only_the_first_five_hints_and_three_refs_each_hint_once(
        pytester: pytest.Pytester, strict: Any) -> None:
    pytester.makepyfile(test_many='''
import os, sys

def test_many():
    for i in range(7):
        os.environ[f"MANY_{i}"] = str(i)
    sys.path.append("/nonexistent/one")
    sys.path.append("/nonexistent/two")
''')
    text = strict("--statesnap-strict=env,syspath").errors()["test_many"]
    fixes = [ln for ln in text.splitlines() if ln.startswith("  fix: ")]
    assert len(fixes) == 5
    assert fixes[0] == ("  fix: set MANY_0 with monkeypatch.setenv('MANY_0', ...) so it is "
                        "removed after the test")
    assert len(set(fixes)) == 5
    # Every change is listed, only the first three refs go into the marker.
    assert "(9 change(s))" in text
    for i in range(7):
        assert f"  env:MANY_{i}: added ∅ → {i} [call]\n" in text
    allow = text.splitlines()[-1]
    assert allow == ALLOW_LINE.format(refs="'env:MANY_0', 'env:MANY_1', 'env:MANY_2'")


def test_one_hint_for_changes_that_share_it(pytester: pytest.Pytester, strict: Any) -> None:
    pytester.makepyfile(test_path='''
import sys

def test_paths():
    sys.path.append("/nonexistent/one")
    sys.path.append("/nonexistent/two")
''')
    text = strict("--statesnap-strict=syspath").errors()["test_paths"]
    fixes = [ln for ln in text.splitlines() if ln.startswith("  fix: ")]
    assert fixes == ["  fix: change sys.path with monkeypatch.syspath_prepend(...) or restore "
                     "a copy afterwards"]


def test_the_probes_named_are_checked_at_every_severity_the_default_from_medium(
        pytester: pytest.Pytester, strict: Any) -> None:
    pytester.makepyfile(helper_mod="X = 1\n", test_sel='''
import os

def test_imports():
    import helper_mod

def test_env():
    os.environ["SEL_ENV"] = "1"

def test_after():
    pass
''')
    # A plain import is low severity: how tests normally run.
    assert list(strict("--statesnap-strict").errors()) == ["test_env"]
    assert list(strict("--statesnap-strict=env").errors()) == ["test_env"]
    named = strict("--statesnap-strict=modules").errors()
    assert list(named) == ["test_imports"]
    assert "  modules:helper_mod: added ∅ → module#" in named["test_imports"]
    assert list(strict("--statesnap-strict=-env").errors()) == []


def test_allowances_from_markers_and_the_ini_file(pytester: pytest.Pytester,
                                                  strict: Any) -> None:
    pytester.makepyfile(test_allow='''
import os, pytest

@pytest.mark.statesnap_allow("env:ALLOWED_*")
def test_glob():
    os.environ["ALLOWED_BY_GLOB"] = "1"
    os.environ["NOT_ALLOWED"] = "1"

@pytest.mark.statesnap_allow("env")
def test_bare_probe():
    os.environ["ANY_NAME"] = "1"

def test_ini():
    os.environ["INI_ALLOWED"] = "1"

def test_after():
    pass
''')
    errors = strict("--statesnap-strict", "-o", "statesnap_allow=env:INI_*").errors()
    assert list(errors) == ["test_glob"]
    assert "(1 change(s))" in errors["test_glob"]
    assert "env:NOT_ALLOWED" in errors["test_glob"]
    assert "ALLOWED_BY_GLOB" not in errors["test_glob"]
    assert list(strict("--statesnap-strict").errors()) == ["test_glob", "test_ini"]


WARNS = '''
import os, warnings

def test_filters():
    warnings.simplefilter("ignore", DeprecationWarning)

def test_env():
    os.environ["WARN_ENV"] = "1"

def test_after():
    pass
'''


def test_warning_filters_are_left_to_pytests_warnings_plugin(pytester: pytest.Pytester,
                                                            strict: Any) -> None:
    pytester.makepyfile(test_warns=WARNS)
    # The warnings plugin puts the filters back after the test, later than this check.
    assert list(strict("--statesnap-strict=warnings,env").errors()) == ["test_env"]
    off = strict("--statesnap-strict=warnings,env", "-p", "no:warnings").errors()
    assert list(off) == ["test_filters", "test_env"]
    assert "  warnings:filter:ignore:DeprecationWarning:" in off["test_filters"]


KNOB = '''
import pytest
from statesnap.probes.base import Probe, Severity


class Knob(Probe):
    # A third-party probe whose severity and hint raise: strict mode still reports the
    # change, at the probe's own severity, with no hint.
    name = "knob"
    severity = Severity.HIGH

    def __init__(self):
        self.value = 0

    def read(self):
        return {"value": self.value}

    def severity_of(self, key, before, after):
        raise RuntimeError("severity_of broke")

    def hint(self, key, change):
        raise RuntimeError("hint broke")


KNOB = Knob()


@pytest.hookimpl(optionalhook=True)
def pytest_statesnap_add_probes(config):
    return [KNOB]
'''


def test_a_probe_whose_severity_and_hint_raise(pytester: pytest.Pytester, strict: Any) -> None:
    pytester.makeconftest(KNOB)
    pytester.makepyfile(test_knob='''
from conftest import KNOB

def test_turns():
    KNOB.value = 2

def test_after():
    pass
''')
    errors = strict("--statesnap-strict", "-o", "statesnap_allow=attributes:*").errors()
    assert errors == {"test_turns": "\n".join([
        "statesnap --statesnap-strict: test_knob.py::test_turns leaked state that later "
        "tests would see (1 change(s)):",
        "  knob:value: changed 0 → 2 [call]",
        ALLOW_LINE.format(refs="'knob:value'"),
    ])}


def test_an_isolated_test_errors_only_for_what_escaped_its_process(
        pytester: pytest.Pytester, strict: Any) -> None:
    pytester.makepyfile(test_iso='''
import os, pytest

@pytest.mark.statesnap_isolate("fork")
def test_isolated(request):
    os.environ["ISO_ENV"] = "1"
    (request.config.rootpath / "escaped.txt").write_text("x")

@pytest.mark.statesnap_isolate("fork")
def test_isolated_tidy():
    os.environ["ISO_ENV_TOO"] = "1"

def test_after():
    pass
''')
    run = strict("--statesnap-strict")
    errors = run.errors()
    assert list(errors) == ["test_isolated"]
    assert errors["test_isolated"].startswith(
        "statesnap --statesnap-strict: test_iso.py::test_isolated leaked state that later "
        "tests would see (1 change(s)):\n  files:escaped.txt: added ∅ → ")
    assert "ISO_ENV" not in errors["test_isolated"]
    assert run.lines()["test_isolated"]["strict"] == ["files:escaped.txt"]


def test_strict_off_is_no_check(pytester: pytest.Pytester, strict: Any) -> None:
    pytester.makepyfile(test_off='''
import os

def test_sets():
    os.environ["OFF_MODE"] = "1"
''')
    run = strict()
    assert run.errors() == {}
    assert run.result.ret == pytest.ExitCode.OK
