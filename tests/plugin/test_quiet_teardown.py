"""The call checkpoint is left out when no code of the user's can run at teardown.

A test whose fixtures are all the user's, function-scoped and without teardown (no generator,
no use of ``request``), or a directly parametrized argument's, gets one light snapshot fewer:
the end-of-test snapshot closes its call.  A fixture that may tear down (a generator,
``request.addfinalizer``, even one level below or through a helper given ``request``, or a
``*args`` wrapper), or a test that takes ``request`` itself, keeps the checkpoint, so what its
teardown leaks is still put down to the teardown.
"""

from __future__ import annotations

from typing import Any

import pytest

SUITE = '''
import functools
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


def add_finaliser(req):
    req.addfinalizer(lambda: os.environ.__setitem__("QT_HELPER", "1"))


@pytest.fixture
def through_helper(request):
    add_finaliser(request)
    return 1


def wrapped(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        kwargs["request"].addfinalizer(lambda: os.environ.__setitem__("QT_WRAPPED", "1"))
        return func(*args, **kwargs)
    return wrapper


@pytest.fixture
@wrapped
def wrapped_value(request):
    return 1


@pytest.fixture
def unused_request(request):
    return 1


def test_plain_leaks_in_call(plain_value):
    os.environ["QT_CALL"] = "1"


def test_request_fixture_leaks_in_teardown(finalising):
    pass


def test_chain_leaks_in_teardown(plain_over_finalising):
    pass


def test_generator_leaks_in_teardown(generator_value):
    pass


def test_helper_leaks_in_teardown(through_helper):
    pass


def test_wrapper_leaks_in_teardown(wrapped_value):
    pass


def test_own_request_leaks_in_teardown(unused_request, request):
    request.addfinalizer(lambda: os.environ.__setitem__("QT_OWN", "1"))


@pytest.mark.parametrize("n", [1])
def test_parametrized_leaks_in_call(unused_request, n):
    os.environ["QT_PARAM_CALL"] = "1"


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
    run.result.assert_outcomes(passed=9)
    assert _phases(run.record()) == {
        "QT_CALL": ("test_plain_leaks_in_call", "call"),
        "QT_HELPER": ("test_helper_leaks_in_teardown", "teardown"),
        "QT_WRAPPED": ("test_wrapper_leaks_in_teardown", "teardown"),
        "QT_OWN": ("test_own_request_leaks_in_teardown", "teardown"),
        "QT_PARAM_CALL": ("test_parametrized_leaks_in_call[1]", "call"),
        "QT_FIN_test_request_fixture_leaks_in_teardown": (
            "test_request_fixture_leaks_in_teardown", "teardown"),
        "QT_FIN_test_chain_leaks_in_teardown": ("test_chain_leaks_in_teardown", "teardown"),
        "QT_GENERATOR": ("test_generator_leaks_in_teardown", "teardown"),
    }


PLAIN_TESTS = '''
import pytest


@pytest.fixture
def value({arg}):
    {body}
    return 3

''' + "".join(f'''

def test_{n}(value{{own}}):
    pass
''' for n in range(5)) + '''

@pytest.mark.parametrize("n", [5])
def test_p(value, n{own}):
    pass
'''


def _cwd_tokens(inner, arg: str, body: str = "pass", own: str = "") -> int:
    inner.pytester.makepyfile(test_tokens=PLAIN_TESTS.format(arg=arg, body=body, own=own))
    run = inner("--statesnap-verify-budget", "0")
    run.result.assert_outcomes(passed=6)
    footer = run.record().footer
    assert footer is not None
    return int(footer["costs"]["cwd"]["tokens"])


def test_a_plain_fixture_saves_the_call_checkpoint(inner) -> None:
    # The same six tests (one parametrized directly); a fixture that uses the ``request`` it
    # is given may add finalisers, and so may a test that takes ``request``: each test but
    # the last (whose teardown ends the module anyway) then costs one token round more.
    quiet = _cwd_tokens(inner, "")
    assert _cwd_tokens(inner, "request") == quiet  # given, never used
    assert _cwd_tokens(inner, "request", body="request.node") - quiet == 5
    assert _cwd_tokens(inner, "", own=", request") - quiet == 5
