"""What the core knows of a fixture definition at each setup is kept, and asked again when the
definition's function or argument names are other objects.

Every setup of every fixture asks whether it is pytest's own (then it labels nothing) and
whether it may run code at its teardown (then the test's teardown is not quiet: the call
phase gets its own checkpoint).  The answers are kept per definition; a plugin that replaces
a fixture's function (pytest-asyncio wraps async ones) must get the new function's answer.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from statesnap.plugin.fixturekinds import FixtureKinds


class FakeDef:
    """As much of a FixtureDef as the core reads."""

    def __init__(self, func: Any, argnames: tuple[str, ...] = (), argname: str = "thing"
                 ) -> None:
        self.func, self.argnames, self.argname = func, argnames, argname


class Unhashable(FakeDef):
    __hash__ = None  # type: ignore[assignment]


def plain() -> int:
    return 1


def generator() -> Generator[int, None, None]:
    yield 1


@pytest.fixture
def kinds() -> FixtureKinds:
    """What the core asks at every fixture setup (``FixtureKinds.of``), one session's worth."""
    return FixtureKinds()


def test_a_definition_is_judged_again_when_its_function_is_replaced(
        kinds: FixtureKinds) -> None:
    fixture = FakeDef(plain)
    assert kinds.of(fixture) == (False, False)
    assert kinds.of(fixture) == (False, False)
    fixture.func = generator  # wrapped by a plugin between two setups
    assert kinds.of(fixture) == (False, True)
    fixture.func = plain
    assert kinds.of(fixture) == (False, False)


def test_a_definition_is_judged_again_when_its_arguments_are_replaced(
        kinds: FixtureKinds) -> None:
    fixture = FakeDef(plain, ("x",))
    assert kinds.of(fixture) == (False, False)
    fixture.argnames = ("x", "request")  # given request: it may add finalisers
    assert kinds.of(fixture) == (False, True)


def test_pytests_own_fixtures_and_unhashable_definitions(kinds: FixtureKinds) -> None:
    own = FakeDef(pytest.MonkeyPatch.context)
    assert kinds.of(own)[0] is True
    user = FakeDef(plain)
    assert kinds.of(user)[0] is False
    odd = Unhashable(generator, ("request",))
    assert kinds.of(odd) == (False, True)


FIRST = '''
import pytest


@pytest.fixture
def plain():
    return 1


def test_plain(plain):
    pass


def test_own(tmp_path, monkeypatch):
    pass
'''

SECOND = '''
import os
import pytest


@pytest.fixture(scope="module")
def shared():
    yield 1
    os.environ["WIDE_TEARDOWN_LEAK"] = "1"


def test_uses_it(shared):
    pass


def test_after():
    pass
'''

LISTING = '''
import os


def pytest_sessionfinish(session):
    names = sorted(n for n, _ in session.config.pluginmanager.list_name_plugin()
                   if n and n.startswith("statesnap-"))
    with open(os.environ["PLUGIN_LISTING"], "a", encoding="utf-8") as f:
        f.write(" ".join(names) + "\\n")
'''


def test_the_wide_teardown_hook_comes_with_the_first_wide_fixture(
        inner: Any, pytester: pytest.Pytester, tmp_path: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # pytest calls the post-finaliser hook at every fixture's teardown, a few times a test:
    # the core registers it at the first setup of a wide fixture of the user's, and its
    # finaliser's change is still labelled with it.
    listing = tmp_path / "plugins.txt"
    monkeypatch.setenv("PLUGIN_LISTING", str(listing))
    inner.conftest(LISTING)
    pytester.makepyfile(test_a=FIRST)
    first = inner("test_a.py")
    assert first.outcomes() == {"passed": 2}
    pytester.makepyfile(test_b=SECOND)
    both = inner()
    assert both.outcomes() == {"passed": 4}
    without, with_wide = (set(line.split()) for line in listing.read_text().splitlines())
    assert "statesnap-session" in without and "statesnap-wide-teardowns" not in without
    assert "statesnap-wide-teardowns" in with_wide
    test = both.record().test_by_id("test_b.py::test_after")
    assert test is not None
    assert [(c.key, c.phase, c.fixture, c.scope) for c in test.changes] == [
        ("WIDE_TEARDOWN_LEAK", "teardown", "shared", "module")]
