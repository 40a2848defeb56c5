"""statesnap's plugins list only their pytest hooks to ``dir()``: objects (:class:`HookPlugin`)
and modules (:func:`module_dir`).

pytest parses every name that ``dir()`` gives of each registered plugin, looking for fixtures
(about 20 us a name: the class's dict along its MRO, then ``inspect.unwrap`` and two failed
attribute reads), and pluggy reads every name for hooks.  An object's ``dir()`` also holds
the two dozen names every object has, and its other methods and attributes: with a few plugin
objects per session, about 10 M instructions of issue 13's fixed cost.  Hooks are the names
that start with ``pytest_`` (pytest ignores any other name when it looks for them), and these
objects define no fixtures, so pytest and pluggy find all they did before.  The feature modules
registered as plugins are the same case: each lists its imports, helpers and classes (30 to 45
names) where pytest and pluggy need its two or three hooks, about 10 M instructions more.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

__all__ = ["HookPlugin", "module_dir"]


#: Each plugin class's hook names, found once.
_HOOKS: dict[type, list[str]] = {}


class HookPlugin:
    """Mixin: ``dir(obj)`` is the sorted names of its class's ``pytest_*`` attributes."""

    __slots__ = ()

    def __dir__(self) -> list[str]:
        cls = type(self)
        names = _HOOKS.get(cls)
        if names is None:
            names = _HOOKS[cls] = sorted({name for klass in cls.__mro__ for name in vars(klass)
                                          if name.startswith("pytest_")})
        return list(names)


def module_dir(namespace: Mapping[str, object]) -> Callable[[], list[str]]:
    """A module's ``__dir__`` (PEP 562): its ``pytest_*`` hooks and the names in its
    ``__all__``, read from ``namespace`` (the module's ``globals()``) at each call.

    For modules pytest registers as plugins; they define no fixtures (a fixture not listed
    here would not be found).
    """

    def __dir__() -> list[str]:
        public = namespace.get("__all__", ())
        names = {n for n in namespace if n.startswith("pytest_")}
        names.update(public if isinstance(public, (list, tuple)) else ())
        return sorted(names)

    return __dir__
