"""Which tests run isolated, and how: fork when it is safe, spawn otherwise."""

from __future__ import annotations

import os
import sys
from typing import Final

import pytest

from statesnap.base.plain import Frozen
from statesnap.plugin import markers

MARKER = markers.ISOLATE
#: The field an isolated test adds to its record line (typed in
#: :mod:`~statesnap.contain.isolate.fields`); here, so that a session can tell whether any
#: test has one without importing that module.
FIELD: Final = "isolation"
PHASES = ("setup", "call", "teardown")
#: Values of ``--statesnap-isolate``.
MODES = ("auto", "fork", "spawn")


class IsolateSettings(Frozen):
    """``--statesnap-isolate`` and ``--statesnap-isolate-timeout``."""

    _fields = ("mode", "timeout")
    __slots__ = _fields

    def __init__(self, mode: str | None = None, timeout: float | None = None) -> None:
        #: ``auto``, ``fork`` or ``spawn`` when every test runs isolated; None otherwise.
        self.mode: Final = mode
        #: Seconds before an isolated test's process group is killed (None: no limit).
        self.timeout: Final = timeout


def cuda_initialised() -> bool:
    """Whether this process has initialised CUDA; never initialises it, never imports torch."""
    cuda = sys.modules.get("torch.cuda")
    if cuda is None:
        return False
    check = getattr(cuda, "is_initialized", None)
    try:
        return bool(check()) if callable(check) else False
    except Exception:
        return False


def choose_mode(requested: str) -> tuple[str, str]:
    """``(fork|spawn, reason)`` for a requested ``auto``, ``fork`` or ``spawn``.

    An explicit ``fork`` still becomes ``spawn`` when forking would break the child.
    """
    if requested == "spawn":
        return "spawn", "asked"
    if not hasattr(os, "fork"):
        return "spawn", "no fork on this platform"
    if cuda_initialised():
        return "spawn", "CUDA is initialised in this process (a forked child cannot use it)"
    return "fork", "asked" if requested == "fork" else "safe to fork"


def requested_mode(item: pytest.Item, default: str | None) -> str | None:
    """The isolation an item asks for (its marker wins over the command line), or None."""
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return default
    mode = marker.kwargs.get("mode", marker.args[0] if marker.args else "auto")
    if mode not in ("auto", "fork", "spawn"):
        raise pytest.UsageError(
            f"{item.nodeid}: @pytest.mark.{MARKER}({mode!r}): expected 'auto', 'fork' or 'spawn'"
        )
    return str(mode)
