"""Per-test process isolation: ``--statesnap-isolate[=auto|fork|spawn]`` and ``statesnap_isolate``.

An isolated test runs in a fresh child process, so what it leaks dies with it.  This module
finds the tests that ask for it and chooses how (fork when it is safe; a fresh interpreter
when CUDA is already initialised in this process, because a forked child inherits a CUDA
context it cannot use); :mod:`statesnap.contain.isolate.run` runs the child
(:mod:`~statesnap.contain.isolate.fork`, :mod:`~statesnap.contain.isolate.spawn`) and then shows
the child's
reports through this process's hooks, exactly as pytest shows any test's: the terminal,
``-rA`` sections, junitxml and every other plugin see ordinary reports with the captured
output, the assertion introspection, skips, xfails and xpasses as they were.  A child that
dies (a segfault, ``abort()``, ``os._exit``) or runs past ``--statesnap-isolate-timeout``
fails its test with the signal or the exit status, plus whatever it printed before dying, and
the session goes on.

The test line in the record says ``"contained": true``, how it ran (``isolation``), and the
changes the test made in its child (``contained_changes``); its ``changes`` are only what
escaped the child (files it wrote, for instance), so they alone count as leaks.
"""

from __future__ import annotations

import pytest

from statesnap.contain.isolate.modes import IsolateSettings, requested_mode
from statesnap.plugin.run import RunState


class IsolatePlugin:
    """Runs the items that ask for it in a child process, then reports them here.

    Its per-test hook lives on :class:`statesnap.contain.isolate.run.IsolateRunner`, registered only
    when some test is marked or ``--statesnap-isolate`` is on: the usual session pays nothing
    per test.
    """

    def __init__(self, run: RunState, settings: IsolateSettings) -> None:
        self.run = run
        self.settings = settings

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        # A bad marker is a usage error before anything runs (so every item is looked at);
        # with no marker anywhere (the usual case), no test pays for a hook of this feature.
        marked = [requested_mode(item, None) is not None for item in items]
        pm = self.run.config.pluginmanager
        if ((any(marked) or self.settings.mode is not None)
                and not pm.has_plugin("statesnap-isolate-runner")):
            # Imported here, before the first test: a module appearing in sys.modules
            # during a test would read as that test's change.
            from statesnap.contain.isolate.run import IsolateRunner

            pm.register(IsolateRunner(self.run, self.settings), "statesnap-isolate-runner")
