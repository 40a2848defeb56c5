"""The ``scistack`` probe's matplotlib watchers: ``rcParams``, the backend, pyplot's figures.

``rcParams`` is a ``dict`` subclass whose values are stored with ``dict.__setitem__``: its
version tag moves on every store, and reading it through ``dict``'s own methods never runs
``RcParams.__getitem__`` (which, for ``backend``, resolves the backend: it imports pyplot).
Keys and costs: docs/PROBES.md (``scistack``).
"""

from __future__ import annotations

import os
from itertools import compress, repeat
from operator import is_not
from typing import Any

from statesnap.probes._dictwatch import probe_support, version_reader
from statesnap.probes.base import ProbeMap
from statesnap.probes.scistack._watch import Unsupported, Watcher, same, show, submodule
from statesnap.probes.scistack.probe import AUTO_BACKEND

RCPARAMS = "matplotlib.rcParams:"
BACKEND = "matplotlib.backend"
FIGURES = "matplotlib.figures"
_MISSING = object()


class RcParamsWatcher(Watcher):
    """``rcParams`` entries that differ from ``rcParamsOrig`` (what the import read from the
    matplotlibrc files: a fresh process starts there), the backend among them.

    The backend's default: see :meth:`_default_backend`.
    """

    module = "matplotlib"
    prefixes = (RCPARAMS, BACKEND)

    def __init__(self, mod: Any) -> None:
        super().__init__(mod)
        self._rc: dict[str, Any] = mod.rcParams
        self._orig: dict[str, Any] = mod.rcParamsOrig
        if not isinstance(self._rc, dict) or not isinstance(self._orig, dict):
            raise Unsupported("rcParams is not a dict here")
        rcsetup = submodule("matplotlib.rcsetup")
        self._auto = getattr(rcsetup, "_auto_backend_sentinel", None)
        #: ``MPLBACKEND``, which the import writes into rcParams after copying rcParamsOrig:
        #: the default of every process of this run (taken when matplotlib is first seen).
        self._env_backend: object = None
        chosen = os.environ.get("MPLBACKEND")
        if chosen:
            try:
                self._env_backend = rcsetup.validate_backend(chosen)
            except Exception:
                self._env_backend = chosen
        rc, orig = self._rc, self._orig
        if probe_support():
            self._reader: Any = version_reader([rc, orig])
        else:  # sees rebinding, not a list changed in place
            self._reader = lambda: (sum(map(id, dict.values(rc))),
                                    sum(map(id, dict.values(orig))))

    def token(self) -> object:
        return self._reader()

    def _backend_text(self, value: object) -> str:
        return AUTO_BACKEND if value is self._auto else str(value)

    def read(self, out: ProbeMap) -> None:
        rc, orig = self._rc, self._orig
        names = list(dict.keys(rc))
        # rcParamsOrig is a copy of rcParams made at import, sharing its value objects: an
        # identity compare in C skips every untouched entry (~300 of them).
        moved = compress(names, map(is_not, dict.values(rc),
                                    map(dict.get, repeat(orig), names, repeat(_MISSING))))
        for name in moved:
            value = dict.__getitem__(rc, name)
            if name == "backend":
                if not same(value, self._default_backend()):
                    out[BACKEND] = self._backend_text(value)
            elif not same(value, dict.get(orig, name, _MISSING)):
                out[RCPARAMS + name] = show(value)

    def _default_backend(self) -> object:
        """``MPLBACKEND`` where set, else ``rcParamsOrig["backend"]``: the matplotlibrc's
        choice, or (no choice anywhere) what pyplot picked on first use, which it records
        there -- the same pick whichever test made it."""
        if self._env_backend is not None:
            return self._env_backend
        return dict.get(self._orig, "backend", self._auto)

    def save(self) -> object:
        # A plain copy: a list changed in place is shared with rcParamsOrig too (matplotlib's
        # own copy), so it is neither seen nor put back.
        return dict(dict.items(self._rc))

    def restore(self, saved: Any, keys: list[str]) -> list[str]:
        rc = self._rc
        put = getattr(rc, "_set", None) or (lambda k, v: dict.__setitem__(rc, k, v))
        done: list[str] = []
        for key in keys:
            if key == BACKEND:
                if self._restore_backend(saved.get("backend", self._auto)):
                    done.append(key)
                continue
            name = key.removeprefix(RCPARAMS)
            value = saved.get(name, dict.get(self._orig, name, _MISSING))
            if value is _MISSING:
                continue
            # Already validated when it was set: stored as it was, no deprecation warnings.
            put(name, value)
            done.append(key)
        return done

    def _restore_backend(self, value: object) -> bool:
        resolved = self._default_backend()
        if value is self._auto and resolved is not self._auto:
            value = resolved  # picked since the save: what "auto" turned out to be
        now = dict.get(self._rc, "backend")
        if now is value or same(now, value):
            return True
        if value is self._auto:
            # Back to "pick on first use"; pyplot (if imported) resolves it again when asked.
            dict.__setitem__(self._rc, "backend", value)
            return True
        try:
            self.mod.use(value, force=True)  # with pyplot imported: switch_backend
        except (ImportError, ValueError, TypeError):
            return False
        return True


class FiguresWatcher(Watcher):
    """The figures pyplot keeps open (``plt.get_fignums()``): only with pyplot imported."""

    module = "matplotlib.pyplot"
    prefixes = (FIGURES,)

    def __init__(self, mod: Any) -> None:
        super().__init__(mod)
        self._gcf = submodule("matplotlib._pylab_helpers").Gcf
        if not isinstance(self._gcf.figs, dict):
            raise Unsupported("pyplot keeps its figures in another form")

    def token(self) -> object:
        # The figure numbers: a closed figure's manager is not held alive by a token.
        return tuple(self._gcf.figs)

    def read(self, out: ProbeMap) -> None:
        figs = self._gcf.figs
        if figs:
            nums = ", ".join(str(n) for n in sorted(figs, key=lambda n: (str(type(n)), n)))
            out[FIGURES] = f"{len(figs)} open (numbers {nums})"

    def save(self) -> object:
        return list(self._gcf.figs.values())

    def restore(self, saved: Any, keys: list[str]) -> list[str]:
        keep = {id(m) for m in saved}
        for num, manager in list(self._gcf.figs.items()):
            if id(manager) not in keep:
                self.mod.close(num)  # a figure opened since the save
        # One a test closed cannot be opened again.
        return [FIGURES] if {id(m) for m in self._gcf.figs.values()} == keep else []
