"""What a hunt is asked to do (its options and budget), where it writes its replays' logs, and
the error of a hunt that cannot run at all: what the CLI hands :mod:`statesnap.hunt.hunt`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


class HuntError(Exception):
    """A hunt that cannot run at all (no tests, a replay that cannot start)."""


@dataclass
class HuntOptions:
    """What to hunt and how long for."""

    budget: float = 300.0
    random_orders: int = 0
    #: Seed of the first random order (the next ones count up); None picks one.
    seed: int | None = None
    worker: str | None = None
    all_leaks: bool = False
    extra_args: Sequence[str] = ()
    #: Proofs run side by side on up to this many workers (1: one at a time).
    replay_workers: int = 1


def default_logs_dir(record_path: Path) -> Path:
    """``<record>.logs/hunt-<time>``: a folder per hunt, beside the record's other replays."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = record_path.with_suffix(".logs")
    path = base / f"hunt-{stamp}"
    n = 1
    while path.exists():
        n += 1
        path = base / f"hunt-{stamp}-{n}"
    return path
