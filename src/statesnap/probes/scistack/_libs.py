"""The ``scistack`` probe's numpy, pandas and scikit-learn watchers.

Each reports only the settings that differ from the library's default, one key each, so that
importing the library adds no key and a map shows exactly what a test left changed.  What
they read and why it is cheap: docs/PROBES.md (``scistack``).
"""

from __future__ import annotations

import contextvars
import sys
from typing import Any

from statesnap.probes._dictwatch import probe_support, version_reader
from statesnap.probes.base import ProbeMap
from statesnap.probes.scistack._watch import (
    Unsupported,
    Watcher,
    call_quietly,
    same,
    show,
    submodule,
)

ERRSTATE = "numpy.errstate"
ERRCALL = "numpy.errcall"
PRINTOPTIONS = "numpy.printoptions:"
PANDAS_OPTION = "pandas.option:"
SKLEARN_CONFIG = "sklearn.config:"

#: numpy's default error handling (the same since numpy 1.0).
ERR_DEFAULT = {"divide": "warn", "over": "warn", "under": "ignore", "invalid": "warn"}
ERR_ORDER = ("divide", "over", "under", "invalid")
#: ``np.get_printoptions()`` in a fresh process, numpy 1.14 to 2.x (``override_repr`` came
#: with 2.1); numpy 2's own ``default_format_options_dict`` is preferred where it exists.
PRINT_DEFAULTS: dict[str, object] = {
    "edgeitems": 3, "threshold": 1000, "floatmode": "maxprec", "precision": 8,
    "suppress": False, "linewidth": 75, "nanstr": "nan", "infstr": "inf", "sign": "-",
    "formatter": None, "legacy": False, "override_repr": None,
}
_MISSING = object()


def _numpy_print_defaults() -> dict[str, object]:
    try:
        shown = dict(submodule("numpy._core.printoptions").default_format_options_dict)
    except (Unsupported, AttributeError, TypeError):
        return PRINT_DEFAULTS
    # Stored as sys.maxsize; np.get_printoptions() shows it as False (no legacy mode).
    if shown.get("legacy") == sys.maxsize:
        shown["legacy"] = False
    return shown


class NumpyWatcher(Watcher):
    """Error handling (``np.seterr`` / ``np.seterrcall``) and print options.

    numpy 2 keeps both in context variables that every ``seterr``/``set_printoptions`` (and
    every ``with np.errstate``) sets to a new object: the token is those two objects, held,
    so an identity compare answers.  numpy 1 keeps them elsewhere: its token asks the public
    getters (a few microseconds, only once numpy is imported).
    """

    module = "numpy"
    prefixes = ("numpy.",)

    def __init__(self, mod: Any) -> None:
        super().__init__(mod)
        self._geterr = mod.geterr
        self._geterrcall = mod.geterrcall
        self._getprint = mod.get_printoptions
        self._seterr = mod.seterr
        self._seterrcall = mod.seterrcall
        self._setprint = mod.set_printoptions
        self._defaults = _numpy_print_defaults()
        err = getattr(submodule_or_none("numpy._core._ufunc_config"), "_extobj_contextvar", None)
        fmt = getattr(submodule_or_none("numpy._core.printoptions"), "format_options", None)
        if isinstance(err, contextvars.ContextVar) and isinstance(fmt, contextvars.ContextVar):
            self._vars: tuple[Any, Any] | None = (err.get, fmt.get)
        else:
            self._vars = None

    def token(self) -> object:
        if self._vars is not None:
            return self._vars[0](), self._vars[1]()
        return (tuple(self._geterr().items()), self._geterrcall(),
                tuple((k, id(v)) for k, v in self._getprint().items()))

    def read(self, out: ProbeMap) -> None:
        err = self._geterr()
        if any(err.get(k) != v for k, v in ERR_DEFAULT.items()):
            out[ERRSTATE] = " ".join(f"{k}={err.get(k)}" for k in ERR_ORDER)
        call = self._geterrcall()
        if call is not None:
            out[ERRCALL] = show(call)
        for name, value in self._getprint().items():
            if not same(value, self._defaults.get(name, _MISSING)):
                out[PRINTOPTIONS + name] = show(value)

    def save(self) -> object:
        return self._geterr(), self._geterrcall(), self._getprint()

    def restore(self, saved: Any, keys: list[str]) -> list[str]:
        err, call, printing = saved
        done: list[str] = []
        if ERRSTATE in keys:
            self._seterr(**err)
            done.append(ERRSTATE)
        if ERRCALL in keys:
            self._seterrcall(call)
            done.append(ERRCALL)
        names = [k.removeprefix(PRINTOPTIONS) for k in keys if k.startswith(PRINTOPTIONS)]
        if names:
            # Every set_printoptions call resets `formatter` (and numpy 2's `override_repr`)
            # unless given: pass all of today's options, the restored ones changed back.
            now = self._getprint()
            for name in names:
                now[name] = printing.get(name, self._defaults.get(name))
            self._setprint(**now)
            done += [PRINTOPTIONS + n for n in names]
        return done


def submodule_or_none(name: str) -> Any:
    try:
        return submodule(name)
    except Unsupported:
        return None


class PandasWatcher(Watcher):
    """Every registered pandas option whose value differs from its registered default.

    The options live in nested dicts (``display`` -> ``max_rows``), written by
    ``set_option`` and ``option_context``; the token is the version tags of those dicts plus
    the number of registered options (a newly registered option can add a dict).
    """

    module = "pandas"
    prefixes = (PANDAS_OPTION,)

    def __init__(self, mod: Any) -> None:
        super().__init__(mod)
        config = submodule("pandas._config.config")
        self._config = config
        self._registered: dict[str, Any] = config._registered_options
        self._root: dict[str, Any] = config._global_config
        if not isinstance(self._registered, dict) or not isinstance(self._root, dict):
            raise Unsupported("pandas keeps its options in another form")
        self._known = -1
        self._reader: Any = tuple
        self._dict_list: list[dict[str, Any]] = []
        #: ``(option, the dict holding it, its name there, its default)`` per option.
        self._flat: list[tuple[str, dict[str, Any], str, object]] = []

    def _refresh(self) -> None:
        """Walk the option tree again: at the first token, and when options were registered."""
        self._known = len(self._registered)
        dicts: list[dict[str, Any]] = []
        todo = [self._root]
        while todo:
            d = todo.pop()
            dicts.append(d)
            todo += [v for v in d.values() if type(v) is dict]
        self._dict_list = dicts
        self._reader = (version_reader(dicts) if probe_support()
                        else (lambda: tuple(tuple(d.items()) for d in dicts)))
        flat = []
        for key, option in list(self._registered.items()):
            *path, leaf = key.split(".")
            parent: Any = self._root
            try:
                for part in path:
                    parent = parent[part]
            except (KeyError, TypeError):
                continue
            if type(parent) is dict:
                flat.append((key, parent, leaf, getattr(option, "defval", _MISSING)))
        self._flat = flat

    def token(self) -> object:
        if len(self._registered) != self._known:
            self._refresh()
        return self._known, self._reader()

    def read(self, out: ProbeMap) -> None:
        if len(self._registered) != self._known:
            self._refresh()
        for key, parent, leaf, default in self._flat:
            value = parent.get(leaf, _MISSING)
            # Registering stores the default object itself: identity settles almost all.
            if value is not default and value is not _MISSING and not same(value, default):
                out[PANDAS_OPTION + key] = show(value)

    def save(self) -> object:
        if len(self._registered) != self._known:
            self._refresh()
        # A copy of each nested dict (one C call each), keyed by the live dict it copies.
        return {id(d): (d, dict(d)) for d in self._dict_list}

    def _saved_value(self, saved: dict[int, Any], name: str, default: object) -> object:
        parent: Any = self._root
        *path, last = name.split(".")
        try:
            for part in path:
                parent = parent[part]
        except (KeyError, TypeError):
            return default
        entry = saved.get(id(parent))
        if entry is None or entry[0] is not parent:
            return default  # registered since the save: it had its default then
        return entry[1].get(last, default)

    def restore(self, saved: Any, keys: list[str]) -> list[str]:
        done: list[str] = []
        for key in keys:
            name = key.removeprefix(PANDAS_OPTION)
            option = self._registered.get(name)
            if option is None:
                continue
            value = self._saved_value(saved, name, option.defval)
            setter = getattr(self._config, "_set_option", None)
            try:
                if setter is not None:
                    setter(name, value, silent=True)  # validators and callbacks, no warning
                else:
                    call_quietly(self.mod.set_option, name, value)
            except (ValueError, TypeError, KeyError):
                continue
            done.append(key)
        return done


class SklearnWatcher(Watcher):
    """``sklearn.get_config()`` entries that differ from the module's defaults.

    ``set_config`` writes a per-thread dict copied from ``sklearn._config._global_config``
    (the defaults, read from the environment at import); the token is that dict's values.
    """

    module = "sklearn"
    prefixes = (SKLEARN_CONFIG,)

    def __init__(self, mod: Any) -> None:
        super().__init__(mod)
        config = submodule("sklearn._config")
        self._local = getattr(config, "_get_threadlocal_config", None) or mod.get_config
        self._defaults: dict[str, object] = dict(config._global_config)
        self._set = mod.set_config
        self._thread: Any = getattr(config, "_threadlocal", None)

    def token(self) -> object:
        # The thread's own dict, without a Python call (``_get_threadlocal_config`` makes it
        # on first use: until then the thread has the defaults).
        if self._thread is not None:
            mine = self._thread.__dict__.get("global_config")
            return None if mine is None else tuple(mine.values())
        return tuple(self._local().values())

    def read(self, out: ProbeMap) -> None:
        for name, value in self._local().items():
            if not same(value, self._defaults.get(name, _MISSING)):
                out[SKLEARN_CONFIG + name] = show(value)

    def save(self) -> object:
        return dict(self._local())

    def restore(self, saved: Any, keys: list[str]) -> list[str]:
        done: list[str] = []
        for key in keys:
            name = key.removeprefix(SKLEARN_CONFIG)
            value = saved.get(name, self._defaults.get(name, _MISSING))
            if value is _MISSING:
                continue
            try:
                self._set(**{name: value})
            except (ValueError, TypeError, ImportError):
                continue  # array_api_dispatch needs array-api-compat, a newer key...
            done.append(key)
        return done
