"""The call checkpoint is left out when no code of the user's can run at teardown.

A test whose fixtures are all the user's, function-scoped and without teardown (no generator,
no ``request``) gets one light snapshot fewer: the end-of-test snapshot closes its call.  A
fixture that may tear down (a generator, ``request.addfinalizer``, even one level below)
keeps the checkpoint, so what its teardown leaks is still put down to the teardown.
"""

from __future__ import annotations

from typing import Any

import pytest

SUITE = '''
import os
import pytest


@pytest.fixture
def plain_value():
    return 3


@pytest.fixture
def finalising(request):
    name = request.node.name
    request.addfinalizer(lambda: os.environ.__setitem__("QT_FIN_" + name, "1"))
    return 1


@pytest.fixture
def plain_over_finalising(finalising):
    return finalising


@pytest.fixture
def generator_value():
    yield 2
    os.environ["QT_GENERATOR"] = "1"


def test_plain_leaks_in_call(plain_value):
    os.environ["QT_CALL"] = "1"


def test_request_fixture_leaks_in_teardown(finalising):
    pass


def test_chain_leaks_in_teardown(plain_over_finalising):
    pass


def test_generator_leaks_in_teardown(generator_value):
    pass


def test_last():
    pass
'''


def _phases(record: Any) -> dict[str, tuple[str, str | None]]:
    return {c.key: (t.nodeid.rsplit("::", 1)[1], c.phase)
            for t in record.tests for c in t.changes if c.probe == "env"}


def test_a_teardown_that_may_run_user_code_keeps_its_phase(inner) -> None:
    pytester: pytest.Pytester = inner.pytester
    pytester.makepyfile(test_quiet=SUITE)
    run = inner("--statesnap-verify-budget", "0")
    run.result.assert_outcomes(passed=5)
    assert _phases(run.record()) == {
        "QT_CALL": ("test_plain_leaks_in_call", "call"),
        "QT_FIN_test_request_fixture_leaks_in_teardown": (
            "test_request_fixture_leaks_in_teardown", "teardown"),
        "QT_FIN_test_chain_leaks_in_teardown": ("test_chain_leaks_in_teardown", "teardown"),
        "QT_GENERATOR": ("test_generator_leaks_in_teardown", "teardown"),
    }


PLAIN_TESTS = '''
import pytest


@pytest.fixture
def value({arg}):
    return 3

''' + "".join(f'''

def test_{n}(value):
    pass
''' for n in range(6))


def _cwd_tokens(inner, arg: str) -> int:
    inner.pytester.makepyfile(test_tokens=PLAIN_TESTS.format(arg=arg))
    run = inner("--statesnap-verify-budget", "0")
    run.result.assert_outcomes(passed=6)
    footer = run.record().footer
    assert footer is not None
    return int(footer["costs"]["cwd"]["tokens"])


def test_a_plain_fixture_saves_the_call_checkpoint(inner) -> None:
    # The same six tests; a fixture given ``request`` may add finalisers, so each test but
    # the last (whose teardown ends the module anyway) costs one token round more.
    quiet = _cwd_tokens(inner, "")
    kept = _cwd_tokens(inner, "request")
    assert kept - quiet == 5
