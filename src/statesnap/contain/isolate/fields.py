"""The fields an isolated test adds to its record line, typed."""

from __future__ import annotations

from typing import Any, Final

from statesnap.base.plain import Frozen
from statesnap.contain.isolate.modes import FIELD
from statesnap.record.journal import TestEntry

#: The fields of an isolated test's record line.
CONTAINED, CONTAINED_CHANGES = "contained", "contained_changes"
__all__ = ["CONTAINED", "CONTAINED_CHANGES", "FIELD", "Isolation"]


class Isolation(Frozen):
    """The ``isolation`` field: how the test's child ran and how it ended."""

    _fields = ("mode", "reason", "exit", "crashed")
    __slots__ = _fields

    def __init__(self, mode: str, reason: str, exit: dict[str, Any] | None = None,
                 crashed: bool = False) -> None:
        self.mode: Final = mode
        self.reason: Final = reason
        self.exit: Final[dict[str, Any]] = {} if exit is None else exit
        self.crashed: Final = crashed

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self.mode, "reason": self.reason, "exit": self.exit}
        if self.crashed:
            out["crashed"] = True
        return out

    @classmethod
    def of(cls, test: TestEntry) -> Isolation | None:
        info = test.extra.get(FIELD)
        if not isinstance(info, dict):
            return None
        return cls(str(info.get("mode")), str(info.get("reason", "")),
                   dict(info.get("exit") or {}), bool(info.get("crashed")))

    def how_it_died(self) -> str:
        if self.exit.get("timed_out"):
            return "timed out"
        if self.exit.get("signal"):
            return str(self.exit["signal"])
        return f"status {self.exit['code']}" if "code" in self.exit else "?"
