"""``warnings``: the warning filters, and the functions that show and format warnings.

Fingerprints the filter list seen at setup (pytest's per-test copy is disposable), one key per
filter with its position, plus ``<filters list>``, ``showwarning``, ``formatwarning`` and
``defaultaction``.  Why: docs/PROBES.md.
"""

from __future__ import annotations

import warnings
from collections.abc import Collection
from typing import Any

from statesnap.probes.base import Probe, ProbeContext, ProbeMap, Severity, unreadable

LIST_KEY = "<filters list>"
HOOKS = ("showwarning", "formatwarning")
DEFAULT_ACTION_KEY = "defaultaction"


def _tag(obj: object) -> str:
    return f"#{id(obj) & 0xFFFFFF:06x}"


def _pattern(value: object) -> str:
    # A filter's message/module is None, a compiled regex, or (for the C defaults) a string.
    if value is None:
        return ""
    return str(getattr(value, "pattern", value))


def _category(value: object) -> str:
    if isinstance(value, type):
        module = value.__module__
        return value.__qualname__ if module == "builtins" else f"{module}.{value.__qualname__}"
    return repr(value)


def filter_key(item: object) -> str:
    """The key of one ``warnings.filters`` entry (an ``(action, msg, cat, mod, lineno)`` tuple)."""
    if isinstance(item, tuple) and len(item) == 5:
        action, message, category, module, lineno = item
        return (f"filter:{action}:{_category(category)}:{_pattern(message)}:"
                f"{_pattern(module)}:{lineno}")
    return f"filter:<malformed {type(item).__name__}>"


def list_of(filters: Any) -> list[Any]:
    """``warnings.filters`` as the list it is (typeshed calls it a Sequence)."""
    assert isinstance(filters, list)
    return filters


def _default_action() -> object:
    return getattr(warnings, "defaultaction", None)  # not in typeshed's stubs


def _describe_callable(obj: object) -> str:
    module = getattr(obj, "__module__", None) or type(obj).__module__
    name = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return f"{module}.{name}{_tag(obj)}"


class WarningsProbe(Probe):
    """Warning filters and the show/format hooks of the :mod:`warnings` module."""

    name = "warnings"
    severity = Severity.MEDIUM
    restorable = True

    def __init__(self) -> None:
        self._original: list[Any] = list_of(warnings.filters)
        # read() is a function of the token; the per-test copy pytest swaps in has the same
        # token every test, and two cached maps answer the rest.
        self._cache: list[tuple[object, ProbeMap]] = []

    def setup(self, ctx: ProbeContext) -> None:
        self._original = list_of(warnings.filters)
        self._cache.clear()

    def light_token(self) -> object:
        # Checkpoints run inside pytest's catch_warnings, where warnings.filters is its copy:
        # only the original list's contents and the hooks count there.  Filter tuples are
        # immutable, so a tuple of them is a faithful snapshot, compared item by item with an
        # identity shortcut.  (id, object) pairs keep the hooks alive, so an id cannot be
        # reused while the token is held.
        w = warnings
        sw, fw = w.showwarning, w.formatwarning
        return tuple(self._original), id(sw), sw, id(fw), fw, _default_action()

    def token(self) -> object:
        # Taken around tests, outside pytest's wrappers: the list itself is back in place.
        return warnings.filters is self._original, self.light_token()

    def read(self) -> ProbeMap:
        token = self.token()
        for old, cached in self._cache:
            if old == token:
                return cached
        out: ProbeMap = {}
        for i, item in enumerate(self._original):
            try:
                key = filter_key(item)
            except Exception:  # an entry whose parts cannot be read: one odd key
                key = f"filter:<unreadable {type(item).__name__} {_tag(item)}>"
            out[key] = f"{out[key]},{i}" if key in out else f"at {i}"
        out[LIST_KEY] = "original" if warnings.filters is self._original else "replaced"
        for hook in HOOKS:
            try:
                out[hook] = _describe_callable(getattr(warnings, hook))
            except Exception as exc:  # a hook whose __getattr__ raises
                out[hook] = unreadable(exc)
        out[DEFAULT_ACTION_KEY] = str(_default_action())
        self._cache.insert(0, (token, out))
        del self._cache[2:]
        return out

    def severity_of(self, key: str, before: Any, after: Any) -> Severity:
        if key.startswith("filter:") and before is not None and after is not None:
            return Severity.LOW  # the same filter at another position
        return self.severity

    def hint(self, key: str, change: str) -> str | None:
        if key.startswith("filter:") or key == LIST_KEY:
            return ("change warning filters inside `with warnings.catch_warnings():` or with "
                    "@pytest.mark.filterwarnings / pytest.warns, which put the filters back")
        if key in HOOKS:
            return (f"patch warnings.{key} with monkeypatch.setattr(warnings, {key!r}, ...) "
                    "so the original is put back")
        return ("set warnings.defaultaction inside `with warnings.catch_warnings():` "
                "so it is put back")

    # -- restoring ---------------------------------------------------------------------------
    def save(self) -> object:
        return (warnings.filters, list(warnings.filters), warnings.showwarning,
                warnings.formatwarning, _default_action())

    def restore(self, saved: object, keys: Collection[str]) -> list[str]:
        assert isinstance(saved, tuple)
        filters_obj, filters, showwarning, formatwarning, defaultaction = saved
        wanted = list(keys)
        done: list[str] = []
        filter_keys = [k for k in wanted if k.startswith("filter:") or k == LIST_KEY]
        if filter_keys:
            # The whole list goes back at once: filters only mean something in order.
            warnings.filters = filters_obj
            filters_obj[:] = filters
            mutated = getattr(warnings, "_filters_mutated", None)
            if mutated is not None:
                mutated()  # invalidate the C accelerator's per-location caches
            done += filter_keys
        if "showwarning" in wanted:
            warnings.showwarning = showwarning
            done.append("showwarning")
        if "formatwarning" in wanted:
            warnings.formatwarning = formatwarning
            done.append("formatwarning")
        if DEFAULT_ACTION_KEY in wanted:
            setattr(warnings, "defaultaction", defaultaction)  # noqa: B010 (untyped in stubs)
            done.append(DEFAULT_ACTION_KEY)
        return done
