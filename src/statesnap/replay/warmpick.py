"""Which modules a warm parent preloads: the libraries the recorded session had imported.

At the first test the plugin lists the top-level modules in ``sys.modules`` that come from the
standard library or an installed distribution (site-packages), never the project's own (a file
under the rootdir outside site-packages), its conftests or test modules, and never a module
pytest loaded as a plugin: pytest marks plugins for assertion rewriting when it loads them, and
one already imported would make it warn, which a fresh process never does.  The record keeps
the list (``preload`` on the collection line, read into the header); a warm parent imports
exactly these, in the order the session imported them (:mod:`statesnap.replay.warm`).

Then come pytest's own submodules that were loaded (:func:`pytest_names`: its default plugins,
which ``import pytest`` alone does not import and every child's start would), and statesnap's
own modules that were loaded (every one, by its full name): a
replay child is a session with statesnap on, and importing them is most of statesnap's own
start.  pytest would warn that ``statesnap`` was imported before ``-p statesnap`` could mark it
for rewriting, but its package docstring says ``PYTEST_DONT_REWRITE`` (statesnap never has its
asserts rewritten: ``statesnap/__init__.py``), which is what pytest checks.  Other plugins'
modules stay out: their asserts are rewritten in a fresh process, and a preloaded copy would
not be.  statesnap's modules that a replay child imports only after its first test come last
(:data:`LATE`: the order plugin, the session end's summary, a failure's report): otherwise
every child imports them again.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

#: Never preloaded: the program's own ``__main__`` and statesnap itself (``-p statesnap``
#: makes pytest mark it for rewriting, so it must not be imported before the child's pytest).
NEVER = frozenset({"__main__", "statesnap"})
#: statesnap's own package: preloaded by full module names, after the libraries.
OWN = "statesnap"
#: statesnap's modules a replay child imports after its first test (``--statesnap-order``,
#: the session end), which the session's list at its first test lacks: preloaded too.  A test
#: (tests/replay/test_warmchild.py) fails when a forked child imports one of statesnap's own
#: modules itself, so this list follows the code.
#: Each imports nothing outside statesnap that the modules before it had not (tested too): a
#: module a test imports must be new to a forked child's sys.modules when it is to a fresh one.
LATE = (
    # every replay: its order, the session end
    "statesnap.replay.orderfile", "statesnap.plugin.order", "statesnap.probes.fixtures",
    "statesnap.base.cores", "statesnap.analysis.leaks", "statesnap.analysis.quiet",
    "statesnap.analysis.resets",
    "statesnap.plugin.terminal",
    # a replay whose victim fails: its failure, what caused it, the finding's lines
    "statesnap.record.failure", "statesnap.record.signature", "statesnap.analysis.attribution",
    "statesnap.analysis.causes", "statesnap.analysis.connection", "statesnap.analysis.findings",
    "statesnap.analysis.mtimerace", "statesnap.analysis.verdicts",
    "statesnap.analysis.victimcode", "statesnap.contain.isolate.fields",
    "statesnap.output.explain", "statesnap.replay.repro",
)


def _library_roots() -> list[str]:
    # The standard library's folder (lib-dynload is inside it), from ``os`` itself: not
    # ``sysconfig.get_paths()``, which imports ``_sysconfigdata``, a module the first test
    # would then seem to have imported.
    return sorted({os.path.dirname(os.__file__), os.path.dirname(os.path.realpath(os.__file__))})


#: A folder of installed distributions, as one component of a module's file (string tests,
#: not pathlib's parts: this runs in every replay child, over every top-level module).
_INSTALLED = tuple(f"{os.sep}{name}{os.sep}" for name in ("site-packages", "dist-packages"))


def _is_library(file: str, roots: Iterable[str], rootdir: str) -> bool:
    if any(part in os.sep + file for part in _INSTALLED):
        return True
    if file.startswith(rootdir):
        return False  # the project's own code (a checkout on sys.path, an editable install)
    return any(file.startswith(root + "/") for root in roots)


def preload_names(modules: Mapping[str, Any], rootdir: Path,
                  plugin_modules: Iterable[str] = ()) -> list[str]:
    """The top-level library modules of ``modules`` (``sys.modules``) in import order, less
    those under ``rootdir`` and the top-level packages of ``plugin_modules``."""
    items = list(modules.items())
    roots = _library_roots()
    root = str(rootdir).rstrip("/") + "/"
    skip = set(NEVER) | {name.split(".", 1)[0] for name in plugin_modules}
    skip -= {"_pytest", "pytest"}  # pytest's own modules are never marked for rewriting
    out: list[str] = []
    for name, module in items:
        if "." in name or name in skip:
            continue
        file = getattr(module, "__file__", None)
        if not isinstance(file, str) or not _is_library(file, roots, root):
            continue
        out.append(name)
    return out


def pytest_names(modules: Mapping[str, Any]) -> list[str]:
    """pytest's own submodules that ``modules`` has loaded (``_pytest.junitxml``, its other
    default plugins...), by full name: ``import pytest`` does not import them, pytest's start
    does, in every child.  Not the builtin plugins outside the defaults (``-p pytester``) and
    their submodules: pytest loads those after it installs its assertion rewriter, which
    would warn that they were imported before it could rewrite them.  None at all where
    ``_pytest.config`` does not say which those are."""
    config = modules.get("_pytest.config")
    builtin = getattr(config, "builtin_plugins", None)
    defaults = getattr(config, "default_plugins", None)
    if not isinstance(builtin, (set, frozenset, tuple, list)) \
            or not isinstance(defaults, (tuple, list)):
        return []
    later = tuple(f"_pytest.{name}" for name in set(builtin) - set(defaults))
    return [name for name in list(modules) if name.startswith("_pytest.")
            and not any(name == p or name.startswith(p + ".") for p in later)]


def own_names(modules: Mapping[str, Any]) -> list[str]:
    """statesnap's own modules in ``modules``, by full name, in import order."""
    return [name for name in list(modules) if name == OWN or name.startswith(OWN + ".")]


def current(rootdir: Path, plugin_modules: Iterable[str] = ()) -> list[str]:
    """:func:`preload_names` of this process's ``sys.modules``, then
    :func:`pytest_names`, :func:`own_names` and the :data:`LATE` ones not loaded yet."""
    own = own_names(sys.modules)
    late = [name for name in LATE if name not in own]
    return [*preload_names(sys.modules, rootdir, plugin_modules),
            *pytest_names(sys.modules), *own, *late]
