"""Strict mode's rules, each in a real inner pytest run in this process (fast enough to run for
every mutant of ``strict.py``): which test errors, with which text, and what is let through.

The end-to-end runs in subprocesses are in ``test_strict.py``; these check the same rules and
the details around them (labels, severities, held keys of wide fixtures, allowances, the text
of the teardown error) where a slip would blame the wrong test or show statesnap's own code.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# Imported once, here: pytester takes out of sys.modules what an in-process run imported, so
# a later run would import strict mode afresh (a new stash key) next to modules that kept
# the old one.  A real session imports them once, as this does.

#: The strict error's last line for these refs.
ALLOW_LINE = ("intended? allow it: @pytest.mark.statesnap_allow({refs}) or the ini option "
              "statesnap_allow")


@dataclass
class StrictRun:
    result: pytest.RunResult
    record: Path

    def reports(self) -> list[pytest.TestReport]:
        reprec: Any = self.result.reprec  # type: ignore[attr-defined]  # in process only
        reports: list[pytest.TestReport] = reprec.getreports("pytest_runtest_logreport")
        return reports

    def errors(self) -> dict[str, str]:
        """``{test name: teardown error text}`` of every test that errored at teardown."""
        return {r.nodeid.split("::")[-1]: r.longreprtext for r in self.reports()
                if r.when == "teardown" and r.failed}

    def outcomes(self) -> dict[str, str]:
        """``{test name: call outcome}``."""
        return {r.nodeid.split("::")[-1]: r.outcome for r in self.reports() if r.when == "call"}

    def lines(self) -> dict[str, dict[str, Any]]:
        """The record's test lines by test name."""
        out: dict[str, dict[str, Any]] = {}
        for text in self.record.read_text(encoding="utf-8").splitlines():
            obj = json.loads(text)
            if obj.get("type") == "test":
                out[obj["nodeid"].split("::")[-1]] = obj
        return out


@pytest.fixture
def strict(pytester: pytest.Pytester, tmp_path: Path) -> Any:
    """``strict(*args)``: pytest with ``-p statesnap --statesnap-strict ...`` on
    ``pytester.path``, in this process; the record lives outside the inner rootdir."""
    count = 0

    def run(*args: str) -> StrictRun:
        nonlocal count
        count += 1
        record = tmp_path / f"record-{count}.jsonl"
        saved, cwd = dict(os.environ), os.getcwd()
        try:
            result = pytester.runpytest(
                "-p", "no:randomly", "-p", "statesnap", f"--statesnap-record={record}",
                "--statesnap-verify-budget=0", *args,
                # statesnap is imported already: pytest cannot rewrite its asserts.
                "-W", "ignore::pytest.PytestAssertRewriteWarning")
        finally:
            # The inner tests really change os.environ and the cwd, in this process.
            os.environ.clear()
            os.environ.update(saved)
            os.chdir(cwd)
        return StrictRun(result, record)

    return run


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


HELD = '''
import os, pytest

@pytest.fixture(scope="module")
def mode():
    os.environ["HELD_MODE"] = "on"
    yield
    os.environ.pop("HELD_MODE", None)

def test_first(mode):
    pass

def test_overwrites(mode):
    os.environ["HELD_MODE"] = "hijacked"

def test_reads(mode):
    assert os.environ["HELD_MODE"] == "hijacked"

def test_last(mode):
    pass
'''
OTHER = '''
def test_later():
    pass
'''


def test_the_test_that_overwrote_a_held_key_errors_not_the_last_of_the_module(
        pytester: pytest.Pytester, strict: Any) -> None:
    pytester.makepyfile(test_held=HELD, test_zz_other=OTHER)
    run = strict("--statesnap-strict")
    # The fixture's own value is held for the module; the test that put another value in its
    # place leaked it; the fixture's teardown then takes the key away, as it should.  (Inside
    # a test the env probe looks only for added and removed names, so a value changed in
    # place is first seen after the teardown, and labelled so.)
    assert run.errors() == {"test_overwrites": "\n".join([
        "statesnap --statesnap-strict: test_held.py::test_overwrites leaked state that later "
        "tests would see (1 change(s)):",
        "  env:HELD_MODE: changed on → hijacked [teardown]",
        "  fix: change HELD_MODE with monkeypatch.setenv('HELD_MODE', ...) so it is put back "
        "after the test",
        ALLOW_LINE.format(refs="'env:HELD_MODE'"),
    ])}
    assert set(run.outcomes().values()) == {"passed"}
    assert [n for n, line in run.lines().items() if line.get("strict")] == ["test_overwrites"]


def test_a_held_key_changed_back_to_the_fixtures_value_is_no_leak(
        pytester: pytest.Pytester, strict: Any) -> None:
    pytester.makepyfile(test_back='''
import os, pytest

@pytest.fixture(scope="module")
def mode():
    os.environ["BACK_MODE"] = "on"
    yield
    del os.environ["BACK_MODE"]

def test_first(mode):
    pass

def test_flips(mode):
    os.environ["BACK_MODE"] = "off"
    os.environ["BACK_MODE"] = "on"

def test_last(mode):
    pass
''', test_zz_other=OTHER)
    run = strict("--statesnap-strict")
    assert run.errors() == {}
    assert run.result.ret == pytest.ExitCode.OK


def test_a_held_key_put_back_by_its_fixture_is_no_leak(pytester: pytest.Pytester,
                                                       strict: Any) -> None:
    pytester.makepyfile(test_tidy='''
import os, pytest

@pytest.fixture(scope="module")
def mode():
    os.environ["TIDY_HELD"] = "on"
    yield
    del os.environ["TIDY_HELD"]

def test_one(mode):
    pass

def test_two(mode):
    pass
''', test_zz_other=OTHER)
    run = strict("--statesnap-strict")
    assert run.errors() == {}
    assert run.result.ret == pytest.ExitCode.OK


def test_a_module_fixture_that_never_undoes_errors_when_its_scope_ends(
        pytester: pytest.Pytester, strict: Any) -> None:
    pytester.makepyfile(test_sloppy='''
import os, pytest

@pytest.fixture(scope="module")
def sloppy():
    os.environ["SLOPPY_FIXTURE"] = "on"
    yield

def test_one(sloppy):
    pass

def test_two(sloppy):
    pass

def test_three():
    pass
''', test_zz_other=OTHER)
    run = strict("--statesnap-strict")
    # Not the first user's fault, nor the second's while the scope lasts: the test whose
    # teardown ended the scope (the module's last) errors, naming the fixture.
    assert run.errors() == {"test_three": "\n".join([
        "statesnap --statesnap-strict: test_sloppy.py::test_three leaked state that later "
        "tests would see (1 change(s)):",
        "  env:SLOPPY_FIXTURE: added ∅ → on [setup, fixture sloppy (module)] (set up by "
        "module fixture sloppy, not undone when its scope ended)",
        "  fix: set SLOPPY_FIXTURE with monkeypatch.setenv('SLOPPY_FIXTURE', ...) so it is "
        "removed after the test",
        ALLOW_LINE.format(refs="'env:SLOPPY_FIXTURE'"),
    ])}
    assert [n for n, line in run.lines().items() if line.get("strict")] == ["test_three"]


def test_a_class_fixture_is_held_until_its_class_ends(pytester: pytest.Pytester,
                                                     strict: Any) -> None:
    pytester.makepyfile(test_klass='''
import os, pytest

@pytest.fixture(scope="class")
def sloppy():
    os.environ["CLASS_FIXTURE"] = "on"
    yield

class TestIt:
    def test_one(self, sloppy):
        pass

    def test_two(self, sloppy):
        pass

def test_outside():
    pass
''')
    errors = strict("--statesnap-strict").errors()
    assert list(errors) == ["test_two"]
    assert ("  env:CLASS_FIXTURE: added ∅ → on [setup, fixture sloppy (class)] (set up by class "
            "fixture sloppy, not undone when its scope ended)\n") in errors["test_two"]


def test_a_function_fixture_change_is_the_tests_own(pytester: pytest.Pytester,
                                                    strict: Any) -> None:
    # Only wide scopes hold a change: a function fixture's setup is the test's own doing.
    pytester.makepyfile(test_fn='''
import os, pytest

@pytest.fixture
def sloppy():
    os.environ["FN_FIXTURE"] = "on"
    yield

def test_one(sloppy):
    pass

def test_two():
    pass
''')
    errors = strict("--statesnap-strict").errors()
    assert list(errors) == ["test_one"]
    assert "  env:FN_FIXTURE: added ∅ → on [setup, fixture sloppy (function)]\n" in errors[
        "test_one"]
    assert "set up by" not in errors["test_one"]


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


def test_a_module_fixture_finaliser_that_sets_state_is_a_teardown_leak(
        pytester: pytest.Pytester, strict: Any) -> None:
    # A change a wide fixture makes in its finaliser is no setup to hold: it leaks there.
    pytester.makepyfile(test_fin='''
import os, pytest

@pytest.fixture(scope="module")
def sets_on_the_way_out():
    yield
    os.environ["AFTER_MODULE"] = "x"

def test_one(sets_on_the_way_out):
    pass

def test_two():
    pass
''', test_zz_other=OTHER)
    assert strict("--statesnap-strict").errors() == {"test_two": "\n".join([
        "statesnap --statesnap-strict: test_fin.py::test_two leaked state that later tests "
        "would see (1 change(s)):",
        "  env:AFTER_MODULE: added ∅ → x [teardown, fixture sets_on_the_way_out (module)]",
        "  fix: set AFTER_MODULE with monkeypatch.setenv('AFTER_MODULE', ...) so it is removed "
        "after the test",
        ALLOW_LINE.format(refs="'env:AFTER_MODULE'"),
    ])}


def test_a_held_key_back_to_an_equal_value_when_its_scope_ends_is_no_leak(
        pytester: pytest.Pytester, strict: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # The variable exists before the run; one module fixture changes it, another, set up by
    # the module's last test, sets the old value back (an equal string, not the same
    # object): when the scope ends the value is the old one again, nothing leaked.
    monkeypatch.setenv("PRESET_MODE", "base")
    pytester.makepyfile(test_equal='''
import os, pytest

@pytest.fixture(scope="module")
def changes_it():
    os.environ["PRESET_MODE"] = "fixture"
    yield

@pytest.fixture(scope="module")
def puts_it_back():
    os.environ["PRESET_MODE"] = "".join(["ba", "se"])
    yield

def test_one(changes_it):
    pass

def test_two(changes_it):
    assert os.environ["PRESET_MODE"] == "fixture"

def test_three(changes_it, puts_it_back):
    assert os.environ["PRESET_MODE"] == "base"
''', test_zz_other=OTHER)
    run = strict("--statesnap-strict")
    assert run.errors() == {}
    assert run.result.ret == pytest.ExitCode.OK


def test_each_held_key_is_checked_when_its_own_scope_ends(pytester: pytest.Pytester,
                                                         strict: Any) -> None:
    # A session fixture's key is still held (its scope goes on) when the module's ends: the
    # module fixture's key is checked all the same.
    pytester.makepyfile(test_scopes='''
import os, pytest

@pytest.fixture(scope="session")
def whole_run():
    os.environ["A_SESSION_WIDE"] = "on"
    yield
    del os.environ["A_SESSION_WIDE"]

@pytest.fixture(scope="module")
def sloppy():
    os.environ["B_MODULE_SLOPPY"] = "on"
    yield

def test_one(whole_run, sloppy):
    pass

def test_two():
    pass
''', test_zz_other=OTHER)
    errors = strict("--statesnap-strict").errors()
    assert list(errors) == ["test_two"]
    assert ("  env:B_MODULE_SLOPPY: added ∅ → on [setup, fixture sloppy (module)] (set up by "
            "module fixture sloppy, not undone when its scope ended)\n") in errors["test_two"]
    assert "A_SESSION_WIDE" not in errors["test_two"]


def test_a_held_key_is_judged_by_its_value_when_the_scope_ends(pytester: pytest.Pytester,
                                                              strict: Any) -> None:
    # The key is back to its old value when the last test starts, and that test sets it
    # again as the fixture's scope ends: the change is the test's, listed once, not put down
    # to the fixture.
    pytester.makepyfile(test_value='''
import os, pytest

@pytest.fixture(scope="module")
def sets_it():
    os.environ["TWICE"] = "on"
    yield

@pytest.fixture(scope="module")
def drops_it():
    os.environ.pop("TWICE", None)
    yield

def test_one(sets_it):
    pass

def test_two(sets_it, drops_it):
    pass

def test_three(sets_it):
    os.environ["TWICE"] = "x"
''', test_zz_other=OTHER)
    errors = strict("--statesnap-strict").errors()
    assert list(errors) == ["test_three"]
    assert errors["test_three"] == "\n".join([
        "statesnap --statesnap-strict: test_value.py::test_three leaked state that later "
        "tests would see (1 change(s)):",
        "  env:TWICE: added ∅ → x [call]",
        "  fix: set TWICE with monkeypatch.setenv('TWICE', ...) so it is removed after the test",
        ALLOW_LINE.format(refs="'env:TWICE'"),
    ])


def test_the_first_user_of_a_wide_fixture_still_errors_for_its_own_leak(
        pytester: pytest.Pytester, strict: Any) -> None:
    # The fixture's change is held; the test's own change, listed after it, is still checked.
    pytester.makepyfile(test_first='''
import os, pytest

@pytest.fixture(scope="module")
def tidy():
    os.environ["A_FIXTURE"] = "on"
    yield
    del os.environ["A_FIXTURE"]

def test_one(tidy):
    os.environ["B_OWN"] = "1"

def test_two(tidy):
    pass
''', test_zz_other=OTHER)
    errors = strict("--statesnap-strict").errors()
    assert list(errors) == ["test_one"]
    assert "(1 change(s))" in errors["test_one"]
    assert "  env:B_OWN: added ∅ → 1 [call]\n" in errors["test_one"]


def test_the_last_user_of_a_wide_fixture_still_errors_for_its_own_leak(
        pytester: pytest.Pytester, strict: Any) -> None:
    # The fixture puts its key back as the scope ends; the test's own change, listed after
    # it, is still checked.
    pytester.makepyfile(test_last='''
import os, pytest

@pytest.fixture(scope="module")
def tidy():
    os.environ["A_FIXTURE"] = "on"
    yield
    del os.environ["A_FIXTURE"]

def test_one(tidy):
    pass

def test_two(tidy):
    os.environ["B_OWN"] = "1"
''', test_zz_other=OTHER)
    errors = strict("--statesnap-strict").errors()
    assert list(errors) == ["test_two"]
    assert "(1 change(s))" in errors["test_two"]
    assert "  env:B_OWN: added ∅ → 1 [call]\n" in errors["test_two"]


def test_a_module_fixture_that_puts_an_existing_variable_back_is_no_leak(
        pytester: pytest.Pytester, strict: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # The common pattern: a module-wide monkeypatch of a variable that exists already; its
    # undo sets the old value back (an equal string, read afresh).
    monkeypatch.setenv("EXISTING_MODE", "base")
    pytester.makepyfile(test_put_back='''
import pytest

@pytest.fixture(scope="module")
def mode():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EXISTING_MODE", "fixture")
        yield

def test_one(mode):
    pass

def test_two(mode):
    pass
''', test_zz_other=OTHER)
    run = strict("--statesnap-strict")
    assert run.errors() == {}
    assert run.result.ret == pytest.ExitCode.OK


def test_held_keys_after_one_the_last_test_changed_itself_are_still_checked(
        pytester: pytest.Pytester, strict: Any) -> None:
    pytester.makepyfile(test_both='''
import os, pytest

@pytest.fixture(scope="module")
def sloppy():
    os.environ["A_MODE"] = "on"
    os.environ["B_MODE"] = "on"
    yield

def test_one(sloppy):
    pass

def test_two(sloppy):
    os.environ["A_MODE"] = "x"
''', test_zz_other=OTHER)
    errors = strict("--statesnap-strict").errors()
    assert list(errors) == ["test_two"]
    text = errors["test_two"]
    assert "(2 change(s))" in text
    assert "  env:A_MODE: changed on → x [" in text
    assert ("  env:B_MODE: added ∅ → on [setup, fixture sloppy (module)] (set up by module "
            "fixture sloppy, not undone when its scope ended)\n") in text
