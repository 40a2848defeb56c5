"""``modules``: ``sys.modules`` entries added, removed, or replaced under the same name.

A plain import that adds real modules is low-severity; a removed module or an entry replaced by
a different object (a stub left behind by a test) is what breaks later tests.  statesnap's own
modules, and those it imports for itself while tests run (psutil, for process details), are
left out: it imports what it needs when it needs it.
"""

from __future__ import annotations

import sys
import types
import weakref
from collections.abc import Collection
from typing import Any

from statesnap.probes._dictwatch import probe_support, version_reader
from statesnap.probes._listwatch import pointers
from statesnap.probes.base import (
    Probe,
    ProbeContext,
    ProbeMap,
    Severity,
    fingerprint_repr,
    is_statesnap_module,
    unreadable,
)

#: Entries that are weak proxies: jinja2's ``ModuleLoader`` puts ``weakref.proxy(module)`` into
#: ``sys.modules`` with a callback that takes it out when the module is collected.  It comes
#: and goes with its owner and the garbage collector (whichever test happens to trigger a
#: collection), so neither its arrival nor its departure is rated above low.
_PROXIES: tuple[type, ...] = (weakref.ProxyType, weakref.CallableProxyType)
WEAKPROXY = "weakproxy"


def _describe(obj: object) -> str:
    # The id suffix makes "replaced by another object of the same kind" visible.
    tag = f"#{id(obj) & 0xFFFFFF:06x}"
    if type(obj) in _PROXIES:
        # isinstance() would ask the referent (a proxy of a module passes for a module).
        return f"{WEAKPROXY}{tag}"
    if issubclass(type(obj), types.ModuleType):  # not isinstance: it asks obj.__class__
        return f"module{tag}"
    if obj is None:
        return "None"
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__}{tag}"


def odd_key(name: object) -> str:
    """The key of a ``sys.modules`` entry whose name is no string (``sys.modules[42]``)."""
    return f"<{type(name).__qualname__} key {fingerprint_repr(name, 60)}>"


def _one_by_one(names: list[Any], objs: list[Any], own: Collection[str]) -> ProbeMap:
    """The entries described one at a time: where one raised (a name that is no string, an
    object whose type cannot be read), that entry alone is odd, and the rest are read."""
    out: ProbeMap = {}
    for name, mod in zip(names, objs, strict=True):
        if type(name) is not str:
            out[odd_key(name)] = _describe_or_not(mod)
        elif name not in own and not is_statesnap_module(name):
            out[name] = _describe_or_not(mod)
    return out


def _describe_or_not(obj: object) -> str:
    try:
        return _describe(obj)
    except Exception as exc:
        return unreadable(exc)


def _is_module(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("module#")


def _is_proxy(before: Any, after: Any) -> bool:
    """An entry that was or became a weak proxy, and nothing else (added or removed)."""
    values = [v for v in (before, after) if v is not None]
    return bool(values) and all(isinstance(v, str) and v.startswith(WEAKPROXY) for v in values)


class ModulesProbe(Probe):
    name = "modules"
    severity = Severity.MEDIUM
    restorable = True

    def __init__(self) -> None:
        self._own: set[str] = set()
        #: The last read: its map, the names of ``sys.modules`` in order (held: the ids
        #: below must stay theirs), and the addresses of those names, of the objects and of
        #: their types (not held: a module a test dropped must be free to go).
        self._map: ProbeMap = {}
        self._names: list[Any] = []
        self._sigs: tuple[bytes, bytes, bytes] | None = None
        #: statesnap's own modules at the last read (the set can change between reads).
        self._own_then: frozenset[str] = frozenset()

    def setup(self, ctx: ProbeContext) -> None:
        self._modules = sys.modules
        self._own = ctx.own_modules  # the live set: statesnap may import more later
        # sys.modules' version tag moves on every import, removal and replacement (a stub put
        # in place of a module): one read whatever the number of modules.
        self._tag = version_reader([sys.modules]) if probe_support() else None

    def token(self) -> object:
        mods = sys.modules
        if self._tag is not None and mods is self._modules:
            return self._tag()
        # Portable: a tuple of the module objects compares by identity first, in C; it keeps
        # the modules alive only until the next snapshot replaces it.
        return id(mods), tuple(mods.values())

    def light_token(self) -> object:
        return len(sys.modules)

    def read(self) -> ProbeMap:
        # statesnap's own modules, and what it imported for itself (import_own), come and go
        # as it needs them: never the suite's doing.
        own = self._own
        found = sys.modules.copy()  # a copy: another thread may import meanwhile
        names = list(found)
        objs = list(found.values())
        sigs = self._signatures(names, objs)
        old, n = self._sigs, len(self._names)
        if (old is not None and sigs is not None and len(names) >= n and own == self._own_then
                and all(new[:len(last)] == last for new, last in zip(sigs, old, strict=True))):
            # Only imports since the last read (the usual case: an import appends, while a
            # removal or replacement changes an entry before the end): the entries read then
            # are the same names bound to objects at the same addresses of the same types,
            # which describe the same (_describe shows no more), so only the new ones are
            # described.  jinja2's suite imports a module in 21 checkpoints: 1.5 ms each.
            out = dict(self._map) if len(names) > n else self._map
            try:
                for name, mod in zip(names[n:], objs[n:], strict=True):
                    if name not in own and not is_statesnap_module(name):
                        out[name] = _describe(mod)
            except Exception:  # an odd entry (sys.modules[42] = ...): costs that entry only
                out.update(_one_by_one(names[n:], objs[n:], own))
        else:
            try:
                out = {name: _describe(mod) for name, mod in zip(names, objs, strict=True)
                       if name not in own and not is_statesnap_module(name)}
            except Exception:  # as above
                out = _one_by_one(names, objs, own)
        self._map, self._names, self._sigs = out, names, sigs
        if own != self._own_then:
            self._own_then = frozenset(own)
        return out

    @staticmethod
    def _signatures(names: list[Any], objs: list[Any]) -> tuple[bytes, bytes, bytes] | None:
        name_ptrs = pointers(names)
        obj_ptrs = pointers(objs)
        type_ptrs = pointers(list(map(type, objs)))
        if name_ptrs is None or obj_ptrs is None or type_ptrs is None:
            return None
        return name_ptrs, obj_ptrs, type_ptrs

    def feeds_memos(self, key: str) -> bool:
        # A cached function importing a module (or a stub in its place) keeps it.
        return True

    def severity_of(self, key: str, before: Any, after: Any) -> Severity:
        if _is_proxy(before, after):
            return Severity.LOW  # a self-removing weak proxy (see _PROXIES)
        if before is None and isinstance(after, str) and after.startswith("module#"):
            return Severity.LOW  # a plain import
        if after is None:
            return Severity.MEDIUM
        if _is_module(before) and _is_module(after):
            # Another real module under the same name: imported again after a removal (or
            # reloaded into a new object), not a stub.  Its attributes, which the
            # ``attributes`` probe names, are the sharper key.
            return Severity.MEDIUM
        return Severity.HIGH

    def hint(self, key: str, change: str) -> str | None:
        if change == "added":
            return (f"if {key} is a stub, put it in with monkeypatch.setitem(sys.modules, "
                    f"{key!r}, ...) so it is taken out after the test")
        if change == "removed":
            return (f"remove {key} with monkeypatch.delitem(sys.modules, {key!r}) so it is put "
                    "back after the test")
        return (f"if {key} was replaced by a stub, do it with monkeypatch.setitem(sys.modules, "
                f"{key!r}, ...) so the real module comes back after the test; if it was "
                "imported again, the old module object is still held by earlier importers")

    def save(self) -> object:
        return dict(sys.modules)

    def restore(self, saved: object, keys: Collection[str]) -> list[str]:
        assert isinstance(saved, dict)
        done = []
        for key in keys:
            if key in saved:
                sys.modules[key] = saved[key]
            else:
                sys.modules.pop(key, None)
            done.append(key)
        return done
