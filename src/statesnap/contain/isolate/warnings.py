"""Warnings an isolated test emitted, carried back so pytest's warnings summary lists them.

They are emitted again in the parent, inside pytest's ``catch_warnings`` for the test
(docs/ARCHITECTURE.md, "Isolation").
"""

from __future__ import annotations

import sys
import warnings
from typing import Any


def recording_log() -> list[Any] | None:
    """The list ``catch_warnings(record=True)`` is appending to right now, if any."""
    impl = getattr(warnings, "_showwarnmsg_impl", None)
    log = getattr(impl, "__self__", None)
    return log if isinstance(log, list) else None


def to_message(msg: Any) -> dict[str, Any]:
    """A ``warnings.WarningMessage`` as JSON."""
    category = getattr(msg, "category", UserWarning)
    return {
        "warning": str(msg.message),
        "category": f"{category.__module__}:{category.__qualname__}",
        "filename": str(msg.filename),
        "lineno": int(msg.lineno or 0),
    }


def _category(ref: str) -> type[Warning]:
    module, _, qualname = ref.partition(":")
    obj: Any = sys.modules.get(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    if isinstance(obj, type) and issubclass(obj, Warning):
        return obj
    return UserWarning  # a class only the spawned child knew


def emit(messages: list[dict[str, Any]]) -> None:
    """Emit carried-back warnings in this process, where pytest records them for the test."""
    for m in messages:
        try:
            warnings.warn_explicit(str(m["warning"]), _category(str(m["category"])),
                                   str(m["filename"]), int(m["lineno"]))
        except Exception:
            # A filter turned it into an error here: the child already applied the same
            # filters, so its test saw it; nothing more to report.
            pass
