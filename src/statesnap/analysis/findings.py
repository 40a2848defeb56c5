"""Findings: a victim, its polluter(s), the state key, and how sure we are.

Plain data shared by attribution, verification, the CLI, the summary JSON and the report.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from statesnap.base.plain import Plain, Value
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

class ReplayRun(Value):
    """One replay the verification ran for a finding: what ran and what the victim did.

    ``command`` is the plain pytest command of ``order`` (what a user would run); a key-level
    replay also put ``restored`` keys back before the victim, which no plain command does.
    ``outcome`` is the victim's: ``passed``, ``failed``, ``error``, ``crashed``, ``not run``
    or ``timed out``; ``signature`` is its failure's (``Signature.text()``).
    """

    _fields = ("label", "order", "command", "outcome", "signature", "log", "restored")

    def __init__(self, label: str, order: list[str], command: str, outcome: str,
                 signature: str | None = None, log: str | None = None,
                 restored: list[str] | None = None) -> None:
        self.label = label
        self.order = order
        self.command = command
        self.outcome = outcome
        self.signature = signature
        self.log = log
        self.restored = [] if restored is None else restored

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReplayRun:
        return cls(label=str(data.get("label") or "replay"),
                   order=[str(n) for n in data.get("order") or []],
                   command=str(data.get("command") or ""),
                   outcome=str(data.get("outcome") or "unknown"),
                   signature=data.get("signature"),
                   log=data.get("log"),
                   restored=[str(k) for k in data.get("restored") or []])


class Candidate(Value):
    """One ranked suspect: a test that last wrote a key that was dirty when the victim ran."""

    _fields = ("nodeid", "index", "probe", "key", "before", "after", "score", "reasons")

    def __init__(self, nodeid: str, index: int, probe: str, key: str, before: Any, after: Any,
                 score: float = 0.0, reasons: list[str] | None = None) -> None:
        self.nodeid = nodeid
        self.index = index
        self.probe = probe
        self.key = key
        self.before = before
        self.after = after
        self.score = score
        self.reasons = [] if reasons is None else reasons


class Finding(Value):
    """A victim and what (we think, or proved) broke it.

    A plain class (``statesnap.base.plain``): a data class of this many fields cost some
    13 M instructions to create, paid by every session that writes a report.
    """

    _fields = ("victim", "polluters", "probe", "key", "status", "repro", "worker", "before",
               "after", "exc_type", "message", "hint", "hint_proven", "proven_keys", "cleaners",
               "candidates", "logs", "note", "setter", "where", "alone_failure", "leftovers",
               "cleaner_proofs", "replays", "source")

    def __init__(self, victim: str, polluters: list[str], probe: str | None, key: str | None,
                 status: str, repro: str = "", worker: str = "main", before: Any = None,
                 after: Any = None, exc_type: str | None = None, message: str | None = None,
                 hint: str | None = None, hint_proven: bool = False,
                 proven_keys: list[str] | None = None, cleaners: list[str] | None = None,
                 candidates: list[Candidate] | None = None, logs: list[str] | None = None,
                 note: str | None = None, setter: str | None = None, where: str | None = None,
                 alone_failure: str | None = None,
                 leftovers: list[dict[str, str]] | None = None,
                 cleaner_proofs: dict[str, str] | None = None,
                 replays: list[ReplayRun] | None = None, source: str | None = None) -> None:
        self.victim = victim
        self.polluters = polluters
        self.probe = probe
        self.key = key
        self.status = status
        self.repro = repro
        self.worker = worker
        self.before = before
        self.after = after
        #: The victim's failure: exception type and first line of the message.
        self.exc_type = exc_type
        self.message = message
        #: Fix hint in the probe's terms, and whether a key-level replay proved it.  Set only
        #: once a replay proved the polluter (or setter): see :attr:`shown_hint`.
        self.hint = hint
        self.hint_proven = hint_proven
        #: Keys whose restoration made the victim pass in a key-level replay.
        self.proven_keys: list[str] = [] if proven_keys is None else proven_keys
        self.cleaners: list[str] = [] if cleaners is None else cleaners
        self.candidates: list[Candidate] = [] if candidates is None else candidates
        #: Paths of replay logs (relative to the record's directory where possible).
        self.logs: list[str] = [] if logs is None else logs
        self.note = note
        #: For ``brittle`` findings: the test that set the state up.
        self.setter = setter
        #: The run's failing frame (``file:line``): with ``exc_type``, the failure's signature.
        self.where = where
        #: The signature of the victim's failure when replayed alone, where it failed alone
        #: *differently* (another type or frame): it still depends on the order.
        self.alone_failure = alone_failure
        #: Files earlier runs left on disk that the victim fails with, each with the test
        #: that wrote it and that run's record (``{"path", "writer", "record"}``).
        self.leftovers: list[dict[str, str]] = [] if leftovers is None else leftovers
        #: For each cleaner: the command with it between polluter(s) and victim, in which a
        #: replay saw the victim pass (a cleaner is named only with that proof).
        self.cleaner_proofs: dict[str, str] = {} if cleaner_proofs is None else cleaner_proofs
        #: Every replay run to reach this verdict, in order (empty: nothing was replayed).
        self.replays: list[ReplayRun] = [] if replays is None else replays
        #: Where the verdict comes from when read back: ``session`` (stored in the record by
        #: the run that proved it) or ``None`` (computed now).
        self.source = source

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
        data: dict[str, Any] = _as_dict(self)
        data["repro_proven"] = self.repro_proven
        data["hint"] = self.shown_hint
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Finding:
        cands = [Candidate(**c) for c in data.get("candidates") or []]
        fields = {k: v for k, v in data.items() if k in cls._fields}
        fields["candidates"] = cands
        fields["replays"] = [ReplayRun.from_json(r) for r in data.get("replays") or []
                             if isinstance(r, Mapping)]
        return cls(**fields)


def _as_dict(value: Any) -> Any:
    """What ``dataclasses.asdict`` makes of a finding: its fields (and its candidates' and
    replays') as a dict, every container new and every other value a deep copy."""
    if isinstance(value, Plain):
        return {name: _as_dict(getattr(value, name)) for name in value._fields}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
        return type(value)(*[_as_dict(v) for v in value])
    if isinstance(value, list | tuple):
        return type(value)(_as_dict(v) for v in value)
    if isinstance(value, dict):
        return type(value)((_as_dict(k), _as_dict(v)) for k, v in value.items())
    return copy.deepcopy(value)
