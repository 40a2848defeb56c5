"""Fix hints in each probe's terms, looked up without setting a probe up."""

from __future__ import annotations

import importlib

from statesnap.probes.base import Probe
from statesnap.probes.builtin import BUILTIN

_GENERIC = {
    "added": "undo it in the test's teardown or a fixture finaliser",
    "removed": "put it back in the test's teardown or a fixture finaliser",
    "changed": "restore the old value in the test's teardown or a fixture finaliser",
}


def _probe_class(name: str) -> type[Probe] | None:
    for module_name, class_name in BUILTIN:
        try:
            cls = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError):
            continue
        if getattr(cls, "name", None) == name:
            return cls  # type: ignore[no-any-return]
    return None


def hint_for(probe: str, key: str, change: str) -> str:
    """A one-line fix hint for a polluter that made ``change`` to ``probe:key``."""
    cls = _probe_class(probe)
    if cls is not None:
        try:
            text = cls.hint(cls.__new__(cls), key, change)
        except Exception:
            text = None
        if text:
            return text
    return _GENERIC.get(change, _GENERIC["changed"])
