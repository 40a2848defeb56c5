"""Findings: a victim, its polluter(s), the state key, and how sure we are.

Plain data shared by attribution, verification, the CLI, the summary JSON and the report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

VERIFIED = "verified"
SUSPECTED = "suspected"
NOT_ORDER_DEPENDENT = "not-order-dependent"
UNEXPLAINED = "unexplained"
NOT_DETERMINISTIC = "not-deterministic"
LATENT = "latent"
BRITTLE = "brittle"

STATUSES = (VERIFIED, SUSPECTED, NOT_ORDER_DEPENDENT, UNEXPLAINED, NOT_DETERMINISTIC, LATENT,
            BRITTLE)


@dataclass
class Candidate:
    """One ranked suspect: a test that last wrote a key that was dirty when the victim ran."""

    nodeid: str
    index: int
    probe: str
    key: str
    before: Any
    after: Any
    score: float = 0.0
    reasons: list[str] = field(default_factory=list)


@dataclass
class Finding:
    """A victim and what (we think, or proved) broke it."""

    victim: str
    polluters: list[str]
    probe: str | None
    key: str | None
    status: str
    repro: str = ""
    worker: str = "main"
    before: Any = None
    after: Any = None
    #: The victim's failure: exception type and first line of the message.
    exc_type: str | None = None
    message: str | None = None
    #: Fix hint in the probe's terms, and whether a key-level replay proved it.
    hint: str | None = None
    hint_proven: bool = False
    #: Keys whose restoration made the victim pass in a key-level replay.
    proven_keys: list[str] = field(default_factory=list)
    cleaners: list[str] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    #: Paths of replay logs (relative to the record's directory where possible).
    logs: list[str] = field(default_factory=list)
    note: str | None = None
    #: For ``brittle`` findings: the test that set the state up.
    setter: str | None = None

    def to_summary(self) -> dict[str, Any]:
        """The ``findings`` entry of the summary JSON (a contract other tools read) plus extras."""
        data = asdict(self)
        data["candidates"] = [asdict(c) for c in self.candidates]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Finding:
        cands = [Candidate(**c) for c in data.get("candidates") or []]
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        fields["candidates"] = cands
        return cls(**fields)
