"""Isolation at collection: the per-test runner is registered only when some test asks.

``--statesnap-isolate[=auto|fork|spawn]`` or ``@pytest.mark.statesnap_isolate``; a bad marker is
a usage error before anything runs.  What isolation does: docs/ARCHITECTURE.md ("Isolation").
"""

from __future__ import annotations

import pytest

from statesnap.contain.isolate.modes import IsolateSettings, requested_mode
from statesnap.plugin import markers
from statesnap.plugin.hookplugin import HookPlugin
from statesnap.plugin.run import RunState


class IsolatePlugin(HookPlugin):
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
        marked = ([requested_mode(item, None) is not None for item in items]
                  if markers.ISOLATE in markers.names_on(items) else [])
        pm = self.run.config.pluginmanager
        if ((any(marked) or self.settings.mode is not None)
                and not pm.has_plugin("statesnap-isolate-runner")):
            # Imported here, before the first test: a module appearing in sys.modules
            # during a test would read as that test's change.
            from statesnap.contain.isolate.run import IsolateRunner

            pm.register(IsolateRunner(self.run, self.settings), "statesnap-isolate-runner")
