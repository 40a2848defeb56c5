"""Checkpoints inside a test's setup or teardown, taken with pytest's capture suspended.

The phase checkpoints run from ``pytest_runtest_makereport``, after pytest has suspended its
global capture: descriptors 1 and 2 are the terminal or the pipe the session writes to.  A
wide fixture's setup and finaliser, pytest's own first fixture setups and a package's setup
run inside the phase, with the capture's temporary file on 1 and 2 (and its streams in
``sys``).  A read there, whenever some other descriptor moved the fds token, recorded 1 and 2
as HIGH changes of that fixture, and their return as HIGH changes of whichever later test next
moved the token: a class's ``tearDownClass`` and an unrelated test named for pytest's own
redirection.  Suspending the capture for the checkpoint (pytest's own
``global_and_fixture_disabled``, which suspends only what is running and resumes only that,
the output kept) makes every checkpoint see the process alike.  Only these checkpoints pay
for it: once per wide fixture's scope, package and session, never on every test.
"""

from __future__ import annotations

from typing import Any

import pytest

from statesnap.state.tracker import Label, TestTracker


class OutsideCapture:
    """Takes a tracker's checkpoint with pytest's capture suspended, where there is one."""

    __slots__ = ("_capman", "_config")

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self._capman: Any = None

    def checkpoint(self, tracker: TestTracker, label: Label, light: bool = True) -> None:
        capman = self._capman
        if capman is None:
            # Asked at the first use: ``-p no:capture`` has none, and then there is no capture.
            capman = self._capman = self._config.pluginmanager.getplugin("capturemanager") or False
        if capman is False:
            tracker.checkpoint(label, light=light)
            return
        with capman.global_and_fixture_disabled():
            tracker.checkpoint(label, light=light)
