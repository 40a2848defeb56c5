"""Fix hints in each probe's terms, looked up without setting a probe up."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from statesnap.base.internal import note_internal_error
from statesnap.probes.base import Probe, ProbeContext
from statesnap.probes.builtin import BUILTIN, ON_DEMAND

_GENERIC = {
    "added": "undo it in the test's teardown or a fixture finaliser",
    "removed": "put it back in the test's teardown or a fixture finaliser",
    "changed": "restore the old value in the test's teardown or a fixture finaliser",
}


@functools.cache
def probe_class(name: str) -> type[Probe] | None:
    """The built-in probe class called ``name`` (None for third-party or absent probes)."""
    for module_name, class_name in (*BUILTIN, *ON_DEMAND):
        cls = getattr(importlib.import_module(module_name), class_name)
        if getattr(cls, "name", None) == name:
            return cls  # type: ignore[no-any-return]
    return None


def restorable(probe: str, header: Mapping[str, Any] | None = None) -> bool:
    """Whether a key-level replay can put this probe's keys back (``Probe.restorable`` or
    ``Probe.replay_restorable``).

    A built-in probe answers from its class; a third-party one (a conftest's, a plugin's) from
    the recorded run's ``header``, where the plugin noted what its instance declared: this
    process may never have loaded it (the CLI, the hunt).
    """
    cls = probe_class(probe)
    if cls is not None:
        return bool(cls.restorable or cls.replay_restorable)
    if header is None:
        return False
    for status in header.get("probes") or ():
        if isinstance(status, Mapping) and status.get("name") == probe:
            return status.get("restorable") is True
    return False


def _instance(cls: type[Probe]) -> Probe:
    # Constructors are cheap and set up nothing (setup() does); a probe whose constructor
    # wants arguments still answers hint() from a bare instance.
    try:
        return cls()
    except Exception:
        return cls.__new__(cls)


#: Probes whose hints come from tables built in ``setup()``, which is cheap for them (one
#: ``/proc`` file); others answer from a bare instance (``files`` would walk the tree).
_SETUP_FOR_HINTS = frozenset({"process"})


def hint_for(probe: str, key: str, change: str, before: Any = None, after: Any = None) -> str:
    """A one-line fix hint for a polluter that made ``change`` to ``probe:key``, from
    ``before`` to ``after`` (the recorded fingerprints: they tell a list filled in place from
    one rebound, where this process never read the key)."""
    cls = probe_class(probe)
    if cls is not None:
        text = _ask(cls, key, change, before, after, setup=False)
        if not text and probe in _SETUP_FOR_HINTS:
            text = _ask(cls, key, change, before, after, setup=True)
        if text:
            return text
    return _GENERIC.get(change, _GENERIC["changed"])


def _ask(cls: type[Probe], key: str, change: str, before: Any, after: Any,
         setup: bool) -> str | None:
    probe = _instance(cls)
    try:
        if setup:
            probe.setup(ProbeContext(rootdir=Path.cwd()))
        return probe.hint_of(key, change, before, after)
    except Exception as exc:  # the generic hint then
        note_internal_error(f"probe {cls.name}: hint", exc)
        return None
    finally:
        if setup:
            try:
                probe.close()
            except Exception as exc:
                note_internal_error(f"probe {cls.name}: close after a hint", exc)
