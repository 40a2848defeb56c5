"""``syspath``: ``sys.path``, ``sys.meta_path`` and ``sys.path_hooks``.

Keys are ``path[i]``-free on purpose: an entry is keyed by its text (``sys.path:/x``) with its
position as the fingerprint, so inserting one entry reports one change, not a shifted list.
The list objects themselves are compared by identity too (``sys.path = [...]``).
"""

from __future__ import annotations

import sys
from collections.abc import Collection
from typing import Any

from statesnap.probes.base import Probe, ProbeMap, Severity


def _name(obj: object) -> str:
    if issubclass(type(obj), type):  # not isinstance: it asks obj.__class__
        return f"{obj.__module__}.{obj.__qualname__}"  # type: ignore[attr-defined]
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__} instance"


def _hook_name(hook: object) -> str:
    try:
        name = getattr(hook, "__qualname__", None)
    except Exception:  # a __getattr__ that raises what getattr does not catch
        name = None
    return name if type(name) is str else _name(hook)


def _entry_text(entry: object) -> str:
    """A ``sys.path`` entry as text: itself, or what its ``__str__`` gives; an entry whose
    ``__str__`` raises is named by its type and identity (one odd entry, one odd key)."""
    try:
        return f"{entry}"
    except Exception:
        t = type(entry)
        return f"<{t.__module__}.{t.__qualname__} #{id(entry) & 0xFFFFFF:06x}: unreadable>"


class SysPathProbe(Probe):
    name = "syspath"
    severity = Severity.HIGH
    restorable = True

    def setup(self, ctx: Any) -> None:
        self._ids = (id(sys.path), id(sys.meta_path), id(sys.path_hooks))

    def token(self) -> object:
        return (
            id(sys.path),
            tuple(sys.path),
            id(sys.meta_path),
            tuple(map(id, sys.meta_path)),
            id(sys.path_hooks),
            tuple(map(id, sys.path_hooks)),
        )

    def read(self) -> ProbeMap:
        out: ProbeMap = {}
        # An entry's fingerprint is the entry before it, not its index: inserting one entry
        # at the front then changes two keys, not every later one.
        prev = "<start>"
        for entry in sys.path:
            text = entry if type(entry) is str else _entry_text(entry)
            key = f"sys.path:{text}"
            place = f"after {prev}"
            out[key] = f"{out[key]}; {place}" if key in out else place
            prev = text
        for i, finder in enumerate(sys.meta_path):
            out[f"sys.meta_path:{_name(finder)}"] = f"at {i}"
        for i, hook in enumerate(sys.path_hooks):
            out[f"sys.path_hooks:{_hook_name(hook)}"] = f"at {i}"
        names = ("sys.path", "sys.meta_path", "sys.path_hooks")
        objs = (sys.path, sys.meta_path, sys.path_hooks)
        for name, obj, orig in zip(names, objs, self._ids, strict=True):
            if id(obj) != orig:
                out[f"<{name} object>"] = "replaced"
        return out

    def feeds_memos(self, key: str) -> bool:
        # A cached function importing from a path keeps what it found there.
        return True

    def hint(self, key: str, change: str) -> str | None:
        return "change sys.path with monkeypatch.syspath_prepend(...) or restore a copy afterwards"

    def save(self) -> object:
        return (sys.path, list(sys.path), sys.meta_path, list(sys.meta_path),
                sys.path_hooks, list(sys.path_hooks))

    def restore(self, saved: object, keys: Collection[str]) -> list[str]:
        assert isinstance(saved, tuple)
        path_obj, path, meta_obj, meta, hooks_obj, hooks = saved
        done: list[str] = []
        wanted = list(keys)
        if any(k.startswith(("sys.path:", "<sys.path ")) for k in wanted):
            sys.path = path_obj
            sys.path[:] = path
            done += [k for k in wanted if k.startswith(("sys.path:", "<sys.path "))]
        if any(k.startswith(("sys.meta_path:", "<sys.meta_path")) for k in wanted):
            sys.meta_path = meta_obj
            sys.meta_path[:] = meta
            done += [k for k in wanted if k.startswith(("sys.meta_path:", "<sys.meta_path"))]
        if any(k.startswith(("sys.path_hooks:", "<sys.path_hooks")) for k in wanted):
            sys.path_hooks = hooks_obj
            sys.path_hooks[:] = hooks
            sys.path_importer_cache.clear()
            done += [k for k in wanted if k.startswith(("sys.path_hooks:", "<sys.path_hooks"))]
        return done
