"""Findings: a victim, its polluter(s), the state key, and how sure we are.

Plain data shared by attribution, verification, the CLI, the summary JSON and the report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from statesnap.record.signature import Signature

VERIFIED = "verified"
SUSPECTED = "suspected"
NOT_ORDER_DEPENDENT = "not-order-dependent"
UNEXPLAINED = "unexplained"
NOT_DETERMINISTIC = "not-deterministic"
LATENT = "latent"
BRITTLE = "brittle"

#: How candidates are labelled where no replay tied the failure to them.
NOT_THE_CAUSE = "not the cause: the victim fails alone in a fresh process"
NOT_REPRODUCED = "not shown to be the cause: replays did not reproduce the failure"

STATUSES = (VERIFIED, SUSPECTED, NOT_ORDER_DEPENDENT, UNEXPLAINED, NOT_DETERMINISTIC, LATENT,
            BRITTLE)
#: Statuses earned by a replay that failed the victim with exactly the finding's ``repro``
#: order: only their ``repro`` may be printed as a command that reproduces the failure.
PROVEN_STATUSES = (VERIFIED, NOT_ORDER_DEPENDENT, LATENT, BRITTLE)
#: The ranked candidates a finding keeps, whether attribution or a hunt made it.
MAX_CANDIDATES = 20

@dataclass
class ReplayRun:
    """One replay the verification ran for a finding: what ran and what the victim did.

    ``command`` is the plain pytest command of ``order`` (what a user would run); a key-level
    replay also put ``restored`` keys back before the victim, which no plain command does.
    ``outcome`` is the victim's: ``passed``, ``failed``, ``error``, ``crashed``, ``not run``
    or ``timed out``; ``signature`` is its failure's (``Signature.text()``).
    """

    label: str
    order: list[str]
    command: str
    outcome: str
    signature: str | None = None
    log: str | None = None
    restored: list[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReplayRun:
        return cls(label=str(data.get("label") or "replay"),
                   order=[str(n) for n in data.get("order") or []],
                   command=str(data.get("command") or ""),
                   outcome=str(data.get("outcome") or "unknown"),
                   signature=data.get("signature"),
                   log=data.get("log"),
                   restored=[str(k) for k in data.get("restored") or []])


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
    #: Fix hint in the probe's terms, and whether a key-level replay proved it.  Set only
    #: once a replay proved the polluter (or setter): see :attr:`shown_hint`.
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
    #: The run's failing frame (``file:line``): with ``exc_type``, the failure's signature.
    where: str | None = None
    #: The signature of the victim's failure when replayed alone, where it failed alone
    #: *differently* (another type or frame): it still depends on the order.
    alone_failure: str | None = None
    #: Files earlier runs left on disk that the victim fails with, each with the test that
    #: wrote it and that run's record (``{"path", "writer", "record"}``).
    leftovers: list[dict[str, str]] = field(default_factory=list)
    #: For each cleaner: the command with it between polluter(s) and victim, in which a
    #: replay saw the victim pass (a cleaner is named only with that proof).
    cleaner_proofs: dict[str, str] = field(default_factory=dict)

    def drop_state(self, label: str) -> None:
        """No key, value, fix or cleaner for a finding no replay tied to a change; the
        candidates keep the changes that happened before it, labelled with ``label``."""
        self.probe = self.key = self.before = self.after = None
        self.hint, self.hint_proven, self.proven_keys = None, False, []
        self.cleaners, self.cleaner_proofs = [], {}
        for c in self.candidates:
            if label not in c.reasons:
                c.reasons.append(label)

    def signature(self) -> Signature:
        """The failure's signature in the recorded run."""
        return Signature(self.exc_type, self.where)
    #: Every replay run to reach this verdict, in order (empty: nothing was replayed).
    replays: list[ReplayRun] = field(default_factory=list)
    #: Where the verdict comes from when read back: ``session`` (stored in the record by the
    #: run that proved it) or ``None`` (computed now).
    source: str | None = None

    @property
    def repro_proven(self) -> bool:
        """Whether ``repro`` is a command a replay saw fail the victim."""
        return bool(self.repro) and self.status in PROVEN_STATUSES

    @property
    def shown_hint(self) -> str | None:
        """The fix hint to show: none for a finding no replay proved.  A suspect's hint would
        read as the fix for a polluter nobody showed is one (it may be an innocent test that
        merely changed the same state); a stored verdict of an older version may carry one."""
        return self.hint if self.status in PROVEN_STATUSES else None

    @property
    def replayed(self) -> bool:
        """Whether anything ran for this verdict: replays, or the runs a hunt logged."""
        return bool(self.replays or self.logs) or self.status in PROVEN_STATUSES

    def to_summary(self) -> dict[str, Any]:
        """The ``findings`` entry of the summary JSON (a contract other tools read) plus extras."""
        data = asdict(self)
        data["candidates"] = [asdict(c) for c in self.candidates]
        data["replays"] = [asdict(r) for r in self.replays]
        data["repro_proven"] = self.repro_proven
        data["hint"] = self.shown_hint
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Finding:
        cands = [Candidate(**c) for c in data.get("candidates") or []]
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        fields["candidates"] = cands
        fields["replays"] = [ReplayRun.from_json(r) for r in data.get("replays") or []
                             if isinstance(r, Mapping)]
        return cls(**fields)
