"""Strict mode when a wide fixture's scope ends, in real inner runs in this process: a
finaliser that sets state, each held key judged by its value when its own scope ends, the first
and last users of a wide fixture still erroring for their own leaks, and a held key the scope's
last test changed itself.
"""

from __future__ import annotations

from typing import Any

import pytest
from strict_runs import ALLOW_LINE, OTHER


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
