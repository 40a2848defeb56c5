"""The containment features as one pytest plugin: their hooks called in ``FEATURES`` order.

Each feature is a module with a ``pytest_addoption`` and a ``pytest_configure`` marked
``trylast``.  Registered one by one, each module cost a pluggy registration and a pass of
pytest's fixture parser over every name in it (about 8 M instructions for the six, issue 13's
fixed cost).  Registered as one object, the features run as they did: their options in
``FEATURES`` order when it is registered (``pytest_addoption`` is a historic hook), and their
``pytest_configure`` in the same order, trylast, at the place in pytest's call order that the
six modules, registered one after the other, had.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import pytest

from statesnap.plugin.hookplugin import HookPlugin

__all__ = ["Features"]


def _call(hook: Callable[..., Any], **available: Any) -> None:
    """Call a hook with the arguments it names, as pluggy does."""
    code = hook.__code__
    hook(**{k: v for k, v in available.items() if k in code.co_varnames[:code.co_argcount]})


class Features(HookPlugin):
    """The feature modules' ``pytest_addoption`` and ``pytest_configure``, in order."""

    def __init__(self, modules: list[types.ModuleType]) -> None:
        self.modules = modules

    def pytest_addoption(self, parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager
                         ) -> None:
        for module in self.modules:
            hook = getattr(module, "pytest_addoption", None)
            if hook is not None:
                _call(hook, parser=parser, pluginmanager=pluginmanager)

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        for module in self.modules:
            hook = getattr(module, "pytest_configure", None)
            if hook is not None:
                _call(hook, config=config)
