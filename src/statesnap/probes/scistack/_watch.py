"""The ``scistack`` probe's machinery: one watcher per library, found in ``sys.modules``.

A :class:`Watcher` is made for a library's module object the first time a token sees it in
``sys.modules`` (never by importing it) and made again if another module object takes its
place there.  Each watcher answers a cheap token, the keys of the settings that differ from
the library's defaults, and saves and restores them.  :class:`SciState` is what the probe
shell (``probes/scistack/probe.py``) loads once numpy is imported.  Keys and costs: docs/PROBES.md.
"""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Callable, Collection, Iterable
from typing import Any, ClassVar

from statesnap.base.internal import note_internal_error
from statesnap.probes.attributes.kinds import qualified
from statesnap.probes.base import ProbeMap, fingerprint_repr

#: Addresses in a repr (``<object at 0x7f...>``) differ in every process: a replay compares
#: fingerprints with the record's, so they are cut out.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_SCALARS = (type(None), bool, int, float, complex, str, bytes)


def show(value: object, depth: int = 0) -> str:
    """A text for a setting's value that reads the same in every process.

    Builtin scalars and containers of them by value, callables (a numpy formatter, a pandas
    option holding a function) by qualified name, anything else by its repr with addresses
    cut out (library settings are validated values: cyclers, paths, enums).
    """
    if isinstance(value, _SCALARS):
        return fingerprint_repr(value)
    if depth < 3 and isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        inner = ", ".join(show(v, depth + 1) for v in value)
        if type(value) is list:
            return f"[{inner}]"
        return f"({inner}{',' if len(value) == 1 else ''})"
    if depth < 3 and type(value) is dict:
        return "{" + ", ".join(f"{show(k, depth + 1)}: {show(v, depth + 1)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                          type)):
        return qualified(value)
    return _ADDRESS.sub("", fingerprint_repr(value))


def same(a: object, b: object) -> bool:
    """Whether a setting equals its default: identity, or equal values of the same type (a
    ``True`` where ``1`` was the default is a change).  A comparison that raises is "not"."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


def module_named(mods: dict[str, Any], name: str) -> types.ModuleType | None:
    """``sys.modules[name]`` if it is a real module (a test's ``MagicMock`` stand-in is not)."""
    found = mods.get(name)
    return found if isinstance(found, types.ModuleType) else None


class Unsupported(Exception):
    """This version of the library lacks what a watcher reads: it watches nothing."""


class Watcher:
    """One library's settings.  ``__init__`` resolves what the reads need, from the module
    and the submodules the library's own import loaded; raises :class:`Unsupported`."""

    #: The ``sys.modules`` name whose presence (and identity) makes this watcher.
    module: ClassVar[str] = ""
    #: Every key this watcher reports starts with one of these.
    prefixes: ClassVar[tuple[str, ...]] = ()

    def __init__(self, mod: types.ModuleType) -> None:
        self.mod = mod

    def token(self) -> object:
        raise NotImplementedError

    def read(self, out: ProbeMap) -> None:
        raise NotImplementedError

    def save(self) -> object:
        raise NotImplementedError

    def restore(self, saved: Any, keys: list[str]) -> list[str]:
        raise NotImplementedError

    def owns(self, key: str) -> bool:
        return key.startswith(self.prefixes)


def submodule(name: str) -> Any:
    """A submodule the library's own import has loaded; :class:`Unsupported` if absent."""
    found = sys.modules.get(name)
    if found is None:
        raise Unsupported(f"{name} is not loaded")
    return found


class _Slot:
    __slots__ = ("mod", "watcher")

    def __init__(self) -> None:
        self.mod: object = None
        self.watcher: Watcher | None = None


class SciState:
    """The watchers of the libraries imported so far, rebuilt when a module object changes."""

    def __init__(self, kinds: Iterable[type[Watcher]], notes: dict[str, str]) -> None:
        self._kinds = list(kinds)
        self._names = [k.module for k in self._kinds]
        self._slots = [_Slot() for _ in self._kinds]
        self._notes = notes
        #: The module objects last seen under ``_names`` (held) and the watchers made for them.
        self._found: tuple[object, ...] = ()
        self._active: list[Watcher] = []

    def active(self) -> list[Watcher]:
        """The watchers of the libraries in ``sys.modules`` now: one ``map`` and a compare
        while the same module objects are there (tuple equality checks identity first)."""
        found = tuple(map(sys.modules.get, self._names))
        if found != self._found:
            self._active = self._rebuild()
            self._found = found
        return self._active

    def _rebuild(self) -> list[Watcher]:
        mods = sys.modules
        out: list[Watcher] = []
        for kind, slot in zip(self._kinds, self._slots, strict=True):
            found = mods.get(kind.module)
            if found is None:
                slot.mod = slot.watcher = None
                continue
            if found is not slot.mod:
                slot.mod = found
                slot.watcher = self._make(kind, found)
            if slot.watcher is not None:
                out.append(slot.watcher)
        return out

    def _make(self, kind: type[Watcher], found: object) -> Watcher | None:
        if not isinstance(found, types.ModuleType):
            return None  # a stand-in (MagicMock) put in sys.modules by a test: nothing to read
        try:
            return kind(found)
        except Unsupported as exc:
            self._note(kind, f"not watched: {exc}")
        except Exception as exc:  # a partly initialised or odd build: watch the others
            self._note(kind, f"not watched: {type(exc).__name__}: {exc}")
        return None

    def _note(self, kind: type[Watcher], text: str) -> None:
        old = self._notes.get("scistack")
        line = f"{kind.module} {text}"
        self._notes["scistack"] = line if not old else f"{old}; {line}"

    def _drop(self, watcher: Watcher, what: str, exc: Exception) -> None:
        """A watcher whose read raised is switched off (with a note), the others go on."""
        note_internal_error(f"probe scistack: {what} {watcher.module}", exc)
        for slot in self._slots:
            if slot.watcher is watcher:
                slot.watcher = None
        self._active = [w for w in self._active if w is not watcher]
        self._note(type(watcher), f"no longer watched ({what} raised {type(exc).__name__})")

    def token(self) -> object:
        out: list[object] = []
        for w in self.active():
            try:
                out.append(w.token())
            except Exception as exc:
                self._drop(w, "token", exc)
                out.append(None)
        return tuple(out)

    def read(self) -> ProbeMap:
        out: ProbeMap = {}
        for w in self.active():
            try:
                w.read(out)
            except Exception as exc:
                self._drop(w, "read", exc)
        return out

    def save(self) -> object:
        saved: list[tuple[Watcher, object]] = []
        for w in self.active():
            try:
                saved.append((w, w.save()))
            except Exception as exc:  # not saved: not put back either
                note_internal_error(f"probe scistack: save {w.module}", exc)
        return saved

    def restore(self, saved: object, keys: Collection[str]) -> list[str]:
        assert isinstance(saved, list)
        done: list[str] = []
        for w, state in saved:
            mine = [k for k in keys if w.owns(k)]
            if not mine:
                continue
            try:
                done += w.restore(state, mine)
            except Exception as exc:
                note_internal_error(f"probe scistack: restore {w.module}", exc)
        return done


def call_quietly(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(...)`` with the warnings it raises (a deprecated option put back) not shown.

    Only ``warnings.filters`` is swapped for the call (``catch_warnings`` puts the very same
    list back), so the ``warnings`` probe sees nothing.
    """
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)
