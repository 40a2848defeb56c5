"""Which entries of ``sys.modules`` are the project's own modules, for the ``attributes`` probe.

A module is the project's where its name is under a watched package, or its file lies under the
rootdir outside any virtual environment (:func:`.scan.is_project_file`); statesnap's own
modules never are.  Decided once per name and module object: a module popped and imported
again (a fresh object) is decided again.

The first snapshot of a session decides every module the interpreter has loaded (about 500
under pytest, most of them the standard library's and site-packages'): what says "not the
project's" for most of them (a normal absolute path outside the roots) is tested inline, and
on the file's folder once per folder (:func:`outside_in`), rather than by five substring
tests of each file's path.
"""

from __future__ import annotations

import os
import types
from typing import Any

from statesnap.probes.attributes.scan import is_normal_path, is_project_file, module_namespace
from statesnap.probes.base import is_statesnap_module

#: ``module.__dict__`` without attribute lookup, as :func:`.scan.module_namespace` reads it.
_NAMESPACE: Any = vars(types.ModuleType)["__dict__"].__get__
#: Last parts that make a path not normal (:func:`.scan.is_normal_path`).
_ABNORMAL_LAST = frozenset({"", ".", ".."})


def outside_in(folder: str, prefixes: tuple[str, ...]) -> bool:
    """Whether every ``folder + "/" + last`` (``last`` holding no separator: neither empty,
    ``.`` nor ``..``) is a normal path outside the roots whose ``prefixes`` (each ending in
    a separator) are given: :func:`.scan.is_normal_path` of the file and not
    ``file.startswith(prefixes)``.

    A file is normal exactly where its folder is (no part crosses the last separator).  It
    starts with a root's prefix exactly where ``folder + "/"`` does: the prefix ends in a
    separator, which ``last`` cannot hold, so the prefix ends within ``folder + "/"``.
    """
    return bool(folder) and is_normal_path(folder) and not (folder + "/").startswith(prefixes)


class ProjectModules:
    """The project's modules among ``sys.modules``' items, with each decision remembered."""

    def __init__(self) -> None:
        self.roots: tuple[str, ...] = ()
        #: Each root with one trailing separator: what a project file's path starts with.
        self._root_prefixes: tuple[str, ...] = ()
        self._packages: tuple[str, ...] = ()
        #: name -> (id of the module object, is it a project module); read by the probe's
        #: rescan, which looks each module up here (inline: it runs after every import).
        self.decisions: dict[str, tuple[int, bool]] = {}
        self._venv_dirs: dict[str, bool] = {}
        #: folder -> :func:`outside_in` of it (most modules share a few folders).
        self._outside: dict[str, bool] = {}

    def setup(self, roots: tuple[str, ...], packages: tuple[str, ...]) -> None:
        self.roots = roots
        self._root_prefixes = tuple(r.rstrip(os.sep) + os.sep for r in roots)
        self._packages = packages

    def is_project(self, name: str, module: object) -> bool:
        if not issubclass(type(module), types.ModuleType):
            return False  # an object planted in sys.modules: the modules probe reports it
        if is_statesnap_module(name):
            return False
        if any(name == p or name.startswith(p + ".") for p in self._packages):
            return True
        assert isinstance(module, types.ModuleType)
        file = module_namespace(module).get("__file__")
        if not isinstance(file, str) or not file:
            return False
        if is_normal_path(file) and not file.startswith(self._root_prefixes):
            # Most modules (the standard library, site-packages): one C call says no, where
            # is_project_file would find the same after normalising the path.
            return False
        return is_project_file(file, self.roots, self._venv_dirs)

    def first_scan(self, items: list[tuple[str, Any]]) -> list[tuple[str, types.ModuleType]]:
        """Every pair of ``items`` (``sys.modules``' items) decided at once; the project's
        modules among them, in their order."""
        return self._decide(items)

    def _decide(self, pairs: list[tuple[str, Any]]) -> list[tuple[str, types.ModuleType]]:
        """:meth:`is_project` of each pair, into the decisions; the project's modules among
        ``pairs``, in their order.

        Without watched packages, every test is one a project module must pass (nothing
        else makes it the project's), so their order changes no decision: the one that
        rules out most modules (a normal path outside the roots) goes first, inline, and
        once per folder (:func:`outside_in`).  Any other pair goes through :meth:`is_project`.
        """
        decisions = self.decisions
        found: list[tuple[str, types.ModuleType]] = []
        prefixes, outside = self._root_prefixes, self._outside
        quick = not self._packages  # a watched package's module may live anywhere
        for name, module in pairs:
            try:
                if quick and issubclass(type(module), types.ModuleType):
                    file = _NAMESPACE(module).get("__file__")
                    if type(file) is str:
                        folder, _, last = file.rpartition("/")
                        known = outside.get(folder)
                        if known is None:
                            known = outside[folder] = outside_in(folder, prefixes)
                        if known and last not in _ABNORMAL_LAST:
                            decisions[name] = (id(module), False)
                            continue
                project = self.is_project(name, module)
            except Exception:  # sys.modules[42] = module: no project module of ours
                project = False
            decisions[name] = (id(module), project)
            if project:
                found.append((name, module))
        return found
