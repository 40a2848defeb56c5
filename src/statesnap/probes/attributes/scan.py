"""The ``attributes`` probe's bookkeeping: tracked modules, what is watched in them, restoring.

A :class:`Tracked` module is described by :func:`refresh` (fingerprints, plus the objects whose
changes must move the token: class dicts, containers, caches); :mod:`._watch` turns those
into the token.
"""

from __future__ import annotations

import collections
import gc
import os
import sys
import types
import weakref
from collections.abc import Mapping
from typing import Any

from statesnap.base.plain import Plain, Value
from statesnap.probes.attributes import kinds as K

#: Module attributes that pytest's assertion rewriting adds to every test module.
PYTEST_NAMES = frozenset({"@py_builtins", "@pytest_ar"})
#: Class attributes that are interpreter machinery rather than state.
CLASS_MACHINERY = frozenset({"_abc_impl"})
#: What unittest writes on a ``TestCase`` subclass for itself: ``doClassCleanups`` (which
#: pytest calls after ``tearDownClass``) sets ``tearDown_exceptions = []`` on the class, and
#: unittest's own runner sets ``_classSetupFailed``.  Bookkeeping of the framework, never a
#: test's leak, a key or a hint.
UNITTEST_MACHINERY = frozenset({"tearDown_exceptions", "_classSetupFailed", "_class_cleanups"})


def is_testcase(cls: type) -> bool:
    """Whether ``cls`` is a ``unittest.TestCase`` subclass (unittest is never imported here)."""
    case = sys.modules.get("unittest.case")
    base = module_namespace(case).get("TestCase") if isinstance(case, types.ModuleType) else None
    return isinstance(base, type) and base in type.__dict__["__mro__"].__get__(cls)


def class_skip(cls: type) -> frozenset[str]:
    """Class attribute names that are a framework's bookkeeping on ``cls``, not state."""
    return CLASS_MACHINERY | UNITTEST_MACHINERY if is_testcase(cls) else CLASS_MACHINERY
_MISSING = object()
#: ``module.__dict__`` without attribute lookup (a LazyLoader module loads on any access).
_MODULE_DICT: Any = vars(types.ModuleType)["__dict__"]


def module_namespace(module: types.ModuleType) -> dict[str, Any]:
    """A module's namespace dict, read through the descriptor rather than ``getattr``."""
    ns = _MODULE_DICT.__get__(module)
    assert isinstance(ns, dict)
    return ns


#: Dunder names Python, its standard library and pytest set on modules and classes for
#: themselves (``copyreg`` caches ``__slotnames__`` on a class the first time an instance is
#: copied): never a test's state.
PYTHON_DUNDERS = frozenset({
    "__name__", "__doc__", "__package__", "__loader__", "__spec__", "__path__", "__file__",
    "__cached__", "__builtins__", "__annotations__", "__annotate__", "__annotate_func__",
    "__annotations_cache__", "__conditional_annotations__", "__all__", "__warningregistry__",
    "__version__", "__author__", "__email__", "__license__", "__copyright__", "__credits__",
    "__status__", "__maintainer__", "__module__", "__qualname__", "__dict__", "__weakref__",
    "__slots__", "__slotnames__", "__orig_bases__", "__orig_class__", "__parameters__",
    "__type_params__", "__firstlineno__", "__static_attributes__", "__classcell__",
    "__classdictcell__", "__abstractmethods__", "__match_args__", "__hash__", "__test__",
    "__signature__", "__text_signature__", "__wrapped__", "__isabstractmethod__",
    "__deprecated__", "__final__", "__total__", "__required_keys__", "__optional_keys__",
    "__readonly_keys__", "__mutable_keys__", "__protocol_attrs__",
    "__non_callable_proto_members__", "__callable_proto_members_only__", "__members__",
    "__bases__", "__mro__", "__base__", "__basicsize__", "__class__", "__objclass__",
})
#: Prefixes of the dunders libraries keep on the classes they build (dataclasses, attrs,
#: pydantic, SQLAlchemy, pytest's own), some of them filled lazily on first use.
LIBRARY_DUNDERS = ("__dataclass_", "__attrs_", "__pydantic_", "__pytest", "__sqlalchemy_",
                   "__mapper", "__table", "__get_pydantic_", "__typing_")
_DESCRIPTORS = (classmethod, staticmethod, property, types.MemberDescriptorType,
                types.GetSetDescriptorType)


def skip_name(name: str, value: Any = None) -> bool:
    """Python's own dunders (``__doc__``, ``__dict__``, ``__warningregistry__``...), special
    methods and pytest's own names.

    A dunder-named attribute of the project's own making (``__initialised__ = False``, which
    a ``__new__`` flips to True on the base class, so that every later subclass skips its
    checks) is state like any other name: watched.
    """
    try:
        if name.startswith("__") and name.endswith("__"):
            return (name in PYTHON_DUNDERS or name.startswith(LIBRARY_DUNDERS)
                    or callable(value) or issubclass(type(value), _DESCRIPTORS))
        # pytest's xunit fixtures, name-mangled: _Module__pytest_setup_module, _Class__...
        return name in PYTEST_NAMES or "__pytest_" in name
    except Exception:  # a name that is no string (globals()[42] = ...): no attribute
        return True


def skipped_by_name(name: str) -> bool:
    """Whether :func:`skip_name` leaves ``name`` out whatever it is bound to."""
    try:
        if name.startswith("__") and name.endswith("__"):
            return name in PYTHON_DUNDERS or name.startswith(LIBRARY_DUNDERS)
        return name in PYTEST_NAMES or "__pytest_" in name
    except Exception:  # a name that is no string: left out, as skip_name leaves it
        return True


def _prefixes() -> list[str]:
    names = ("prefix", "exec_prefix", "base_prefix", "base_exec_prefix")
    return sorted({os.path.abspath(getattr(sys, n)) for n in names if getattr(sys, n, None)})


def is_normal_path(file: str) -> bool:
    """Whether ``file`` is an absolute POSIX path that ``os.path.normpath`` returns unchanged
    (no ``.``, ``..`` or empty part, no trailing slash)."""
    return (os.sep == "/" and file[:1] == "/" and "//" not in file and "/./" not in file
            and "/../" not in file and not file.endswith(("/", "/.", "/..")))


def is_project_file(file: str, roots: tuple[str, ...], venv_dirs: dict[str, bool]) -> bool:
    """Whether ``file`` is the project's own: under a root, outside any virtual environment."""
    path = os.path.normpath(file) if os.path.isabs(file) else os.path.abspath(file)
    root = next((r for r in roots if path.startswith(r.rstrip(os.sep) + os.sep)), None)
    if root is None:
        return False
    parts = path[len(root.rstrip(os.sep)) + 1:].split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return False
    for prefix in _prefixes():
        # A venv inside the project (./.venv); never a prefix that contains the project.
        inside = root == prefix or root.startswith(prefix.rstrip(os.sep) + os.sep)
        if not inside and path.startswith(prefix.rstrip(os.sep) + os.sep):
            return False
    directory = root
    for part in parts[:-1]:
        directory = os.path.join(directory, part)
        is_venv = venv_dirs.get(directory)
        if is_venv is None:
            is_venv = venv_dirs[directory] = os.path.isfile(os.path.join(directory, "pyvenv.cfg"))
        if is_venv:
            return False
    return True


def _copy(container: Any) -> Any:
    return dict(container) if isinstance(container, dict) else list(container)


def _put_back(container: Any, saved: Any) -> None:
    """Put a container's saved contents back in place, keeping its identity."""
    if isinstance(container, list):
        container[:] = saved
    elif isinstance(container, collections.deque):
        container.clear()
        container.extend(saved)
    elif isinstance(container, dict | set):
        container.clear()
        container.update(saved)


#: The key suffix of a class's live subclasses (``pkg.mod:Class.__subclasses__``).
SUBCLASSES = "__subclasses__"


#: The owner of a module's namespace dict itself (a name bound, rebound or deleted); every
#: other part is one module attribute (by name) or one class defined there (name + ``.``).
MODULE_PART = ""
CLASS_SUFFIX = "."


class Part(Plain):
    """What one part of a module (one attribute, or one class) was described as.

    A change re-describes only the parts whose objects moved and the names bound anew: a
    unittest class teardown sets an attribute on its class, click's test runner swaps and puts
    back a few module functions, and a module of hundreds of attributes and classes would
    otherwise be described whole after each.  Most parts watch nothing (functions, scalars):
    their object lists stay the shared empty tuple, so a test module of a thousand functions
    costs a thousand small objects, not five thousand.
    """

    _fields = ("value", "fps", "cls", "dicts", "seqs", "caches", "containers", "inst", "seen",
               "memo")
    __slots__ = _fields

    def __init__(self, value: Any = None, fps: dict[str, str] | None = None,
                 cls: tuple[str, type, Mapping[str, Any]] | None = None,
                 dicts: tuple[dict[Any, Any], ...] = (), seqs: tuple[Any, ...] = (),
                 caches: tuple[tuple[str, Any, dict[Any, Any] | None], ...] = (),
                 containers: dict[str, list[Any]] | None = None,
                 inst: dict[str, Any] | None = None,
                 seen: list[tuple[str, Any]] | None = None) -> None:
        #: The object described: the attribute's value, or the class.
        self.value = value
        self.fps: dict[str, str] = {} if fps is None else fps
        #: ``(NAME, class, real class dict or its proxy)`` for a class part.
        self.cls = cls
        self.dicts = dicts
        self.seqs = seqs
        #: ``(key, wrapper, internal dict or None)``
        self.caches = caches
        #: ``path -> containers`` (the attribute's own and nested ones), for save/restore.
        self.containers = containers
        #: The namespace of a large project object whose attributes are keyed one by one
        #: (:func:`~statesnap.probes.attributes.describe.large_namespace`), for save/restore.
        self.inst = inst
        #: For a test case class: its dict's items as described (``_same.same_bindings``).
        self.seen = seen
        #: For a project object described again after a rebinding: what describing its
        #: namespace found (``_shallow.Memo``), to describe it once more without a walk.
        self.memo: Any = None


#: Writes that bind what was there before (a function swapped and put back) after which a
#: module's namespace is watched by its bindings: click's test runner does it on every
#: invocation, and a tag that moves on each made each of them a read of the probe.
REWRITES_TO_BINDINGS = 2


class Tracked(Plain):
    """One project module and what was found in it when it was last described."""

    _fields = ("name", "module", "ns", "fresh", "rewatch", "fps", "parts", "bound", "rewrites",
               "by_bindings", "watched", "skipped", "image", "moves", "swaps")
    __slots__ = _fields

    def __init__(self, name: str, module: types.ModuleType, ns: dict[str, Any], fresh: bool = False,
                 rewatch: bool = True, fps: dict[str, str] | None = None,
                 parts: dict[str, Part] | None = None) -> None:
        self.name = name
        self.module = module
        self.ns = ns
        self.fresh = fresh
        #: Its set of watched objects changed since the current :class:`Watch` was built.
        self.rewatch = rewatch
        self.fps: dict[str, str] = {} if fps is None else fps
        #: Each module attribute by name, and each class defined in the module by its name and
        #: :data:`CLASS_SUFFIX`, in the namespace's order.
        self.parts: dict[str, Part] = {} if parts is None else parts
        #: When last described: the namespace's names, and each described name with its
        #: object (``_same.same_bindings``).
        self.bound: tuple[frozenset[str], tuple[str, ...], tuple[Any, ...]] = (
            frozenset(), (), ())
        #: How often its namespace was written to and still bound what it was described with.
        self.rewrites = 0
        #: Its namespace is watched by what it binds rather than by its version tag
        #: (:class:`~statesnap.probes.attributes._watch.Bindings`), after
        #: :data:`REWRITES_TO_BINDINGS` such writes.
        self.by_bindings = False
        #: What :attr:`parts` adds to a watch, with the parts dict it was gathered from
        #: (:func:`~statesnap.probes.attributes._watch.watched_objects`): a rebuilt watch gathers
        #: again only the modules described since.
        self.watched: tuple[dict[str, Part], tuple[list[Any], ...]] | None = None
        #: When last walked: the names left out for what they bound (a callable dunder, not
        #: by its name alone: :func:`skipped_by_name`), with those objects.  Bound to a value
        #: instead, such a name is watched: a namespace binds as described only while these
        #: still bind the same objects too (``_same.binds_as_described``).
        self.skipped: tuple[tuple[str, ...], tuple[Any, ...]] = ((), ())
        #: The namespace as last found binding as described (``_same.NamespaceImage``),
        #: made for the :attr:`bound` it was checked against; None until then.  (Any: that
        #: module imports this one, and the layer test allows no cycle, typing's included.)
        self.image: Any = None
        #: How many watch rebuilds replaced its watched objects after it was first watched
        #: (``_splitwatch``: a module that keeps moving is rebuilt apart).
        self.moves = 0
        #: Watched lists replaced since the watch was built by lists of the same length
        #: holding the very same items, each ``(part key, old, new)``: the watch swaps them
        #: in for that part in place of a rebuild (``Watch.swapped``).
        self.swaps: tuple[tuple[str, Any, Any], ...] = ()

    def rewritten(self) -> bool:
        """Count a write that left every binding as described; True when that makes the
        namespace one watched by its bindings (the watch must then be built again)."""
        self.rewrites += 1
        if self.by_bindings or self.rewrites < REWRITES_TO_BINDINGS:
            return False
        self.by_bindings = True
        return True

    @property
    def classes(self) -> list[tuple[str, type, Mapping[str, Any]]]:
        return [p.cls for p in self.parts.values() if p.cls is not None]

    @property
    def containers(self) -> dict[str, list[Any]]:
        return {k: v for p in self.parts.values() for k, v in (p.containers or {}).items()}

    def save(self) -> SavedModule:
        # Subclasses by weak reference: holding them would keep alive what a test left.
        classes = {name: (cls, dict(cls.__dict__), [weakref.ref(sub) for sub in subclasses_of(cls)])
                   for name, cls, _ in self.classes}
        containers = {path: [(c, _copy(c)) for c in items]
                      for path, items in self.containers.items()}
        objects = {name: (p.inst, dict(p.inst)) for name, p in self.parts.items()
                   if p.inst is not None}
        return SavedModule(self.module, dict(self.ns), classes, containers, objects)


class SavedModule(Value):
    """A module's real objects and container contents, as :meth:`Tracked.save` found them."""

    _fields = ("module", "ns", "classes", "containers", "objects")
    __slots__ = _fields

    def __init__(self, module: types.ModuleType, ns: dict[str, Any],
                 classes: dict[str, tuple[type, dict[str, Any], list[weakref.ref[type]]]],
                 containers: dict[str, list[tuple[Any, Any]]],
                 objects: dict[str, tuple[dict[str, Any], dict[str, Any]]] | None = None
                 ) -> None:
        self.module = module
        self.ns = ns
        self.classes = classes
        self.containers = containers
        #: ``NAME -> (the large object's namespace, its contents)``.
        self.objects: dict[str, tuple[dict[str, Any], dict[str, Any]]] = (
            {} if objects is None else objects)

    def _live_module(self) -> types.ModuleType:
        name = module_namespace(self.module).get("__name__")
        now = sys.modules.get(name) if isinstance(name, str) else None
        return now if isinstance(now, types.ModuleType) else self.module

    def restore(self, path: str) -> bool:
        """Put one key (``NAME``, ``NAME.attr``, either with ``#cache``) back; False if unknown.

        Into the module now imported under the saved one's name: a test that popped it from
        ``sys.modules`` and imported it again left a fresh object, and ``settings.DEBUG`` is
        what later tests read there.
        """
        live = module_namespace(self._live_module())
        if path.endswith("#cache"):
            name, _, attr = path.removesuffix("#cache").partition(".")
            obj = live.get(name)
            if attr:
                obj = vars(obj).get(attr) if K.kind(obj, type) else None
            func = K.unwrap_descriptor(obj)
            if not K.is_cache(func):
                return False
            # Back to empty, not to the saved fill: entries cannot be put back one by one,
            # and an empty cache recomputes from the restored state, which is the point.
            func.cache_clear()  # type: ignore[attr-defined]
            return True
        name, _, attr = path.partition(".")
        if attr and name in self.objects:
            ns, contents = self.objects[name]
            # Straight into the object's namespace, as a test's ``obj.attr = x`` left it:
            # no ``__setattr__`` of the project's to run.
            if attr in contents:
                if ns.get(attr, _MISSING) is not contents[attr]:
                    ns[attr] = contents[attr]
            else:
                ns.pop(attr, None)
        elif attr:
            entry = self.classes.get(name)
            if entry is None:
                return False
            cls, saved, subclasses = entry
            if attr == SUBCLASSES:
                return _drop_subclasses(cls, subclasses)
            if attr in saved:
                if cls.__dict__.get(attr, _MISSING) is not saved[attr]:
                    setattr(cls, attr, saved[attr])
            elif attr in cls.__dict__:
                delattr(cls, attr)
        elif name in self.ns:
            if live.get(name, _MISSING) is not self.ns[name]:
                live[name] = self.ns[name]
        else:
            live.pop(name, None)
        for container, contents in self.containers.get(path, ()):
            _put_back(container, contents)
        return True


def subclasses_of(cls: type) -> list[type]:
    """``cls``'s live subclasses (through ``type``: a metaclass may define its own)."""
    found: list[type] = type.__subclasses__(cls)
    return found


def _drop_subclasses(cls: type, saved: list[weakref.ref[type]]) -> bool:
    """Whether ``cls`` is back to the subclasses it had when saved, after a collection.

    A subclass cannot be taken out of its base's list; one that nothing but reference cycles
    keeps alive (a class defined inside a test, with its instances) goes with a collection.
    One still alive after it is referenced from somewhere: not restored, and said so.
    """
    gc.collect()
    kept = {id(sub) for sub in (ref() for ref in saved) if sub is not None}
    return all(id(sub) in kept for sub in subclasses_of(cls))
