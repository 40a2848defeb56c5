"""statesnap: find the test that polluted global state for a failing test.

Activated with ``pytest -p statesnap``: pytest imports this module and registers it as a
plugin, so the hooks below are the whole entry point.  They stay tiny and import the real
plugin lazily, so ``import statesnap`` from the CLI or a probe does not import pytest.

PYTEST_DONT_REWRITE: statesnap's asserts are never rewritten (:func:`_skip_assertion_rewriting`),
and pytest reads this word to know it: a replay forked from a warm parent has statesnap
imported before ``-p statesnap`` is read (statesnap.replay.warmpick), and pytest would
otherwise warn that it can no longer rewrite it.
"""

from __future__ import annotations

import importlib.machinery
import sys
from typing import Any

__all__ = ["__version__"]


def _skip_assertion_rewriting() -> None:
    """Take statesnap off the list of packages pytest rewrites the asserts of.

    pytest marks the package of every ``-p`` plugin for assertion rewriting, just before
    importing it.  statesnap has no asserts that need pytest's messages, and rewriting parses
    and compiles each of its modules again on every run where pytest cannot cache the result
    (``PYTHONDONTWRITEBYTECODE``, a read-only site-packages: common in CI images): about
    0.2 s per session and per replay child.  The hook keeps the marks in a private set; if a
    pytest release changes that, nothing happens and statesnap is rewritten as before.
    Unmarked, statesnap's submodules are found past the hook (:class:`_OwnModules`).
    """
    for i, finder in enumerate(sys.meta_path):
        if type(finder).__name__ != "AssertionRewritingHook":
            continue
        marked = getattr(finder, "_must_rewrite", None)
        # Marked: pytest is importing statesnap as a plugin (-p), not a conftest as a library.
        as_plugin = isinstance(marked, set) and __name__ in marked
        if isinstance(marked, set):
            marked.discard(__name__)
        cache = getattr(finder, "_marked_for_rewrite_cache", None)
        if isinstance(cache, dict):
            for name in [n for n in cache if n == __name__ or n.startswith(__name__ + ".")]:
                del cache[name]
        if as_plugin and _OwnModules not in sys.meta_path:
            sys.meta_path.insert(i, _OwnModules)
        return


class _OwnModules:
    """Finds statesnap's submodules while a session starts, just ahead of pytest's assertion
    hook, as the hook itself would have had them found.

    pytest's hook looks at every import (about 0.1 M instructions each) and, statesnap being
    unmarked, lets each of statesnap's go on to the path finder: with some 80 modules at the
    start of a small session, about 9 M instructions of issue 13's fixed cost.  Here the path
    finder is asked straight away, for ``statesnap.*`` submodules only.  In ``sys.meta_path``
    only from statesnap's import to :func:`own_imports_done` (before the first snapshot, or at
    unconfigure), so the tests never see it; a run never configured (``--version``) leaves it,
    finding what the path finder would.
    """

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> Any:
        if path is None or not name.startswith("statesnap."):
            return None
        return importlib.machinery.PathFinder.find_spec(name, path)


def own_imports_done() -> None:
    """Take :class:`_OwnModules` out of ``sys.meta_path``: later imports go the usual way."""
    while _OwnModules in sys.meta_path:
        sys.meta_path.remove(_OwnModules)


# Before statesnap's first submodule is imported, or pytest rewrites that one too.
_skip_assertion_rewriting()

from statesnap.base.version import __version__  # noqa: E402


def __dir__() -> list[str]:
    """The public names and the hooks only (PEP 562): pytest and pluggy read every name
    ``dir()`` lists of a plugin (statesnap.plugin.hookplugin)."""
    return sorted({*__all__, *(n for n in globals() if n.startswith("pytest_"))})


#: Each containment feature is a pytest plugin module of its own (its options, configure
#: step, per-test observer and terminal lines), registered by name right after the core's
#: options; the core plugin never imports them.  Not through ``pytest_plugins``: for each name
#: there pytest searches every installed distribution's entry points (about 8 M instructions
#: a name, a sixth of what statesnap added to a small session) and marks it for assertion
#: rewriting, which statesnap skips (above).
FEATURES = (
    "statesnap.contain.isolate.feature",
    "statesnap.contain.guards",
    "statesnap.contain.strict",
    "statesnap.contain.restore",
    "statesnap.contain.reruns",
    "statesnap.contain.xdist",
    "statesnap.contain.ci",
)


def _forget_unloaded(package: str, namespace: dict[str, Any]) -> None:
    """Unbind the submodules of ``package`` (and of its loaded subpackages) that are no longer
    the ones ``sys.modules`` has, so that this session imports them afresh.

    pytester's in-process runs (``runpytest``) take out of ``sys.modules`` every module the
    inner session imported, but a package that stays (imported before, by the outer session:
    ``import statesnap.plugin.options``) keeps its submodules bound as attributes.  The next
    session's ``from statesnap.plugin import core`` then finds the first session's module by
    attribute, while ``import statesnap.plugin.run`` elsewhere makes a new one: two copies of
    statesnap in one session, whose core and features key the run state differently (an
    INTERNALERROR at configure).  Only loaded packages are walked: a few modules in a fresh
    process.
    """
    prefix = package + "."
    for name, value in list(namespace.items()):
        if not isinstance(value, type(sys)) or getattr(value, "__name__", None) != prefix + name:
            continue  # not a submodule of this package (a module it imported, a class)
        if sys.modules.get(prefix + name) is not value:
            del namespace[name]
        elif hasattr(value, "__path__"):
            _forget_unloaded(prefix + name, vars(value))


def pytest_addhooks(pluginmanager: Any) -> None:
    # The first hook of a session, before any of statesnap's lazy imports.  Imported before
    # the session (a warm parent's preload), statesnap was marked for rewriting after its
    # import had run the skip: it runs again here.
    _skip_assertion_rewriting()
    _forget_unloaded(__name__, globals())
    from statesnap.plugin import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: Any, pluginmanager: Any) -> None:
    from statesnap.plugin import options

    options.addoption(parser)
    _register_features(pluginmanager)


def _register_features(pluginmanager: Any) -> None:
    """Import and register each feature as pytest does a ``pytest_plugins`` name: not when
    blocked (``-p no:NAME``) or already registered.  pytest_addoption is called once, when
    this module is registered, so their options follow the core's, as before."""
    import importlib

    for name in FEATURES:
        if pluginmanager.is_blocked(name) or pluginmanager.get_plugin(name) is not None:
            continue
        pluginmanager.register(importlib.import_module(name), name)


def pytest_configure(config: Any) -> None:
    from statesnap.plugin import core

    core.configure(config, own_imports_done)


def pytest_unconfigure(config: Any) -> None:
    # A session that ended before its first snapshot (a usage error, --help).
    own_imports_done()
