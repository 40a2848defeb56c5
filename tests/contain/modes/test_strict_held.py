"""Strict mode and the keys a wide fixture holds, in real inner runs in this process: which
test errors for a held key (the one that overwrote it, not the scope's last), a held key
changed back or put back by its fixture, and which scope holds it (module, class, function).
"""

from __future__ import annotations

from typing import Any

import pytest
from strict_runs import ALLOW_LINE, OTHER

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
