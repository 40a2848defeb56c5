"""Which names under the ``files`` probe's roots are out of view.

Version control, tool caches, bytecode and dependency trees change under every test run for
reasons no test chose; reporting them would drown the changes that matter.  Virtual
environments (directories holding ``pyvenv.cfg``) are recognised by the walk itself.
"""

from __future__ import annotations

import fnmatch
import re

from statesnap.base.fsinfo import PROBE_FILE_PREFIX

#: Directory names never watched: version control, tool caches, dependency trees.
EXCLUDED_DIRS = frozenset({
    ".git", ".hg", ".svn", ".pytest_cache", ".mypy_cache", ".ruff_cache", "__pycache__",
    "node_modules", ".hypothesis", ".tox", ".nox",
})
#: File name endings never reported (bytecode is rewritten by imports, not by tests).
EXCLUDED_SUFFIXES = (".pyc", ".pyo")


class PathFilter:
    """Which names under the roots are out of view."""

    def __init__(self, globs: tuple[str, ...] = ()) -> None:
        patterns = [fnmatch.translate(g.rstrip("/")) for g in globs if g.strip("/")]
        self._extra = re.compile("|".join(patterns)) if patterns else None

    def _matches(self, name: str, key: str) -> bool:
        return self._extra is not None and bool(
            self._extra.match(name) or self._extra.match(key)
        )

    def dir_excluded(self, name: str, key: str) -> bool:
        """Whether the directory ``name`` (at ``key``) and everything under it is left out."""
        return name in EXCLUDED_DIRS or self._matches(name, key)

    def file_excluded(self, name: str, key: str) -> bool:
        """Whether the file ``name`` (at ``key``) is left out."""
        return (name.endswith(EXCLUDED_SUFFIXES) or name.startswith(PROBE_FILE_PREFIX)
                or self._matches(name, key))

