"""The calling thread's attributes of a ``threading.local`` (or a subclass), read without
running the project's code.

A ``threading.local`` keeps one dict per thread.  Its own C lookup of ``__dict__`` returns the
calling thread's, making it where the thread has none yet, and for a subclass making it means
running the subclass's ``__init__`` in that thread: project code at a snapshot, under whatever
state the snapshot found (a test that patched what ``__init__`` reads would then find a value
made before it).  A subclass is therefore read only where the calling thread already has its
dict, which CPython keeps in the thread state's dict under a key naming the object; a
self-check in this process confirms that layout, else subclasses are not read at all.
"""

from __future__ import annotations

import _thread
from typing import Any

from statesnap.probes._dictwatch import checked_once, load_ctypes, probe_support

#: ``threading.local`` itself.
LOCAL = _thread._local
#: How CPython names a local's entry in a thread state's dict (``%p`` of the object): 3.11
#: first, then the spelling of other versions; the self-check picks the one in use.
_KEY_FORMATS = ("thread.local.{:#x}", "_thread._local.{:#x}")

_get_dict: Any = None
_key_format = ""


def _thread_state_dict() -> dict[str, Any] | None:
    """``PyThreadState_GetDict()``: the calling thread's state dict (None where it has none)."""
    global _get_dict
    ctypes = load_ctypes()
    if _get_dict is None:
        # Our own prototype (ctypes.pythonapi's function objects are shared, their restype
        # too); PYFUNCTYPE keeps the GIL held for the call, as the C API requires.
        _get_dict = ctypes.PYFUNCTYPE(ctypes.c_void_p)(("PyThreadState_GetDict", ctypes.pythonapi))
    address = _get_dict()
    if not address:
        return None
    # A borrowed reference: ``.value`` of a cast takes a new one of its own.
    found = ctypes.cast(address, ctypes.py_object).value
    return found if type(found) is dict else None


def _check() -> bool:
    global _key_format
    if not probe_support() or load_ctypes() is None:
        return False

    class Probe(LOCAL):
        def __init__(self) -> None:
            self.made = 1

    probe = Probe()  # its dict in this thread made here, __init__ run once
    state = _thread_state_dict()
    if state is None:
        return False
    found = [f for f in _KEY_FORMATS if f.format(id(probe)) in state]
    if len(found) != 1:
        return False
    keys = len(state)
    own = LOCAL.__getattribute__(probe, "__dict__")
    if type(own) is not dict or own != {"made": 1} or len(state) != keys:
        return False
    _key_format = found[0]
    return True


#: Whether a subclass's per-thread dict can be told to exist here.
supported = checked_once(_check)


def is_local(value: object) -> bool:
    """Whether ``value`` is a ``threading.local`` (its real type: no ``__class__`` asked)."""
    return issubclass(type(value), LOCAL)


def local_dict(value: object) -> dict[str, Any] | None:
    """The calling thread's dict of a ``threading.local`` through its own C lookup (object's
    finds none, or, for a subclass, an empty dict of its own that holds nothing): the same
    object for as long as the thread lives.  None for a subclass whose dict this thread has
    not made yet (looking would run its ``__init__``), or where that cannot be told here."""
    if type(value) is not LOCAL:
        # threading.local itself has no __init__ to run; a subclass may.
        if not supported():
            return None
        state = _thread_state_dict()
        if state is None or _key_format.format(id(value)) not in state:
            return None
    found = LOCAL.__getattribute__(value, "__dict__")  # type: ignore[arg-type]
    return found if type(found) is dict else None
