"""``attributes``: module-level state of the project's own modules.

Keys ``pkg.mod:NAME``, ``pkg.mod:Class.attr`` and ``pkg.mod:func#cache``, fingerprints from
:mod:`statesnap.probes.attributes.describe`; nothing is imported or read through ``getattr``.  Which
modules, the keys and the token's cost: docs/PROBES.md.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Collection
from itertools import compress
from operator import attrgetter, ne, not_
from typing import Any

from statesnap.base.deltamap import DeltaMap
from statesnap.probes._dictwatch import probe_support, version_reader
from statesnap.probes.attributes import describe as D
from statesnap.probes.attributes import kinds as K
from statesnap.probes.attributes._aliases import Homes
from statesnap.probes.attributes._fingerprints import (
    cache_filled,
    cache_replaced,
    lazily_initialised,
    memo_filled,
    recorded_kind,
    same_content,
)
from statesnap.probes.attributes._projectmods import ProjectModules
from statesnap.probes.attributes._refresh import refresh
from statesnap.probes.attributes._same import same_bindings
from statesnap.probes.attributes._splitwatch import SplitWatch, watch_after
from statesnap.probes.attributes._watch import Watch
from statesnap.probes.attributes.scan import (
    MODULE_PART,
    SUBCLASSES,
    Tracked,
    module_namespace,
)
from statesnap.probes.base import Probe, ProbeContext, ProbeMap, Severity


def _lazy_import(key: str, after: Any) -> bool:
    """A global set aside as ``None`` and bound on first use by ``global name; from pkg import
    name`` (dateutil.rrule's ``easter`` and ``parser``): the module registered under that
    name in ``sys.modules`` (its identity tag), whose last part is the attribute's name.  A
    later test finds the same module either way; a stub (not in ``sys.modules``, or under
    another name) keeps its severity."""
    if not (isinstance(after, str) and after.startswith("module ")):
        return False
    name, _, mark = after.removeprefix("module ").partition(" ")
    module = sys.modules.get(name)
    attribute = key.partition(":")[2].rpartition(".")[2]
    return module is not None and name.rpartition(".")[2] == attribute and mark == K.tag(module)


_FRESH = attrgetter("fresh")

#: Attribute names of a lazily made singleton (``_default_instance``, ``_INSTANCE``).
_SINGLETON_WORDS = ("instance", "singleton", "default")


def _lazy_singleton(key: str, after: Any) -> bool:
    """A module global left unset or ``None`` until first use, then bound to an instance
    (``_default_instance = Cls()``, once per session), by its name: a later change of what
    it holds is a change of its own key (or of the instance's), rated as any other; only
    its creation is LOW.  An object's fingerprint only (``<Type ...> #tag``): a container,
    a scalar, a class or a function keeps its severity."""
    if not (isinstance(after, str) and after.startswith("<")):
        return False
    path = key.partition(":")[2]
    if not path or "." in path or "#" in path:
        return False  # a module global only (not a class attribute, a cache, subclasses)
    name = path.lower()
    return any(w in name for w in _SINGLETON_WORDS) and " len=" not in after


def _live_kind(module: str, path: str) -> str:
    """The kind of a key's current value, for a probe that never read it (a replay, the CLI)."""
    if path.endswith("#cache"):
        return "cache"
    if path.endswith("." + SUBCLASSES):
        return "subclasses"
    found = sys.modules.get(module)
    if not isinstance(found, types.ModuleType):
        return "value"
    name, _, attr = path.partition(".")
    value = module_namespace(found).get(name)
    if attr:
        owner = value if K.kind(value, type) else D.large_namespace(value, frozenset({module}))
        value = None if owner is None else vars(owner).get(attr) if K.kind(owner, type) \
            else owner.get(attr)
    if K.is_container(value):
        return "container"
    if D.attribute_namespace(value, frozenset({module})) is not None:
        return "namespace"
    return "value"


class AttributesProbe(Probe):
    """Module attributes, class attributes and function caches of the project's modules."""

    name = "attributes"
    severity = Severity.HIGH
    restorable = True

    def __init__(self) -> None:
        self._project = ProjectModules()
        self._redactor: Any = None
        self._nmods = -1
        self._modules_dict: dict[str, Any] = sys.modules
        self._modules_tag: Any = None
        self._last_modules_tag: object = None
        self._mods: list[Tracked] = []
        self._by_name: dict[str, Tracked] = {}
        self._watch: Watch | SplitWatch = Watch([])
        self._map: DeltaMap = DeltaMap.start({})
        #: The set of tracked modules changed: the map must be gathered again.
        self._regather = False
        #: Last known kind of each key ("container", "cache", "value"), for hints.
        self._kinds: dict[str, str] = {}
        #: Per module name: the module object, and whether its code names __subclasses__.
        self._subclass_readers: dict[str, tuple[types.ModuleType, bool]] = {}
        #: Which name of an object bound under several is described (``_aliases``).
        self._homes = Homes()

    def setup(self, ctx: ProbeContext) -> None:
        root = os.path.abspath(str(ctx.rootdir))
        self._project.setup(tuple(dict.fromkeys((root, os.path.realpath(root)))),
                            tuple(p for p in ctx.packages if p))
        self._redactor = ctx.redactor
        self._nmods = -1
        # sys.modules' version tag moves on every insertion, removal and replacement: a module
        # popped and imported again (a fresh object, same count) is rescanned too.
        self._modules_dict = sys.modules
        self._modules_tag = version_reader([sys.modules]) if probe_support() else None
        self._last_modules_tag = None

    def _modules_moved(self) -> bool:
        tag = self._modules_tag
        if tag is not None and sys.modules is self._modules_dict:
            return bool(tag() != self._last_modules_tag)
        return len(sys.modules) != self._nmods

    def _rescan(self) -> None:
        if self._modules_tag is not None:
            self._last_modules_tag = self._modules_tag()
        items = list(sys.modules.items())  # a copy: another thread may import meanwhile
        self._nmods = len(items)
        project = self._project
        decisions = project.decisions
        # The first scan decides every module at once and gives the project's; a later one
        # (after an import, during the tests) finds all but the new ones decided: this loop
        # is inline, as cheap as it can be.
        pairs = project.first_scan(items) if not decisions else items
        mods: list[Tracked] = []
        for name, module in pairs:
            known = decisions.get(name)
            if known is None or known[0] != id(module):
                try:
                    known = (id(module), project.is_project(name, module))
                except Exception:  # sys.modules[42] = module: no project module of ours
                    known = (id(module), False)
                decisions[name] = known
            if not known[1]:
                continue
            assert isinstance(module, types.ModuleType)
            t = self._by_name.get(name)
            if t is None or t.module is not module:
                t = Tracked(name, module, module_namespace(module))
            mods.append(t)
        if len(mods) == len(self._mods) and not any(map(ne, mods, self._mods)):
            # sys.modules moved, not the project's modules (most imports during a run): the
            # watch reads the same objects.
            return
        self._regather = True
        self._mods = mods
        self._by_name = {t.name: t for t in mods}
        self._homes.live = self._by_name
        self._homes.order = {t.name: i for i, t in enumerate(mods)}
        self._watch = Watch(mods, previous=self._watch)

    # -- tokens ----------------------------------------------------------------------------
    def token(self) -> object:
        if self._modules_moved():
            self._rescan()
        return self._watch.token()

    def light_token(self) -> object:
        # Every dict's version tag (rebinding, class attributes, dict containers, namespaces)
        # and the total lengths of sequences and caches, so what a wide-scoped fixture changes
        # is attributed to it; a same-length change of a list is found by token() at the
        # test's end, without the phase it happened in.
        return len(sys.modules), self._watch.light()

    # -- reading ---------------------------------------------------------------------------
    def read(self) -> ProbeMap:
        if self._modules_moved():
            self._rescan()
        watch = self._watch
        now = watch.readings()
        # Each module once, in order, with the parts that moved (None: all of it).
        dirty: dict[Tracked, set[str] | None] = dict.fromkeys(
            compress(self._mods, map(not_, map(_FRESH, self._mods))))
        moved: dict[tuple[Tracked, str], list[Any]] = {}
        for owner, obj in watch.dirty(now):
            moved.setdefault(owner, []).append(obj)
        rewatch = False
        for (t, part), objs in moved.items():
            if t in dirty and dirty[t] is None:
                continue  # described whole anyway
            if same_bindings(t, part, objs):
                # Its namespace was written to, but binds what it did; written to that way
                # again and again, it is watched by its bindings from now on.
                rewatch |= part == MODULE_PART and t.rewritten()
                continue
            parts = dirty.setdefault(t, set())
            assert parts is not None
            parts.add(part)
        regather, self._regather = self._regather or not self._map, False
        names = frozenset(self._by_name)
        renew = False
        #: Modules whose fingerprints changed, each with the ones it had.
        changed: list[tuple[Tracked, dict[str, str]]] = []
        homes = self._homes
        for _ in range(3):  # a home that moved has its names described again, once or twice
            for t, only in dirty.items():
                fps = t.fps  # refresh binds a new dict
                if refresh(t, names, self._redactor, self._kinds, only, homes, moved):
                    changed.append((t, fps))
                rewatch |= t.rewatch
                renew |= t.by_bindings
            homes.recheck(list(dirty))
            again = homes.take_moved()
            if not again:
                break
            dirty = {t: set(parts) for t, parts in again.items()}
        if renew:
            watch.bindings.renew()
        watch, now = watch_after(self._mods, watch, now, rewatch)
        self._watch = watch
        # Describing only reads, so what was read before it still holds.
        watch.remember(now)
        if regather:
            out: ProbeMap = {}
            for t in self._mods:
                # The module's own key: diffs tell an attribute added to a module watched
                # before from one of a module that just appeared (see diff.OWNED_KEYS).
                out[f"{t.name}:"] = "module"
                out.update(t.fps)
            if out != self._map:
                self._map = DeltaMap.start(out)
        elif changed:
            # The same modules: only the changed ones' keys (a copy: maps are never changed
            # once handed out), noted as the keys a diff compares (base.deltamap).  A key
            # added lands at the end, not beside its module's: nothing reads a map in order.
            removed: list[str] = []
            updated: dict[str, Any] = {}
            for t, before in changed:
                removed += before.keys() - t.fps.keys()
                updated.update(t.fps)
            self._map = self._map.derive(removed, updated)
        return self._map

    def aliases(self, key: str) -> list[str]:
        return self._homes.aliases(key)

    def severity_of(self, key: str, before: Any, after: Any) -> Severity:
        if key.endswith("#cache"):
            # A function cache filling: a later call would compute the same, unless the test
            # patched what it computes from (the tracker raises it then: is_memo).
            return Severity.LOW
        if key.endswith("." + SUBCLASSES):
            # A subclass defined in a test lives until the next collection: a leak only
            # where some code looks at classes' subclasses.
            return Severity.MEDIUM if self._subclasses_read() else Severity.LOW
        if before is None and isinstance(after, str) and after.startswith("module "):
            return Severity.LOW  # a submodule imported and bound on its package
        if before == "None" and _lazy_import(key, after):
            return Severity.LOW
        if before in (None, "None") and _lazy_singleton(key, after):
            return Severity.LOW
        # Pure tests of the two texts, any of which makes it LOW: the commonest first (an
        # autouse fixture putting equal contents back in new containers, structlog's reset
        # before every test), which is also one regex, where the others parse the preview.
        if (same_content(before, after) or cache_filled(key, before, after)
                or cache_replaced(key, before, after) or memo_filled(before, after)
                or lazily_initialised(before, after)):
            return Severity.LOW
        return self.severity

    def _subclasses_read(self) -> bool:
        """Whether any watched module's functions or methods name ``__subclasses__``."""
        # Imported on the first subclass change (statesnap's modules are never a test's).
        from statesnap.probes.attributes._subclassreaders import names_subclasses

        found = False
        for t in self._mods:
            known = self._subclass_readers.get(t.name)
            if known is None or known[0] is not t.module:
                known = (t.module, names_subclasses(t.name, t.ns))
                self._subclass_readers[t.name] = known
            found = found or known[1]
        return found

    def is_memo(self, key: str) -> bool:
        return key.endswith("#cache")

    def feeds_memos(self, key: str) -> bool:
        # Module globals and class attributes; not caches, subclasses or a module's own key.
        return not (key.endswith(("#cache", "." + SUBCLASSES, ":")))

    def hint(self, key: str, change: str) -> str | None:
        module, _, path = key.partition(":")
        return self._hint(key, change, self._kinds.get(key) or _live_kind(module, path))

    def hint_of(self, key: str, change: str, before: Any, after: Any) -> str | None:
        # The record says best how the value changed: a list filled in place needs its
        # contents put back (setattr of the same object would keep them), and a process that
        # never read the key (the hunt, the CLI) would take it for a plain value.
        kind = "filled" if cache_filled(key, before, after) else recorded_kind(before, after)
        if kind is None:
            return self.hint(key, change)
        return self._hint(key, change, kind)

    def _hint(self, key: str, change: str, kind: str) -> str | None:
        module, _, path = key.partition(":")
        if kind == "cache" or path.endswith("#cache"):
            func = path.removesuffix("#cache")
            return (f"clear the cache in a fixture ({func}.cache_clear()) so results computed "
                    "under patched state do not outlive the test")
        owner, _, attr = path.rpartition(".")
        owner = f"{module}.{owner}" if owner else module
        attr = attr or path
        if kind == "subclasses" or attr == SUBCLASSES:
            return (f"a subclass of {owner} defined inside a test stays among "
                    f"{owner}.__subclasses__() until it is garbage-collected: define it at "
                    "module level (once), or have the base class keep a registry that a "
                    "fixture resets")
        if kind == "filled":
            # A cache (or an object's cache parts) filled: the next test gets this one's answers.
            return (f"clear the cache of {owner}.{attr} in a fixture (what one test put there "
                    f"is what the next one gets), or give each test a fresh one with "
                    f"monkeypatch.setattr({owner}, {attr!r}, ...)")
        if kind == "container" and change == "changed":
            return (f"copy the module-level list/dict before changing it (monkeypatch.setattr("
                    f"{owner}, {attr!r}, a copy)) or restore {attr} in a fixture")
        if kind == "namespace" and change == "changed":
            # Its attributes were set, or what they hold was filled in place.  The object by
            # its dotted path: a bare ``_CURRENT`` is no name in the user's test module.
            return (f"change {owner}.{attr} only through monkeypatch (monkeypatch.setattr("
                    f"{owner}.{attr}, 'name', ...)), or give each test a fresh one with "
                    f"monkeypatch.setattr({owner}, {attr!r}, ...) when code fills it in place")
        if change == "added":
            return (f"set {attr} with monkeypatch.setattr({owner}, {attr!r}, ..., "
                    "raising=False) so it is removed after the test")
        if change == "removed":
            return f"delete {attr} with monkeypatch.delattr({owner}, {attr!r}) so it comes back"
        return (f"patch {attr} with monkeypatch.setattr({owner}, {attr!r}, ...) so the "
                "original is put back after the test")

    # -- restoring -------------------------------------------------------------------------
    def save(self) -> object:
        self.read()  # every module described, so every container is known
        return {t.name: t.save() for t in self._mods}

    def restore(self, saved: object, keys: Collection[str]) -> list[str]:
        assert isinstance(saved, dict)
        done: list[str] = []
        for key in keys:
            module, _, path = key.partition(":")
            entry = saved.get(module)
            if entry is not None and entry.restore(path):
                done.append(key)
        return done

    def close(self) -> None:
        # The watch holds the project's containers and namespaces (to read their version tags
        # and items): kept past the session, they outlive their modules at interpreter exit,
        # where an unclosed file inside one (structlog's WRITE_LOCKS) then warns on stderr
        # after pytest's summary, which plain pytest never shows.
        self._watch = Watch([])
        self._mods = []
        self._by_name = {}
        self._subclass_readers = {}
        self._homes = Homes()
        self._nmods = -1
