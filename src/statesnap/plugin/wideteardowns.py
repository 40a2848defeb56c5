"""The checkpoint after a wide fixture's teardown: a hook on each fixture's finalisation,
registered only once a wide fixture of the user's was set up.

pytest finalises a fixture only after its setup, so none is missed, and a session that has
none (or only pytest's own) pays no hook call at each fixture's teardown, a few per test.
"""

from __future__ import annotations

from typing import Any, Protocol

import pytest

from statesnap.plugin.hookplugin import HookPlugin


class AfterFinalizer(Protocol):
    def after_finalizer(self, fixturedef: Any) -> None: ...


class WideTeardowns(HookPlugin):
    """Calls the core after each fixture's finalisers ran, for the checkpoint after a wide
    fixture of the user's (its scope's changes are its own, not the next test's)."""

    __slots__ = ("core",)

    def __init__(self, core: AfterFinalizer) -> None:
        self.core = core

    @pytest.hookimpl(trylast=True)
    def pytest_fixture_post_finalizer(self, fixturedef: Any, request: Any) -> None:
        self.core.after_finalizer(fixturedef)
