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

from statesnap.plugin.core import StatesnapPlugin


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
def core(pytester: pytest.Pytester) -> StatesnapPlugin:
    config = pytester.parseconfigure("-p", "no:randomly", "-p", "statesnap",
                                     f"--statesnap-record={pytester.path / 'r.jsonl'}")
    plugin = config.pluginmanager.get_plugin("statesnap-session")
    assert isinstance(plugin, StatesnapPlugin)
    return plugin


def test_a_definition_is_judged_again_when_its_function_is_replaced(
        core: StatesnapPlugin) -> None:
    fixture = FakeDef(plain)
    assert core._kind(fixture) == (False, False)
    assert core._kind(fixture) == (False, False)
    fixture.func = generator  # wrapped by a plugin between two setups
    assert core._kind(fixture) == (False, True)
    fixture.func = plain
    assert core._kind(fixture) == (False, False)


def test_a_definition_is_judged_again_when_its_arguments_are_replaced(
        core: StatesnapPlugin) -> None:
    fixture = FakeDef(plain, ("x",))
    assert core._kind(fixture) == (False, False)
    fixture.argnames = ("x", "request")  # given request: it may add finalisers
    assert core._kind(fixture) == (False, True)


def test_pytests_own_fixtures_and_unhashable_definitions(core: StatesnapPlugin) -> None:
    own = FakeDef(pytest.MonkeyPatch.context)
    assert core._kind(own)[0] is True
    user = FakeDef(plain)
    assert core._kind(user)[0] is False
    odd = Unhashable(generator, ("request",))
    assert core._kind(odd) == (False, True)
