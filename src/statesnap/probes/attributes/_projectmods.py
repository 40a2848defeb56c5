"""Which entries of ``sys.modules`` are the project's own modules, for the ``attributes`` probe.

A module is the project's where its name is under a watched package, or its file lies under the
rootdir outside any virtual environment (:func:`.scan.is_project_file`); statesnap's own
modules never are.  Decided once per name and module object: a module popped and imported
again (a fresh object) is decided again.
"""

from __future__ import annotations

import os
import types
from typing import Any

from statesnap.probes.attributes.scan import is_normal_path, is_project_file, module_namespace
from statesnap.probes.base import is_statesnap_module


class ProjectModules:
    """The project's modules among ``sys.modules``' items, with each decision remembered."""

    def __init__(self) -> None:
        self.roots: tuple[str, ...] = ()
        #: Each root with one trailing separator: what a project file's path starts with.
        self._root_prefixes: tuple[str, ...] = ()
        self._packages: tuple[str, ...] = ()
        #: name -> (id of the module object, is it a project module)
        self._decisions: dict[str, tuple[int, bool]] = {}
        self._venv_dirs: dict[str, bool] = {}

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

    def select(self, items: list[tuple[str, Any]]) -> list[tuple[str, types.ModuleType]]:
        """The project's modules among ``items`` (``sys.modules``' items), in their order."""
        decisions = self._decisions
        out: list[tuple[str, types.ModuleType]] = []
        for name, module in items:
            known = decisions.get(name)
            if known is None or known[0] != id(module):
                try:
                    known = (id(module), self.is_project(name, module))
                except Exception:  # sys.modules[42] = module: no project module of ours
                    known = (id(module), False)
                decisions[name] = known
            if known[1]:
                out.append((name, module))
        return out
