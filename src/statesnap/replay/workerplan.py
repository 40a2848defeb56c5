"""How many workers replay side by side, and whether each needs a scratch copy of the project:
read from what the record's tests wrote (the ``files`` probe's keys).

Shared by the session end's verification (:mod:`statesnap.proof.sidebyside`) and the hunt's
proofs (:mod:`statesnap.hunt.sidebyside`), so both lay their workers out by one rule.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from statesnap.record.journal import Record


class Plan:
    """How many workers replay, and whether each needs a scratch copy of the project."""

    __slots__ = ("scratch", "why", "workers")

    def __init__(self, workers: int, scratch: bool, why: str | None = None) -> None:
        self.workers = workers
        self.scratch = scratch
        #: Why fewer workers than asked (said once), or None.
        self.why = why


def plan(record: Record, workers: int, victims: int) -> Plan:
    """The workers for ``victims`` findings of ``record``, from what its tests wrote."""
    workers = max(1, min(workers, victims))
    if workers == 1:
        return Plan(1, False)
    keys = [ch.key for ch in record.collection if ch.probe == "files"]
    keys += [ch.key for t in record.tests for ch in t.changes if ch.probe == "files"]
    outside = sorted({k for k in keys if os.path.isabs(k) or k.split("/", 1)[0] == ".."})
    if outside:
        more = f" and {len(outside) - 1} more" if len(outside) > 1 else ""
        return Plan(1, False, f"replays run one at a time: tests wrote files outside the "
                              f"project ({outside[0]}{more}), which replays side by side "
                              "would share")
    watched = any(isinstance(p, Mapping) and p.get("name") == "files" and p.get("status") == "ok"
                  for p in record.header.get("probes") or [])
    return Plan(workers, scratch=bool(keys) or not watched)
