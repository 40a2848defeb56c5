"""pytest's own setup of a package: what importing its ``__init__.py`` changes is nobody's leak.

Before the first test under a package (a folder with an ``__init__.py``), pytest's
``Package.setup`` imports that ``__init__.py`` with the run's import mode.  Under the default
``prepend`` mode that puts the package's root at ``sys.path[0]`` whenever another entry is
there: with tests in a folder without ``__init__.py`` inside the package (``toolz/tests/``),
the folder's basename entry is first since collection, so every session inserts the root a
second time during that test's setup.  Unwatched, this was a HIGH ``syspath`` leak of a test
that runs no code at all, and under ``--statesnap-strict`` its error at teardown.

Each package's ``setup`` (pytest calls it once per session and package) gets a checkpoint on
either side, once per package; the change between is labelled :data:`PACKAGE_SETUP`, pytest's
own (``analysis.own_fixtures.is_pytest_own``), unless the ``__init__.py`` defines a
``setup_module``/``setUpModule`` (user code that ``Package.setup`` also calls: what it changes
stays the test's leak, as before).  No test pays for it: nothing runs per test.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from statesnap.analysis.own_fixtures import PACKAGE_SETUP
from statesnap.plugin.outsidecapture import OutsideCapture
from statesnap.state.tracker import Label, TestTracker

#: What ``Package.setup`` calls besides the import (pytest's ``_get_first_non_fixture_func``).
_MODULE_SETUPS = ("setUpModule", "setup_module")


def watch_package_setups(items: Iterable[pytest.Item],
                         tracker: Callable[[], TestTracker | None],
                         outside: OutsideCapture) -> None:
    """Wrap the ``setup`` of every package above ``items`` (once per session); the
    checkpoints are taken ``outside`` pytest's capture (the setup runs inside it)."""
    seen: set[int] = set()
    for item in items:
        node = item.parent
        while node is not None and id(node) not in seen:
            seen.add(id(node))
            if isinstance(node, pytest.Package):
                _wrap(node, tracker, outside)
            node = node.parent


def _wrap(package: pytest.Package, tracker: Callable[[], TestTracker | None],
          outside: OutsideCapture) -> None:
    original = package.setup
    init = package.path / "__init__.py"

    def setup() -> None:
        t = tracker()
        if t is None:
            original()
            return
        outside.checkpoint(t, Label("setup"), light=False)  # what ran before it, in this setup
        try:
            original()
        finally:
            own = not _defines_module_setup(init)
            outside.checkpoint(t, Label("setup", PACKAGE_SETUP if own else None,
                                        "pytest" if own else None), light=False)

    # An instance attribute: pytest's SetupState calls ``col.setup()`` on this node.
    package.setup = setup  # type: ignore[method-assign]


def _defines_module_setup(init: Path) -> bool:
    """Whether the imported ``__init__.py`` at ``init`` has a module setup function (or
    cannot be found, when the change stays the test's, as it was)."""
    target = str(init)
    for module in list(sys.modules.values()):
        if not issubclass(type(module), types.ModuleType):
            continue  # a stand-in object in sys.modules: never asked anything
        ns: dict[str, Any] = module.__dict__
        if ns.get("__file__") == target:
            return any(callable(ns.get(name)) for name in _MODULE_SETUPS)
    return True
