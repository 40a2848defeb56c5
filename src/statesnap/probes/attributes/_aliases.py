"""One object, one name: the module attribute an object is described under (its home), and
the other names that bind it (its aliases), each described as one short pointer to the home.

``from loguru import logger`` in forty test modules binds one object under forty keys.  Had
each of them been described in full, an autouse fixture that gives the logger a fresh core
before every test would have the probe digest the logger forty times per checkpoint, and the
diff list it forty times per test.  Only the home is described and watched; an alias's
fingerprint is ``alias of HOME #tag``, which changes only when the name is bound to another
object (a rebinding is still seen) or when the home moves.

The home is, among the names that bind the object now: a module that its type's module lies
in (``loguru`` for a ``loguru._logger.Logger``), then a module that is no test module, then
the module imported first; ties by name, so two runs choose the same.  When the home stops
binding the object (rebound, deleted, its module gone), the next name in that order becomes
the home, and every name of the object is described again (:meth:`Homes.moved`).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from statesnap.probes.attributes.scan import Tracked

_MISSING = object()
#: A module's place when it is not among the tracked ones (ranked after all of them).
_LAST = 1 << 30


def alias_text(home: str, tag: str) -> str:
    """An alias's fingerprint: the home's key and the object's identity tag."""
    return f"alias of {home} {tag}"


@cache  # asked at every choice of a home; a run has few module names
def _is_test_module(module: str) -> bool:
    return any(part.startswith("test") or part.endswith("_test") or part == "conftest"
               for part in module.split("."))


class Homes:
    """Every name seen binding each watched object, and the home chosen for it."""

    def __init__(self) -> None:
        #: ``id(object) -> {(module, name): the module's Tracked}``: names seen binding it.
        self._names: dict[int, dict[tuple[str, str], Tracked]] = {}
        #: ``id(object) -> home key`` as last chosen; and each home key's object.
        self._home: dict[int, str] = {}
        self._at: dict[str, int] = {}
        #: ``module -> ids`` of the objects whose home is in that module.
        self._by_module: dict[str, set[int]] = {}
        #: ``id(object) -> its type's module``, for the rank.
        self._type_module: dict[int, str] = {}
        #: The tracked modules by name, and their import order (set at each rescan).
        self.live: dict[str, Tracked] = {}
        self.order: dict[str, int] = {}
        #: Objects whose home moved since :meth:`take_moved`: all their names must be
        #: described again.
        self._moved: set[int] = set()

    def _binds(self, ident: int, module: str, name: str, owner: Tracked) -> bool:
        return (self.live.get(module) is owner
                and id(owner.ns.get(name, _MISSING)) == ident)

    def _rank(self, ident: int, module: str, name: str) -> tuple[int, int, str, str]:
        type_module = self._type_module.get(ident, "")
        own = type_module == module or type_module.startswith(module + ".")
        return ((0 if own else 1) + (2 if _is_test_module(module) else 0),
                self.order.get(module, _LAST), module, name)

    def _choose(self, ident: int) -> str | None:
        """The object's home among the names that still bind it (the others forgotten)."""
        names = self._names.get(ident) or {}
        best: tuple[int, int, str, str] | None = None
        for (module, name), owner in list(names.items()):
            if not self._binds(ident, module, name, owner):
                del names[(module, name)]
                continue
            rank = self._rank(ident, module, name)
            if best is None or rank < best:
                best = rank
        old = self._home.get(ident)
        if best is None:
            self._forget(ident, old)
            self._names.pop(ident, None)
            self._type_module.pop(ident, None)
            return None
        home = f"{best[2]}:{best[3]}"
        if home != old:
            self._forget(ident, old)
            if old is not None:
                self._moved.add(ident)
            self._home[ident] = home
            self._at[home] = ident
            self._by_module.setdefault(best[2], set()).add(ident)
        return home

    def _forget(self, ident: int, home: str | None) -> None:
        if home is None:
            return
        self._home.pop(ident, None)
        if self._at.get(home) == ident:
            del self._at[home]
        ids = self._by_module.get(home.partition(":")[0])
        if ids is not None:
            ids.discard(ident)

    def home_of(self, t: Tracked, name: str, value: Any) -> str | None:
        """Note that ``t``'s ``name`` binds ``value``: None where it is the object's home
        (described in full), else the home's key."""
        ident = id(value)
        if ident not in self._type_module:
            self._type_module[ident] = str(vars(type(value)).get("__module__") or "")
        names = self._names.setdefault(ident, {})
        names[(t.name, name)] = t
        key = f"{t.name}:{name}"
        if len(names) == 1 and self._home.get(ident) == key and self._binds(ident, t.name, name, t):
            return None  # its one name, its home already (what _choose would find, unchanged)
        home = self._choose(ident)
        return None if home is None or home == key else home

    def recheck(self, modules: list[Tracked]) -> None:
        """After ``modules`` were described again: the objects homed there whose home no
        longer binds them get another home (:meth:`take_moved` says which)."""
        for t in modules:
            for ident in list(self._by_module.get(t.name, ())):
                home = self._home.get(ident)
                if home is None:
                    continue
                module, _, name = home.partition(":")
                owner = self._names.get(ident, {}).get((module, name))
                if owner is None or not self._binds(ident, module, name, owner):
                    self._choose(ident)

    def take_moved(self) -> dict[Tracked, set[str]]:
        """The names (per module) of the objects whose home moved, to describe again."""
        out: dict[Tracked, set[str]] = {}
        for ident in self._moved:
            for (module, name), owner in (self._names.get(ident) or {}).items():
                if self._binds(ident, module, name, owner):
                    out.setdefault(owner, set()).add(name)
        self._moved.clear()
        return out

    def aliases(self, key: str) -> list[str]:
        """The other names that bind the object whose home is ``key`` (sorted)."""
        ident = self._at.get(key)
        if ident is None:
            return []
        return sorted(f"{module}:{name}"
                      for (module, name), owner in (self._names.get(ident) or {}).items()
                      if f"{module}:{name}" != key and self._binds(ident, module, name, owner))
