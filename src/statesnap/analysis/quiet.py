"""Changes no later test can act on, read from the recorded fingerprints: listed at LOW.

Issue 29's rule for what is *listed*: every line above LOW is one a maintainer should act on.
Some in-place changes of the ``attributes`` probe are the library working as designed, and no
later test starts from a state it could tell apart:

- a memo filling with values made from their keys (:func:`derived_memo`): humanize's
  ``_TRANSLATIONS`` loads a locale's catalogue the first time a test activates it; a later
  test activating it gets the same catalogue loaded or not.  Only values of types that are
  made from the key alone (:data:`DERIVED_TYPES`: a translation catalogue, a compiled
  pattern, a lock or context variable per key); a class a registry keeps (marshmallow's class
  registry, arrow's locale map) or a test's own object keeps its severity;
- a registry of code objects growing (:func:`code_registry`): jinja2 adds the code of each
  template's generated error stubs to ``internal_code`` to hide their frames from tracebacks;
  it is consulted by identity, and no later test holds the code objects an earlier one
  compiled;
- a lazy singleton kept in a container (:func:`singleton_held`): dateutil's deprecated
  ``gettz`` appends one ``ZoneInfoFile`` to the empty ``_CLASS_ZONE_INSTANCE`` on first use,
  as ``_default_instance = Cls()`` does for a global (the attributes probe rates that one);
- a thread-local gaining attributes set to ``None`` (:func:`thread_local_default`): humanize's
  ``deactivate()`` sets ``_CURRENT.locale = None``, which its readers take as the default
  when the attribute is absent.

The record keeps the probe's severity: attribution and the key-level proof read every change
(a stale memo is how some victims fail).  Pure functions.
"""

from __future__ import annotations

import ast
import re
from functools import cache

from statesnap.state.diff import CHANGED, Change

#: Values a memo makes from its key alone, holding nothing a test gave it.
DERIVED_TYPES = frozenset({
    "gettext.GNUTranslations", "gettext.NullTranslations", "re.Pattern",
    "_thread.lock", "_thread.RLock", "threading.Condition", "threading.Semaphore",
    "threading.BoundedSemaphore", "threading.Event", "_contextvars.ContextVar",
})
#: Attribute names of a lazily made singleton (as the attributes probe reads them).
_SINGLETON_WORDS = ("instance", "singleton", "default")
#: Thread-local types (their fingerprint shows the type's name).
_LOCAL_TYPES = frozenset({"_local", "_thread._local", "threading.local", "_threading_local.local"})

# The patterns are compiled at their first use, not at import (about 3 M instructions, issue
# 28): this module is imported at every session's end, and a session whose tests changed no
# module attribute never asks.

@cache
def _container() -> re.Pattern[str]:
    """A container's fingerprint: ``{...} [(N chars)] #tag [Label] len=N ~sig[ sampled][ eq~sig]
    [ cache~sig]`` (probes/attributes/describe.py)."""
    return re.compile(
        r"^(?P<open>[\[{(])(?P<text>.*?)[\]})](?: \(\d+ chars\))? #(?P<tag>[0-9a-f]{6})"
        r"(?: (?P<label>[\w.]+))? len=(?P<n>\d+) ~[0-9a-f]{8}(?: sampled)?(?: eq~[0-9a-f]{8})?"
        r"(?: cache~[0-9a-f]{8})?$",
        re.S)


@cache
def _namespace() -> re.Pattern[str]:
    """A namespace's fingerprint: ``<Type {...}> #tag ~sig...``."""
    return re.compile(r"^<(?P<type>[\w.]+) (?P<attrs>\{.*\})> #(?P<tag>[0-9a-f]{6}) ~", re.S)


@cache
def _shown_object() -> re.Pattern[str]:
    return re.compile(r"<([\w.]+)>")


#: Empty values as a preview shows them.
_EMPTY = frozenset({"[]", "{}", "()", "set()", "set({})"})


def quiet(ch: Change) -> bool:
    """Whether ``ch`` is one of the changes above that no later test can act on."""
    if ch.probe != "attributes" or ch.change != CHANGED:
        return False
    before, after = ch.before, ch.after
    if not (isinstance(before, str) and isinstance(after, str)):
        return False
    return (derived_memo(before, after) or code_registry(before, after)
            or defaults_filled(before, after)
            or singleton_held(ch.key, before, after) or thread_local_default(before, after))


def _grown(before: str, after: str, open_: str) -> tuple[list[str], list[str]] | None:
    """The entries shown before and after, where both are the same container (identity tag)
    opened by ``open_`` that grew; entries cut by the preview are left out."""
    # An empty set is shown ``set({})``: the same braces as a full one.
    old = _container().match("{}" + before[7:] if before.startswith("set({})") else before)
    new = _container().match(after)
    if not (old and new) or old["tag"] != new["tag"] or int(new["n"]) <= int(old["n"]):
        return None
    if old["open"] != open_ or new["open"] != open_:
        return None
    return _entries(old["text"]), _entries(new["text"])


def _entries(text: str) -> list[str]:
    return [e for e in text.split(", ") if e and "…" not in e]


def derived_memo(before: str, after: str) -> bool:
    """The same dict grown, each entry it gained (of those shown) holding a value of one of
    :data:`DERIVED_TYPES`."""
    found = _grown(before, after, "{")
    if found is None:
        return False
    old, new = found
    fresh = [e for e in new if e not in old and ": " in e]
    if not fresh:
        return False
    values = [_shown_object().fullmatch(e.rpartition(": ")[2]) for e in fresh]
    return all(m is not None and m[1] in DERIVED_TYPES for m in values)


def defaults_filled(before: str, after: str) -> bool:
    """The same ``defaultdict`` grown only by empty entries, the ones it had as they were: a
    lookup making the default (marshmallow's ``Schema._hooks[...]``); a later lookup of the
    same key gets the same empty value either way."""
    old, new = _container().match(before), _container().match(after)
    if not (old and new) or old["label"] != "defaultdict" or new["label"] != "defaultdict":
        return False
    found = _grown(before, after, "{")
    if found is None:
        return False
    was, now = found
    fresh = [e for e in now if e not in was]
    return (bool(fresh) and all(e in now for e in was)
            and all(e.rpartition(": ")[2] in _EMPTY for e in fresh))


def code_registry(before: str, after: str) -> bool:
    """The same set grown, every entry shown on both sides a code object."""
    found = _grown(before, after, "{")
    if found is None:
        return False
    old, new = found
    shown = old + new
    return bool(new) and all(e == "<builtins.code>" for e in shown)


def singleton_held(key: str, before: str, after: str) -> bool:
    """A module global's list, named for a singleton, that went from empty to one object."""
    path = key.partition(":")[2]
    if not path or "." in path or "#" in path:
        return False
    if not any(w in path.lower() for w in _SINGLETON_WORDS):
        return False
    old, new = _container().match(before), _container().match(after)
    if not (old and new) or old["tag"] != new["tag"] or old["open"] != "[" or new["open"] != "[":
        return False
    if old["n"] != "0" or new["n"] != "1":
        return False
    return _shown_object().fullmatch(new["text"]) is not None


def thread_local_default(before: str, after: str) -> bool:
    """The same thread-local that only gained attributes set to ``None``, the others as they
    were; both previews complete literals."""
    old, new = _namespace().match(before), _namespace().match(after)
    if not (old and new) or old["tag"] != new["tag"] or old["type"] != new["type"]:
        return False
    if new["type"] not in _LOCAL_TYPES:
        return False
    try:
        was, now = ast.literal_eval(old["attrs"]), ast.literal_eval(new["attrs"])
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    if not (isinstance(was, dict) and isinstance(now, dict)) or not was.keys() < now.keys():
        return False
    return (all(now[k] == v for k, v in was.items())
            and all(now[k] is None for k in now.keys() - was.keys()))
