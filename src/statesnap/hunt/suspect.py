"""A suspect of the hunt: a test that failed in a hunt order, on its way to a finding."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from statesnap.analysis.findings import Candidate, Finding
from statesnap.hunt.runs import Observed


@dataclass
class Suspect:
    """A test that passed in the record and failed in a hunt order, on its way to a finding."""

    nodeid: str
    #: The exploring runs where it failed, and those where it passed.
    failed_in: list[Observed] = field(default_factory=list)
    passed_in: list[Observed] = field(default_factory=list)
    #: ``latent`` or ``brittle`` once the alone check has told.
    kind: str | None = None
    #: The run whose failure attribution reads and the replay of it that fails it.
    failing: Observed | None = None
    #: The run showing it passes (latent) or fails (brittle) without the leaking tests.
    without: Observed | None = None
    candidates: list[Candidate] = field(default_factory=list)
    set_aside: int = 0
    queue: list[str] = field(default_factory=list)
    tried: list[str] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    finding: Finding | None = None
    #: A run of this test and no other (None until one ran).
    solo: Observed | None = None
    #: Its finding's printed line that ran exactly as printed and failed it as the hunt's
    #: runs did (a key proof can change the line: the new one must run again).
    line_ran: str | None = None

    @property
    def failure(self) -> dict[str, Any] | None:
        for obs in ([self.failing] if self.failing else []) + self.failed_in:
            f = obs.result.failures.get(self.nodeid)
            if f is not None:
                return f
        return None

    def note_log(self, obs: Observed) -> None:
        if obs.run.log is not None and obs.run.log not in self.logs:
            self.logs.append(obs.run.log)
