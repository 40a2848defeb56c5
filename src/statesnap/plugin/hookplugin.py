"""A base for statesnap's plugin objects: ``dir()`` of one lists its pytest hooks only.

pytest parses every name that ``dir()`` gives of each registered plugin, looking for fixtures
(about 20 us a name: the class's dict along its MRO, then ``inspect.unwrap`` and two failed
attribute reads), and pluggy reads every name for hooks.  An object's ``dir()`` also holds
the two dozen names every object has, and its other methods and attributes: with a few plugin
objects per session, about 10 M instructions of issue 13's fixed cost.  Hooks are the names
that start with ``pytest_`` (pytest ignores any other name when it looks for them), and these
objects define no fixtures, so pytest and pluggy find all they did before.
"""

from __future__ import annotations

__all__ = ["HookPlugin"]


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
