"""statesnap: find the test that polluted global state for a failing test.

Activated with ``pytest -p statesnap``: pytest imports this module and registers it as a
plugin, so the hooks below are the whole entry point.  They stay tiny and import the real
plugin lazily, so ``import statesnap`` from the CLI or a probe does not import pytest.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def pytest_addhooks(pluginmanager: Any) -> None:
    from statesnap import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: Any, pluginmanager: Any) -> None:
    from statesnap import options

    options.addoption(parser)


def pytest_configure(config: Any) -> None:
    from statesnap import plugin

    plugin.configure(config)
