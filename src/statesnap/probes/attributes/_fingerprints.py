"""What the ``attributes`` probe's recorded fingerprints say of a change, read from the text
alone (a replay or the CLI never read the key): a cache filled, a container or namespace
changed in place, a lazy initialisation left empty.  The formats: :mod:`.describe`.
"""

from __future__ import annotations

import ast
import re
from typing import Any

#: Patterns as text: ``re`` compiles them on first use (a change to rate), not at every
#: session's start (about 0.9 M instructions, issue 13), and keeps them in its cache.
_TAG = r" (#[0-9a-f]{6})(?= |$)"
_TYPE = r"^<([\w.]+) "
#: A container's or a namespace's digest, then that of its cache parts (describe.describe).
_SIGS = r" ~([0-9a-f]{8})(?: eq~[0-9a-f]{8})?( cache~[0-9a-f]{8})?$"


def cache_filled(key: str, before: Any, after: Any) -> bool:
    """The same cache object (same identity tag) with other contents: a cache at work."""
    if not (isinstance(before, str) and isinstance(after, str)):
        return False
    tags = re.findall(_TAG, before), re.findall(_TAG, after)
    if not tags[0] or tags[0] != tags[1]:
        return False  # rebound: a new object under the name is a change like any other
    name = key.partition(":")[2].rsplit(".", 1)[-1]
    found = re.match(_TYPE, after)
    if "cache" in name.lower() or bool(found and "cache" in found.group(1).lower()):
        return True
    # An object with cache parts (dateutil's gettz: a weak dictionary, a "strong cache") where
    # only those changed: the digest of the rest is the same on both sides.
    sigs = _tail_match(_SIGS, before, " ~"), _tail_match(_SIGS, after, " ~")
    return bool(sigs[0] and sigs[1] and sigs[0][1] == sigs[1][1]
                and (sigs[0][2] or sigs[1][2]) and sigs[0][2] != sigs[1][2])


#: A container's fingerprint (``{...} #tag [Type] len=N ~sig[ sampled| eq~sig][ cache~sig]``)
#: and a namespace's (``<Type {...}> #tag ~sig[ eq~sig][ cache~sig]``), split into what they
#: show.
_CONTAINER_PARTS = (r"^(?P<text>.*) #[0-9a-f]{6}(?P<label>(?: [\w.]+)?) len=(?P<n>\d+)"
                    r" ~[0-9a-f]{8}(?: sampled)?(?: eq~[0-9a-f]{8})?(?: cache~[0-9a-f]{8})?$")
_NAMESPACE_PARTS = (r"^(?P<text><[\w.]+ .*>) #[0-9a-f]{6} ~[0-9a-f]{8}(?: sampled)?"
                    r"(?: eq~[0-9a-f]{8})?(?: cache~[0-9a-f]{8})?$")
_CACHE_WORDS = ("cache", "memo")


def cache_replaced(key: str, before: Any, after: Any) -> bool:
    """A cache (by its name or type) rebound to a fresh one like it: a reset, which a later
    call recomputes from, like a cache filling (:func:`cache_filled`).

    pyparsing's ``enable_packrat()`` makes a new ``_FifoCache`` of the same size, and its
    test suite calls it before every test; ``recursion_memos`` is rebound to a new empty
    ``UnboundedMemo``.  A container qualifies only when the new one is empty (of the same
    type), a namespace only when it shows the same attributes (its settings, such as the
    size) and only the identities differ; anything else keeps its severity.
    """
    if not (isinstance(before, str) and isinstance(after, str)):
        return False
    if re.findall(_TAG, before)[-1:] == re.findall(_TAG, after)[-1:]:
        return False  # the same object: cache_filled's case, not a new one
    name = key.partition(":")[2].rsplit(".", 1)[-1]
    old, new = re.search(_CONTAINER_PARTS, before), re.search(_CONTAINER_PARTS, after)
    if old and new:
        return (_cache_named(name, new["label"]) and new["n"] == "0"
                and old["label"] == new["label"] and old["text"][:1] == new["text"][:1])
    old, new = re.match(_NAMESPACE_PARTS, before, re.S), re.match(_NAMESPACE_PARTS, after, re.S)
    type_name = re.match(_TYPE, after)
    return bool(old and new and type_name and _cache_named(name, type_name[1])
                and old["text"] == new["text"])


def _cache_named(name: str, type_name: str) -> bool:
    words = f"{name} {type_name}".lower()
    return any(w in words for w in _CACHE_WORDS)


#: The end of a container's fingerprint (``[...] #tag [Type] len=N ~sig[ eq~sig][ cache~sig]``)
#: and a namespace's (``<Type {...}> #tag ~sig[ eq~sig][ cache~sig]``): describe.describe.
_CONTAINER_END = (r" #[0-9a-f]{6}(?: [\w.]+)? len=\d+ ~[0-9a-f]{8}(?: eq~[0-9a-f]{8})?"
                  r"(?: cache~[0-9a-f]{8})?$")
_NAMESPACE_FP = r"^<.*> #[0-9a-f]{6} ~[0-9a-f]{8}(?: eq~[0-9a-f]{8})?(?: cache~[0-9a-f]{8})?$"
#: The same two ends, with the object's identity tag and its ``eq~`` digest.
_SAME_END = (r" (#[0-9a-f]{6})(?: [\w.]+)?(?: len=\d+)? ~[0-9a-f]{8} (eq~[0-9a-f]{8})"
             r"(?: cache~[0-9a-f]{8})?$")


def recorded_kind(before: Any, after: Any) -> str | None:
    """``container`` or ``namespace`` where the fingerprints show the same object changed in
    place; None where they do not tell (rebound, added, removed, redacted)."""
    if not (isinstance(before, str) and isinstance(after, str)):
        return None
    tags = re.findall(_TAG, before), re.findall(_TAG, after)
    if not tags[0] or tags[0][-1:] != tags[1][-1:]:
        return None  # another object under the name: rebinding, which setattr undoes
    if re.search(_CONTAINER_END, before) and re.search(_CONTAINER_END, after):
        return "container"
    if re.match(_NAMESPACE_FP, before, re.S) and re.match(_NAMESPACE_FP, after, re.S):
        return "namespace"
    return None


def _tail_match(pattern: str, text: str, lead: str = " #") -> re.Match[str] | None:
    """``re.search(pattern, text)`` for a pattern that ends at ``$`` and begins with ``lead``
    (`` #`` or `` ~``), which it holds nowhere else (a tag's ``#`` is followed by hex digits
    only, a label by word characters; the digests after `` ~`` are ``eq~`` and ``cache~``):
    a match can begin only at the last ``lead``, so only the text from there is matched (one
    C scan from the end, not an attempt at every space of a long preview: a change of
    structlog's ``_CONFIG`` is rated on every test)."""
    at = text.rfind(lead)
    return re.match(pattern, text[at:]) if at >= 0 else None


def same_content(before: Any, after: Any) -> bool:
    """The same object (identity tag) holding what it held, in other builtin containers: its
    ``eq~`` digest (:mod:`._content`) unchanged.  Nothing a later test reads differs,
    unless it holds one of the replaced containers itself (a change, recorded, at LOW)."""
    if not (isinstance(before, str) and isinstance(after, str)):
        return False
    found = _tail_match(_SAME_END, before), _tail_match(_SAME_END, after)
    return bool(found[0] and found[1] and found[0][1] == found[1][1]
                and found[0][2] == found[1][2])


#: A watched namespace's fingerprint: its type, the preview of its attributes, its identity tag.
_NAMESPACE = r"^<([\w.]+) (\{.*\})> (#[0-9a-f]{6}) ~"


def lazily_initialised(before: Any, after: Any) -> bool:
    """The same namespace object that only gained attributes holding empty containers, the
    others unchanged: a lazy initialisation left empty after use (click's
    ``_local.__dict__.setdefault("stack", []).append(ctx)``, popped again: ``{} → {'stack':
    []}`` on the first test to invoke a command), not state a later test would find
    changed.  Only where both previews are complete literals (nothing clipped or shown by
    type); anything else keeps its severity."""
    if not (isinstance(before, str) and isinstance(after, str)):
        return False
    found = re.match(_NAMESPACE, before), re.match(_NAMESPACE, after)
    if not (found[0] and found[1]) or found[0][1] != found[1][1] or found[0][3] != found[1][3]:
        return False
    try:
        old, new = ast.literal_eval(found[0][2]), ast.literal_eval(found[1][2])
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    if not (isinstance(old, dict) and isinstance(new, dict)) or not old.keys() < new.keys():
        return False
    return (all(new[k] == v for k, v in old.items())
            and all(type(new[k]) in (list, dict, set, tuple) and not new[k]
                    for k in new.keys() - old.keys()))


#: Objects made afresh for each key of a memo, holding nothing a caller gave them: a lock per
#: file (structlog's ``WRITE_LOCKS``), a context variable per name (its ``_CONTEXT_VARS``).
_PER_KEY_TYPES = frozenset({"_thread.lock", "_thread.RLock", "threading.Condition",
                            "threading.Semaphore", "threading.BoundedSemaphore",
                            "threading.Event", "_contextvars.ContextVar"})
_DICT_FP = (r"^\{(?P<text>.*)\}(?: \(\d+ chars\))? #(?P<tag>[0-9a-f]{6}) len=(?P<n>\d+)"
            r" ~[0-9a-f]{8}(?: eq~[0-9a-f]{8})?(?: cache~[0-9a-f]{8})?$")


def memo_filled(before: Any, after: Any) -> bool:
    """The same dict grown, each value shown a lock or a context variable: a memo making one
    per key on first use (``WRITE_LOCKS.setdefault(file, Lock())``).  A later test asking for
    its own key gets what it would have made; nothing it reads differs.  Any other value (a
    class a registry keeps, a test's object) keeps the severity."""
    if not (isinstance(before, str) and isinstance(after, str)):
        return False
    old, new = re.match(_DICT_FP, before, re.S), re.match(_DICT_FP, after, re.S)
    if not (old and new) or old["tag"] != new["tag"] or int(new["n"]) <= int(old["n"]):
        return False
    # The entries shown that the old preview does not show (a preview clipped in the middle
    # shows its first and last ones: a memo grows at the end); a cut entry is skipped.
    entries = [e for e in new["text"].split(", ") if "…" not in e and ": " in e]
    fresh = [e for e in entries if e not in old["text"]] or entries
    made = [re.fullmatch(r".*: <([\w.]+)>", e) for e in fresh]
    return bool(made) and all(m is not None and m[1] in _PER_KEY_TYPES for m in made)
