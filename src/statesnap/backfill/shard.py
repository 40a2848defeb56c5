"""What one artifact says about one process of a CI run: its order and outcomes.  Plain data."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from statesnap.record.journal import Record

#: How sure an artifact is of the order, richest first: a duplicate shard keeps the richest.
KIND_RANK = {"statesnap": 0, "log": 1, "pytest-replay": 2, "junit": 3}

#: Outcomes that make a test a victim to look at.
FAILING = ("failed", "error", "crashed")


class BadArtifact(Exception):
    """An artifact that cannot be used: the message is one line naming it and what is wrong."""


@dataclass
class Shard:
    """The order one process (an xdist worker, a CI shard) ran, as one artifact recorded it."""

    source: Path
    kind: str
    worker: str
    order: list[str]
    outcomes: dict[str, str] = field(default_factory=dict)
    #: ``nodeid → {"exc_type", "message"}`` where the artifact says why a test failed.
    failures: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The pytest arguments of the recorded run, where the artifact names them.
    args: list[str] | None = None
    notes: list[str] = field(default_factory=list)
    #: The statesnap lane this shard came from when it carries state (None: order only).
    record: Record | None = None
    #: The pytest plugins CI loaded, ``{name: version}`` (statesnap.backfill.plugins); None
    #: where the artifact does not name them.
    plugins: dict[str, str] | None = None

    @property
    def label(self) -> str:
        return f"{self.source.name}:{self.worker}"

    def failing(self) -> list[str]:
        return [n for n in self.order if self.outcomes.get(n) in FAILING]
