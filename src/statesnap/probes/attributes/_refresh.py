"""Describing a tracked module again: only the parts that moved, the namespace walked only
when a name may have been bound anew.

:func:`refresh` fills a :class:`~statesnap.probes.attributes.scan.Tracked` module's parts and
fingerprints (:mod:`.describe`), and the objects the watch reads (:mod:`._watch`).
"""

from __future__ import annotations

import gc
import types
from collections.abc import Collection, Mapping, Sequence
from itertools import compress
from operator import is_, is_not
from typing import Any

from statesnap.probes._dictwatch import class_dict
from statesnap.probes.attributes import describe as D
from statesnap.probes.attributes import kinds as K
from statesnap.probes.attributes import preview as P
from statesnap.probes.attributes._aliases import Homes, alias_text
from statesnap.probes.attributes._same import skips_hold
from statesnap.probes.attributes._shallow import Backoff, Memo, described, memo_for
from statesnap.probes.attributes._subclasswatch import has_subclasses, subclasses_dict
from statesnap.probes.attributes.scan import (
    CLASS_MACHINERY,
    CLASS_SUFFIX,
    MODULE_PART,
    SUBCLASSES,
    UNITTEST_MACHINERY,
    Part,
    Tracked,
    is_testcase,
    skip_name,
    skipped_by_name,
    subclasses_of,
)
from statesnap.probes.base import unreadable

_MISSING = object()


def refresh(t: Tracked, project: frozenset[str], redactor: Any, kinds: dict[str, str],
            only: Collection[str] | None = None, homes: Homes | None = None,
            moved: Mapping[tuple[Tracked, str], Sequence[Any]] | None = None) -> bool:
    """Describe module ``t`` again; return whether its fingerprints changed.

    ``only``: the parts whose watched objects moved (:attr:`Tracked.parts` keys, or
    :data:`MODULE_PART` for the namespace); the other parts whose name is still bound to the
    same object keep their last description.  None: the whole module.  ``moved``: per part,
    the watched objects that moved (where known).
    """
    if t.fresh and only is not None and MODULE_PART not in only:
        found = _redescribe(t, only, project, redactor, kinds, homes, moved)
        if found is not None:
            t.parts = found[0]
            return _replace_fps(t, found[1])
    if t.fresh and only is not None and len(only) == 1 and MODULE_PART in only:
        rebound = _rebound(t, project, redactor, kinds, homes)
        if rebound is not None:
            return _replace_fps(t, rebound)
    old = t.parts if t.fresh and only is not None else {}
    redo = frozenset(only or ())
    parts: dict[str, Part] = {}
    #: Parts described now, and the old parts they replace (None: a name bound anew).
    made: list[tuple[str, Part, Part | None]] = []
    seen: set[int] = set()
    items = list(t.ns.items())
    names: list[str] = []
    values: list[Any] = []
    skipped: list[str] = []
    skipped_values: list[Any] = []
    for name, value in items:
        kept = old.get(name)
        if kept is not None and kept.value is value and name not in redo:
            parts[name] = kept  # bound to the same object, nothing of it moved
        elif skip_name(name, value):
            if not skipped_by_name(name):
                skipped.append(name)
                skipped_values.append(value)
            continue
        else:
            parts[name] = _describe_attribute(t, name, value, project, redactor, kinds, homes)
            made.append((name, parts[name], kept))
        names.append(name)
        values.append(value)
        if not K.kind(value, type) or id(value) in seen:
            continue
        proxy = value.__dict__
        if proxy.get("__module__") != t.name:
            continue  # imported from elsewhere: described where it is defined
        seen.add(id(value))
        key = name + CLASS_SUFFIX
        kept = old.get(key)
        if kept is not None and kept.value is value and key not in redo:
            parts[key] = kept
        else:
            parts[key] = _describe_class(t, name, value, proxy, project, redactor, kinds)
            made.append((key, parts[key], kept))
    every_old_kept = old and len(parts) - sum(k is None for _, _, k in made) == len(old)
    t.parts = parts
    t.skipped = (tuple(skipped), tuple(skipped_values))
    # One tuple of names and one of objects, not a copy of the namespace: a tuple of strings
    # leaves the garbage collector's lists, and one tuple is one object for it to walk.
    t.bound = (frozenset(name for name, _ in items), tuple(names), tuple(values))
    if every_old_kept:
        return _replace_fps(t, made)
    fps = {}
    for part in parts.values():
        fps.update(part.fps)
    t.rewatch = True
    t.fresh = True
    changed = fps != t.fps
    t.fps = fps
    return changed


def _replace_fps(t: Tracked, made: Sequence[tuple[str, Part, Part | None]]) -> bool:
    """Every old part of ``t`` is still there or replaced by one of ``made``: only the
    replaced ones' keys change.  Whether the fingerprints changed."""
    fps = dict(t.fps)
    for _, _, kept in made:
        for key in kept.fps if kept is not None else ():
            fps.pop(key, None)
    for _, part, _ in made:
        fps.update(part.fps)
    # The watch is rebuilt when a re-described part watches other objects, unless they are
    # only lists replaced by equal copies (a reset's): those are swapped into it.
    for name, part, kept in made:
        if t.rewatch:
            break
        new, old = _part_objects(part), _part_objects(kept)
        if len(new) != len(old):
            t.rewatch = True
        elif any(map(is_not, new, old)):
            pairs = list(compress(zip(old, new, strict=True), map(is_not, new, old)))
            if all(_equal_list(a, b) for a, b in pairs):
                # Swapped where this part watches them only: another part may still watch
                # the old list (a module global the reset copied).
                t.swaps += tuple((name, a, b) for a, b in pairs)
            else:
                t.rewatch = True
    t.fresh = True
    changed = fps != t.fps
    t.fps = fps
    return changed


def _redescribe(t: Tracked, only: Collection[str], project: frozenset[str], redactor: Any,
                kinds: dict[str, str], homes: Homes | None = None,
                moved: Mapping[tuple[Tracked, str], Sequence[Any]] | None = None
                ) -> tuple[dict[str, Part], list[tuple[str, Part, Part]]] | None:
    """The parts in ``only`` described again, the namespace not walked: for a module whose
    namespace binds what it did (a class's dict or a container moved, not a name), where each
    part's name still binds the object it was described from.  None where one does not (the
    whole namespace is walked then).

    A subclass made in a test, a registry filled: one part of a module of hundreds of names.
    """
    ns = t.ns
    parts = dict(t.parts)  # the namespace's order kept
    made: list[tuple[str, Part, Part]] = []
    for key in only:
        kept = t.parts.get(key)
        if kept is None:
            return None
        if kept.cls is not None:
            name, cls, _ = kept.cls
            proxy = cls.__dict__
            if ns.get(name, _MISSING) is not cls or proxy.get("__module__") != t.name:
                return None
            part = _describe_class(t, name, cls, proxy, project, redactor, kinds)
        else:
            value = ns.get(key, _MISSING)
            if value is not kept.value or skip_name(key, value):
                return None
            objs = moved.get((t, key)) if moved is not None else None
            memo = memo_for(kept.memo, kept.containers, key, objs)
            part = _describe_attribute(t, key, value, project, redactor, kinds, homes, memo)
            if memo is None and isinstance(kept.memo, Backoff):
                part.memo = kept.memo.spent()  # one full description of those to wait
        parts[key] = part
        made.append((key, part, kept))
    return parts, made


def _rebound(t: Tracked, project: frozenset[str], redactor: Any,
             kinds: dict[str, str], homes: Homes | None = None
             ) -> list[tuple[str, Part, Part | None]] | None:
    """The parts of the names ``t``'s namespace binds anew, described again, the rest kept:
    for a namespace with the names it had when walked (a function patched in by a test and
    put back by monkeypatch: click's suite did a whole walk for each).  None where that
    cannot be told without the walk: a name added or removed, a name left out by what it
    bound, a class on either side of a rebinding (its own part and aliases come with it).
    """
    keys, names, values = t.bound
    ns = t.ns
    if ns.keys() != keys or not skips_hold(t):
        return None
    now = list(map(ns.get, names))
    changed = list(compress(range(len(names)), map(is_not, now, values)))
    parts = dict(t.parts)  # the namespace's order kept
    made: list[tuple[str, Part, Part | None]] = []
    for i in changed:
        name, value, old = names[i], now[i], values[i]
        kept = parts.get(name)
        if kept is None or K.kind(value, type) or K.kind(old, type):
            return None
        parts[name] = _describe_attribute(t, name, value, project, redactor, kinds, homes)
        made.append((name, parts[name], kept))
    t.parts = parts
    t.bound = (keys, names, tuple(now))
    return made


def _equal_list(old: Any, new: Any) -> bool:
    """A list replaced by a list of the same length holding the very same items: the watch
    reads the same length and item identities of either."""
    return (type(old) is list and type(new) is list and len(old) == len(new)
            and all(map(is_, old, new)))


def _part_objects(part: Part | None) -> list[Any]:
    """The objects a part has the watch read (none for a part that is not there)."""
    if part is None:
        return []
    return [*(part.cls[2:] if part.cls is not None else ()), *part.dicts, *part.seqs,
            *(d if d is not None else w for _, w, d in part.caches)]


def _describe_attribute(t: Tracked, name: str, value: Any, project: frozenset[str],
                        redactor: Any, kinds: dict[str, str], homes: Homes | None = None,
                        memo: tuple[Memo | Backoff | None] | None = None) -> Part:
    """``memo``: where the part is described again (one in a module that stays), the last
    description's :class:`Memo` where only its namespace moved, else None."""
    if homes is not None:
        alias = _alias(t, name, value, project, kinds, homes)
        if alias is not None:
            return alias
    part = Part(value=value)
    if not _entry(t, part, name, name, value, project, redactor, kinds, memo):
        return part  # unreadable: its one key says so, nothing more is asked of it
    try:
        ns = D.large_namespace(value, project) if type(value).__module__ == t.name else None
        if ns is not None:
            # Too many attributes to digest as one value: each keyed by itself, like a
            # class's, and the namespace's version tag moves the token when one is set.  Only
            # in the module of its class (a ``from pkg.mod import factory`` elsewhere binds
            # the same object: one key for one setting, as a class is described where it is
            # defined).
            for attr, member in list(ns.items()):
                if type(attr) is str and not skip_name(attr):
                    _entry(t, part, f"{name}.{attr}", attr, member, project, redactor, kinds)
            part.dicts += (ns,)
            part.inst = ns
        if (not K.kind(value, type) and K.is_cache(value)
                and getattr(value, "__module__", None) == t.name):
            _cache_entry(t, part, name, value, kinds)
    except Exception as exc:  # one hostile object costs its own keys, never the probe
        part = Part(value=value, fps={f"{t.name}:{name}": unreadable(exc)})
        kinds[f"{t.name}:{name}"] = "value"
    return part


def _alias(t: Tracked, name: str, value: Any, project: frozenset[str],
           kinds: dict[str, str], homes: Homes) -> Part | None:
    """The part of a name that binds an object described under another name (its home):
    one key pointing there, nothing watched.  None where this name is the home, or the value
    is no object the probe would watch (a scalar is a copy, a class or a module is described
    where it is defined)."""
    try:
        if K.kind(value, type) or K.kind(value, types.ModuleType):
            return None
        if not (K.is_container(value) or D.attribute_namespace(value, project) is not None
                or D.large_namespace(value, project) is not None):
            return None
        home = homes.home_of(t, name, value)
    except Exception:  # a hostile object: described (and its error said) as before
        return None
    if home is None:
        return None
    key = f"{t.name}:{name}"
    kinds[key] = "value"
    return Part(value=value, fps={key: alias_text(home, K.tag(value))})


def _describe_class(t: Tracked, name: str, cls: type, proxy: Mapping[str, Any],
                    project: frozenset[str], redactor: Any, kinds: dict[str, str]) -> Part:
    items = list(proxy.items())
    # A test case class keeps the items it was described from, for unittest's bookkeeping
    # (_same.same_bindings); others keep nothing more for every collection to walk.
    testcase = is_testcase(cls)
    part = Part(value=cls, cls=(name, cls, class_dict(cls) or proxy),
                seen=items if testcase else None)
    machinery = CLASS_MACHINERY | UNITTEST_MACHINERY if testcase else CLASS_MACHINERY
    for attr, member in items:
        if skip_name(attr, member) or attr in machinery:
            continue
        _entry(t, part, f"{name}.{attr}", attr, member, project, redactor, kinds)
        _cache_entry(t, part, f"{name}.{attr}", K.unwrap_descriptor(member), kinds)
    if has_subclasses(cls):
        # Only while it has some: a key per class of a thousand-class project would be noise.
        key = f"{t.name}:{name}.{SUBCLASSES}"
        part.fps[key] = P.subclasses(subclasses_of(cls))
        kinds[key] = "subclasses"
        owned = subclasses_dict(cls)
        if owned is not None:
            # Its version tag moves as subclasses come and go (the watch reads the slot
            # itself for the first one and the last).
            part.dicts += (owned,)
    return part


def _entry(t: Tracked, part: Part, path: str, attr: str, value: Any,
           project: frozenset[str], redactor: Any, kinds: dict[str, str],
           memo: tuple[Memo | Backoff | None] | None = None) -> bool:
    """Describe one key into ``part``; False where its value could not be read (a hostile
    ``__len__``, ``items()``, ``__eq__``...): the key's fingerprint then says so, and the
    probe goes on with the others.  ``memo``: see :func:`_describe_attribute`."""
    key = f"{t.name}:{path}"
    watched: list[Any] = []
    try:
        below: list[Any] = []
        found = None if memo is None else described(memo[0], part, value, project, attr, below)
        if found is not None:
            text, part.memo = found
            data = True
        else:
            text, data = D.describe(value, project, name=attr, walked=below)
        if K.is_container(value):
            watched.append(value)
        else:
            ns = D.attribute_namespace(value, project)
            if ns is not None:
                watched.append(ns)
        if watched:
            # Nested containers and project objects' namespaces, to DEPTH levels (see
            # reachable): an in-place change deep inside moves the token too; a cache's one.
            # The object's own cache tables too (its fingerprint's cache~ part): a fill of
            # one is a change (LOW), and a key-level restore puts its contents back.  What
            # describing walked is exactly that (D.describe: one walk, not two).
            watched += below
            if " cache~" in text:  # it has cache parts (most objects have none: no scan)
                watched += D.cache_tables(watched[0])
        fp = redactor(attr, text) if data and redactor is not None else text
    except Exception as exc:
        part.fps[key] = unreadable(exc)
        kinds[key] = "value"
        return False
    part.fps[key] = fp
    kinds[key] = ("value" if not watched else
                  "container" if K.is_container(value) else "namespace")
    if watched:
        part.containers = {**(part.containers or {}), path: watched}
        part.dicts += tuple(c for c in watched if isinstance(c, dict))
        part.seqs += tuple(c for c in watched if not isinstance(c, dict))
    return True


def _cache_entry(t: Tracked, part: Part, path: str, func: Any,
                 kinds: dict[str, str]) -> None:
    if not K.is_cache(func):
        return
    key = f"{t.name}:{path}#cache"
    try:
        info = func.cache_info()
        size = int(info.currsize)
    except Exception:  # not the cache_info we know: leave it out rather than guess
        return
    part.fps[key] = f"currsize={size} maxsize={info.maxsize}"
    kinds[key] = "cache"
    part.caches += ((key, func, _cache_dict(func, size)),)


def _cache_dict(wrapper: Any, currsize: int) -> dict[Any, Any] | None:
    """The internal dict of a C ``lru_cache`` wrapper, so its fill level is a plain ``len``.

    The wrapper's gc traversal visits its cache dict (and, for a bounded cache, every cached
    key and result); the one dict whose length is the reported ``currsize`` and that is not
    the wrapper's ``__dict__`` is it.  Ambiguous (a cached function returning dicts of that
    size): no shortcut, the token calls ``cache_info()`` instead.
    """
    if type(wrapper) is not K.LRU_TYPE:
        return None
    own = getattr(wrapper, "__dict__", None)
    found = [r for r in gc.get_referents(wrapper)
             if type(r) is dict and r is not own and len(r) == currsize]
    return found[0] if len(found) == 1 else None
