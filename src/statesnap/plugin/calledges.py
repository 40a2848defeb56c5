"""The edges of each test's call phase, watched once subtests have shown up.

Subtests (pytest's ``subtests`` fixture, unittest's ``subTest``) report each one through
``pytest_runtest_makereport`` from inside the call phase.  The core takes its after-call
checkpoint on a call report; once it has seen a second call report for one test it registers
:class:`CallEdges`, and reports made while the call runs take none from then on.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Protocol

import pytest


class InCall(Protocol):
    in_call: bool


class CallEdges:
    """Marks each test's call phase as running; registered only once subtests showed up (a
    hook wrapper around every call would cost every suite)."""

    def __init__(self, core: InCall) -> None:
        self.core = core

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, object, object]:
        self.core.in_call = True
        try:
            return (yield)
        finally:
            self.core.in_call = False
